"""Oracle for hazel's columnar output: pyarrow reads the Parquet files and xarray + ArviZ read
the Zarr store, and both must equal the Stan CSV of the same run (same seed) exactly.

Usage: python check_columnar.py HAZEL_BINARY WORK_DIR
Runs `hazel sample` three times (csv, parquet, zarr) with one seed, then compares:
  * Parquet: column names and order, every value bit-for-bit, warmup rows included, and the
    settings / adaptation results in the file's key-value metadata;
  * Zarr: opened with xr.open_datatree(engine="zarr") and az.InferenceData.from_datatree;
    groups, ArviZ dims (chain, draw, <var>_dim_k), declared shapes, each element against its
    CSV column, sample_stats under ArviZ's names, warmup groups;
  * `hazel summary` prints the same table for the three formats;
  * a fixed_param run: Parquet and Zarr carry the CSV's two sampler columns (`lp__`,
    `accept_stat__`; ArviZ `lp`, `acceptance_rate`) and no others, values equal to the CSV's;
  * a model of 150 parameters (above hazel's LOW_RANK_DENSE_MAX_DIM, 100): the default
    low-rank metric is `diag_e` in the CSV (its diagonal, the exact factors after the timing
    block), and the Parquet metadata and Zarr attributes hold the same diagonal under kind
    `diag` and the same factors under `adaptation.low_rank.*`.
"""
import csv
import json
import pathlib
import subprocess
import sys

import arviz as az
import numpy as np
import pyarrow.parquet as pq
import xarray as xr

HERE = pathlib.Path(__file__).resolve().parent
CHAINS, WARMUP, DRAWS, SEED = 2, 150, 77, 4242

STATS = {  # CSV column -> ArviZ sample_stats name
    "lp__": "lp",
    "accept_stat__": "acceptance_rate",
    "stepsize__": "step_size",
    "treedepth__": "tree_depth",
    "n_leapfrog__": "n_steps",
    "divergent__": "diverging",
    "energy__": "energy",
}


