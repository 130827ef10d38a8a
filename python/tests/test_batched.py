"""A 2-D array of points is evaluated in one call (the batched executor for a static model)
and equals a loop over the rows bit for bit."""

import numpy as np
import pytest

from conftest import FIXTURES, model_for


@pytest.mark.parametrize("name", ["logistic_regression", "constraints", "eight_schools", "dynamic"])
def test_batched_equals_looped(name):
    model = model_for(name)
    d = model.param_unc_num()
    # 21 points: more than one group of the batched executor's 8 lanes, and a partial one.
    points = np.random.default_rng(3).uniform(-1.5, 1.5, size=(21, d))
    lps, grads = model.log_density_gradient(points)
    assert lps.shape == (21,) and grads.shape == (21, d)
    for k, q in enumerate(points):
        lp, grad = model.log_density_gradient(q)
        assert lps[k] == lp
        assert np.array_equal(grads[k], grad)
    assert np.array_equal(model.log_density(points), lps)
    for flags in (dict(propto=False), dict(jacobian=False)):
        batch = model.log_density(points, **flags)
        assert np.array_equal(batch, [model.log_density(q, **flags) for q in points])
    thetas = model.param_constrain(points, include_tp=True)
    assert thetas.shape == (21, model.param_num(include_tp=True))
    for k, q in enumerate(points):
        assert np.array_equal(thetas[k], model.param_constrain(q, include_tp=True))
    back = model.param_unconstrain(thetas[:, : model.param_num()])
    for k in range(21):
        assert np.array_equal(back[k], model.param_unconstrain(thetas[k, : model.param_num()]))
    lp_h, grad_h, hess = model.log_density_hessian(points[:3])
    assert hess.shape == (3, d, d)
    for k in range(3):
        one = model.log_density_hessian(points[k])
        assert lp_h[k] == one[0] and np.array_equal(hess[k], one[2])


def test_batched_evaluation_names_the_failing_point():
    import hazel

    model = hazel.Model(
        code="parameters { real x; } model { if (x > 1) reject(\"x too big: \", x); x ~ normal(0, 1); }"
    )
    points = np.array([[0.0], [0.5], [2.0], [0.1]])
    with pytest.raises(hazel.EvaluationError, match="point 3 of 4.*x too big"):
        model.log_density_gradient(points)


def test_threads_share_a_model():
    """Calls release the GIL and take their own workspaces: Python threads evaluating one model
    at once get the numbers a single thread gets."""
    from concurrent.futures import ThreadPoolExecutor

    model = model_for("logistic_regression")
    d = model.param_unc_num()
    points = np.random.default_rng(4).uniform(-1, 1, size=(64, d))
    serial = [model.log_density_gradient(q) for q in points]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(model.log_density_gradient, points))
    for (lp_a, g_a), (lp_b, g_b) in zip(serial, parallel):
        assert lp_a == lp_b and np.array_equal(g_a, g_b)
