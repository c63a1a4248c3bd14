"""Counting and order statistics of Paddle 2 and PyTorch composed of registered ops: bucketize,
histogram (Paddle's, int64 counts) and histc (torch's, in the input's dtype), cummin, nanmedian."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import apply_op
from ..framework import normalize_dtype
from ..functions import (cast, divide, equal, floor_divide, full_like, greater_equal, less_equal, logical_and,
                         logical_not, maximum, multiply, reshape, scale, slice, subtract)
from ..functions import max as _max
from ..functions import min as _min
from ..functions import sum as _sum
from ..indexing import constant
from . import return_types
from .composed import median
from .keywords import paddle_or_torch
from .everyday import bincount, cummax, searchsorted
from .logic import bitwise_not, isnan
from .search import argsort, sort, take_along_axis, where

__all__ = ["bucketize", "cummin", "histc", "histogram", "nanmedian"]


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def bucketize(x: Any, sorted_sequence: Any = None, out_int32: bool = False, right: bool = False,
              name: str | None = None, *, boundaries: Any = None) -> Any:
    """For each entry of x, the index of its bucket among the 1-D ascending boundaries
    `sorted_sequence`: the count of boundaries < it (<= with right=True); int64 (int32 when
    asked), no gradient (paddle.bucketize, torch.bucketize: boundaries= too)."""
    sorted_sequence = paddle_or_torch("bucketize", "sorted_sequence", sorted_sequence, "boundaries", boundaries)
    if sorted_sequence is None:
        raise TypeError("bucketize: missing the argument sorted_sequence= (PyTorch's boundaries=)")
    if len(sorted_sequence.shape) != 1:
        raise ValueError(f"bucketize: sorted_sequence must be 1-D, got {_describe(sorted_sequence)}")
    index = searchsorted(sorted_sequence, x, out_int32=out_int32, right=right)
    return cast(index, "int32") if out_int32 and index.dtype != "int32" else index


def cummin(x: Any, axis: int | None = None, dtype: Any = "int64", name: str | None = None, *,
           dim: int | None = None) -> tuple[Any, Any]:
    """(running minimum along `axis`, the index where each was reached): the flattened x when axis
    is None (paddle.cummin; torch.cummin(x, dim)). As torch: a tie takes the later index, a NaN
    stays the minimum. cummax of an order-reversed x (-x for floats, ~x for integers and bools,
    which never overflows), then x taken at those indices: the gradient goes to that one entry."""
    axis = paddle_or_torch("cummin", "axis", axis, "dim", dim)
    kind = str(x.dtype)
    reversed_order = scale(x, -1.0) if kind.startswith(("float", "bfloat")) else bitwise_not(x)
    _, index = cummax(reversed_order, axis=axis, dtype="int64")
    flat = reshape(x, [-1]) if axis is None else x
    if len(flat.shape) == 0:
        values = x
    else:
        values = take_along_axis(flat, index, 0 if axis is None else int(axis))
    return return_types.cummin(values, index if normalize_dtype(dtype) == "int64" else cast(index, dtype))


def nanmedian(x: Any, axis: int | None = None, keepdim: bool = False, mode: str = "avg", name: str | None = None, *,
              dim: int | None = None) -> Any:
    """The median of the entries that are not NaN, along axis (flattened when None); NaN where all
    are. Of an even count: the mean of the two middle values (mode='avg', Paddle's default) or the
    lower one (mode='min', torch.nanmedian's). The gradient reaches the one or two middle entries.
    torch's nanmedian(x, dim=d) gives the named pair (values, indices) of the lower median (mode
    'min', whatever `mode` says), as median(x, dim=d)."""
    if dim is not None:
        if axis is not None:
            raise TypeError("nanmedian: give axis= (Paddle) or dim= (PyTorch), not both")
        return _nanmedian_with_indices(x, dim, keepdim)
    if mode not in ("avg", "min"):
        raise ValueError(f"nanmedian: mode must be 'avg' or 'min', got {mode!r}")
    if not str(x.dtype).startswith(("float", "bfloat")):
        return median(x, axis=axis, keepdim=keepdim, mode=mode)      # no NaN to skip
    rank = len(x.shape)
    if axis is None:
        values, ax = sort(reshape(x, [-1]), 0), 0
    else:
        if not -rank <= int(axis) < max(rank, 1):
            raise ValueError(f"nanmedian: axis {axis} is out of range for {_describe(x)}")
        values, ax = sort(x, int(axis) if rank else 0), int(axis) % max(rank, 1)
    if rank == 0:
        values = reshape(values, [1])
    count = _sum(cast(logical_not(isnan(values)), "int64"), axis=ax, keepdim=True)   # NaNs sort last
    # a slice of NaNs only: both positions are 0, its first NaN (the value and, as torch, the gradient)
    lower_at = maximum(floor_divide(subtract(count, 1), constant(2, count)), constant(0, count))
    middle = take_along_axis(values, lower_at, ax)
    if mode == "avg":
        upper = take_along_axis(values, floor_divide(count, constant(2, count)), ax)
        middle = scale(middle + upper, 0.5)
    if axis is None or rank == 0:
        return reshape(middle, [1] * rank if keepdim else [])
    return middle if keepdim else apply_op("squeeze", {"X": middle}, {"axes": [ax]})


def _nanmedian_with_indices(x: Any, dim: Any, keepdim: bool) -> Any:
    """torch.nanmedian(x, dim): the lower median of the entries that are not NaN and its index (a
    slice of NaNs only: its first NaN, whose index torch leaves unspecified). The values are x at
    the indices, so the gradient reaches the chosen entry, as torch's."""
    rank = len(x.shape)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not -max(rank, 1) <= dim < max(rank, 1):
        raise ValueError(f"nanmedian(dim={dim!r}): dim must be one axis of {_describe(x)}")
    if rank == 0:
        return return_types.nanmedian(x, constant(0, x, "int64"))
    dim = int(dim) % rank
    if x.shape[dim] <= 0:
        raise ValueError(f"nanmedian(dim={dim}): needs a non-empty axis of known size, got {_describe(x)}")
    order = argsort(x, axis=dim, stable=True)          # NaNs sort last
    if str(x.dtype).startswith(("float", "bfloat")):
        count = _sum(cast(logical_not(isnan(x)), "int64"), axis=dim, keepdim=True)
        lower_at = maximum(floor_divide(subtract(count, 1), constant(2, count)), constant(0, count))
        indices = take_along_axis(order, lower_at, dim)
    else:
        middle = (x.shape[dim] - 1) // 2
        indices = slice(order, [dim], [middle], [middle + 1])
    values = take_along_axis(x, indices, dim)
    if not keepdim:
        values, indices = (apply_op("squeeze", {"X": v}, {"axes": [dim]}) for v in (values, indices))
    return return_types.nanmedian(values, indices)


def _bin_index(x: Any, bins: int, low: Any, high: Any) -> Any:
    """Each entry's bin among `bins` equal ones over [low, high] (the top edge in the last bin), or
    `bins` for one outside (NaN included): torch's (x - low) * bins / (high - low), truncated."""
    position = divide(multiply(subtract(x, low), constant(float(bins), x)), subtract(high, low))
    index = cast(apply_op("floor", {"X": position}), "int64")
    index = where(equal(x, high), full_like(index, bins - 1), index)
    inside = logical_and(greater_equal(x, low), less_equal(x, high))
    return where(inside, index, full_like(index, bins))


def _range(caller: str, x: Any, min: float, max: float) -> tuple[Any, Any]:
    """[min, max] as 0-D values of x's dtype: the data's range when min == max (both at 0 by
    default), widened by 1 on each side when that is empty too (as torch.histc and Paddle)."""
    if float(min) > float(max):
        raise ValueError(f"{caller}: max must be >= min, got min={min} and max={max}")
    if float(min) == float(max):
        low, high = _min(x), _max(x)
    else:
        low, high = constant(float(min), x), constant(float(max), x)
    empty = equal(low, high)
    return where(empty, scale(low, 1.0, -1.0), low), where(empty, scale(high, 1.0, 1.0), high)


def _counts(caller: str, x: Any, bins: int, min: float, max: float, weight: Any = None) -> Any:
    if int(bins) <= 0:
        raise ValueError(f"{caller}: bins must be > 0, got {bins}")
    if not str(x.dtype).startswith(("float", "bfloat")):
        x = cast(x, "float32")
    low, high = _range(caller, x, min, max)
    index = reshape(_bin_index(x, int(bins), low, high), [-1])
    weights = None if weight is None else reshape(weight, [-1])
    counts = bincount(index, weights, minlength=int(bins) + 1)    # the last bin: the entries outside
    return reshape(slice(counts, [0], [0], [int(bins)]), [int(bins)]), low, high


def histogram(input: Any, bins: int = 100, min: float = 0, max: float = 0, weight: Any = None, density: bool = False,
              name: str | None = None) -> Any:
    """Counts of input's entries in `bins` equal bins over [min, max] (the data's range when
    min == max, as both are by default); entries outside are not counted. int64 counts (paddle.histogram); with `weight`, the
    sums of the weights (their dtype); with density=True, normalised so that the histogram
    integrates to 1 (float)."""
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"histogram: weight {_describe(weight)} must have input's shape {list(input.shape)}")
    counts, low, high = _counts("histogram", input, bins, min, max, weight)
    if not density:
        return counts
    counts = cast(counts, input.dtype if str(input.dtype).startswith("float") else "float32") \
        if weight is None else counts
    width = scale(subtract(cast(high, counts.dtype), cast(low, counts.dtype)), 1.0 / int(bins))
    return divide(counts, multiply(_sum(counts), width))


def histc(input: Any, bins: int = 100, min: float = 0, max: float = 0, name: str | None = None) -> Any:
    """torch.histc: histogram's counts in input's (floating-point) dtype."""
    if not str(input.dtype).startswith(("float", "bfloat")):
        raise TypeError(f"histc: needs a floating-point input (as torch), got {_describe(input)}")
    counts, _, _ = _counts("histc", input, bins, min, max)
    return cast(counts, input.dtype)
