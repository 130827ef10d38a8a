#!/usr/bin/env python3
"""Oracle fixtures for hazel's tests, computed with stanli (a CmdStan-equivalent Stan interpreter).

CI has no Python, so every number hazel's tests compare against is committed as JSON. This script
makes those files and can be rerun at any time (the points are seeded, so a rerun with the same
stanli version reproduces the files bit for bit).

Requirements: `pip install stanli==0.24.0 numpy bridgestan==2.9.0` (bridgestan is only the Python
client; stanli supplies the model library). The suite must be at ../shared/posteriordb beside the
repository.

Subcommands (paths are relative to the repository root, which is found from this file's location):

  check     [NAME ...]  compile every corpus program with stanli; for tier-4 posteriors also compare
                        the program's log density and gradient with the original program's oracle
                        (../shared/posteriordb/<name>/oracle.json.gz) and write corpus/posteriordb/STATUS.md
  fixtures  [NAME ...]  write corpus/posteriordb/<name>/oracle.json for tiers 1-3 and every passing
                        tier-4 program, and examples/<name>/oracle.json for every example
  examples  [NAME ...]  only the examples

An oracle.json holds: the unconstrained dimension, constrained parameter names in Stan CSV spelling
(`beta.1`), 5 random unconstrained points (uniform(-s, s) per coordinate, s = 2 halved after
`TRIES_PER_SCALE` non-finite draws), the log density (CmdStan's lp__: Jacobian included, constants of
`~` statements dropped) and its gradient at each point, and the constrained values of parameters,
transformed parameters and deterministic generated quantities at the first point.
"""

import gzip
import json
import math
import os
import re
import sys
import zlib

import numpy as np
import stanli

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.path.abspath(os.path.join(ROOT, "..", "shared", "posteriordb"))
CORPUS = os.path.join(ROOT, "corpus", "posteriordb")
EXAMPLES = os.path.join(ROOT, "examples")

N_POINTS = 5
POINT_SCALE = 2.0
TRIES_PER_SCALE = 40
REL_TOL = 1e-8
# Above this many unconstrained coordinates a fixture keeps fewer points so the JSON stays small.
LARGE_DIM = 2000
N_POINTS_LARGE = 2

# Posteriors whose fixture points use a smaller range, and why (recorded in the fixture).
POINT_SCALE_OVERRIDES = {
    "synthetic_grid_RBF_kernels-kronecker_gp": (
        0.5,
        "cholesky_factor_corr[30]: at uniform(-2, 2) the later rows of L have 1 - (sum of squares) "
        "~1e-19, computed by cancellation, so the log density there is rounding noise (finite "
        "differences are erratic) and no independent implementation can match it; at 0.5 the "
        "transform is well conditioned",
    ),
}

LP_CONVENTION = (
    "CmdStan lp__: Jacobian terms of the constraining transforms included, constant terms of ~ "
    "statements dropped, target += statements kept in full"
)
UNAVAILABLE_VARIANTS = (
    "stanli %s evaluates only propto=true, jacobian=true (its bridgestan interface raises for "
    "propto=False or jacobian=False: the dropped constants and Jacobian terms are baked into its "
    "graph), so no constants-included or Jacobian-free log density is recorded"
)


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1.0)


def seed_for(name):
    """A per-posterior seed that does not depend on the order in which posteriors are processed."""
    return zlib.crc32(name.encode("utf-8"))


def csv_name(bracket_name):
    """`beta[1,2]` (stanli) -> `beta.1.2` (Stan CSV)."""
    return bracket_name.replace("[", ".").replace("]", "").replace(",", ".")


def load_info(name):
    with open(os.path.join(SHARED, name, "info.json")) as f:
        return json.load(f)


def all_posteriors():
    out = []
    for name in sorted(os.listdir(SHARED)):
        if os.path.isfile(os.path.join(SHARED, name, "info.json")):
            out.append((name, load_info(name)["tier"]))
    return out


def read_json(path):
    with open(path) as f:
        return json.load(f)


def build(stan_path, data):
    with open(stan_path) as f:
        code = f.read()
    return stanli.Model(stan_code=code, data=data), code


