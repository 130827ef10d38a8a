"""Differential tester: random Stan programs (generate.py) evaluated by stanli and by hazel.

For each program seed S+i (i < N) it writes model.stan + data.json, finds 3 seeded unconstrained
points where stanli's log density and gradient are finite, evaluates stanli's `log_prob_grad`
there (Jacobian included, constants of `~` dropped: CmdStan's `lp__`) and hazel's
`hazel log-density model.stan --data data.json --points points.json` at the same points, and
classifies the program:

  match           lp and every gradient component agree to 1e-8 relative (absolute near 0)
  mismatch        some value differs, or hazel fails at a point where stanli is finite
  hazel-rejects   hazel fails before evaluating (parse/check/data/compile error)
  stanli-rejects  stanli fails to compile the program (a generator bug; should be ~0)
  both-error      both reject the program
  no-points       stanli compiles it but finds no 3 finite points (not compared)

Every non-match is saved under --out (default difftest-out/) as <class>/<seed>/ with
model.stan, data.json, points.json, stanli.json, hazel.json (stdout) and hazel.stderr.
--write-fixtures DIR writes each matching program as DIR/NNNN/{model.stan,data.json,expected.json}
(the CI fixture set; crates/hazel-cli/tests/difftest.rs reads it).

    /work/venv/bin/python scripts/difftest/run.py --count 10000 --seed 0 --hazel target/release/hazel
"""

import argparse
import collections
import json
import math
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate import generate  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RTOL = 1e-8
N_POINTS = 3
POINT_SCALE = 2.0
TRIES = 30

HAZEL = None
OUT = None
STRICT_VAR = False


def close(a, b):
    return abs(a - b) <= RTOL * max(1.0, abs(a), abs(b))


