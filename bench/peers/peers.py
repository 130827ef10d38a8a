"""hazel side by side with its peers on the same models, data and sampler settings.

Engines (each optional; one that is not installed is skipped with a note):
  hazel    the `hazel` binary (release build): `hazel sample`, `hazel log-density`
  stanli   the same Stan program through stanli (Stan's math library, CmdStan's NUTS)
  numpyro  numpyro NUTS on JAX (CPU), for models with a translation below
  nutpie   nutpie on a PyMC model, for models with a translation below

Per model and engine the table gives: wall time including compilation/preparation, sampling
time (warmup + draws of all chains: hazel's process wall time less its preparation, measured
as the wall time of `hazel log-density` on one point; the sampling call for the others, where
numpyro's includes the JIT compilation of its sampler, which it redoes on every run), the minimum bulk ESS over the
model's parameters (ArviZ, the same for every engine), ESS per second of sampling, hazel's ESS/s
divided by the peer's, and the time of one log density + gradient evaluation (hazel: from
`hazel log-density` on many points, startup subtracted; stanli: `log_prob_grad` from Python,
so it includes the call overhead; JAX: the jitted value_and_grad of numpyro's potential).

Run through run.sh, which prepares the environment. Usage:
  python3 peers.py --hazel PATH --repo PATH [--chains 4] [--warmup 1000] [--draws 1000]
                   [--seed 1] [--only NAME ...] [--gradient-evals 2000]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def note(message):
    print(f"note: {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- models

EXAMPLES = ["bernoulli", "eight_schools", "logistic_regression", "poisson_gamma",
            "truncated_normal", "missing_data", "bnn"]
POSTERIORS = ["kidiq-kidscore_interaction", "earnings-earn_height", "arK-arK",
              "gp_pois_regr-gp_regr"]


def cases(repo):
    out = []
    for name in EXAMPLES:
        d = os.path.join(repo, "examples", name)
        out.append((name, os.path.join(d, "model.stan"), os.path.join(d, "data.json")))
    suite = os.environ.get("HAZEL_POSTERIORDB", os.path.join(repo, "..", "shared", "posteriordb"))
    for name in POSTERIORS:
        program = os.path.join(repo, "corpus", "posteriordb", name, "model.stan")
        data = os.path.join(suite, name, "data.json")
        if os.path.exists(program) and os.path.exists(data):
            out.append((name, program, data))
        else:
            note(f"{name}: program or data not found, skipped")
    return out


def numpyro_model(name, data):
    """A numpyro translation of the Stan program, or None."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    if name == "bernoulli":
        y = jnp.array(data["y"])

        def model():
            theta = numpyro.sample("theta", dist.Beta(1.0, 1.0))
            numpyro.sample("y", dist.Bernoulli(probs=theta), obs=y)
        return model
    if name == "eight_schools":
        y, sigma = jnp.array(data["y"], dtype=float), jnp.array(data["sigma"], dtype=float)

        def model():
            theta_trans = numpyro.sample("theta_trans", dist.Normal(0.0, 1.0).expand([len(data["y"])]))
            mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
            tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
            numpyro.sample("y", dist.Normal(theta_trans * tau + mu, sigma), obs=y)
        return model
    if name == "logistic_regression":
        X, y = jnp.array(data["X"], dtype=float), jnp.array(data["y"])

        def model():
            alpha = numpyro.sample("alpha", dist.Normal(0.0, 2.5))
            beta = numpyro.sample("beta", dist.Normal(0.0, 2.5).expand([data["K"]]))
            numpyro.sample("y", dist.Bernoulli(logits=alpha + X @ beta), obs=y)
        return model
    return None


def pymc_model(name, data):
    """A PyMC translation of the Stan program, or None."""
    import pymc as pm

    if name == "bernoulli":
        with pm.Model() as model:
            theta = pm.Beta("theta", 1.0, 1.0)
            pm.Bernoulli("y", p=theta, observed=np.array(data["y"]))
        return model
    if name == "eight_schools":
        with pm.Model() as model:
            theta_trans = pm.Normal("theta_trans", 0.0, 1.0, shape=len(data["y"]))
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfCauchy("tau", 5.0)
            pm.Normal("y", theta_trans * tau + mu, np.array(data["sigma"], dtype=float),
                      observed=np.array(data["y"], dtype=float))
        return model
    if name == "logistic_regression":
        X = np.array(data["X"], dtype=float)
        with pm.Model() as model:
            alpha = pm.Normal("alpha", 0.0, 2.5)
            beta = pm.Normal("beta", 0.0, 2.5, shape=data["K"])
            pm.Bernoulli("y", logit_p=alpha + X @ beta, observed=np.array(data["y"]))
        return model
    return None


# ----------------------------------------------------------------------------- ESS

