"""Draws to ArviZ InferenceData: the groups, names and shapes ArviZ's `from_cmdstan` and
`from_cmdstanpy` give, from the per-chain tables that `Model.sample` and `from_csv` read."""

from __future__ import annotations

import glob
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from . import _hazel

# CmdStan's sampler columns → ArviZ's sample_stats names (as `arviz.from_cmdstan`), with the
# dtype ArviZ uses for each.
SAMPLE_STATS = {
    "lp__": ("lp", np.float64),
    "accept_stat__": ("acceptance_rate", np.float64),
    "stepsize__": ("step_size", np.float64),
    "treedepth__": ("tree_depth", np.int64),
    "n_leapfrog__": ("n_steps", np.int64),
    "divergent__": ("diverging", bool),
    "energy__": ("energy", np.float64),
}


def _import_arviz():
    try:
        import arviz
    except ImportError as error:  # pragma: no cover - arviz is a dependency
        raise ImportError(
            "hazel returns ArviZ InferenceData: install ArviZ (`pip install 'arviz<1'`)"
        ) from error
    if not hasattr(arviz, "InferenceData"):  # pragma: no cover
        raise ImportError(
            f"ArviZ {arviz.__version__} has no InferenceData (ArviZ 1.x replaced it by "
            "xarray's DataTree): install `arviz<1`"
        )
    return arviz


def _common_length(chains: list[dict], table: str) -> int:
    lengths = [c[table + "_stats"].shape[1] for c in chains]
    return min(lengths) if lengths else 0


def _phase(chains: list[dict], table: str, n: int, variables):
    """(values by variable, statistics by ArviZ name) of one phase, `n` draws per chain."""
    values = np.stack([c[table + "_values"][:, :n] for c in chains])  # chain, column, draw
    stats = np.stack([c[table + "_stats"][:, :n] for c in chains])
    posterior = {}
    for name, shape, columns in variables:
        array = values[:, columns, :]  # chain, element (C order), draw
        posterior[name] = np.moveaxis(array, 2, 1).reshape(
            (len(chains), n, *[int(s) for s in shape])
        )
    sample_stats = {}
    for k, stat in enumerate(chains[0]["stat_names"]):
        arviz_name, dtype = SAMPLE_STATS.get(stat, (stat.rstrip("_"), np.float64))
        sample_stats[arviz_name] = stats[:, k, :].astype(dtype)
    return posterior, sample_stats


def _data_group(spec, data: Mapping[str, Any], what: str):
    """`observed_data=`/`constant_data=`: names of data variables (read from the model's
    data) or a mapping of names to values."""
    if spec is None:
        return None
    if isinstance(spec, str):
        spec = [spec]
    if isinstance(spec, Mapping):
        return {k: np.asarray(v) for k, v in spec.items()}
    group = {}
    for name in spec:
        if name not in data:
            raise KeyError(f"{what}: `{name}` is not in the model's data")
        group[name] = np.asarray(data[name])
    return group


def to_inference_data(
    chains: list[dict],
    *,
    data: Optional[Mapping[str, Any]] = None,
    observed_data=None,
    constant_data=None,
    coords: Optional[Mapping[str, Any]] = None,
    dims: Optional[Mapping[str, Sequence[str]]] = None,
    attrs: Optional[Mapping[str, Any]] = None,
):
    """InferenceData of per-chain tables: each a dict with `chain_id`, `stat_names` (the
    sampler's `…__` columns), `names` (the model's output columns), `sampling_stats` and
    `sampling_values` (columns × draws), `warmup_stats` and `warmup_values` (the same for
    saved warmup draws), `stepsize` and `inv_metric` (or None).

    Chains that stopped early keep only their common number of draws (InferenceData is
    rectangular); chains without draws are left out. Both with a warning.
    """
    az = _import_arviz()
    kept = [c for c in chains if c["sampling_stats"].shape[1] > 0]
    if len(kept) < len(chains):
        missing = [c["chain_id"] for c in chains if c not in kept]
        warnings.warn(f"chains {missing} have no draws and are left out", stacklevel=3)
    if not kept:
        raise ValueError("no chain has draws")
    n = _common_length(kept, "sampling")
    lengths = {c["chain_id"]: c["sampling_stats"].shape[1] for c in kept}
    if len(set(lengths.values())) > 1:
        warnings.warn(
            f"the chains have different numbers of draws ({lengths}): keeping the first {n} "
            "of each",
            stacklevel=3,
        )
    variables = _hazel.variables(kept[0]["names"])
    posterior, sample_stats = _phase(kept, "sampling", n, variables)
    groups = {"posterior": posterior, "sample_stats": sample_stats}
    n_warmup = _common_length(kept, "warmup")
    if n_warmup > 0:
        warmup_posterior, warmup_stats = _phase(kept, "warmup", n_warmup, variables)
        groups["warmup_posterior"] = warmup_posterior
        groups["warmup_sample_stats"] = warmup_stats
    data = data or {}
    observed = _data_group(observed_data, data, "observed_data")
    constant = _data_group(constant_data, data, "constant_data")
    if observed:
        groups["observed_data"] = observed
    if constant:
        groups["constant_data"] = constant
    from . import __version__

    all_attrs = {"inference_library": "hazel", "inference_library_version": __version__}
    all_attrs.update(attrs or {})
    idata = az.from_dict(
        **groups,
        save_warmup=n_warmup > 0,
        coords=coords,
        dims=dims,
        attrs=all_attrs,
    )
    return idata


def _paths(paths: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]) -> list[str]:
    """CSV paths from a path, a directory (its `*.csv` files), a glob pattern or a list."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found = []
    for p in paths:
        text = os.fspath(p)
        if os.path.isdir(text):
            found.extend(sorted(glob.glob(os.path.join(text, "*.csv"))))
        elif any(ch in text for ch in "*?["):
            found.extend(sorted(glob.glob(text)))
        else:
            found.append(text)
    if not found:
        raise FileNotFoundError(f"no Stan CSV files in {paths!r}")
    return found


def from_csv(
    paths: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
    *,
    coords: Optional[Mapping[str, Any]] = None,
    dims: Optional[Mapping[str, Sequence[str]]] = None,
):
    """InferenceData of the Stan CSV files of a run (`hazel sample`, or CmdStan's), one file
    per chain: a list of paths, a directory (its ``*.csv`` files) or a glob pattern. Saved
    warmup draws become ``warmup_posterior`` / ``warmup_sample_stats``. The files are read by
    the reader ``hazel summary`` uses.
    """
    files = _paths(paths)
    chains = _hazel.read_csv(files)
    return to_inference_data(
        chains, coords=coords, dims=dims, attrs={"source_files": [str(Path(f)) for f in files]}
    )
