"""Creating tensors: arange, linspace, meshgrid.

Functions without tensor inputs return Tensors, except inside `program_guard` (or after
`enable_static()`), where they append an op, as `fluidgrad.full` does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import apply_op, is_tensor
from ..indexing import constant, create  # noqa: F401  (shared with search.py and manipulation.py)

from ..framework import Variable, normalize_dtype
from ..framework.dtypes import get_default_dtype

__all__ = ["arange", "linspace", "meshgrid"]


def _number(value: Any) -> Any:
    if isinstance(value, Variable) or is_tensor(value):
        if is_tensor(value):
            return value.item()
        raise TypeError(f"arange/linspace: bounds must be numbers in static mode, got the Variable {value.name}")
    return value


def arange(start: Any = 0, end: Any = None, step: Any = 1, dtype: Any = None, name: str | None = None) -> Any:
    """[start, end) by step; `arange(n)` counts 0..n-1. Integers give int64, else the default float dtype."""
    start, end, step = _number(start), _number(end), _number(step)
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, end, step))
        dtype = "int64" if ints else get_default_dtype()
    start, end, step = (int(v) if isinstance(v, (int, np.integer)) else float(v) for v in (start, end, step))
    return create("range", {"start": start, "end": end, "step": step, "dtype": normalize_dtype(dtype)})


def linspace(start: float, stop: float, num: int, dtype: Any = None, name: str | None = None) -> Any:
    """`num` evenly spaced values from `start` to `stop`, both included (the default float dtype unless given)."""
    return create("linspace", {"start": float(_number(start)), "stop": float(_number(stop)),
                               "num": int(_number(num)), "dtype": normalize_dtype(dtype or get_default_dtype())})


def meshgrid(*args: Any, indexing: str = "ij", name: str | None = None) -> list[Any]:
    """Coordinate grids of 1-D inputs ('ij': the i-th input varies along axis i; 'xy' swaps the
    first two axes, as NumPy does). Built from reshape and expand, so differentiable twice."""
    xs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for x in xs:
        if len(x.shape) > 1:
            raise ValueError(f"meshgrid: inputs must be 0-D or 1-D, got shape {list(x.shape)}")
    sizes = [x.shape[0] if len(x.shape) else 1 for x in xs]
    order = list(range(len(xs)))
    if indexing == "xy" and len(xs) > 1:
        order[0], order[1] = 1, 0
    shape = [sizes[i] for i in order]
    grids = []
    for i, x in enumerate(xs):
        axis = order.index(i)
        view = [1] * len(xs)
        view[axis] = -1
        grids.append(apply_op("expand", {"X": apply_op("reshape", {"X": x}, {"shape": view})}, {"shape": shape}))
    return grids
