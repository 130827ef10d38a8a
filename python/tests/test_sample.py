"""Model.sample(): the draws `hazel sample` makes with the same seed and settings, bit for bit;
InferenceData groups; Ctrl-C returns what was drawn."""

import os
import signal
import threading
import warnings

import numpy as np
import pytest

import hazel
from conftest import MODELS, REPO, model_for
from test_inference import cli_sample

az = pytest.importorskip("arviz")

EIGHT = REPO / "examples" / "eight_schools"


def assert_same_draws(idata, cli, warmup=False):
    groups = [("posterior", "sample_stats")]
    if warmup:
        groups.append(("warmup_posterior", "warmup_sample_stats"))
    for posterior, stats in groups:
        a, b = getattr(idata, posterior), getattr(cli, posterior)
        assert set(a.data_vars) == set(b.data_vars)
        for name in a.data_vars:
            assert np.array_equal(a[name].values, b[name].values, equal_nan=True), name
        a, b = getattr(idata, stats), getattr(cli, stats)
        assert set(a.data_vars) == set(b.data_vars)
        for name in a.data_vars:
            assert np.array_equal(a[name].values, b[name].values), name


@pytest.mark.parametrize(
    "settings",
    [
        # The defaults (low-rank adaptation from Pathfinder's points), and CmdStan's.
        dict(chains=2, warmup=150, draws=100, seed=7),
        dict(chains=2, warmup=150, draws=100, seed=7, adaptation="stan", init=2),
        dict(chains=3, warmup=120, draws=60, seed=8, thin=2, metric="dense", save_warmup=True,
             adapt_delta=0.9, max_depth=6),
    ],
)
def test_sample_equals_cli(hazel_bin, tmp_path, settings):
    model = hazel.Model(EIGHT / "model.stan", data=EIGHT / "data.json")
    idata = model.sample(progress=False, **settings)
    args = []
    for key, value in settings.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        else:
            args += [flag, value]
    cli_sample(hazel_bin, tmp_path, EIGHT / "model.stan", EIGHT / "data.json", *args)
    cli = hazel.from_csv(tmp_path)
    assert idata.posterior.sizes["draw"] == settings["draws"] // settings.get("thin", 1)
    assert_same_draws(idata, cli, warmup=settings.get("save_warmup", False))
    if settings.get("save_warmup"):
        assert "warmup_posterior" in idata.groups()
        n = settings["warmup"] // settings.get("thin", 1)
        assert idata.warmup_posterior.sizes["draw"] == n


def test_generated_quantities_and_inits_equal_cli(hazel_bin, tmp_path):
    model = model_for("gq_rng")
    inits = {"sigma": 1.5}
    idata = model.sample(chains=2, warmup=100, draws=80, seed=3, inits=inits, progress=False)
    (tmp_path / "inits.json").write_text('{"sigma": 1.5}')
    cli_sample(hazel_bin, tmp_path, MODELS / "gq_rng.stan", None, "--chains", 2, "--warmup",
               100, "--draws", 80, "--seed", 3, "--init", tmp_path / "inits.json")
    cli = hazel.from_csv(sorted(tmp_path.glob("*.csv")))
    assert_same_draws(idata, cli)
    assert idata.posterior["coin"].shape == (2, 80)


def test_transformed_data_draw_from_the_run_seed(hazel_bin, tmp_path):
    code = """
    transformed data { real shift = normal_rng(0, 1); }
    parameters { real x; }
    model { x ~ normal(shift, 1); }
    generated quantities { real s = shift; }
    """
    path = tmp_path / "td.stan"
    path.write_text(code)
    model = hazel.Model(path, seed=1)
    idata = model.sample(chains=1, warmup=50, draws=20, seed=99, progress=False)
    out = tmp_path / "out"
    out.mkdir()
    cli_sample(hazel_bin, out, path, None, "--chains", 1, "--warmup", 50, "--draws", 20,
               "--seed", 99)
    assert_same_draws(idata, hazel.from_csv(out))
    shift = idata.posterior["s"].values
    assert np.all(shift == shift.flat[0])
    assert shift.flat[0] != model.param_constrain(np.zeros(1), include_gq=True,
                                                  rng=model.new_rng(1))[1]


def test_groups_and_data(tmp_path):
    model = hazel.Model(EIGHT / "model.stan", data=EIGHT / "data.json")
    idata = model.sample(chains=2, warmup=100, draws=50, seed=5, progress=False,
                         observed_data=["y"], constant_data={"sigma": [15, 10, 16, 11, 9, 11, 10, 18]},
                         dims={"theta": ["school"]}, coords={"school": list("ABCDEFGH")})
    assert {"posterior", "sample_stats", "observed_data", "constant_data"} <= set(idata.groups())
    assert idata.posterior["theta"].dims == ("chain", "draw", "school")
    assert list(idata.posterior["school"].values) == list("ABCDEFGH")
    assert np.array_equal(idata.observed_data["y"].values, [28, 8, -3, 7, -1, 1, 18, 12])
    assert idata.attrs["seed"] == 5 and idata.attrs["inference_library"] == "hazel"
    with pytest.raises(KeyError, match="nope"):
        model.sample(chains=1, warmup=10, draws=10, seed=1, progress=False,
                     observed_data=["nope"])


def test_ctrl_c_returns_what_was_drawn():
    model = model_for("logistic_regression")
    # Sampling starts after 50 warmup iterations; the interruption comes well after that.
    timer = threading.Timer(4.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.warns(UserWarning, match="interrupted"):
        idata = model.sample(chains=2, warmup=50, draws=10**6, seed=1, progress=False)
    timer.cancel()
    n = idata.posterior.sizes["draw"]
    assert 0 < n < 10**6
    assert np.all(np.isfinite(idata.posterior["alpha"].values))


def test_ctrl_c_before_any_draw_raises():
    model = model_for("logistic_regression")
    timer = threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        model.sample(chains=1, warmup=10**6, draws=10, seed=1, progress=False)
    timer.cancel()


def test_progress_lines(capsys):
    model = hazel.Model(EIGHT / "model.stan", data=EIGHT / "data.json")
    model.sample(chains=2, warmup=100, draws=100, seed=2, progress="lines")
    err = capsys.readouterr().err
    assert "2 chains" in err and "100%" in err


def test_bad_settings():
    model = hazel.Model(EIGHT / "model.stan", data=EIGHT / "data.json")
    with pytest.raises(ValueError, match="seed"):
        model.sample(seed=-5, progress=False)
    with pytest.raises(hazel.HazelError, match="adapt"):
        model.sample(adapt_delta=1.5, chains=1, warmup=10, draws=10, seed=1, progress=False)
    with pytest.raises(hazel.HazelError, match="adaptation"):
        model.sample(adaptation="nutpie", chains=1, warmup=10, draws=10, seed=1, progress=False)
    with pytest.raises(hazel.HazelError, match="learns its own low-rank"):
        model.sample(adaptation="low-rank", metric="dense", chains=1, warmup=10, draws=10,
                     seed=1, progress=False)
    with pytest.raises(hazel.HazelError, match="init"):
        model.sample(init="somewhere", chains=1, warmup=10, draws=10, seed=1, progress=False)
    with pytest.raises(hazel.DataError, match="did you mean"):
        model.sample(inits={"muu": 1.0}, chains=1, warmup=10, draws=10, seed=1, progress=False)
