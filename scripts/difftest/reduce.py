"""Reduce a non-matching program saved by run.py to a small one that still fails the same way.

Deletes statements (single lines, or whole `{ ... }` blocks by brace count) as long as stanli
still compiles the program, still finds finite points, and hazel still disagrees in the same way
(the same mismatch kind: error / const-offset / lp / grad, or the same first line of a hazel
rejection). Writes <case>/reduced.stan and prints it with both sides' numbers at the first point.

    /work/venv/bin/python scripts/difftest/reduce.py difftest-out/mismatch-grad/000114 [...]
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def evaluate(code, data_json, hazel, seed=0):
    """(kind, why, expected, rows): kind None = match; 'stanli' = stanli rejects / no points."""
    import stanli
    try:
        model = stanli.Model(stan_code=code, data=data_json)
    except Exception:  # noqa: BLE001
        return "stanli", None, None, None
    if model.n_unconstrained == 0:  # keep at least one parameter
        return "stanli", None, None, None
    expected = run.stanli_points(model, seed)
    if len(expected) < run.N_POINTS:
        return "stanli", None, None, None
    with tempfile.TemporaryDirectory(prefix="reduce-") as tmp:
        for name, text in (("model.stan", code), ("data.json", data_json),
                           ("points.json", json.dumps([q for q, _, _ in expected]))):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        proc = subprocess.run([hazel, "log-density", "model.stan", "--data", "data.json", "--points",
                               "points.json"], cwd=tmp, capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, NO_COLOR="1"))
    try:
        rows = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        rows = None
    if rows is None:
        first = next((l for l in proc.stderr.splitlines() if l.startswith("error")), "")
        return "rejects:" + first, proc.stderr, expected, None
    why, kind = run.compare(expected, rows)
    if kind == "error":
        kind = "error:" + why.split("hazel error:", 1)[1].split(" is ")[-1][:40]
    return kind, why, expected, rows


def candidates(lines):
    """(start, end) line ranges that form one statement or block."""
    out = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s.startswith("}"):
            continue
        if s.endswith("{"):
            depth = 0
            for j in range(i, len(lines)):
                depth += lines[j].count("{") - lines[j].count("}")
                if depth == 0:
                    break
            # a block whose header is a block keyword is only removed whole when it is a statement
            if s.split()[0] in ("functions", "data", "parameters", "model", "transformed"):
                continue
            out.append((i, j + 1))
        else:
            out.append((i, i + 1))
    return out


def reduce(code, data_json, hazel, target_kind):
    lines = code.split("\n")
    changed = True
    while changed:
        changed = False
        for (a, b) in sorted(candidates(lines), key=lambda r: r[0] - r[1]):
            trial = lines[:a] + lines[b:]
            kind, _, _, _ = evaluate("\n".join(trial), data_json, hazel)
            if kind == target_kind:
                lines = trial
                changed = True
                break
    # drop blocks left empty
    text = "\n".join(lines)
    return text


def main():
    hazel = os.environ.get("HAZEL", os.path.join(ROOT, "target", "release", "hazel"))
    for case in sys.argv[1:]:
        code = open(os.path.join(case, "model.stan")).read()
        data_json = open(os.path.join(case, "data.json")).read()
        kind, why, _, _ = evaluate(code, data_json, hazel)
        if kind in (None, "stanli"):
            print("== %s: does not fail (%s)" % (case, kind))
            continue
        small = reduce(code, data_json, hazel, kind)
        kind2, why2, expected, rows = evaluate(small, data_json, hazel)
        with open(os.path.join(case, "reduced.stan"), "w") as f:
            f.write(small)
        print("== %s [%s]\n%s" % (case, kind, small))
        print("-- %s" % (why2 or "").strip().split("\n")[0])
        if expected:
            print("-- point 1: q = %s\n   stanli lp %.17g grad %s" % (expected[0][0], expected[0][1], expected[0][2]))
        if rows:
            print("   hazel  lp %s grad %s" % (rows[0].get("lp"), rows[0].get("grad")))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
