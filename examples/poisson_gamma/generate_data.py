#!/usr/bin/env python3
"""Data for examples/poisson_gamma: N = 10 units, J counts each, true rates uniform on [20, 40].

Deterministic given the seed (numpy's PCG64 default_rng). Writes data.json (J = 5) and
data_j20.json (J = 20) next to this file unless --out/--J are given.

    python3 generate_data.py                  # both committed files
    python3 generate_data.py --J 50 --out x.json
"""
import argparse
import json
import os

import numpy as np

N_UNITS = 10
RATE_LOW, RATE_HIGH = 20.0, 40.0


def generate(seed, n_units, n_per_unit):
    rng = np.random.default_rng(seed)
    rates = rng.uniform(RATE_LOW, RATE_HIGH, size=n_units)
    counts = rng.poisson(rates[:, None], size=(n_units, n_per_unit))
    return {
        "N": n_units,
        "J": n_per_unit,
        "y": counts.tolist(),
        # Not declared by model.stan (Stan ignores it); kept so tests can compare with the truth.
        "true_rho": [round(float(r), 6) for r in rates],
    }


def write(path, data):
    with open(path, "w") as f:
        json.dump(data, f)
        f.write("\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--J", type=int, default=None, help="counts per unit (default: write J=5 and J=20)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.J is None:
        # The same seed for both files: the J=20 data set has the same true rates.
        write(os.path.join(here, "data.json"), generate(args.seed, N_UNITS, 5))
        write(os.path.join(here, "data_j20.json"), generate(args.seed, N_UNITS, 20))
    else:
        write(args.out or os.path.join(here, "data_j%d.json" % args.J), generate(args.seed, N_UNITS, args.J))


if __name__ == "__main__":
    main()
