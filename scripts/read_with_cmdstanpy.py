#!/usr/bin/env python3
"""Read Stan CSV files (hazel's or CmdStan's) with cmdstanpy and with ArviZ, and print what
each of them makes of the files: shapes, sampler metadata and a summary.

    pip install cmdstanpy arviz
    python scripts/read_with_cmdstanpy.py out/chain_1.csv out/chain_2.csv ...

A check that hazel's CSV layout is accepted by the usual Stan tooling. No CmdStan installation
is needed: `cmdstanpy.from_csv` only parses the files (its `summary()` would run CmdStan's
`stansummary`, so the cmdstanpy summary here is computed from `draws_pd()` with ArviZ's
functions instead). Exits nonzero if either reader rejects the files.
"""

import sys

import arviz as az
import cmdstanpy
import numpy as np
import pandas as pd


def main(paths):
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"cmdstanpy {cmdstanpy.__version__}, arviz {az.__version__}")

    fit = cmdstanpy.from_csv(paths)
    print("\n== cmdstanpy.from_csv")
    print(f"chains: {fit.chains}, draws per chain: {fit.num_draws_sampling}, "
          f"warmup draws per chain saved: {fit.num_draws_warmup if fit._save_warmup else 0}")
    print(f"columns: {list(fit.column_names)}")
    print(f"step sizes: {fit.step_size}")
    print(f"inverse metric ({fit.metric_type}): {np.asarray(fit.inv_metric).round(6).tolist()}")
    print(f"divergences per chain: {fit.divergences}, max treedepth hits per chain: {fit.max_treedepths}")
    draws = fit.draws()  # (draws, chains, columns)
    rows = {}
    for j, name in enumerate(fit.column_names):
        if name.endswith("__") and name != "lp__":
            continue
        ary = draws[:, :, j].T  # (chains, draws)
        rows[name] = {
            "Mean": ary.mean(),
            "MCSE": az.mcse(ary, method="mean"),
            "StdDev": ary.std(ddof=1),
            "5%": np.quantile(ary, 0.05),
            "50%": np.quantile(ary, 0.5),
            "95%": np.quantile(ary, 0.95),
            "ESS_bulk": az.ess(ary, method="bulk"),
            "ESS_tail": az.ess(ary, method="tail"),
            "R_hat": az.rhat(ary, method="rank"),
        }
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(pd.DataFrame(rows).T.round(4))

    idata = az.from_cmdstan(paths)
    print("\n== arviz.from_cmdstan")
    print(idata.posterior)
    print(f"sample_stats: {list(idata.sample_stats.data_vars)}")
    print(f"warmup group present: {'warmup_posterior' in idata.groups()}")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(az.summary(idata, round_to=4))
    print(f"E-BFMI per chain: {np.round(az.bfmi(idata), 4).tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
