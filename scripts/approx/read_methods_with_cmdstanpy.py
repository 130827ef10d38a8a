#!/usr/bin/env python3
"""Reads the CSV files of `hazel optimize | laplace | variational | pathfinder` with
cmdstanpy (`from_csv`) and ArviZ (`from_cmdstan`) and prints what they make of them; exits
nonzero if a reader rejects a file.

    PYTHONPATH=<dir with cmdstanpy> python scripts/approx/read_methods_with_cmdstanpy.py OUT_DIR/*.csv
"""
import sys

import arviz as az
import cmdstanpy


def main(paths):
    print(f"cmdstanpy {cmdstanpy.__version__}, arviz {az.__version__}")
    failures = 0
    for path in paths:
        try:
            fit = cmdstanpy.from_csv(path)
            kind = type(fit).__name__
            variables = list(fit.stan_variables().keys()) if hasattr(fit, "stan_variables") else []
            detail = ""
            if kind == "CmdStanMLE":
                detail = f"optimized_params_dict={dict(list(fit.optimized_params_dict.items())[:3])}"
            elif kind == "CmdStanVB":
                detail = f"eta={fit.eta} mean={fit.variational_params_dict}"[:160]
            elif kind in ("CmdStanPathfinder", "CmdStanLaplace"):
                detail = f"draws shape={fit.draws().shape}"
            print(f"cmdstanpy: {path}: {kind} variables={variables} {detail}")
        except Exception as e:  # noqa: BLE001 - report every reader failure
            failures += 1
            print(f"cmdstanpy: {path}: FAILED: {e!r}")
        try:
            idata = az.from_cmdstan(path)
            print(f"arviz: {path}: groups={idata.groups()} posterior vars={list(idata.posterior.data_vars)}")
        except Exception as e:  # noqa: BLE001
            failures += 1
            print(f"arviz: {path}: FAILED: {e!r}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