def min_ess_bulk(draws):
    """Minimum bulk ESS over columns of a (chains, draws, columns) array (ArviZ)."""
    import arviz as az
    ess = [float(az.ess(np.ascontiguousarray(draws[:, :, j]), method="bulk"))
           for j in range(draws.shape[2]) if np.ptp(draws[:, :, j]) > 0]
    return min(ess) if ess else float("nan")


# ----------------------------------------------------------------------------- engines

def run_hazel(args, name, program, data_path, workdir):
    out_dir = os.path.join(workdir, f"hazel-{name}")
    cmd = [args.hazel, "sample", program, "--data", data_path, "--output-dir", out_dir,
           "--chains", str(args.chains), "--warmup", str(args.warmup), "--draws", str(args.draws),
           "--seed", str(args.seed), "--quiet"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
    chains, sampling = [], 0.0
    for chain in range(1, args.chains + 1):
        path = os.path.join(out_dir, f"model-{chain}.csv")
        header, rows, warm, samp = None, [], 0.0, 0.0
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    if "seconds (Warm-up)" in line:
                        warm = float(line.split(":")[1].split()[0])
                    elif "seconds (Sampling)" in line:
                        samp = float(line.split()[1])
                    continue
                if header is None:
                    header = line.strip().split(",")
                    continue
                rows.append([float(v) for v in line.split(",")])
        values = np.array(rows)
        keep = [i for i, h in enumerate(header) if not h.endswith("__")]
        chains.append(values[:, keep])
        sampling = max(sampling, warm + samp)
    return wall, sampling, min_ess_bulk(np.stack(chains))


def hazel_gradient_seconds(args, program, data_path, dim, workdir):
    """Seconds per log density + gradient, (t(n + 1 points) - t(1 point)) / n, and t(1 point):
    the preparation (start, parse, check, lowering with the data) plus one evaluation."""
    rng = np.random.default_rng(0)

    def timed(n):
        points = os.path.join(workdir, f"points-{n}.json")
        with open(points, "w") as f:
            json.dump(rng.uniform(-0.5, 0.5, size=(n, dim)).tolist(), f)
        start = time.perf_counter()
        done = subprocess.run([args.hazel, "log-density", program, "--data", data_path,
                               "--points", points], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1])
        return time.perf_counter() - start

    n = args.gradient_evals
    one = min(timed(1) for _ in range(3))
    return max(min(timed(n + 1) for _ in range(2)) - one, 0.0) / n, one


def run_stanli(args, program, data_path):
    import stanli
    with open(data_path) as f:
        data = f.read()
    start = time.perf_counter()
    model = stanli.Model(stan_file=program, data=data, seed=args.seed)
    prep = time.perf_counter() - start
    start = time.perf_counter()
    fit = model.sample(chains=args.chains, seed=args.seed, warmup=args.warmup,
                       samples=args.draws, refresh=0, parallel_chains=args.chains)
    sampling = time.perf_counter() - start
    draws = np.asarray(fit.draws())
    return prep + sampling, sampling, min_ess_bulk(draws), model


def stanli_gradient_seconds(model, dim, n):
    rng = np.random.default_rng(0)
    points = rng.uniform(-0.5, 0.5, size=(n, dim))
    model.log_prob_grad(points[0])
    start = time.perf_counter()
    for q in points:
        model.log_prob_grad(q)
    return (time.perf_counter() - start) / n


def run_numpyro(args, name, data):
    import jax
    from numpyro.infer import MCMC, NUTS
    model = numpyro_model(name, data)
    if model is None:
        return None
    mcmc = MCMC(NUTS(model, target_accept_prob=0.8), num_warmup=args.warmup,
                num_samples=args.draws, num_chains=args.chains, chain_method="parallel",
                progress_bar=False)
    # numpyro traces and compiles the sampler inside `run` (again on every run with parallel
    # chains), so its sampling time includes that compilation.
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(args.seed))
    wall = sampling = time.perf_counter() - start
    samples = mcmc.get_samples(group_by_chain=True)
    columns = [np.asarray(v).reshape(args.chains, args.draws, -1) for v in samples.values()]
    return wall, sampling, min_ess_bulk(np.concatenate(columns, axis=2))


def jax_gradient_seconds(args, name, data, n):
    import jax
    from numpyro.infer.util import initialize_model
    model = numpyro_model(name, data)
    if model is None:
        return None
    info = initialize_model(jax.random.PRNGKey(0), model)
    potential = info.potential_fn
    params = info.param_info.z
    value_and_grad = jax.jit(jax.value_and_grad(potential))
    jax.block_until_ready(value_and_grad(params))
    start = time.perf_counter()
    for _ in range(n):
        out = value_and_grad(params)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / n


