#!/usr/bin/env python3
"""JAX and stanli peers of bench/src/bin/gradient_vs_jax.rs, which times hazel in the same run.

Protocol: one JSON object per line each way. The script first writes {"config": {...}} (or
{"unavailable": why} when neither peer can be imported, and exits). Then, per request on stdin:
{"setup": {"name", "program", "data", "jax", "q"}} (a Stan program, its data.json, the name of
the JAX translation below, the unconstrained point) builds both peers' models and answers
{"jax": R, "stanli": R} with R = {"lp", "grad"} at the point or {"error"};
{"time": name} times the case's peers once more and answers {"jax": T, "stanli": T} with
T = {"ns_per_grad"} or {"error"}. End of input ends the script.

stanli: Model(stan_file, data).log_prob_grad(q) called from Python (call overhead included),
one thread (threads_per_chain=1), timed with gradient_vs_stanli.time_call (median of 5 batches
of ~0.1 s).

JAX: each model's log density written in jax.numpy on the unconstrained space, with the
Jacobian terms of its constraining transforms and the constants that Stan's `~` drops dropped
(so lp equals stanli's and hazel's exactly, up to rounding); f64 throughout. Timed as
jit(value_and_grad(f)) evaluated n times inside one jitted lax.fori_loop (the point carried
through the loop as q + 1e-300 * grad, which leaves it bit-for-bit unchanged but keeps XLA from
hoisting the evaluation out of the loop), the call's time divided by n, with n chosen so that a
call takes about 20 ms; median of 5 batches as above. The data are closed over (compiled in as
constants). XLA runs on one thread:
XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1 unless XLA_FLAGS
is already set.
"""
import json
import math
import os
import sys

os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradient_vs_stanli import time_call  # noqa: E402


def jax_log_density(kind, d, jnp):
    """(f, arrays): the log density of the case's Stan program as f(q, arrays) of the
    unconstrained point q, and the data arrays it reads."""
    f64 = jnp.float64
    if kind == "logistic":
        # examples/logistic_regression: alpha ~ normal(0, 2.5); beta ~ normal(0, 2.5);
        # y ~ bernoulli_logit(alpha + X * beta).
        arrays = {"X": jnp.asarray(d["X"], dtype=f64), "y": jnp.asarray(d["y"], dtype=f64)}

        def f(q, a):
            X, y = a["X"], a["y"]
            alpha, beta = q[0], q[1:]
            eta = alpha + X @ beta
            prior = -0.5 * (alpha / 2.5) ** 2 - 0.5 * jnp.sum((beta / 2.5) ** 2)
            return prior + jnp.sum(y * eta - jnp.logaddexp(0.0, eta))

        return f, arrays
    if kind == "bnn":
        # examples/bnn: matrix[D, H] W1 (column-major in q), b1, w2, b2, all std_normal;
        # y ~ bernoulli_logit(tanh(X * W1 + b1') * w2 + b2).
        D, H = d["D"], d["H"]
        arrays = {"X": jnp.asarray(d["X"], dtype=f64), "y": jnp.asarray(d["y"], dtype=f64)}

        def f(q, a):
            X, y = a["X"], a["y"]
            W1 = q[: D * H].reshape(H, D).T
            b1 = q[D * H : D * H + H]
            w2 = q[D * H + H : D * H + 2 * H]
            b2 = q[D * H + 2 * H]
            eta = jnp.tanh(X @ W1 + b1) @ w2 + b2
            return -0.5 * jnp.sum(q * q) + jnp.sum(y * eta - jnp.logaddexp(0.0, eta))

        return f, arrays
    if kind == "radon":
        # posteriordb radon_variable_intercept_slope_noncentered: sigma_y, sigma_alpha,
        # sigma_beta > 0 (q holds their logs; Jacobian + log sigma), alpha_raw[J], beta_raw[J],
        # mu_alpha, mu_beta; the likelihood is `target += normal_lpdf(...)`, kept in full.
        J, N = d["J"], d["N"]
        arrays = {
            "idx": jnp.asarray(d["county_idx"], dtype=jnp.int32) - 1,
            "fm": jnp.asarray(d["floor_measure"], dtype=f64),
            "lr": jnp.asarray(d["log_radon"], dtype=f64),
        }

        def f(q, a):
            idx, fm, lr = a["idx"], a["fm"], a["lr"]
            u = q[:3]
            s = jnp.exp(u)
            sigma_y, sigma_a, sigma_b = s[0], s[1], s[2]
            a_raw = q[3 : 3 + J]
            b_raw = q[3 + J : 3 + 2 * J]
            mu_a, mu_b = q[3 + 2 * J], q[4 + 2 * J]
            alpha = mu_a + sigma_a * a_raw
            beta = mu_b + sigma_b * b_raw
            lp = -0.5 * jnp.sum(s * s) + jnp.sum(u)
            lp += -0.5 * (mu_a / 10.0) ** 2 - 0.5 * (mu_b / 10.0) ** 2
            lp += -0.5 * jnp.sum(a_raw * a_raw) - 0.5 * jnp.sum(b_raw * b_raw)
            z = (lr - (alpha[idx] + fm * beta[idx])) / sigma_y
            lp += -0.5 * jnp.sum(z * z) - N * jnp.log(sigma_y) - 0.5 * N * math.log(2 * math.pi)
            return lp

        return f, arrays
    if kind == "eight_schools":
        # examples/eight_schools (non-centred): theta_trans ~ normal(0, 1); mu ~ normal(0, 5);
        # tau ~ cauchy(0, 5) with tau > 0 (q holds log tau); y ~ normal(theta, sigma).
        J = d["J"]
        arrays = {"y": jnp.asarray(d["y"], dtype=f64), "sigma": jnp.asarray(d["sigma"], dtype=f64)}

        def f(q, a):
            y, sigma = a["y"], a["sigma"]
            tt, mu, u = q[:J], q[J], q[J + 1]
            tau = jnp.exp(u)
            theta = tt * tau + mu
            z = (y - theta) / sigma
            return (
                -0.5 * jnp.sum(tt * tt)
                - 0.5 * (mu / 5.0) ** 2
                - jnp.log1p((tau / 5.0) ** 2)
                + u
                - 0.5 * jnp.sum(z * z)
            )

        return f, arrays
    raise ValueError(f"no JAX translation named {kind!r}")


