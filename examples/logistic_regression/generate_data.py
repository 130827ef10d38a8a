#!/usr/bin/env python3
"""Data for examples/logistic_regression: K = 20 standard-normal predictors, true alpha = -0.5 and
beta_k = normal(0, 0.5) draws, y ~ Bernoulli(logit^-1(alpha + X beta)).

Deterministic given the seed and N (numpy default_rng, PCG64). X is rounded to 4 decimals (the
data are defined as the rounded values; y is drawn from the rounded X), which keeps the committed
N = 10 000 file under 2 MB. The 100 000 and 500 000 row data sets are made on demand:

    python3 generate_data.py                      # data.json, N = 10 000 (committed)
    python3 generate_data.py --N 100000 --out data_100k.json
    python3 generate_data.py --N 500000 --out data_500k.json
"""
import argparse
import json
import os

import numpy as np

K = 20
ALPHA = -0.5


def generate(seed, n):
    rng = np.random.default_rng(seed)
    beta = rng.normal(0.0, 0.5, size=K)  # drawn first, so every N shares the true coefficients
    x = np.round(rng.normal(0.0, 1.0, size=(n, K)), 4)
    eta = ALPHA + x @ beta
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(int)
    return {
        "N": n,
        "K": K,
        "X": x.tolist(),
        "y": y.tolist(),
        "true_alpha": ALPHA,
        "true_beta": [round(float(b), 10) for b in beta],
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=20240614)
    ap.add_argument("--N", type=int, default=10000)
    ap.add_argument("--out", default=os.path.join(here, "data.json"))
    args = ap.parse_args()
    with open(args.out, "w") as f:
        json.dump(generate(args.seed, args.N), f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
