"""A small HMC sampler written in Python, driving only log_density_gradient and
param_constrain (what nutpie or BlackJAX would use), recovers a known posterior."""

import numpy as np

from conftest import model_for


def hmc(model, n_iter, step, n_leapfrog, seed):
    rng = np.random.default_rng(seed)
    q = np.zeros(model.param_unc_num())
    lp, grad = model.log_density_gradient(q)
    draws = np.empty((n_iter, model.param_unc_num()))
    accepted = 0
    for it in range(n_iter):
        p = rng.normal(size=q.shape)
        h0 = lp - 0.5 * p @ p
        q1, p1, grad1 = q.copy(), p + 0.5 * step * grad, grad
        steps = rng.integers(n_leapfrog // 2, n_leapfrog + 1)
        for s in range(steps):
            q1 = q1 + step * p1
            lp1, grad1 = model.log_density_gradient(q1)
            if s < steps - 1:
                p1 = p1 + step * grad1
        p1 = p1 + 0.5 * step * grad1
        h1 = lp1 - 0.5 * p1 @ p1
        if np.log(rng.uniform()) < h1 - h0:
            q, lp, grad = q1, lp1, grad1.copy()
            accepted += 1
        draws[it] = q
    return draws, accepted / n_iter


def batch_mcse(x, batches=40):
    """Monte Carlo standard error of the mean of x by batch means."""
    means = np.array([b.mean() for b in np.array_split(x, batches)])
    return means.std(ddof=1) / np.sqrt(batches)


def test_python_hmc_recovers_the_posterior():
    # mu ~ normal(1, 2), sigma ~ gamma(3, 2): E mu = 1, Var mu = 4, E sigma = 1.5,
    # Var sigma = 0.75; sampled on (mu, log sigma) with the Jacobian.
    model = model_for("gq_rng")
    draws, acceptance = hmc(model, n_iter=6000, step=0.25, n_leapfrog=16, seed=42)
    assert acceptance > 0.6
    theta = model.param_constrain(draws[500:])
    mu, sigma = theta[:, 0], theta[:, 1]
    for values, mean, var in ((mu, 1.0, 4.0), (sigma, 1.5, 0.75)):
        assert abs(values.mean() - mean) < 4 * batch_mcse(values)
        second = (values - mean) ** 2
        assert abs(second.mean() - var) < 4 * batch_mcse(second)