def prepare_jax(job, data):
    """({"lp", "grad"} at the point, a function timing one evaluation in ns)."""
    import time

    import jax
    import jax.numpy as jnp
    import numpy as np

    f, arrays = jax_log_density(job["jax"], data, jnp)
    vg = jax.value_and_grad(f)
    q = jnp.asarray(job["q"], dtype=jnp.float64)
    # The data are closed over, so XLA compiles them in as constants, as hazel's compiled model
    # holds its data (for eight schools this halves JAX's time against passing them as
    # arguments; for the large design matrices it makes no measurable difference).
    lp, grad = jax.jit(lambda q: vg(q, arrays))(q)

    @jax.jit
    def loop(q, n):
        def body(_, carry):
            q, acc = carry
            v, g = vg(q, arrays)
            return q + 1e-300 * g, acc + v

        return jax.lax.fori_loop(0, n, body, (q, jnp.float64(0.0)))

    def call(n):
        out = loop(q, n)
        jax.block_until_ready(out)
        return out

    # Calibrate n so that one call takes about 20 ms.
    call(1)
    n = 1
    while True:
        t0 = time.perf_counter()
        call(n)
        dt = time.perf_counter() - t0
        if dt >= 0.02 or n >= 1 << 24:
            break
        n = min(1 << 24, max(2 * n, int(n * 0.02 / max(dt, 1e-9))))
    q_end, _ = call(n)
    assert np.array_equal(np.asarray(q_end), np.asarray(q)), "the loop moved the point"
    result = {"lp": float(lp), "grad": [float(g) for g in np.asarray(grad)]}
    return result, lambda: time_call(lambda: call(n)) / n


def prepare_stanli(job):
    """({"lp", "grad"} at the point, a function timing one evaluation in ns)."""
    import numpy as np
    import stanli

    model = stanli.Model(stan_file=job["program"], data=job["data"], threads_per_chain=1)
    q = np.asarray(job["q"], dtype=float)
    lp, grad = model.log_prob_grad(q)
    result = {"lp": float(lp), "grad": [float(g) for g in np.asarray(grad)]}
    return result, lambda: time_call(lambda: model.log_prob_grad(q))


def main():
    # Answers go to the original stdout; anything else written to file descriptor 1 (by a
    # library, from C or Python) goes to stderr, so it cannot break the protocol.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def answer(obj):
        answers.write(json.dumps(obj) + "\n")
        answers.flush()

    missing = {}
    config = {"python": sys.version.split()[0], "XLA_FLAGS": os.environ.get("XLA_FLAGS")}
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        config["jax"] = jax.__version__
    except ImportError as e:
        missing["jax"] = f"jax unavailable: {e}"
    try:
        import stanli

        config["stanli"] = stanli.__version__
    except ImportError as e:
        missing["stanli"] = f"stanli unavailable: {e}"
    if len(missing) == 2:
        answer({"unavailable": "; ".join(missing.values())})
        return
    answer({"config": config})
    timers = {}  # case name -> {engine: timer}
    for line in sys.stdin:
        request = json.loads(line)
        if "setup" in request:
            job = request["setup"]
            with open(job["data"]) as fh:
                data = json.load(fh)
            row, timers[job["name"]] = {}, {}
            # stanli first: its OCaml runtime sets up a signal stack of the compile-time
            # SIGSTKSZ when it starts, which the kernel refuses once XLA has enabled AMX
            # state for the process ("Failed to allocate signal stack for domain 0").
            steps = [
                ("stanli", lambda: prepare_stanli(job)),
                ("jax", lambda: prepare_jax(job, data)),
            ]
            for engine, prepare in steps:
                if engine in missing:
                    row[engine] = {"error": missing[engine]}
                    continue
                try:
                    row[engine], timers[job["name"]][engine] = prepare()
                except Exception as e:  # report it and go on with the next engine
                    row[engine] = {"error": f"{type(e).__name__}: {e}"}
            del data
            answer(row)
        elif "time" in request:
            row = {}
            for engine, timer in timers.get(request["time"], {}).items():
                try:
                    row[engine] = {"ns_per_grad": timer()}
                except Exception as e:
                    row[engine] = {"error": f"{type(e).__name__}: {e}"}
            answer(row)
        else:
            answer({"error": f"unknown request {request!r}"})


if __name__ == "__main__":
    main()
