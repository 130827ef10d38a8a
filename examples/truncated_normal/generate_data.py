#!/usr/bin/env python3
"""Data for examples/truncated_normal: N = 200 draws from normal(1.4, 0.4) truncated to [1, 2].

Rejection sampling from numpy's default_rng(seed) (PCG64); deterministic given the seed.

    python3 generate_data.py [--seed S] [--N N] [--out path]
"""
import argparse
import json
import os

import numpy as np

MU, SIGMA, LOWER, UPPER = 1.4, 0.4, 1.0, 2.0


def generate(seed, n):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        x = rng.normal(MU, SIGMA)
        if LOWER <= x <= UPPER:
            out.append(round(float(x), 10))
    return {"N": n, "y": out, "true_mu": MU, "true_sigma": SIGMA}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=20240612)
    ap.add_argument("--N", type=int, default=200)
    ap.add_argument("--out", default=os.path.join(here, "data.json"))
    args = ap.parse_args()
    with open(args.out, "w") as f:
        json.dump(generate(args.seed, args.N), f)
        f.write("\n")


if __name__ == "__main__":
    main()
