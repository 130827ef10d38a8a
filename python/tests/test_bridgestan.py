"""Every BridgeStan method of hazel.Model against stanli's BridgeStan model on the same
program and data (fixtures by scripts/python/make_fixtures.py)."""

import json

import numpy as np
import pytest

import hazel
from conftest import FIXTURES, model_for

MODELS = sorted(FIXTURES["models"])
# Log densities and gradients: CmdStan's own numbers up to rounding (the stanli oracle's
# tolerance in TESTING.md).
RTOL = 1e-8


def close(actual, expected, rtol=RTOL, atol=1e-10):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


@pytest.fixture(scope="module", params=MODELS)
def case(request):
    return request.param, FIXTURES["models"][request.param], model_for(request.param)


def test_name_and_counts(case):
    name, spec, model = case
    assert model.name() == spec["program"].rsplit("/", 1)[-1][: -len(".stan")] + "_model"
    assert model.param_unc_num() == spec["param_unc_num"]
    for tp in (False, True):
        for gq in (False, True):
            key = f"tp={tp},gq={gq}"
            assert model.param_num(include_tp=tp, include_gq=gq) == spec["param_num"][key]
            assert model.param_names(include_tp=tp, include_gq=gq) == spec["param_names"][key]
    assert model.param_unc_names() == spec["param_unc_names"]


def test_log_density_and_gradient(case):
    _, spec, model = case
    for point in spec["points"]:
        q = np.array(point["q"])
        lp, grad = model.log_density_gradient(q)
        close(lp, point["log_density"])
        close(grad, point["gradient"])
        assert model.log_density(q) == lp
        out = np.empty_like(q)
        lp2, grad2 = model.log_density_gradient(q, out=out)
        assert grad2 is out and lp2 == lp and np.array_equal(out, grad)


def test_other_densities():
    """propto=False keeps the constants of `~`; jacobian=False leaves out the transforms'
    log-Jacobians (variant programs in stanli give both, for `bounded.stan`)."""
    spec = FIXTURES["models"]["bounded"]
    model = model_for("bounded")
    variants = {
        "propto_false": dict(propto=False),
        "jacobian_false": dict(jacobian=False),
        "both_false": dict(propto=False, jacobian=False),
    }
    for point in spec["points"]:
        q = np.array(point["q"])
        for key, flags in variants.items():
            lp, grad = model.log_density_gradient(q, **flags)
            close(lp, point[key]["log_density"])
            close(grad, point[key]["gradient"])
            assert model.log_density(q, **flags) == lp
            _, _, hess = model.log_density_hessian(q, **flags)
            assert np.all(np.isfinite(hess))


def test_param_constrain(case):
    _, spec, model = case
    rng = model.new_rng(1)
    for point in spec["points"]:
        q = np.array(point["q"])
        close(model.param_constrain(q), point["constrained"], atol=1e-12)
        close(model.param_constrain(q, include_tp=True), point["constrained_tp"], atol=1e-12)
        if "constrained_tp_gq" in point:
            close(
                model.param_constrain(q, include_tp=True, include_gq=True, rng=rng),
                point["constrained_tp_gq"],
                atol=1e-12,
            )
            close(
                model.param_constrain(q, include_gq=True, rng=rng),
                point["constrained_gq"],
                atol=1e-12,
            )
        out = np.empty(model.param_num())
        assert model.param_constrain(q, out=out) is out


def test_param_unconstrain(case):
    _, spec, model = case
    for point in spec["points"]:
        close(model.param_unconstrain(np.array(point["constrained"])), point["unconstrained"],
              rtol=1e-9, atol=1e-9)
        close(model.param_unconstrain_json(json.dumps(point["json"])),
              point["unconstrained_json"], rtol=1e-9, atol=1e-9)
        # A mapping works too (BridgeStan converts it to JSON).
        close(model.param_unconstrain_json(point["json"]), point["unconstrained_json"],
              rtol=1e-9, atol=1e-9)


def test_round_trips(case):
    """unconstrain(constrain(q)) = q, and constrain(unconstrain(θ)) = θ. A unit vector's
    unconstrained coordinates are any positive multiple of the vector (Stan's inverse returns
    the unit vector itself), so only the second holds for them."""
    name, spec, model = case
    unit_vectors = {"constraints": "l."}
    free = np.array(
        [not n.startswith(unit_vectors.get(name, "\0")) for n in model.param_unc_names()]
    )
    for point in spec["points"]:
        q = np.array(point["q"])
        theta = model.param_constrain(q)
        close(model.param_unconstrain(theta)[free], q[free], rtol=1e-9, atol=1e-9)
        close(model.param_constrain(model.param_unconstrain(theta)), theta,
              rtol=1e-9, atol=1e-12)


