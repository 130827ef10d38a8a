#!/usr/bin/env python3
"""Data for examples/missing_data: N = 100 points of y = 1 + 2 x + normal(0, 0.5), x ~ normal(0, 1),
with 20 outcomes (chosen at random) missing.

Deterministic given the seed (numpy default_rng, PCG64).

    python3 generate_data.py [--seed S] [--N N] [--N-mis M] [--out path]
"""
import argparse
import json
import os

import numpy as np

ALPHA, BETA, SIGMA = 1.0, 2.0, 0.5


def generate(seed, n, n_mis):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, size=n)
    y = ALPHA + BETA * x + rng.normal(0.0, SIGMA, size=n)
    missing = np.sort(rng.choice(n, size=n_mis, replace=False))
    observed = np.setdiff1d(np.arange(n), missing)
    return {
        "N_obs": int(observed.size),
        "N_mis": int(missing.size),
        "ii_obs": [int(i) + 1 for i in observed],
        "ii_mis": [int(i) + 1 for i in missing],
        "x": [round(float(v), 8) for v in x],
        "y_obs": [round(float(y[i]), 8) for i in observed],
        # Not declared by model.stan: the held-back outcomes and the true coefficients.
        "true_y_mis": [round(float(y[i]), 8) for i in missing],
        "true_alpha": ALPHA,
        "true_beta": BETA,
        "true_sigma": SIGMA,
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=20240613)
    ap.add_argument("--N", type=int, default=100)
    ap.add_argument("--N-mis", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(here, "data.json"))
    args = ap.parse_args()
    with open(args.out, "w") as f:
        json.dump(generate(args.seed, args.N, args.N_mis), f)
        f.write("\n")


if __name__ == "__main__":
    main()
