"""Python values to CmdStan JSON: the format hazel reads data, initial values and constrained
parameter values in."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def _encode(value: Any) -> Any:
    """A JSON-ready value in CmdStan's conventions: arrays as nested lists, non-finite reals
    as the strings CmdStan reads ("NaN", "Infinity", "-Infinity"), complex numbers as
    [re, im] pairs, tuples as objects keyed "1", "2", …, booleans as 0/1."""
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return [_encode(v) for v in value.tolist()]
        if np.iscomplexobj(value):
            return _encode(np.stack([value.real, value.imag], axis=-1))
        if value.dtype == bool:
            value = value.astype(np.int64)
        return _encode(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x
    if isinstance(value, (complex, np.complexfloating)):
        return [_encode(value.real), _encode(value.imag)]
    if isinstance(value, tuple):
        return {str(i + 1): _encode(v) for i, v in enumerate(value)}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [_encode(v) for v in value]
    if hasattr(value, "__array__"):
        return _encode(np.asarray(value))
    raise TypeError(f"cannot write a value of type {type(value).__name__} as Stan data")


def dumps(values: Mapping[str, Any]) -> str:
    """A mapping of variable names to values as CmdStan JSON text."""
    return json.dumps(_encode(values), allow_nan=False)


def read(data: Any) -> tuple[str | None, str | None, Path | None]:
    """Data given as a mapping, JSON text or a path: (JSON text, its name in messages, its
    path). A string that is not JSON text (it does not start with `{`) is a path, as in
    BridgeStan."""
    if data is None:
        return None, None, None
    if isinstance(data, Mapping):
        return dumps(data), "data", None
    if isinstance(data, (str, os.PathLike)):
        text = os.fspath(data)
        if isinstance(data, str) and text.lstrip().startswith("{"):
            return text, "data", None
        path = Path(text)
        try:
            return path.read_text(), f"data file {path}", path
        except OSError as error:
            raise FileNotFoundError(f"cannot read data file {path}: {error}") from error
    raise TypeError(
        "data must be a mapping of variable names to values, JSON text or the path of a "
        f"JSON file, not {type(data).__name__}"
    )