def random_points(model, n_points, rng_seed, scale=POINT_SCALE, constrainable=None):
    """Seeded uniform(-s, s) points at which the log density and gradient are finite.

    `constrainable(q)` must also hold: CmdStan's output step (write_array) recomputes transformed
    parameters without gradients, and for ODE models that solution differs slightly from the one
    in the log density, so a point can pass one bound check and fail the other."""
    rng = np.random.default_rng(rng_seed)
    dim = model.n_unconstrained
    points = []
    failures = 0
    while len(points) < n_points:
        q = rng.uniform(-scale, scale, size=dim)
        try:
            lp, grad = model.log_prob_grad(q)
            ok = math.isfinite(lp) and bool(np.all(np.isfinite(grad)))
            ok = ok and (constrainable is None or constrainable(q))
        except Exception:  # stanli raises on domain errors (e.g. a failed Cholesky)
            ok = False
        if ok:
            points.append((q, float(lp), [float(g) for g in grad]))
            continue
        failures += 1
        if failures % TRIES_PER_SCALE == 0:
            scale /= 2
            if scale < 1e-6:
                raise RuntimeError("no finite point found")
    return points, scale


FD_COORDINATES = 20
FD_STEP = 1e-5


def finite_difference_check(model, q, grad, rng_seed):
    """Central differences of the log density at up to FD_COORDINATES seeded coordinates of q.

    Not an oracle: it flags fixtures where the log density is badly conditioned at the chosen
    points (a large difference means a test comparing gradients there should be read with care).
    """
    rng = np.random.default_rng(rng_seed + 1)
    dim = len(q)
    coords = sorted(rng.choice(dim, size=min(dim, FD_COORDINATES), replace=False).tolist())
    worst = 0.0
    for i in coords:
        step = np.zeros(dim)
        step[i] = FD_STEP
        try:
            lp_plus = model.log_prob_grad(q + step)[0]
            lp_minus = model.log_prob_grad(q - step)[0]
        except Exception:
            return {"coordinates": coords, "step": FD_STEP, "max_rel_diff": None}
        fd = (lp_plus - lp_minus) / (2 * FD_STEP)
        worst = max(worst, abs(fd - grad[i]) / max(abs(grad[i]), 1.0))
    return {"coordinates": [c + 1 for c in coords], "step": FD_STEP,
            "max_rel_diff": worst if math.isfinite(worst) else None}


# Transformed parameters and generated quantities beyond this many values are cut (first values
# kept, in CSV column order) so that fixtures of models with large derived matrices stay small.
MAX_DERIVED_VALUES = 1000


def constrained_values(bs, q):
    """Parameters, transformed parameters and deterministic generated quantities at q.

    Generated quantities that call _rng functions depend on the RNG stream, so they are evaluated
    with two different RNG seeds and only those that agree are kept.
    """
    names_all = bs.param_names(include_tp=True, include_gq=True)
    n_par = len(bs.param_names())
    n_tp = len(bs.param_names(include_tp=True)) - n_par
    qa = np.asarray(q, dtype=float)
    v1 = bs.param_constrain(qa, include_tp=True, include_gq=True, rng=bs.new_rng(1))
    v2 = bs.param_constrain(qa, include_tp=True, include_gq=True, rng=bs.new_rng(2))

    def value(x):
        return float(x) if math.isfinite(x) else None

    tp_names = names_all[n_par:n_par + n_tp]
    tp_values = [value(x) for x in v1[n_par:n_par + n_tp]]
    gq_names, gq_values = [], []
    for i in range(n_par + n_tp, len(names_all)):
        if v1[i] == v2[i] or (math.isnan(v1[i]) and math.isnan(v2[i])):
            gq_names.append(names_all[i])
            gq_values.append(value(v1[i]))

    def block(names, values):
        out = {"names": names[:MAX_DERIVED_VALUES], "values": values[:MAX_DERIVED_VALUES]}
        if len(names) > MAX_DERIVED_VALUES:
            out["truncated_from"] = len(names)
        return out

    return {
        "parameters": [value(x) for x in v1[:n_par]],
        "transformed_parameters": block(tp_names, tp_values),
        "generated_quantities": block(gq_names, gq_values),
    }


