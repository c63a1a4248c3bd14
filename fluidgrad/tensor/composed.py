"""Common Paddle 2 (and PyTorch) functions composed of registered ops, so they serve both modes
and are differentiable through those ops: closeness tests, counts, dot / cross / kron, diff,
moveaxis / rot90, nan_to_num, median, lerp, logcumsumexp, masked_select (quantile: quantiles.py)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..dispatch import apply_op, is_tensor
from ..framework import Variable
from ..functions import abs, cast, concat, equal, full_like, multiply, reshape, split, subtract, transpose
from ..functions import sum as _sum
from ..indexing import constant
from .logic import isinf, isnan
from .manipulation import flip
from .math import all as _all
from .search import sort, where
from ..framework.torch_forms import torch_keywords
from ..framework.axes import checked_axes

__all__ = ["allclose", "count_nonzero", "cross", "diff", "dot", "equal_all", "isclose", "kron", "lerp",
           "logcumsumexp", "masked_select", "median", "moveaxis", "nan_to_num", "numel", "rot90"]


def _rank(x: Any) -> int:
    return len(x.shape)


def isclose(x: Any, y: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False,
            name: str | None = None) -> Any:
    """|x - y| <= atol + rtol * |y| elementwise (a bool tensor); NaNs equal only with equal_nan."""
    if "float" not in str(x.dtype):
        x, y = cast(x, "float64"), cast(y, "float64")
    close = apply_op("less_equal", {"X": abs(subtract(x, y)), "Y": abs(y) * float(rtol) + float(atol)})
    finite = apply_op("logical_and", {"X": apply_op("isfinite", {"X": x}), "Y": apply_op("isfinite", {"X": y})})
    close = apply_op("logical_or", {"X": apply_op("logical_and", {"X": close, "Y": finite}),
                                    "Y": equal(x, y)})                # infinities: close only when equal
    if equal_nan:
        close = apply_op("logical_or", {"X": close, "Y": apply_op("logical_and", {"X": isnan(x), "Y": isnan(y)})})
    return close


def allclose(x: Any, y: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False,
             name: str | None = None) -> Any:
    """Whether every element is close (`isclose`): a 0-D bool tensor."""
    return _all(isclose(x, y, rtol, atol, equal_nan))


def equal_all(x: Any, y: Any, name: str | None = None) -> Any:
    """Whether x and y have one shape and equal elements: a 0-D bool tensor (torch.equal)."""
    if tuple(x.shape) != tuple(y.shape):
        return constant(np.array(False), x)
    return _all(equal(x, y))


def numel(x: Any, name: str | None = None) -> Any:
    """The number of elements as a 0-D int64 tensor (paddle.numel)."""
    if any(d < 0 for d in x.shape):
        raise ValueError(f"numel: {getattr(x, 'name', 'x')} has unknown dimensions {list(x.shape)}; its size is "
                         f"known only when the program runs")
    return constant(np.array(int(np.prod(x.shape, dtype=np.int64)), np.int64), x)


@torch_keywords
def count_nonzero(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """How many elements are not zero (int64), over `axis` or all."""
    return _sum(cast(apply_op("not_equal", {"X": x, "Y": full_like(x, 0)}), "int64"), axis, keepdim)


def dot(x: Any, y: Any, name: str | None = None) -> Any:
    """The dot product of two vectors, or of each row pair of two [N, D] batches (paddle.dot)."""
    if _rank(x) not in (1, 2) or tuple(x.shape) != tuple(y.shape):
        raise ValueError(f"dot: expects two vectors (or [N, D] batches) of one shape, got {list(x.shape)} "
                         f"and {list(y.shape)}")
    return _sum(multiply(x, y), axis=-1)


@torch_keywords
def cross(x: Any, y: Any, axis: int = 9, name: str | None = None) -> Any:
    """The cross product of 3-vectors along `axis` (default: the first axis of size 3, as Paddle's)."""
    if axis == 9:
        axis = next((a for a, d in enumerate(x.shape) if d == 3), None)
    if axis is None or x.shape[axis] != 3 or tuple(x.shape) != tuple(y.shape):
        raise ValueError(f"cross: expects inputs of one shape with an axis of size 3, got {list(x.shape)} and "
                         f"{list(y.shape)} (axis={axis})")
    a, b = split(x, 3, axis), split(y, 3, axis)
    parts = [subtract(multiply(a[(i + 1) % 3], b[(i + 2) % 3]), multiply(a[(i + 2) % 3], b[(i + 1) % 3]))
             for i in range(3)]
    return concat(parts, axis)


def kron(x: Any, y: Any, name: str | None = None) -> Any:
    """The Kronecker product: block (i, j) is x[i, j] * y (any ranks, aligned at the end)."""
    rank = max(_rank(x), _rank(y))
    xs, ys = [1] * (rank - _rank(x)) + list(x.shape), [1] * (rank - _rank(y)) + list(y.shape)
    if any(d < 0 for d in xs + ys):
        raise ValueError(f"kron: shapes must be known, got {list(x.shape)} and {list(y.shape)}")
    # x as [a0, 1, a1, 1, ...] times y as [1, b0, 1, b1, ...], then merged pairwise
    xe = reshape(x, [d for a in xs for d in (a, 1)])
    ye = reshape(y, [d for b in ys for d in (1, b)])
    return reshape(multiply(xe, ye), [a * b for a, b in zip(xs, ys)])


def masked_select(x: Any, mask: Any, name: str | None = None) -> Any:
    """The elements of x where mask holds, as a 1-D tensor (row-major order)."""
    if tuple(mask.shape) != tuple(x.shape):
        raise ValueError(f"masked_select: mask of shape {list(mask.shape)} must have x's shape {list(x.shape)}")
    return reshape(x[mask], [-1])


@torch_keywords
def diff(x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None, name: str | None = None) -> Any:
    """The n-th forward difference along axis (prepend / append joined first), as NumPy's diff."""
    parts = [p for p in (prepend, x, append) if p is not None]
    out = concat(parts, axis) if len(parts) > 1 else x
    axis = axis % _rank(out)
    for _ in range(int(n)):
        size = out.shape[axis]
        later = apply_op("slice", {"X": out}, {"axes": [axis], "starts": [1], "ends": [2**31 - 1]})
        earlier = apply_op("slice", {"X": out}, {"axes": [axis], "starts": [0], "ends": [max(size - 1, 0)]})
        out = subtract(later, earlier)
    return out


def moveaxis(x: Any, source: int | Sequence[int], destination: int | Sequence[int], name: str | None = None) -> Any:
    """x with the axes `source` moved to positions `destination` (the others keep their order)."""
    rank = _rank(x)
    src = checked_axes("movedim", [source] if isinstance(source, int) else source, x.shape)
    dst = checked_axes("movedim", [destination] if isinstance(destination, int) else destination, x.shape)
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must be distinct axes, "
                         f"as many of each")
    if rank == 0:
        return transpose(x, [])  # a 0-D tensor takes axis 0 / -1 (torch) and has nothing to move
    order = [a for a in range(rank) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


@torch_keywords(dims="axes")
def rot90(x: Any, k: int = 1, axes: Sequence[int] = (0, 1), name: str | None = None) -> Any:
    """x rotated by 90 degrees k times in the plane of `axes` (from the first towards the second)."""
    a, b = (int(v) % _rank(x) for v in axes)
    if a == b:
        raise ValueError(f"rot90: axes {list(axes)} must be two different axes")
    k %= 4
    swap = list(range(_rank(x)))
    swap[a], swap[b] = swap[b], swap[a]
    if k == 0:
        return apply_op("assign", {"X": x})
    if k == 2:
        return flip(x, [a, b])
    return transpose(flip(x, [b]), swap) if k == 1 else flip(transpose(x, swap), [b])


def nan_to_num(x: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None,
               name: str | None = None) -> Any:
    """x with NaN replaced by `nan` and infinities by `posinf` / `neginf` (default: the dtype's
    largest / lowest finite value)."""
    info = np.finfo(np.dtype(x.dtype))
    high = float(info.max) if posinf is None else float(posinf)
    low = float(info.min) if neginf is None else float(neginf)
    out = where(isnan(x), full_like(x, nan), x)
    out = where(apply_op("logical_and", {"X": isinf(x), "Y": apply_op("greater_than", {"X": x, "Y": full_like(x, 0)})}),
                full_like(x, high), out)
    return where(apply_op("logical_and", {"X": isinf(x), "Y": apply_op("less_than", {"X": x, "Y": full_like(x, 0)})}),
                 full_like(x, low), out)


def lerp(x: Any, y: Any, weight: Any, name: str | None = None) -> Any:
    """x + weight * (y - x)."""
    return x + multiply(subtract(y, x), weight) if _is_value(weight) else x + subtract(y, x) * float(weight)


def _is_value(v: Any) -> bool:
    return isinstance(v, Variable) or is_tensor(v)


@torch_keywords
def logcumsumexp(x: Any, axis: int | None = None, dtype: Any = None, name: str | None = None) -> Any:
    """log(cumsum(exp(x))) along axis (flattened when None): the logcumsumexp op, exact for every
    prefix (a running log-add, as PyTorch), also those far below the axis' largest value."""
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    if dtype is not None:
        x = cast(x, dtype)
    return apply_op("logcumsumexp", {"X": x}, {"axis": int(axis)})


def _sorted_along(x: Any, axis: int | None) -> tuple[Any, int]:
    if axis is None:
        return sort(reshape(x, [-1]), 0), 0
    return sort(x, axis), axis % _rank(x)


def _take(x: Any, axis: int, index: int) -> Any:
    return apply_op("slice", {"X": x}, {"axes": [axis], "starts": [index], "ends": [index + 1]})


def _finish(out: Any, axis: int | None, keepdim: bool, x: Any) -> Any:
    if axis is None:
        return reshape(out, [1] * _rank(x)) if keepdim else reshape(out, [])
    return out if keepdim else apply_op("squeeze", {"X": out}, {"axes": [axis % _rank(x)]})


def _with_nan(out: Any, values: Any, ax: int, axis: int | None, keepdim: bool, x: Any) -> Any:
    """out, but NaN wherever its slice holds a NaN (as torch.median / torch.quantile / np.median; a
    NaN in the data must not be hidden). sort puts NaN last, so the largest sorted value tells."""
    if "float" not in str(x.dtype) and "complex" not in str(x.dtype):
        return out
    last = _finish(_take(values, ax, values.shape[ax] - 1), axis, keepdim, x)
    return where(isnan(last), last, out)


def median(x: Any, axis: int | None = None, keepdim: bool = False, mode: str = "avg", name: str | None = None) -> Any:
    """The median along axis (flattened when None): of an even count the mean of the two middle
    values (mode='avg', Paddle's default) or the lower one (mode='min', PyTorch's)."""
    if mode not in ("avg", "min"):
        raise ValueError(f"median: mode must be 'avg' or 'min', got {mode!r}")
    values, ax = _sorted_along(x, axis)
    count = values.shape[ax]
    if count <= 0:
        raise ValueError(f"median: needs a non-empty axis of known size, got shape {list(x.shape)}")
    lower = _take(values, ax, (count - 1) // 2)
    if count % 2 == 1 or mode == "min":
        return _with_nan(_finish(lower, axis, keepdim, x), values, ax, axis, keepdim, x)
    upper = _take(values, ax, count // 2)
    return _with_nan(_finish((lower + upper) * 0.5, axis, keepdim, x), values, ax, axis, keepdim, x)
