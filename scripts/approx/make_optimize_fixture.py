#!/usr/bin/env python3
"""Posterior modes (jacobian=True) of the bundled examples by stanli's `optimize` (the same
L-BFGS CmdStan's `optimize` runs, at CmdStan's default tolerances), for hazel-cli's
`methods_cli` test (`hazel optimize --jacobian` must agree).

    /work/venv-bench/bin/python scripts/approx/make_optimize_fixture.py \
        > crates/hazel-cli/tests/fixtures/optimize_stanli.json

Each example is optimised from several seeds; the fixture keeps the best mode (highest lp__)
and the spread between seeds, which shows how far CmdStan's default tolerances leave the
optimiser from the mode.
"""
import json
import pathlib
import sys

import stanli

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ["bernoulli", "poisson_gamma", "logistic_regression", "eight_schools"]


def main():
    out = {"generator": "scripts/approx/make_optimize_fixture.py", "stanli": getattr(stanli, "__version__", "?"), "examples": {}}
    for name in EXAMPLES:
        d = ROOT / "examples" / name
        model = stanli.Model(str(d / "model.stan"), data=str(d / "data.json"))
        fits = [model.optimize(seed=s, jacobian=True) for s in (1, 2, 3)]
        best = max(fits, key=lambda f: f.lp)
        columns = {k: float(v) for k, v in best.items()}
        spread = {k: max(abs(float(f[k]) - columns[k]) for f in fits) for k in columns}
        out["examples"][name] = {"mode": columns, "lp": float(best.lp), "spread_between_seeds": spread}
        print(name, best.lp, file=sys.stderr)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
