#!/usr/bin/env python3
"""stanli fixtures for the deprecated `integrate_ode_rk45/_bdf/_adams` interface.

Writes crates/hazel-graph/tests/integrate_ode/oracle.json: for every `sho_integrate_*.stan`
program there (damped oscillator, data sho.json) and for the two posteriordb programs of Stan's
benchmark suite that use the old interface, as originally written (`sir_original.stan`,
integrate_ode_rk45; `one_comp_mm_elim_abs_original.stan`, integrate_ode_bdf; data from
../shared/posteriordb/<name>/data.json), stanli's log density (CmdStan's lp__) and gradient at a
few unconstrained points.

Points: sho, numpy default_rng(SEED).uniform(-1, 1) per coordinate (4 points, shared by all sho
programs); the posteriordb programs, the points of corpus/posteriordb/<name>/oracle.json (where
the corpus's ode_* version was evaluated). Rerunning with stanli 0.24.0 reproduces the file bit for bit.

    python3 scripts/ode/make_integrate_ode_fixtures.py
"""

import json
import os

import numpy as np
import stanli

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIR = os.path.join(ROOT, "crates", "hazel-graph", "tests", "integrate_ode")
SHARED = os.path.join(ROOT, "..", "shared", "posteriordb")
CORPUS = os.path.join(ROOT, "corpus", "posteriordb")
POSTERIORDB = [
    ("sir_original.stan", "sir-sir"),
    ("one_comp_mm_elim_abs_original.stan", "one_comp_mm_elim_abs-one_comp_mm_elim_abs"),
]
SEED = 20261124
N_POINTS = 4


def evaluate(program, data_text, points):
    with open(os.path.join(DIR, program)) as f:
        model = stanli.Model(stan_code=f.read(), data=data_text)
    out = []
    for q in points:
        lp, grad = model.log_prob_grad(np.asarray(q, dtype=float))
        out.append({"q": [float(x) for x in q], "log_density": float(lp),
                    "gradient": [float(g) for g in grad]})
    return {"program": program, "n_unconstrained": model.n_unconstrained, "points": out}


def main():
    with open(os.path.join(DIR, "sho.json")) as f:
        sho_data = f.read()
    rng = np.random.default_rng(SEED)
    sho_points = [rng.uniform(-1.0, 1.0, size=4) for _ in range(N_POINTS)]
    fixtures = []
    for program in sorted(os.listdir(DIR)):
        if program.startswith("sho_integrate_") and program.endswith(".stan"):
            fixture = evaluate(program, sho_data, sho_points)
            fixture["data"] = "sho.json"
            fixtures.append(fixture)
    for program, name in POSTERIORDB:
        with open(os.path.join(SHARED, name, "data.json")) as f:
            data = f.read()
        with open(os.path.join(CORPUS, name, "oracle.json")) as f:
            points = [p["q"] for p in json.load(f)["points"]]
        fixture = evaluate(program, data, points)
        fixture["data"] = "../shared/posteriordb/%s/data.json" % name
        fixtures.append(fixture)
    result = {
        "oracle": "stanli %s log_prob_grad (CmdStan lp__: Jacobian included, ~ constants dropped)"
        % stanli.__version__,
        "script": "scripts/ode/make_integrate_ode_fixtures.py",
        "seed": SEED,
        "fixtures": fixtures,
    }
    with open(os.path.join(DIR, "oracle.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    for fx in fixtures:
        print(fx["program"], [round(p["log_density"], 6) for p in fx["points"]])


if __name__ == "__main__":
    main()
