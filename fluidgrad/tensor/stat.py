"""Statistics: var and std (unbiased by default), compositions of registered reductions."""
from __future__ import annotations

from typing import Any

from ..functions import (
    _axis_attrs,
    add,
    cast,
    divide,
    equal,
    mean,
    ones_like,
    scale,
    sqrt,
    square,
    subtract,
    zeros_like,
)
from ..functions import sum as _sum
from ..framework.torch_forms import torch_keywords

__all__ = ["std", "var"]

_NARROW_FLOATS = ("float16", "bfloat16")


def _centred(x: Any, axis: Any) -> Any:
    """x minus its mean over `axis` (kept as size 1, so it broadcasts back)."""
    return subtract(x, mean(x, axis=list(range(len(x.shape))) if axis is None else axis, keepdim=True))


def _freedom(x: Any, axis: Any, unbiased: bool, keepdim: bool) -> float | Any:
    """The degrees of freedom over `axis`: n - 1 (unbiased) or n, NaN when none is left; counted
    with ops (a value shaped like the result) when a size is known only at run time."""
    attrs = _axis_attrs(axis, True)
    sizes = [x.shape[a] for a in (range(len(x.shape)) if attrs["reduce_all"] else attrs["axis"])]
    if -1 in sizes:
        count = _sum(ones_like(x), axis=axis, keepdim=keepdim)
        return scale(count, 1.0, -1.0) if unbiased else count
    n = 1
    for d in sizes:
        n *= d
    freedom = n - 1 if unbiased else n
    return float(freedom) if freedom > 0 else float("nan")


@torch_keywords
def var(x: Any, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None) -> Any:
    """The variance over `axis`; `unbiased` divides by n - 1 (Bessel's correction); NaN where
    that leaves no degree of freedom (as PyTorch and NumPy). float16 / bfloat16 are summed in
    float32 (as PyTorch): their sum of squares passes 65504 long before the variance does."""
    if x.dtype in _NARROW_FLOATS:
        return cast(var(cast(x, "float32"), axis, unbiased, keepdim), x.dtype)
    squares = _sum(square(_centred(x, axis)), axis=axis, keepdim=keepdim)
    freedom = _freedom(x, axis, unbiased, keepdim)
    return scale(squares, 1.0 / freedom) if isinstance(freedom, float) else divide(squares, freedom)


@torch_keywords
def std(x: Any, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None) -> Any:
    """The standard deviation over `axis`: sqrt(var), with gradient 0 where var is 0 (a constant
    input, as PyTorch), not sqrt's 0 * inf = NaN: there the root is taken of var + 1 and the 1
    taken away again (a constant mask, so the value is the same 0; elsewhere adding and taking
    away 0 is exact)."""
    variance = var(x, axis, unbiased, keepdim)
    at_zero = cast(equal(variance, zeros_like(variance)), variance.dtype)
    return subtract(sqrt(add(variance, at_zero)), at_zero)
