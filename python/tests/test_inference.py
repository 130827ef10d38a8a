"""InferenceData from `hazel sample`'s CSV files (`hazel.from_csv`), and ArviZ's summary of it
equal to `hazel summary` on the same files."""

import json
import re
import subprocess

import numpy as np
import pytest

import hazel
from conftest import MODELS, REPO

az = pytest.importorskip("arviz")

EIGHT = REPO / "examples" / "eight_schools"


def cli_sample(hazel_bin, out, program, data=None, *args):
    command = [str(hazel_bin), "sample", str(program), "--output-dir", str(out), "--quiet"]
    if data is not None:
        command += ["--data", str(data)]
    subprocess.run(command + [str(a) for a in args], check=True, capture_output=True)


def hazel_column(arviz_name):
    """ArviZ's `theta[0, 1]` as CmdStan's `theta.1.2`."""
    match = re.fullmatch(r"(.+)\[(.+)\]", arviz_name)
    if not match:
        return arviz_name
    indices = [str(int(i) + 1) for i in match.group(2).split(",")]
    return ".".join([match.group(1)] + indices)


@pytest.fixture(scope="module")
def run(hazel_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("eight")
    cli_sample(hazel_bin, out, EIGHT / "model.stan", EIGHT / "data.json",
               "--chains", 3, "--warmup", 300, "--draws", 200, "--seed", 11, "--save-warmup")
    return out


def test_from_csv_groups_shapes_and_names(run):
    idata = hazel.from_csv(run)
    assert set(idata.groups()) >= {"posterior", "sample_stats"}
    post = idata.posterior
    assert post.sizes["chain"] == 3 and post.sizes["draw"] == 200
    assert post["theta"].shape == (3, 200, 8) and post["mu"].shape == (3, 200)
    assert post["theta"].dims == ("chain", "draw", "theta_dim_0")
    stats = idata.sample_stats
    assert set(stats.data_vars) == {
        "lp", "acceptance_rate", "step_size", "tree_depth", "n_steps", "diverging", "energy"
    }
    assert stats["diverging"].dtype == bool and stats["tree_depth"].dtype == np.int64
    # The same numbers as the CSV columns, in order (theta.k is column theta_dim_0 = k - 1).
    lines = [l for l in (run / "model-2.csv").read_text().splitlines()
             if l and not l.startswith("#")]
    header = lines[0].split(",")
    rows = np.array([[float(x) for x in l.split(",")] for l in lines[1:]])[-200:]
    assert np.array_equal(post["theta"].values[1, :, 4], rows[:, header.index("theta.5")])
    assert np.array_equal(stats["lp"].values[1], rows[:, header.index("lp__")])
    # A glob and a list of paths give the same.
    by_glob = hazel.from_csv(str(run / "model-*.csv"))
    assert np.array_equal(by_glob.posterior["tau"].values, post["tau"].values)


def test_arviz_summary_equals_hazel_summary(run, hazel_bin):
    result = subprocess.run(
        [str(hazel_bin), "summary", "--format", "json"]
        + sorted(str(p) for p in run.glob("*.csv")),
        check=True, capture_output=True, text=True,
    )
    expected = json.loads(result.stdout)
    summary = az.summary(hazel.from_csv(run), round_to="none")
    assert len(summary) == 8 + 2 + 8  # theta_trans, mu, tau, theta
    for name, row in summary.iterrows():
        column = expected[hazel_column(name)]
        for key in ("mean", "sd", "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"):
            np.testing.assert_allclose(row[key], column[key], rtol=1e-9, err_msg=f"{name} {key}")


def test_from_csv_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        hazel.from_csv(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("lp__,x\n1,2,3\n")
    with pytest.raises(hazel.HazelError, match="bad.csv"):
        hazel.from_csv(bad)