def test_hessian(case):
    _, spec, model = case
    for point in spec["points"]:
        q = np.array(point["q"])
        lp, grad, hess = model.log_density_hessian(q)
        close(lp, point["log_density"])
        close(grad, point["gradient"])
        assert np.array_equal(hess, hess.T)
        # Both sides difference gradients that agree to ~1e-14 with steps of ~6e-6.
        close(hess, point["hessian"], rtol=1e-6, atol=1e-6)
        lp_v, hv = model.log_density_hessian_vector_product(q, np.array(point["v"]))
        close(lp_v, point["log_density"])
        close(hv, point["hvp"], rtol=1e-5, atol=1e-5)


def test_generated_quantities_draw_from_the_rng():
    model = model_for("gq_rng")
    q = np.array([0.5, np.log(2.0)])  # mu = 0.5, sigma = 2
    with pytest.raises(ValueError, match="rng"):
        model.param_constrain(q, include_gq=True)
    a = model.param_constrain(q, include_gq=True, rng=model.new_rng(7))
    b = model.param_constrain(q, include_gq=True, rng=model.new_rng(7))
    assert np.array_equal(a, b)
    rng = model.new_rng(8)
    draws = model.param_constrain(np.tile(q, (4000, 1)), include_gq=True, rng=rng)
    assert draws.shape == (4000, 4)
    assert np.all(draws[:, 0] == 0.5) and np.allclose(draws[:, 1], 2.0)
    y, coin = draws[:, 2], draws[:, 3]
    # y_rep ~ normal(0.5, 2), coin ~ bernoulli(0.25): within 5 standard errors.
    assert abs(y.mean() - 0.5) < 5 * 2 / np.sqrt(4000)
    assert abs(y.var() - 4.0) < 5 * 4.0 * np.sqrt(2 / 4000)
    assert set(np.unique(coin)) <= {0.0, 1.0}
    assert abs(coin.mean() - 0.25) < 5 * np.sqrt(0.25 * 0.75 / 4000)
    # The stream advanced: the next draw differs from a fresh stream's first.
    again = model.param_constrain(q, include_gq=True, rng=rng)
    fresh = model.param_constrain(q, include_gq=True, rng=model.new_rng(8))
    assert not np.array_equal(again, fresh)


def test_hessian_of_a_gaussian_is_exact():
    """A quadratic log density: central differences of its linear gradient are exact up to
    rounding, so the Hessian is −Σ⁻¹."""
    sigma = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
    code = """
    data { vector[3] m; matrix[3, 3] S; }
    parameters { vector[3] x; }
    model { x ~ multi_normal(m, S); }
    """
    model = hazel.Model(code=code, data={"m": np.array([1.0, -1.0, 0.5]), "S": sigma})
    for q in (np.zeros(3), np.array([3.0, -2.0, 10.0])):
        _, grad, hess = model.log_density_hessian(q)
        np.testing.assert_allclose(hess, -np.linalg.inv(sigma), rtol=1e-7, atol=1e-7)
        v = np.array([1.0, 2.0, -1.0])
        _, hv = model.log_density_hessian_vector_product(q, v)
        np.testing.assert_allclose(hv, -np.linalg.inv(sigma) @ v, rtol=1e-6, atol=1e-6)


def test_param_initialize():
    model = model_for("eight_schools")
    q = model.param_initialize(model.new_rng(5), {"mu": 3.0}, init_radius=0.5)
    theta = model.param_constrain(q)
    names = model.param_names()
    assert theta[names.index("mu")] == 3.0
    others = [k for k, n in enumerate(model.param_unc_names()) if n != "mu"]
    assert np.all(np.abs(q[others]) < 0.5)
    again = model.param_initialize(model.new_rng(5), {"mu": 3.0}, init_radius=0.5)
    assert np.array_equal(q, again)
    assert np.isfinite(model.log_density(model.param_initialize(model.new_rng(6))))
    impossible = hazel.Model(code="parameters { real x; } model { reject(\"never\"); }")
    with pytest.raises(hazel.EvaluationError, match="3 tries.*never"):
        impossible.param_initialize(impossible.new_rng(1), max_tries=3)