def make_fixture(label, stan_rel, data_rel, data, extra=None):
    stan_path = os.path.join(ROOT, stan_rel)
    model, code = build(stan_path, data)
    dim = model.n_unconstrained
    n_points = N_POINTS if dim <= LARGE_DIM else N_POINTS_LARGE
    seed = seed_for(label)
    start_scale, scale_reason = POINT_SCALE_OVERRIDES.get(label, (POINT_SCALE, None))
    bs = stanli.bridgestan_model(stan_code=code, data=data)

    def constrainable(q):
        try:
            bs.param_constrain(np.asarray(q, dtype=float), include_tp=True)
            return True
        except RuntimeError:
            return False

    csv_names = [csv_name(n) for n in model.constrained_names]
    if csv_names != bs.param_names():
        raise RuntimeError("%s: stanli and its BridgeStan interface disagree on parameter order" % label)
    points, scale = random_points(model, n_points, seed, start_scale, constrainable)
    constrained = constrained_values(bs, points[0][0])
    fd_check = finite_difference_check(model, points[0][0], points[0][2], seed)
    fixture = {
        "name": label,
        "program": stan_rel,
        "data": data_rel,
        "oracle": "stanli %s (log_prob_grad of the program above)" % stanli.__version__,
        "stanli_version": stanli.__version__,
        "lp_convention": LP_CONVENTION,
        "propto_false_and_jacobian_false": None,
        "variants_note": UNAVAILABLE_VARIANTS % stanli.__version__,
        "seed": seed,
        "point_rule": (
            "numpy default_rng(seed).uniform(-s, s) per coordinate, s = %g halved after every %d "
            "points with a non-finite log density or gradient, or whose transformed parameters "
            "fail their declared bounds" % (start_scale, TRIES_PER_SCALE)
        ),
        "point_scale": scale,
        "point_scale_reason": scale_reason,
        "tolerance_note": "stanli reproduces CmdStan's lp__; compare with relative tolerance "
        "|a-b|/max(|a|,|b|,1) of about 1e-8 (ODE and iterative solvers: looser)",
        "n_unconstrained": dim,
        "constrained_names": csv_names,
        "points": [{"q": [float(x) for x in q], "log_density": lp, "gradient": g} for q, lp, g in points],
        "constrained_at_first_point": constrained,
        "finite_difference_check_at_first_point": dict(
            fd_check,
            note="central differences vs the gradient at 20 seeded coordinates (1-based); "
            "a diagnostic of conditioning, not an oracle",
        ),
    }
    if extra:
        fixture.update(extra)
    return fixture


NUMBER_LIST = re.compile(r"\[\s*((?:-?[0-9][0-9.eE+-]*|null)(?:,\s*(?:-?[0-9][0-9.eE+-]*|null))*)\s*\]")


def write_json(path, obj):
    """Indented JSON with every list of numbers on one line (keeps large fixtures compact).

    Floats are written by json (Python's repr: the shortest string that round-trips)."""
    text = json.dumps(obj, indent=1, allow_nan=False)
    text = NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


# ----------------------------------------------------------------------------- check


def check_one(name, tier):
    """Returns a status dict for STATUS.md."""
    st = {"name": name, "tier": tier, "written": False, "compiles": None, "oracle": None, "detail": ""}
    stan_path = os.path.join(CORPUS, name, "model.stan")
    if not os.path.isfile(stan_path):
        return st
    st["written"] = True
    data = read_json(os.path.join(SHARED, name, "data.json"))
    try:
        model, _ = build(stan_path, data)
    except Exception as e:  # compile or data error
        st["compiles"] = False
        st["detail"] = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        return st
    st["compiles"] = True
    expected_dim = load_info(name).get("dimension_unconstrained")
    if expected_dim is not None and model.n_unconstrained != expected_dim:
        st["compiles"] = False
        st["detail"] = "n_unconstrained %d, info.json says %d" % (model.n_unconstrained, expected_dim)
        return st
    if tier != 4:
        # Every quantity in the reference draws must be an output of the program.
        reference = read_json(os.path.join(SHARED, name, "reference.json"))
        with open(stan_path) as f:
            bs = stanli.bridgestan_model(stan_code=f.read(), data=data)
        outputs = set(bs.param_names(include_tp=True, include_gq=True))
        missing = [p["name"] for p in reference["parameters"] if csv_name(p["name"]) not in outputs]
        if missing:
            st["compiles"] = False
            st["detail"] = "reference quantities not in the output: %s" % ", ".join(missing[:5])
        else:
            st["detail"] = "dimension %d as in info.json; all %d reference quantities are outputs" % (
                model.n_unconstrained, len(reference["parameters"]))
        return st
    with gzip.open(os.path.join(SHARED, name, "oracle.json.gz"), "rt") as f:
        oracle = json.load(f)
    if model.n_unconstrained != oracle["n_unconstrained"]:
        st["oracle"] = False
        st["detail"] = "n_unconstrained %d != %d" % (model.n_unconstrained, oracle["n_unconstrained"])
        return st
    grad_reliable = oracle.get("gradient_reliable", True)
    worst_lp = 0.0
    worst_grad = 0.0
    for pt in oracle["points"]:
        try:
            lp, grad = model.log_prob_grad(np.asarray(pt["q"], dtype=float))
        except Exception as e:
            st["oracle"] = False
            st["detail"] = "evaluation failed: %s" % str(e).splitlines()[0][:150]
            return st
        worst_lp = max(worst_lp, rel(float(lp), pt["log_density"]))
        if grad_reliable:
            for a, b in zip(grad, pt["gradient"]):
                worst_grad = max(worst_grad, rel(float(a), b))
    st["oracle"] = worst_lp <= REL_TOL and worst_grad <= REL_TOL
    st["detail"] = "max rel diff lp %.1e, gradient %s" % (
        worst_lp,
        "%.1e" % worst_grad if grad_reliable else "not compared (oracle gradient unreliable)",
    )
    return st


