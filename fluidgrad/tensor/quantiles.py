"""quantile and nanquantile (paddle.quantile / torch.quantile and their NaN-skipping twins) with
the five interpolations both frameworks take, composed of registered ops (sort, slice,
take_along_axis): they serve both modes and carry gradients to the values picked.

quantile's positions are known when it is called (q and the axis size); nanquantile's depend on
how many values of each slice are not NaN, so it picks its values with index tensors."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..dispatch import apply_op, axis_of_input, is_tensor
from ..framework import Variable
from ..framework.torch_forms import torch_keywords
from ..functions import cast, full_like, reshape, subtract, transpose
from ..functions import sum as _sum
from .logic import isnan
from .math import ceil, floor, round
from .search import sort, take_along_axis, where

__all__ = ["nanquantile", "quantile"]

INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")


def _levels(function: str, q: Any) -> tuple[list[float], bool]:
    """q as a list of levels, and whether it was one number (a 0-D result, no stacked axis)."""
    if isinstance(q, Variable):
        raise TypeError(f"{function}: q must be known when the program is built (a number, a list or an eager "
                        f"Tensor), got the Variable {q.name}")
    if is_tensor(q):
        q = q.numpy()
    array = np.asarray(q, dtype=np.float64)
    if array.ndim > 1:
        raise ValueError(f"{function}: q must be a number or 1-D, got shape {list(array.shape)}")
    levels = array.reshape(-1).tolist()
    for level in levels:
        if not 0.0 <= level <= 1.0:
            raise ValueError(f"{function}: q must be in [0, 1], got {level}")
    return levels, array.ndim == 0


def _along_one_axis(function: str, x: Any, axis: Any) -> tuple[Any, int, list[int]]:
    """x with the axes to reduce merged into its last axis (all of them when axis is None), that
    axis, and the kept shape (1 where an axis was reduced) for keepdim. Integers become float64
    (Paddle takes them; torch refuses them)."""
    dtype = str(x.dtype)
    if "float" not in dtype:
        if "int" not in dtype:
            raise TypeError(f"{function}: x must be a float or integer tensor, got {dtype}")
        x = cast(x, "float64")
    rank = len(x.shape)
    if axis is None:
        return reshape(x, [-1]), 0, [1] * rank
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    if not axes or (rank == 0 and axes):
        raise ValueError(f"{function}: axis {axis} does not name an axis of x of shape {list(x.shape)}")
    axes = sorted({axis_of_input(function, x, a) for a in axes})
    kept = [1 if a in axes else d for a, d in enumerate(x.shape)]
    if len(axes) == 1:
        return x, axes[0], kept
    others = [a for a in range(rank) if a not in axes]
    moved = transpose(x, others + axes)
    return reshape(moved, [x.shape[a] for a in others] + [-1]), len(others), kept


def _check(function: str, x: Any, values: Any, axis: int, interpolation: str) -> int:
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"{function}: interpolation must be one of {', '.join(map(repr, INTERPOLATIONS))}, "
                         f"got {interpolation!r}")
    count = values.shape[axis]
    if count <= 0:
        raise ValueError(f"{function}: needs a non-empty axis of known size, got shape {list(x.shape)}")
    return count


def _weight(position: Any, low: Any, interpolation: str) -> Any:
    """How far between the lower and the upper value the quantile lies."""
    return 0.5 if interpolation == "midpoint" else position - low


def _bounds(position: Any, interpolation: str, floor_of: Any, ceil_of: Any, round_of: Any) -> tuple[Any, Any]:
    """The indices of the lower and upper value to mix (one index for lower / higher / nearest)."""
    if interpolation == "lower":
        return floor_of(position), None
    if interpolation == "higher":
        return ceil_of(position), None
    if interpolation == "nearest":      # half to even, as torch.round and NumPy
        return round_of(position), None
    return floor_of(position), ceil_of(position)


def _take(x: Any, axis: int, index: int) -> Any:
    return apply_op("slice", {"X": x}, {"axes": [axis], "starts": [index], "ends": [index + 1]})


def _finish(out: Any, axis: int, keepdim: bool, kept: list[int]) -> Any:
    return reshape(out, kept) if keepdim else apply_op("squeeze", {"X": out}, {"axes": [axis]})


def _at_known_position(values: Any, axis: int, count: int, level: float, interpolation: str) -> Any:
    position = level * (count - 1)
    low, high = _bounds(position, interpolation, lambda p: int(np.floor(p)), lambda p: int(np.ceil(p)),
                        lambda p: int(np.round(p)))
    lower = _take(values, axis, low)
    if high is None:
        return lower
    weight = _weight(position, low, interpolation)
    return lower if high == low else lower + subtract(_take(values, axis, high), lower) * float(weight)


@torch_keywords
def quantile(x: Any, q: float | Sequence[float] | Any, axis: int | Sequence[int] | None = None, keepdim: bool = False,
             interpolation: str = "linear", name: str | None = None) -> Any:
    """The q-th quantile(s) of x along axis (one axis, a list of axes, or all when None) as
    paddle.quantile / torch.quantile: between the two sorted values around the position q * (n - 1),
    linearly, or the lower / higher / nearest one, or their midpoint (`interpolation`). A slice
    holding a NaN gives NaN. Several q (a list or 1-D Tensor) stack on a new first axis."""
    levels, single = _levels("quantile", q)
    flat, ax, kept = _along_one_axis("quantile", x, axis)
    values = sort(flat, ax)
    count = _check("quantile", x, values, ax, interpolation)
    has_nan = isnan(_take(values, ax, count - 1))      # sort puts NaN last
    results = []
    for level in levels:
        picked = _at_known_position(values, ax, count, level, interpolation)
        results.append(_finish(where(has_nan, _take(values, ax, count - 1), picked), ax, keepdim, kept))
    return results[0] if single else apply_op("stack", {"X": results}, {"axis": 0})


def _at_counted_position(values: Any, axis: int, position: Any, interpolation: str) -> Any:
    """The quantile at a position that differs from slice to slice (a tensor, keepdim-shaped)."""
    low, high = _bounds(position, interpolation, floor, ceil, round)
    lower = take_along_axis(values, cast(low, "int64"), axis)
    if high is None:
        return lower
    upper = take_along_axis(values, cast(high, "int64"), axis)
    weight = _weight(position, low, interpolation)
    return lower + subtract(upper, lower) * weight


@torch_keywords
def nanquantile(x: Any, q: float | Sequence[float] | Any, axis: int | Sequence[int] | None = None,
                keepdim: bool = False, interpolation: str = "linear", name: str | None = None) -> Any:
    """quantile, ignoring NaN: each slice's quantile over its values that are not NaN (NaN when
    all are), as paddle.nanquantile / torch.nanquantile."""
    levels, single = _levels("nanquantile", q)
    flat, ax, kept = _along_one_axis("nanquantile", x, axis)
    values = sort(flat, ax)
    count = _check("nanquantile", x, values, ax, interpolation)
    valid = _sum(cast(apply_op("logical_not", {"X": isnan(values)}), str(values.dtype)), ax, keepdim=True)
    last = full_like(valid, count - 1)
    results = []
    for level in levels:
        # an all-NaN slice (no valid value) takes the last value: NaN
        position = where(apply_op("greater_than", {"X": valid, "Y": full_like(valid, 0)}),
                         subtract(valid, full_like(valid, 1)) * level, last)
        results.append(_finish(_at_counted_position(values, ax, position, interpolation), ax, keepdim, kept))
    return results[0] if single else apply_op("stack", {"X": results}, {"axis": 0})
