#!/usr/bin/env python3
"""Stan's own ADVI / Pathfinder (a `stan_methods` binary from build.sh) and hazel's on one
posteriordb posterior over several seeds: each run's means in reference standard deviations,
so that hazel's spread can be read against Stan's (the oracle behind the ADVI tolerance of
hazel-cli's `methods_cli` test and the kidiq / sblrc-blr notes in TESTING.md).

    LD_LIBRARY_PATH=<site-packages>/httpstan/lib python3 compare_means.py \\
        STAN_BIN POSTERIOR METHOD SEEDS [key=value ...]

METHOD: meanfield | fullrank | pathfinder; SEEDS like 10-29; key=value are stan_methods'
options (tol_rel_obj=0.0001 iter=30000), given to hazel as --tol-rel-obj 0.0001 --iter 30000.
Needs target/debug/hazel and ../shared/posteriordb (or $HAZEL_POSTERIORDB).
"""
import csv
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[3]
PDB = pathlib.Path(os.environ.get("HAZEL_POSTERIORDB", ROOT / "../shared/posteriordb"))


def deviations(path, reference, skip_first):
    rows = list(csv.reader(line for line in open(path) if not line.startswith("#")))
    names, body = rows[0], [[float(x) for x in r] for r in rows[1:]]
    if skip_first:
        body = body[1:]  # ADVI's mean row
    out = []
    for p in reference:
        i = names.index(p["name"].replace("[", ".").replace("]", "").replace(",", "."))
        mean = sum(r[i] for r in body) / len(body)
        out.append(f"{(mean - p['mean']) / p['sd']:+6.1f}")
    return " ".join(out)


def main(stan_bin, posterior, method, seeds, *options):
    reference = json.load(open(PDB / posterior / "reference.json"))["parameters"]
    data = PDB / posterior / "data.json"
    model = ROOT / "corpus/posteriordb" / posterior / "model.stan"
    first, last = (int(s) for s in seeds.split("-"))
    hazel_options = []
    for kv in options:
        key, value = kv.split("=")
        hazel_options += ["--" + key.replace("_", "-"), value]
    if method in ("meanfield", "fullrank"):
        hazel_method = ["variational", "--algorithm", method]
    else:
        hazel_method = ["pathfinder"]
    print("seed  " + " ".join(p["name"] for p in reference))
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(first, last + 1):
            stan_csv = pathlib.Path(tmp) / "stan.csv"
            ok = subprocess.run([stan_bin, method, str(data), str(seed), str(stan_csv), *options],
                                capture_output=True).returncode == 0
            stan = deviations(stan_csv, reference, method != "pathfinder") if ok else "failed"
            run = subprocess.run([str(ROOT / "target/debug/hazel"), hazel_method[0], str(model),
                                  *hazel_method[1:], "--data", str(data), "--output-dir", tmp,
                                  "--seed", str(seed), "--quiet", *hazel_options],
                                 capture_output=True)
            hazel_csv = pathlib.Path(tmp) / f"model-{hazel_method[0]}.csv"
            hazel = (deviations(hazel_csv, reference, method != "pathfinder")
                     if run.returncode == 0 else "failed")
            print(f"{seed:4}  stan: {stan}   hazel: {hazel}")


if __name__ == "__main__":
    main(*sys.argv[1:])