def run(hazel, *args):
    result = subprocess.run([hazel, *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"hazel {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def read_csv(path):
    """Header, rows (floats), config dict, step size of a hazel Stan CSV file."""
    config, rows, header, stepsize = {}, [], None, None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                body = line[1:].strip()
                if body.startswith("Step size ="):
                    stepsize = float(body.split("=")[1])
                elif "=" in body and header is None:
                    key, value = body.split("=", 1)
                    config[key.strip()] = value.replace("(Default)", "").strip()
                continue
            if header is None:
                header = next(csv.reader([line]))
            else:
                rows.append([float(v) for v in line.strip().split(",")])
    return header, np.array(rows), config, stepsize


def check(condition, message):
    if not condition:
        sys.exit(f"FAIL: {message}")


def main():
    hazel, work = sys.argv[1], pathlib.Path(sys.argv[2])
    common = [
        "sample", str(HERE / "model.stan"), "--data", str(HERE / "data.json"),
        "--chains", str(CHAINS), "--warmup", str(WARMUP), "--draws", str(DRAWS),
        "--seed", str(SEED), "--save-warmup", "--quiet",
    ]
    outputs = {}
    for fmt in ["csv", "parquet", "zarr"]:
        out = work / fmt
        outputs[fmt] = run(hazel, *common, "--format", fmt, "--output-dir", str(out))

    csvs = [read_csv(work / "csv" / f"model-{c}.csv") for c in range(1, CHAINS + 1)]
    header = csvs[0][0]

    # Parquet: same columns, same values (warmup rows first), settings as metadata.
    for chain, (hdr, rows, config, stepsize) in enumerate(csvs, start=1):
        table = pq.read_table(work / "parquet" / f"model-{chain}.parquet")
        check(table.column_names == hdr, f"parquet columns {table.column_names} != {hdr}")
        values = np.column_stack([table.column(n).to_numpy() for n in hdr])
        check(values.shape == rows.shape, f"parquet shape {values.shape} != {rows.shape}")
        check(np.array_equal(values, rows), f"chain {chain}: parquet values differ from CSV")
        meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
        check(meta["random.seed"] == str(SEED), f"seed metadata {meta.get('random.seed')}")
        check(meta["method.sample.num_warmup"] == config["num_warmup"], "num_warmup metadata")
        check(meta["id"] == config["id"], "chain id metadata")
        check(float(meta["adaptation.step_size"]) == stepsize, "step size metadata")
        check(int(meta["hazel.warmup_rows"]) == WARMUP, "warmup_rows metadata")
        # 9 parameters: a diagonal metric, or a dense one (the default low-rank metric of a
        # model of at most 100 parameters is written in CmdStan's dense_e form).
        entries = {"diag_e": 9, "dense_e": 81}[config["metric"]]
        check(
            len(meta["adaptation.inv_metric"].split(",")) == entries,
            f"inverse metric metadata ({config['metric']})",
        )

    # Zarr through xarray and ArviZ.
    tree = xr.open_datatree(work / "zarr" / "model.zarr", engine="zarr")
    idata = az.InferenceData.from_datatree(tree)
    groups = set(idata.groups())
    want = {"posterior", "sample_stats", "warmup_posterior", "warmup_sample_stats"}
    check(want <= groups, f"groups {groups}")
    post = idata.posterior
    check(post["B"].dims == ("chain", "draw", "B_dim_0", "B_dim_1"), f"B dims {post['B'].dims}")
    check(post["B"].shape == (CHAINS, DRAWS, 2, 3), f"B shape {post['B'].shape}")
    check(post["mu"].dims == ("chain", "draw"), "mu dims")
    check(post["z"].shape == (CHAINS, DRAWS, 2), "z shape")
    check(list(post["chain"].values) == list(range(1, CHAINS + 1)), "chain coordinate")
    for group, stats_group, first, count in [
        (idata.posterior, idata.sample_stats, WARMUP, DRAWS),
        (idata.warmup_posterior, idata.warmup_sample_stats, 0, WARMUP),
    ]:
        for c, (hdr, rows, _, _) in enumerate(csvs):
            rows = rows[first:first + count]
            for j, name in enumerate(hdr):
                if name in STATS:
                    got = stats_group[STATS[name]].values[c].astype(float)
                else:
                    var, *index = name.split(".")
                    got = group[var].values[(c, slice(None), *[int(i) - 1 for i in index])]
                check(np.array_equal(got, rows[:, j]), f"chain {c + 1} {name} differs in zarr")
    check(idata.sample_stats["diverging"].dtype == bool, "diverging is boolean")
    summary = az.summary(idata, var_names=["mu", "B"])
    check(len(summary) == 7, "ArviZ summarises the posterior")

    # The same summary table from the three formats.
    tables = {
        "csv": run(hazel, "summary", *[str(work / "csv" / f"model-{c}.csv") for c in range(1, CHAINS + 1)]),
        "parquet": run(hazel, "summary", *[str(work / "parquet" / f"model-{c}.parquet") for c in range(1, CHAINS + 1)]),
        "zarr": run(hazel, "summary", str(work / "zarr" / "model.zarr")),
    }
    check(tables["csv"] == tables["parquet"], "summary of parquet differs from csv")
    check(tables["csv"] == tables["zarr"], "summary of zarr differs from csv")
    check(outputs["csv"] == outputs["parquet"] == outputs["zarr"], "sample's summaries differ")
    check_fixed_param(hazel, work / "fixed_param")
    check_large_low_rank(hazel, work / "low_rank")
    print(f"columnar output OK: {CHAINS} chains x ({WARMUP} warmup + {DRAWS}) draws, "
          f"{len(header)} columns equal in csv, parquet and zarr; fixed_param columns too; "
          f"a {LARGE_DIM}-parameter low-rank metric as its diagonal and factors in all three")


def check_fixed_param(hazel, work):
    """fixed_param: the same columns (two sampler columns) and values in the three formats."""
    common = [
        "sample", str(HERE / "model.stan"), "--data", str(HERE / "data.json"),
        "--chains", str(CHAINS), "--draws", "25", "--seed", str(SEED), "--quiet",
        "--algorithm", "fixed_param",
    ]
    for fmt in ["csv", "parquet", "zarr"]:
        run(hazel, *common, "--format", fmt, "--output-dir", str(work / fmt))
    csvs = [read_csv(work / "csv" / f"model-{c}.csv") for c in range(1, CHAINS + 1)]
    check(csvs[0][0][:3] == ["lp__", "accept_stat__", "mu"], f"fixed_param CSV {csvs[0][0][:3]}")
    for chain, (hdr, rows, _, stepsize) in enumerate(csvs, start=1):
        check(stepsize is None, "fixed_param CSV has an adaptation block")
        table = pq.read_table(work / "parquet" / f"model-{chain}.parquet")
        check(table.column_names == hdr, f"fixed_param parquet columns {table.column_names[:4]}")
        values = np.column_stack([table.column(n).to_numpy() for n in hdr])
        check(np.array_equal(values, rows), f"chain {chain}: fixed_param parquet values differ")
        meta = {k.decode() for k in table.schema.metadata}
        check("adaptation.step_size" not in meta, "fixed_param parquet records adaptation")
    tree = xr.open_datatree(work / "zarr" / "model.zarr", engine="zarr")
    idata = az.InferenceData.from_datatree(tree)
    stats = idata.sample_stats
    check(set(stats.data_vars) == {"lp", "acceptance_rate"},
          f"fixed_param sample_stats {sorted(stats.data_vars)}")
    for c, (hdr, rows, _, _) in enumerate(csvs):
        for j, name in enumerate(hdr):
            if name in STATS:
                got = stats[STATS[name]].values[c]
            else:
                var, *index = name.split(".")
                got = idata.posterior[var].values[(c, slice(None), *[int(i) - 1 for i in index])]
            check(np.array_equal(got, rows[:, j]), f"fixed_param chain {c + 1} {name} in zarr")


LARGE_DIM = 150


def comment_row(lines, heading):
    """The numbers of the comment line after the line `heading`."""
    row = lines[lines.index(heading) + 1].lstrip("#").strip()
    return [float(v) for v in row.split(",")] if row else []


def check_large_low_rank(hazel, work):
    """A model of LARGE_DIM parameters: the low-rank metric's diagonal and exact factors are the
    same numbers in the CSV, the Parquet metadata and the Zarr attributes."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "wide.stan").write_text(
        "data { int N; vector[N] sigma; }\nparameters { vector[N] x; }\n"
        "model { x ~ normal(0, sigma); }\n")
    sigma = [0.5 + (i % 7) * 0.25 for i in range(LARGE_DIM)]
    (work / "wide.json").write_text(json.dumps({"N": LARGE_DIM, "sigma": sigma}))
    common = [
        "sample", str(work / "wide.stan"), "--data", str(work / "wide.json"),
        "--chains", str(CHAINS), "--warmup", "150", "--draws", "10", "--seed", str(SEED),
        "--quiet",
    ]
    for fmt in ["csv", "parquet", "zarr"]:
        run(hazel, *common, "--format", fmt, "--output-dir", str(work / fmt))
    root = json.loads((work / "zarr" / "wide.zarr" / "zarr.json").read_text())
    for chain in range(1, CHAINS + 1):
        path = work / "csv" / f"wide-{chain}.csv"
        _, _, config, stepsize = read_csv(path)
        check(config["metric"] == "diag_e", f"large low-rank CSV metric {config['metric']}")
        lines = [line.rstrip("\n") for line in open(path)]
        diagonal = comment_row(lines, "# Diagonal elements of inverse mass matrix:")
        check(len(diagonal) == LARGE_DIM, f"CSV diagonal of {len(diagonal)} values")
        factors = {
            "scale": comment_row(lines, "# Scale s:"),
            "eigenvalues": comment_row(lines, "# Eigenvalues L:"),
        }
        start = lines.index("# Eigenvectors U (columns, one per line):") + 1
        factors["eigenvectors"] = [
            float(v) for line in lines[start:] for v in line.lstrip("#").split(",")]
        rank = len(factors["eigenvalues"])
        check(len(factors["scale"]) == LARGE_DIM, "CSV scale row")
        check(len(factors["eigenvectors"]) == rank * LARGE_DIM, "CSV eigenvector rows")
        # What the diagonal is: s_i^2 (1 + sum_j (l_j - 1) u_ji^2).
        s = np.array(factors["scale"])
        u = np.array(factors["eigenvectors"]).reshape(rank, LARGE_DIM)
        rebuilt = s**2 * (1 + ((np.array(factors["eigenvalues"]) - 1)[:, None] * u**2).sum(0))
        check(np.allclose(rebuilt, diagonal, rtol=1e-12, atol=0), "the diagonal of the factors")
        table = pq.read_table(work / "parquet" / f"wide-{chain}.parquet")
        meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
        attrs = root["attributes"]["adaptation"][str(chain)]
        for where, pairs in [("parquet", meta), ("zarr", attrs)]:
            numbers = lambda key: [float(v) for v in pairs[key].split(",") if v]
            check(pairs["adaptation.metric"] == "diag", f"{where}: metric kind")
            check(float(pairs["adaptation.step_size"]) == stepsize, f"{where}: step size")
            check(numbers("adaptation.inv_metric") == diagonal, f"{where}: the diagonal")
            for name, values in factors.items():
                check(numbers(f"adaptation.low_rank.{name}") == values, f"{where}: {name}")


if __name__ == "__main__":
    main()
