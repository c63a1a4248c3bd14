"""Everyday functions of Paddle 2 and PyTorch composed of registered ops (so they serve both
modes and differentiate through those ops): clone, neg, mm, logaddexp, hypot, nansum, nanmean,
searchsorted, bincount, cummax, index_add, empty_like."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import apply_op
from ..framework import normalize_dtype
from ..functions import (add, cast, divide, equal, exp, full_like, log, logical_and, logical_not, logical_or,
                         matmul, maximum, multiply, reshape, scale, sqrt, square, subtract, unsqueeze)
from ..functions import abs as _abs
from ..functions import max as _max
from ..functions import sum as _sum
from ..indexing import constant
from . import return_types
from .composed import moveaxis
from .logic import isinf, isnan
from .search import put_along_axis, take_along_axis, where
from ..framework.torch_forms import torch_keywords

__all__ = ["bincount", "clone", "cummax", "empty_like", "hypot", "index_add", "logaddexp", "mm", "nanmean", "nansum",
           "neg", "searchsorted"]


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def clone(x: Any, name: str | None = None) -> Any:
    """A copy of x the gradient flows through (an `assign` op)."""
    return apply_op("assign", {"X": x})


def neg(x: Any, name: str | None = None) -> Any:
    """-x elementwise."""
    return scale(x, -1.0)


def mm(input: Any, mat2: Any, name: str | None = None) -> Any:
    """The product of two matrices (2-D only, as torch.mm / paddle.mm; matmul broadcasts)."""
    if len(input.shape) != 2 or len(mat2.shape) != 2:
        raise ValueError(f"mm: needs two matrices, got {_describe(input)} and {_describe(mat2)}; use matmul for "
                         f"batches and vectors")
    return matmul(input, mat2)


def logaddexp(x: Any, y: Any, name: str | None = None) -> Any:
    """log(exp(x) + exp(y)) without overflow: m + log(exp(x - m) + exp(y - m)) with m = max(x, y)
    (m's own gradient cancels, so ties need no care)."""
    m = maximum(x, y)
    m = where(isinf(m), full_like(m, 0.0), m)      # (-inf) - (-inf) would be nan; exp(+-inf) is exact
    return add(m, log(add(exp(subtract(x, m)), exp(subtract(y, m)))))


def hypot(x: Any, y: Any, name: str | None = None) -> Any:
    """sqrt(x**2 + y**2) elementwise, scaled by m = max(|x|, |y|) so the squares do not overflow
    (float32 hypot(3e20, 4e20) is 5e20) nor underflow; m's own gradient cancels (the function is
    homogeneous), and an infinite side gives inf as torch's."""
    m = maximum(_abs(x), _abs(y))
    unit = where(equal(m, full_like(m, 0.0)), full_like(m, 1.0), m)
    unit = where(isinf(unit), full_like(m, 1.0), unit)
    out = multiply(unit, sqrt(add(square(divide(x, unit)), square(divide(y, unit)))))
    return where(isinf(m), m, out)


def _without_nan(x: Any) -> Any:
    return where(isnan(x), full_like(x, 0.0), x)


@torch_keywords
def nansum(x: Any, axis: Any = None, dtype: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """The sum over `axis` counting NaNs as zero (no gradient reaches them)."""
    if dtype is not None:
        x = cast(x, dtype)
    if "float" not in str(x.dtype):
        return _sum(x, axis, keepdim)
    return _sum(_without_nan(x), axis, keepdim)


@torch_keywords
def nanmean(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """The mean over `axis` of the entries that are not NaN (NaN where all are)."""
    if "float" not in str(x.dtype):
        raise TypeError(f"nanmean: needs a floating-point input, got {_describe(x)}")
    counts = _sum(cast(logical_not(isnan(x)), x.dtype), axis, keepdim)
    return divide(_sum(_without_nan(x), axis, keepdim), counts)


def searchsorted(sorted_sequence: Any, values: Any, out_int32: bool = False, right: bool = False,
                 name: str | None = None) -> Any:
    """For each value, the position in the sorted last axis of `sorted_sequence` where it would be
    inserted keeping the order: the count of entries < value (<= with right=True). A 1-D
    sequence serves values of any shape; otherwise the leading axes must match. No gradient."""
    seq_rank, rank = len(sorted_sequence.shape), len(values.shape)
    if seq_rank != 1 and tuple(sorted_sequence.shape[:-1]) != tuple(values.shape[:-1]):
        raise ValueError(f"searchsorted: sorted_sequence {_describe(sorted_sequence)} must be 1-D or share all "
                         f"but the last axis with values {_describe(values)}")
    seq = sorted_sequence if seq_rank == 1 else unsqueeze(sorted_sequence, seq_rank - 1)
    below = apply_op("less_equal" if right else "less_than", {"X": seq, "Y": unsqueeze(values, rank)})
    return _sum(cast(below, "int32" if out_int32 else "int64"), axis=-1)


def bincount(x: Any, weights: Any = None, minlength: int = 0, name: str | None = None) -> Any:
    """How often each value 0, 1, ..., max(x) occurs in the 1-D non-negative integer x (the sum of
    `weights` at its positions, when given); at least `minlength` bins. One `bincount` op: in a
    Program its length is unknown (-1) until it runs, as unique's; weights get a gradient."""
    inputs = {"X": x} if weights is None else {"X": x, "Weights": weights}
    return apply_op("bincount", inputs, {"minlength": int(minlength)})


@torch_keywords
def cummax(x: Any, axis: int | None = None, dtype: Any = "int64", name: str | None = None) -> tuple[Any, Any]:
    """(running maximum along `axis`, the index where each was reached): the flattened x when axis
    is None. As torch: a tie takes the later index, a NaN stays the maximum (from the latest NaN).
    The values are x taken at those indices, so the gradient goes to that one entry, as torch's.
    Costs n * n memory along the axis."""
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    rank = len(x.shape)
    if rank == 0:
        x, rank, axis, scalar = reshape(x, [1]), 1, 0, True
    else:
        scalar = False
    axis = int(axis) % rank
    n = x.shape[axis]
    if n < 0:
        raise ValueError(f"cummax: axis {axis} of {_describe(x)} has a size known only at run time")
    if 0 in x.shape:  # no elements: empty values (still x's, for the gradient) and empty indices, as torch
        index = cast(x, "int64")
        values = take_along_axis(x, index, axis)
        return return_types.cummax(values, index if normalize_dtype(dtype) == "int64" else cast(index, dtype))
    last = moveaxis(x, axis, -1) if axis != rank - 1 else x
    earlier = constant(np.tril(np.ones((n, n), bool)), x)             # [i, j]: j <= i
    rows = unsqueeze(last, rank - 1)                                   # [..., 1, n] (j)
    kind = np.dtype(normalize_dtype(x.dtype)).kind
    lowest = -np.inf if kind == "f" else np.iinfo(normalize_dtype(x.dtype)).min if kind in "iu" else False
    candidates = where(earlier, rows, full_like(rows, lowest) if kind != "b" else cast(full_like(rows, 0), "bool"))
    running = _max(cast(candidates, "int64") if kind == "b" else candidates, axis=-1, keepdim=True)
    reached = equal(cast(candidates, "int64") if kind == "b" else candidates, running)
    if kind == "f":
        reached = logical_or(reached, logical_and(isnan(rows), isnan(running)))
    positions = constant(np.arange(n, dtype="int64"), x)
    index = _max(where(logical_and(reached, earlier), positions, full_like(positions, -1)), axis=-1)
    index = index if axis == rank - 1 else moveaxis(index, -1, axis)
    values = take_along_axis(x, index, axis)
    index = cast(index, dtype) if normalize_dtype(dtype) != "int64" else index
    if scalar:
        values, index = reshape(values, []), reshape(index, [])
    return return_types.cummax(values, index)


@torch_keywords
def index_add(x: Any, index: Any, axis: int, value: Any, name: str | None = None) -> Any:
    """x with value's slices added at the 1-D `index` along `axis` (repeated indices add up);
    value has x's shape but len(index) along axis (paddle.index_add; torch.index_add(x, dim,
    index, source) is the same with the arguments reordered)."""
    rank = len(x.shape)
    axis = int(axis) % rank if rank else 0
    if len(index.shape) != 1 or len(value.shape) != rank or \
            any(a != b and -1 not in (a, b) for d, (a, b) in enumerate(zip(x.shape, value.shape)) if d != axis) or \
            -1 not in (value.shape[axis], index.shape[0]) and value.shape[axis] != index.shape[0]:
        raise ValueError(f"index_add: value {_describe(value)} must have x's shape {list(x.shape)} but "
                         f"len(index) along axis {axis}; index {_describe(index)} must be 1-D")
    shape = [1] * rank
    shape[axis] = -1
    where_to = apply_op("expand_as", {"X": reshape(index, shape), "Target": value}) if rank > 1 else index
    return put_along_axis(x, where_to, cast(value, x.dtype) if value.dtype != x.dtype else value, axis, reduce="add")


def empty_like(x: Any, dtype: Any = None, name: str | None = None, *, device: Any = None,
               requires_grad: bool = False) -> Any:
    """A value of x's shape (and dtype unless given); fluidgrad fills it with zeros."""
    return full_like(x, 0.0, dtype, device=device, requires_grad=requires_grad)
