"""Seeded evaluation points for the stanli fixture scripts: one loop shared by every
`scripts/*/make_*fixtures.py` that stores `{q, log_density, gradient[, fd_gradient]}` points.

A script imports it with `sys.path.insert(0, <repo>/scripts)`.
"""
import numpy as np


def seeded_points(model, rng, n_points, scale, fd_step=None, max_tries=None, name=""):
    """`n_points` points drawn uniformly from (-scale, scale)^dim by `rng`, skipping points
    the density rejects or where it is not finite (each draw consumes the rng the same way,
    so fixtures reproduce). With `fd_step`, each point also stores central differences of
    the log density (`fd_gradient`)."""
    dim = model.n_unconstrained
    points = []
    tries = 0
    while len(points) < n_points:
        tries += 1
        if max_tries is not None:
            assert tries < max_tries, f"{name}: no finite point"
        q = rng.uniform(-scale, scale, size=dim)
        try:
            lp, grad = model.log_prob_grad(q)
        except RuntimeError:  # a point the density rejects
            continue
        if not np.isfinite(lp):
            continue
        point = {"q": q.tolist(), "log_density": float(lp),
                 "gradient": [float(g) for g in grad]}
        if fd_step is not None:
            fd = []
            for j in range(dim):
                e = np.zeros(dim)
                e[j] = fd_step
                fd.append((model.log_prob_grad(q + e)[0] - model.log_prob_grad(q - e)[0])
                          / (2 * fd_step))
            point["fd_gradient"] = fd
        points.append(point)
    return points