def stanli_points(model, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    dim = model.n_unconstrained
    found = []
    scale = POINT_SCALE
    for t in range(TRIES):
        if t and t % 10 == 0:
            scale /= 2
        q = rng.uniform(-scale, scale, size=dim)
        try:
            lp, grad = model.log_prob_grad(q)
        except Exception:
            continue
        if math.isfinite(lp) and all(math.isfinite(g) for g in grad):
            found.append(([float(x) for x in q], float(lp), [float(g) for g in grad]))
            if len(found) == N_POINTS:
                break
    return found


def compare(expected, hazel_rows):
    """(None, None) if all points agree, else (a description of the first difference, its kind).

    Kinds: `error` (hazel fails at a point where stanli is finite), `const-offset` (gradients agree
    and lp differs by the same amount at every point: a constant term kept by one side only),
    `lp` (gradients agree, lp differs by varying amounts), `grad` (some gradient component
    differs)."""
    first = None
    lp_ok = grad_ok = True
    for k, (q, lp, grad) in enumerate(expected):
        row = hazel_rows[k] if k < len(hazel_rows) else None
        if row is None or row.get("lp") is None:
            return "point %d: hazel error: %s" % (k + 1, (row or {}).get("error", "no row")), "error"
        if len(row["grad"]) != len(grad):
            return "point %d: gradient length %d vs %d" % (k + 1, len(row["grad"]), len(grad)), "grad"
        if not close(row["lp"], lp):
            lp_ok = False
            first = first or "point %d: lp hazel %.17g stanli %.17g" % (k + 1, row["lp"], lp)
        for i, (a, b) in enumerate(zip(row["grad"], grad)):
            if not close(a, b):
                grad_ok = False
                first = first or "point %d: grad[%d] hazel %.17g stanli %.17g" % (k + 1, i + 1, a, b)
    if first is None:
        return None, None
    if not grad_ok:
        return first, "grad"
    diffs = [r["lp"] - lp for r, (_, lp, _) in zip(hazel_rows, expected)]
    scale = max(1.0, max(abs(lp) for _, lp, _ in expected))
    if max(diffs) - min(diffs) <= RTOL * scale:
        return first + " (constant offset %.12g)" % diffs[0], "const-offset"
    return first, "lp"


def run_one(seed):
    import stanli
    code, data = generate(seed, STRICT_VAR)
    data_json = json.dumps(data)
    result = {"seed": seed}
    try:
        model = stanli.Model(stan_code=code, data=data_json)
        stanli_error = None
    except Exception as e:  # noqa: BLE001 - any stanli failure is a rejection
        model = None
        stanli_error = str(e)
    expected = stanli_points(model, seed) if model is not None else []
    with tempfile.TemporaryDirectory(prefix="difftest-") as tmp:
        paths = {n: os.path.join(tmp, n) for n in ("model.stan", "data.json", "points.json")}
        with open(paths["model.stan"], "w") as f:
            f.write(code)
        with open(paths["data.json"], "w") as f:
            f.write(data_json)
        if model is not None and len(expected) < N_POINTS:
            result["class"] = "no-points"
            return result
        if model is not None:
            points = [q for q, _, _ in expected]
        else:
            points = [[0.0]]  # stanli cannot tell the dimension; hazel is still checked
        with open(paths["points.json"], "w") as f:
            json.dump(points, f)
        t0 = time.time()
        try:
            proc = subprocess.run([HAZEL, "log-density", paths["model.stan"], "--data", paths["data.json"],
                                   "--points", paths["points.json"]], capture_output=True, text=True,
                                  timeout=60, env=dict(os.environ, NO_COLOR="1"))
            stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired:
            stdout, stderr, rc = "", "timeout after 60 s", -1
        result["hazel_s"] = time.time() - t0
        try:
            rows = json.loads(stdout) if stdout.strip() else None
        except ValueError:
            rows = None
        hazel_compiled = rows is not None
        if model is None:
            # a dimension mismatch on the dummy point still means hazel accepted the program
            hazel_accepts = hazel_compiled or "unconstrained parameters" in stderr
            cls = "stanli-rejects" if hazel_accepts else "both-error"
            why = stanli_error
        elif not hazel_compiled:
            cls, why = "hazel-rejects", stderr.strip()
        else:
            why, kind = compare(expected, rows)
            cls = "match" if why is None else "mismatch"
            result["kind"] = kind
        result["class"] = cls
        result["why"] = why
        if cls == "match":
            result["code"], result["data"], result["expected"] = code, data_json, expected
        if cls != "match" and OUT is not None:
            d = os.path.join(OUT, cls if cls != "mismatch" else "mismatch-" + result["kind"], "%06d" % seed)
            os.makedirs(d, exist_ok=True)
            for n in paths:
                shutil.copy(paths[n], os.path.join(d, n))
            with open(os.path.join(d, "stanli.json"), "w") as f:
                json.dump({"error": stanli_error,
                           "points": [{"lp": lp, "grad": g} for _, lp, g in expected]}, f, indent=1)
            with open(os.path.join(d, "hazel.json"), "w") as f:
                f.write(stdout)
            with open(os.path.join(d, "hazel.stderr"), "w") as f:
                f.write(stderr)
            with open(os.path.join(d, "why.txt"), "w") as f:
                f.write((why or "") + "\n")
    return result


def init(hazel, out, strict_var):
    global HAZEL, OUT, STRICT_VAR
    HAZEL, OUT, STRICT_VAR = hazel, out, strict_var


def write_fixture(directory, k, r):
    d = os.path.join(directory, "%04d" % k)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.stan"), "w") as f:
        f.write(r["code"])
    with open(os.path.join(d, "data.json"), "w") as f:
        f.write(r["data"] + "\n")
    with open(os.path.join(d, "points.json"), "w") as f:
        json.dump([q for q, _, _ in r["expected"]], f)
        f.write("\n")
    import stanli
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump({"generator_seed": r["seed"],
                   "oracle": "stanli %s log_prob_grad (Jacobian, constants of ~ dropped)" % stanli.__version__,
                   "points": [{"q": q, "lp": lp, "grad": g} for q, lp, g in r["expected"]]}, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--hazel", default=os.path.join(ROOT, "target", "release", "hazel"))
    ap.add_argument("--out", default="difftest-out")
    ap.add_argument("--write-fixtures", metavar="DIR")
    ap.add_argument("--max-fixtures", type=int, default=150)
    ap.add_argument("--strict-var", action="store_true",
                    help="generate transformed parameters and model locals that always depend on a parameter")
    args = ap.parse_args()
    if not os.path.exists(args.hazel):
        sys.exit("no hazel binary at %s (cargo build --release -p hazel-cli, or --hazel PATH)" % args.hazel)
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    seeds = range(args.seed, args.seed + args.count)
    counts = collections.Counter()
    kinds = collections.Counter()
    matches = []
    t0 = time.time()
    log = open(os.path.join(out, "results.jsonl"), "w")
    with multiprocessing.Pool(min(args.workers, 2), initializer=init, initargs=(os.path.abspath(args.hazel), out, args.strict_var)) as pool:
        for k, r in enumerate(pool.imap(run_one, seeds, chunksize=4)):
            counts[r["class"]] += 1
            if r["class"] == "mismatch":
                kinds[r["kind"]] += 1
            log.write(json.dumps({x: r.get(x) for x in ("seed", "class", "kind", "why", "hazel_s")}) + "\n")
            if r["class"] == "match" and args.write_fixtures and len(matches) < args.max_fixtures:
                matches.append(r)
            if (k + 1) % 500 == 0:
                print("%d programs, %.0f s: %s" % (k + 1, time.time() - t0, dict(counts)), flush=True)
    log.close()
    elapsed = time.time() - t0
    print("programs: %d (seeds %d..%d), %.1f s" % (args.count, args.seed, args.seed + args.count - 1, elapsed))
    for c in ("match", "mismatch", "hazel-rejects", "stanli-rejects", "both-error", "no-points"):
        print("  %-15s %d" % (c, counts[c]))
        if c == "mismatch":
            for kind, n in sorted(kinds.items()):
                print("    %-13s %d" % (kind, n))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"count": args.count, "seed": args.seed, "seconds": elapsed, "counts": dict(counts),
                   "mismatch_kinds": dict(kinds), "strict_var": args.strict_var}, f, indent=1)
    if args.write_fixtures:
        if os.path.exists(args.write_fixtures):
            shutil.rmtree(args.write_fixtures)
        for k, r in enumerate(matches):
            write_fixture(args.write_fixtures, k, r)
        print("wrote %d fixtures to %s" % (len(matches), args.write_fixtures))


if __name__ == "__main__":
    main()
