"""NumPyro's peer of `bench/src/bin/lockstep.rs`: the logistic regression with its chains
vectorised (`chain_method="vectorized"`: the chains are one batched computation, NumPyro's
counterpart of hazel's lockstep chains), on one CPU thread.

Usage: python lockstep_numpyro.py --data DATA.json --chains C --warmup W --draws D --seed S
                                  --out DRAWS.json

The model is `bench/peers/peers.py`'s translation of `examples/logistic_regression/model.stan`
(`y ~ bernoulli_logit(alpha + X beta)`, normal(0, 2.5) priors), sampled with NUTS
(target_accept_prob 0.8, max tree depth 10, diagonal mass matrix: Stan's defaults). `MCMC.run`
traces and compiles the sampler before it samples, so it is called twice with different keys:
the first call's time includes the compilation, the second's reuses the compiled sampler where
NumPyro caches it. Both are reported; the harness uses the faster. The draws of the second run
(chains × draws × [alpha, beta…]) are written to --out, where the harness computes their ESS with
the same code as hazel's. One JSON line on stdout: the two runs' wall and CPU (process) times, the leapfrog steps, the
XLA flags and versions (NumPyro's `num_steps` are those of the post-warmup iterations).

XLA runs on one thread (XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1 unless XLA_FLAGS is set), as hazel's lockstep group does.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# float64, as hazel computes.
os.environ.setdefault("JAX_ENABLE_X64", "1")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import jax
    import numpy as np
    import numpyro
    from numpyro.infer import MCMC, NUTS

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
    from peers import numpyro_model

    with open(args.data) as f:
        data = json.load(f)
    model = numpyro_model("logistic_regression", data)
    mcmc = MCMC(
        NUTS(model, target_accept_prob=0.8, max_tree_depth=10),
        num_warmup=args.warmup,
        num_samples=args.draws,
        num_chains=args.chains,
        chain_method="vectorized",
        progress_bar=False,
    )
    times, cpu_times = [], []
    for run in range(2):
        start, cpu_start = time.perf_counter(), time.process_time()
        mcmc.run(jax.random.PRNGKey(args.seed + run), extra_fields=("num_steps",))
        jax.block_until_ready(mcmc.get_samples())
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    samples = mcmc.get_samples(group_by_chain=True)
    alpha = np.asarray(samples["alpha"]).reshape(args.chains, args.draws, 1)
    beta = np.asarray(samples["beta"]).reshape(args.chains, args.draws, -1)
    draws = np.concatenate([alpha, beta], axis=2)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    steps = np.asarray(extra["num_steps"]).sum() if "num_steps" in extra else None
    with open(args.out, "w") as f:
        json.dump(draws.tolist(), f)
    print(
        json.dumps(
            {
                "first_run_s": times[0],
                "second_run_s": times[1],
                "first_run_cpu_s": cpu_times[0],
                "second_run_cpu_s": cpu_times[1],
                "leapfrog_steps": None if steps is None else int(steps),
                "numpyro": numpyro.__version__,
                "jax": jax.__version__,
                "XLA_FLAGS": os.environ.get("XLA_FLAGS"),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
