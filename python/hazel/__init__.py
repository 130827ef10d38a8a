"""hazel for Python: Stan programs as BridgeStan-compatible model objects, NUTS draws as
ArviZ InferenceData.

    import hazel
    model = hazel.Model("eight_schools.stan", data="eight_schools.json")
    lp, grad = model.log_density_gradient(model.param_unconstrain(theta))
    idata = model.sample(chains=4, seed=1)
    print(arviz.summary(idata))
"""

from ._hazel import DataError, EvaluationError, HazelError, ModelError, Rng
from ._inference import from_csv
from .model import Model

__version__ = "0.1.0"

__all__ = [
    "Model",
    "from_csv",
    "Rng",
    "HazelError",
    "ModelError",
    "DataError",
    "EvaluationError",
    "__version__",
]
