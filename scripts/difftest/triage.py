"""Splits constant-offset mismatches saved by run.py by cause.

A constant offset (gradients agree, lp differs by the same amount at every point) means one side
kept a term the other dropped, or a data-only term differs. This script rewrites each program so
that nothing is dropped on either side (`y ~ f(...)` -> `target += f_lpdf(y | ...)`, `_lupdf` /
`_lupmf` -> `_lpdf` / `_lpmf`, also inside user functions) and evaluates it again:

  user-lpdf  the offset already vanishes when only the `_lupdf` calls inside user functions become
             `_lpdf`: the sides disagree on what a user `_lpdf` called as `~`/`_lupdf` drops
             (stanli 0.24 keeps `-log(sigma)` there when the user `_lpdf` is overloaded)
  dropping   the offset vanishes only with every `~` rewritten: the two sides disagree on which
             constant terms `~` drops (hazel: by dataflow; Stan: by autodiff type)
  other      the offset stays: a data-only value differs (a real bug in a value rule)

    /work/venv/bin/python scripts/difftest/triage.py difftest-out/mismatch-const-offset
"""

import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reduce  # noqa: E402

DISCRETE = {"poisson", "poisson_log", "bernoulli", "bernoulli_logit", "binomial", "binomial_logit",
            "neg_binomial", "neg_binomial_2", "neg_binomial_2_log", "beta_binomial", "categorical",
            "ordered_logistic", "poisson_log_glm", "bernoulli_logit_glm"}
TILDE = re.compile(r"^(\s*)(.+?) ~ (\w+)\((.*)\);\s*$")


def keep_constants(code):
    user_pmf = set(re.findall(r"(\w+)_lpmf\(int", code))
    out = []
    for line in code.split("\n"):
        m = TILDE.match(line)
        if m:
            ind, y, fam, args = m.groups()
            suffix = "lpmf" if fam in DISCRETE or fam in user_pmf else "lpdf"
            line = "%starget += %s_%s(%s | %s);" % (ind, fam, suffix, y, args)
        out.append(line)
    return "\n".join(out).replace("_lupdf(", "_lpdf(").replace("_lupmf(", "_lpmf(")


def main():
    hazel = os.environ.get("HAZEL", os.path.join(reduce.ROOT, "target", "release", "hazel"))
    root = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    counts = collections.Counter()
    cases = sorted(os.listdir(root))[:limit]
    for name in cases:
        case = os.path.join(root, name)
        code = open(os.path.join(case, "model.stan")).read()
        data = open(os.path.join(case, "data.json")).read()
        cls = None
        if "functions {" in code:
            head, sep, rest = code.partition("\ndata {")
            inner = head.replace("_lupdf(", "_lpdf(").replace("_lupmf(", "_lpmf(") + sep + rest
            if inner != code and reduce.evaluate(inner, data, hazel)[0] is None:
                cls, why = "user-lpdf", None
        if cls is None:
            kind, why, _, _ = reduce.evaluate(keep_constants(code), data, hazel)
            cls = "dropping" if kind is None else "other:%s" % kind
        counts[cls] += 1
        with open(os.path.join(case, "triage.txt"), "w") as f:
            f.write("%s %s\n" % (cls, why or ""))
        if kind is not None:
            print(name, cls, (why or "").split("\n")[0], flush=True)
    print(dict(counts))


if __name__ == "__main__":
    main()
