#!/usr/bin/env python3
"""Data for examples/bnn: D = 5 standard-normal inputs, labels from a 'teacher' network with the
model's architecture (16 tanh hidden units, weights drawn from normal(0, 1)), y ~ Bernoulli(logit^-1(f(x))).
N = 500 training and N_test = 500 held-out points.

Deterministic given the seed (numpy default_rng, PCG64). Inputs rounded to 6 decimals.

    python3 generate_data.py [--seed S] [--N N] [--N-test M] [--out path]
"""
import argparse
import json
import os

import numpy as np

D, H = 5, 16


def generate(seed, n, n_test):
    rng = np.random.default_rng(seed)
    w1 = rng.normal(size=(D, H))
    b1 = rng.normal(size=H)
    w2 = rng.normal(size=H)
    b2 = rng.normal()

    def draw(m):
        x = np.round(rng.normal(size=(m, D)), 6)
        eta = np.tanh(x @ w1 + b1) @ w2 + b2
        y = (rng.uniform(size=m) < 1.0 / (1.0 + np.exp(-eta))).astype(int)
        return x, y

    x, y = draw(n)
    x_test, y_test = draw(n_test)
    return {
        "N": n,
        "D": D,
        "H": H,
        "X": x.tolist(),
        "y": y.tolist(),
        "N_test": n_test,
        "X_test": x_test.tolist(),
        "y_test": y_test.tolist(),
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=20240615)
    ap.add_argument("--N", type=int, default=500)
    ap.add_argument("--N-test", type=int, default=500)
    ap.add_argument("--out", default=os.path.join(here, "data.json"))
    args = ap.parse_args()
    with open(args.out, "w") as f:
        json.dump(generate(args.seed, args.N, args.N_test), f)
        f.write("\n")


if __name__ == "__main__":
    main()