def run_nutpie(args, name, data):
    import nutpie
    model = pymc_model(name, data)
    if model is None:
        return None
    start = time.perf_counter()
    compiled = nutpie.compile_pymc_model(model)
    prep = time.perf_counter() - start
    start = time.perf_counter()
    trace = nutpie.sample(compiled, draws=args.draws, tune=args.warmup, chains=args.chains,
                          seed=args.seed, progress_bar=False)
    sampling = time.perf_counter() - start
    posterior = trace.posterior
    columns = [np.asarray(posterior[v]).reshape(args.chains, args.draws, -1)
               for v in posterior.data_vars]
    return prep + sampling, sampling, min_ess_bulk(np.concatenate(columns, axis=2))


# ----------------------------------------------------------------------------- main

def available(module):
    try:
        __import__(module)
        return True
    except Exception as error:  # an install that imports badly is as good as absent
        note(f"{module} is not usable ({error}); its column is skipped")
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hazel", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gradient-evals", type=int, default=2000)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    # numpyro runs chains in parallel only on as many host devices as chains.
    os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={args.chains}")
    have = {m: available(m) for m in ["stanli", "numpyro", "nutpie"]}

    rows = []
    with tempfile.TemporaryDirectory(prefix="hazel-peers-") as workdir:
        for name, program, data_path in cases(args.repo):
            if args.only and name not in args.only:
                continue
            with open(data_path) as f:
                data = json.load(f)
            results = {}
            try:
                results["hazel"] = run_hazel(args, name, program, data_path, workdir)
            except Exception as error:
                note(f"{name}: hazel failed: {error}")
                continue
            stanli_model = None
            if have["stanli"]:
                try:
                    wall, sampling, ess, stanli_model = run_stanli(args, program, data_path)
                    results["stanli"] = (wall, sampling, ess)
                except Exception as error:
                    note(f"{name}: stanli failed: {error}")
            if have["numpyro"]:
                try:
                    r = run_numpyro(args, name, data)
                    if r:
                        results["numpyro"] = r
                except Exception as error:
                    note(f"{name}: numpyro failed: {error}")
            if have["nutpie"]:
                try:
                    r = run_nutpie(args, name, data)
                    if r:
                        results["nutpie"] = r
                except Exception as error:
                    note(f"{name}: nutpie failed: {error}")
            # Gradient cost per evaluation. The dimension comes from hazel's answer to a
            # one-value point ("... but the model has D unconstrained parameters").
            grads = {}
            dim = None
            probe_file = os.path.join(workdir, "probe.json")
            with open(probe_file, "w") as f:
                json.dump([[0.0]], f)
            probe = subprocess.run([args.hazel, "log-density", program, "--data", data_path,
                                    "--points", probe_file], capture_output=True, text=True)
            if probe.returncode == 0:
                dim = 1
            elif "the model has " in probe.stderr:
                dim = int(probe.stderr.split("the model has ")[1].split()[0])
            if dim:
                try:
                    grads["hazel"], prep = hazel_gradient_seconds(args, program, data_path, dim, workdir)
                    # The chains' own timings understate the run when chains share cores, so
                    # hazel's sampling time is the process's wall time less its preparation.
                    wall, _, ess = results["hazel"]
                    results["hazel"] = (wall, max(wall - prep, 1e-3), ess)
                except Exception as error:
                    note(f"{name}: hazel log-density failed: {error}")
                if stanli_model is not None:
                    grads["stanli"] = stanli_gradient_seconds(stanli_model, dim, min(args.gradient_evals, 2000))
                if have["numpyro"]:
                    try:
                        g = jax_gradient_seconds(args, name, data, args.gradient_evals)
                        if g:
                            grads["numpyro"] = g
                    except Exception as error:
                        note(f"{name}: JAX gradient failed: {error}")
            hazel_rate = results["hazel"][2] / results["hazel"][1]
            for engine, (wall, sampling, ess) in results.items():
                rate = ess / sampling if sampling > 0 else float("nan")
                rows.append((name, engine, wall, sampling, ess, rate,
                             hazel_rate / rate if engine != "hazel" else float("nan"),
                             grads.get(engine)))
            print(f"done: {name}", file=sys.stderr, flush=True)

    print(f"\nchains {args.chains}, warmup {args.warmup}, draws {args.draws}, seed {args.seed}\n")
    print("| model | engine | wall s (incl. prep) | sampling s | min bulk ESS | ESS/s "
          "| hazel ESS/s ÷ peer | gradient µs/eval |")
    print("|---|---|---|---|---|---|---|---|")
    for name, engine, wall, sampling, ess, rate, ratio, grad in rows:
        ratio_text = "" if ratio != ratio else f"{ratio:.2f}"
        grad_text = "" if grad is None else ("below timer noise" if grad == 0 else f"{grad * 1e6:.2f}")
        print(f"| {name} | {engine} | {wall:.2f} | {sampling:.2f} | {ess:.0f} | {rate:.0f} "
              f"| {ratio_text} | {grad_text} |")


if __name__ == "__main__":
    main()
