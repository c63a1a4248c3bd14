"""PyTorch's forms of the statistics Tensor methods: `x.var(dim=1, correction=0)` /
`x.std(correction=)` (torch's spelling of the degrees of freedom taken away), `x.median(dim=1)`
returning torch's named pair (values, indices), `x.count_nonzero(dim=)`. (`x.mean(dtype=)` is
MathMixin's.)

Paddle's calls keep their meaning: `x.var(1, False)` (axis, unbiased), `x.median()` and
`x.median(axis=1)` (of an even count the mean of the two middle values, Paddle's default; torch's
x.median(dim=) takes the lower one, with its index). Each maps onto public functions, so it serves
Tensors and Variables and differentiates through their ops."""
from __future__ import annotations

from typing import Any

from .. import functions
from ..framework import normalize_dtype
from ..framework.dtypes import is_float
from . import composed, logic, math, return_types, search, stat
from .keywords import paddle_or_torch

MedianResult = return_types.median   # what torch's x.median(dim=1) returns


def _reduced_count(x: Any, axis: Any, keepdim: bool) -> float | Any:
    """How many entries each reduction over `axis` sees: a number, or a value shaped like the
    result when a size is known only at run time."""
    rank = len(x.shape)
    axes = range(rank) if axis is None else [int(a) % max(rank, 1) for a in
                                             (axis if isinstance(axis, (list, tuple)) else [axis])]
    sizes = [x.shape[a] for a in axes] if rank else [1]
    if -1 in sizes:
        return functions.sum(functions.ones_like(x), axis=axis, keepdim=keepdim)
    count = 1
    for d in sizes:
        count *= d
    return float(count)


def _freedom(x: Any, axis: Any, keepdim: bool, correction: float) -> float | Any:
    """max(0, n - correction), the divisor of torch's variance."""
    count = _reduced_count(x, axis, keepdim)
    if isinstance(count, float):
        return max(count - correction, 0.0)
    return functions.maximum(functions.scale(count, 1.0, -correction), functions.zeros_like(count))


def _correction(unbiased: Any, correction: Any, what: str) -> float:
    if correction is None:
        return 1.0 if unbiased is None or unbiased else 0.0
    if unbiased is not None:
        raise TypeError(f"{what}: give unbiased= or correction=, not both")
    return float(correction)


def var(x: Any, axis: Any = None, unbiased: Any = None, keepdim: bool = False, name: str | None = None, *,
        dim: Any = None, correction: Any = None) -> Any:
    """The variance over `axis` (torch's dim=): the sum of squared deviations divided by
    n - correction (torch's correction=, default 1; Paddle's unbiased=True is 1, False 0); NaN
    where that leaves no degree of freedom, as stat.var."""
    axis = paddle_or_torch("var", "axis", axis, "dim", dim)
    correction = _correction(unbiased, correction, "var")
    if correction in (0.0, 1.0):
        return stat.var(x, axis, bool(correction), keepdim)
    # the sum of squares (n times the biased variance) over max(0, n - correction), as torch's
    squares = functions.multiply(stat.var(x, axis, False, keepdim), _reduced_count(x, axis, keepdim))
    return functions.divide(squares, _freedom(x, axis, keepdim, correction))


def std(x: Any, axis: Any = None, unbiased: Any = None, keepdim: bool = False, name: str | None = None, *,
        dim: Any = None, correction: Any = None) -> Any:
    """The standard deviation over `axis`, with torch's correction= as var (the gradient is 0
    where the variance is 0, as stat.std)."""
    axis = paddle_or_torch("std", "axis", axis, "dim", dim)
    correction = _correction(unbiased, correction, "std")
    if correction in (0.0, 1.0):
        return stat.std(x, axis, bool(correction), keepdim)
    spread = stat.std(x, axis, False, keepdim)
    count = _reduced_count(x, axis, keepdim)
    if isinstance(count, float):
        ratio = count / (count - correction) if count > correction else float("inf")
        return functions.scale(spread, ratio ** 0.5)
    return functions.multiply(spread, functions.sqrt(functions.divide(count, _freedom(x, axis, keepdim, correction))))


def median(x: Any, axis: Any = None, keepdim: bool = False, mode: str = "avg", name: str | None = None, *,
           dim: Any = None) -> Any:
    """Paddle's x.median(axis=None, keepdim=False, mode='avg') (the median values), or torch's
    x.median(dim=d, keepdim=False): the named pair (values, indices) of the lower median along d,
    NaN (at the first NaN's index) where a slice holds one. The values are x at the indices, so
    the gradient reaches the chosen entry, as torch's."""
    if dim is None:
        return composed.median(x, axis, keepdim, mode)
    if axis is not None:
        raise TypeError("median: give axis= (Paddle) or dim= (PyTorch), not both")
    rank = len(x.shape)
    dim = int(dim) % max(rank, 1)
    count = x.shape[dim] if rank else 1
    if count <= 0:
        raise ValueError(f"median(dim={dim}): needs a non-empty axis of known size, got shape {list(x.shape)}")
    if rank == 0:
        return MedianResult(x, functions.zeros([], "int64"))
    order = search.argsort(x, axis=dim, stable=True)
    middle = (count - 1) // 2
    indices = functions.slice(order, [dim], [middle], [middle + 1])
    if is_float(normalize_dtype(x.dtype)):
        nan = logic.isnan(x)
        first_nan = search.argmax(functions.cast(nan, "int32"), axis=dim, keepdim=True)
        indices = search.where(math.any(nan, axis=dim, keepdim=True), first_nan, indices)
    values = search.take_along_axis(x, indices, dim)
    if not keepdim:
        values, indices = functions.squeeze(values, [dim]), functions.squeeze(indices, [dim])
    return MedianResult(values, indices)


def count_nonzero(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None, *,
                  dim: Any = None) -> Any:
    """How many entries are not zero (int64), over `axis` (torch's dim=; a tuple of axes too) or all."""
    return composed.count_nonzero(x, paddle_or_torch("count_nonzero", "axis", axis, "dim", dim), keepdim)


# the Paddle function each torch form falls back to
var.__wrapped__, std.__wrapped__ = stat.var, stat.std  # type: ignore[attr-defined]
median.__wrapped__ = composed.median  # type: ignore[attr-defined]
count_nonzero.__wrapped__ = composed.count_nonzero  # type: ignore[attr-defined]

METHODS = {"var": var, "std": std, "median": median, "count_nonzero": count_nonzero}