def yesno(v):
    return {True: "yes", False: "**no**", None: "–"}[v]


def write_status(statuses):
    t = [s for s in statuses if s["tier"] < 4]
    t4 = [s for s in statuses if s["tier"] == 4]
    lines = [
        "# Corpus status",
        "",
        "Generated by `python3 scripts/corpus/make_oracle_fixtures.py check` (stanli %s)." % stanli.__version__,
        "",
        "Tiers 1–3: %d/%d programs written, %d compile." % (
            sum(s["written"] for s in t), len(t), sum(bool(s["compiles"]) for s in t)),
        "Tier 4: %d/%d programs written, %d compile, %d match the original program's oracle "
        "(log density and gradient within %g relative at the oracle's 3 points)." % (
            sum(s["written"] for s in t4), len(t4), sum(bool(s["compiles"]) for s in t4),
            sum(bool(s["oracle"]) for s in t4), REL_TOL),
        "Tier-4 folders exist only for programs that match; a tier-4 row with 'program written: no' "
        "has no program in this corpus yet.",
        "",
        "| posterior | tier | program written | stanli compiles | matches tier-4 oracle | detail |",
        "|---|---|---|---|---|---|",
    ]
    for s in statuses:
        lines.append("| `%s` | %d | %s | %s | %s | %s |" % (
            s["name"], s["tier"], yesno(s["written"]), yesno(s["compiles"]),
            yesno(s["oracle"]) if s["tier"] == 4 else "n/a", s["detail"]))
    with open(os.path.join(CORPUS, "STATUS.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ----------------------------------------------------------------------------- main


def example_names():
    out = []
    for name in sorted(os.listdir(EXAMPLES)):
        if os.path.isfile(os.path.join(EXAMPLES, name, "model.stan")):
            out.append(name)
    return out


def fixtures_examples(only):
    for name in example_names():
        if only and name not in only:
            continue
        d = os.path.join(EXAMPLES, name)
        data_files = sorted(f for f in os.listdir(d) if f.startswith("data") and f.endswith(".json"))
        if not data_files:
            print("%s: no data file" % name)
            continue
        # The fixture uses data.json; other data files (data_j20.json, ...) get their own fixture.
        for df in data_files:
            data = read_json(os.path.join(d, df))
            label = name if df == "data.json" else "%s/%s" % (name, df[:-5])
            out = "oracle.json" if df == "data.json" else "oracle_%s.json" % df[len("data_"):-5]
            fx = make_fixture(label, "examples/%s/model.stan" % name, "examples/%s/%s" % (name, df), data)
            write_json(os.path.join(d, out), fx)
            print("%s: wrote %s (dim %d)" % (label, out, fx["n_unconstrained"]), flush=True)


def main(argv):
    if len(argv) < 2 or argv[1] not in ("check", "fixtures", "examples"):
        print(__doc__)
        return 2
    cmd, only = argv[1], set(argv[2:])
    if cmd == "examples":
        fixtures_examples(only)
        return 0
    statuses = []
    for name, tier in all_posteriors():
        if only and name not in only:
            continue
        st = check_one(name, tier)
        statuses.append(st)
        if st["written"]:
            print("%-60s tier %d compiles=%s oracle=%s %s" % (
                name, tier, st["compiles"], st["oracle"], st["detail"]), flush=True)
        if cmd == "fixtures" and st["compiles"] and (tier < 4 or st["oracle"]):
            data = read_json(os.path.join(SHARED, name, "data.json"))
            fx = make_fixture(
                name, "corpus/posteriordb/%s/model.stan" % name,
                "../shared/posteriordb/%s/data.json" % name, data,
                extra={"tier": tier})
            write_json(os.path.join(CORPUS, name, "oracle.json"), fx)
    if cmd == "check" and not only:
        write_status(statuses)
    if cmd == "fixtures" and not only:
        write_status(statuses)
        fixtures_examples(set())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
