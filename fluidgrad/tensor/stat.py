"""Statistics: var and std (unbiased by default), compositions of registered reductions."""
from __future__ import annotations

from typing import Any

from ..functions import (
    _axis_attrs,
    cast,
    divide,
    mean,
    ones_like,
    scale,
    sqrt,
    square,
    subtract,
)
from ..functions import sum as _sum

__all__ = ["std", "var"]

_NARROW_FLOATS = ("float16", "bfloat16")


def var(x: Any, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None) -> Any:
    """The variance over `axis`; `unbiased` divides by n - 1 (Bessel's correction); NaN where
    that leaves no degree of freedom (as PyTorch and NumPy). float16 / bfloat16 are summed in
    float32 (as PyTorch): their sum of squares passes 65504 long before the variance does."""
    if x.dtype in _NARROW_FLOATS:
        return cast(var(cast(x, "float32"), axis, unbiased, keepdim), x.dtype)
    attrs = _axis_attrs(axis, True)
    axes = range(len(x.shape)) if attrs["reduce_all"] else attrs["axis"]
    sizes = [x.shape[a] for a in axes]
    centred = subtract(x, mean(x, axis=list(range(len(x.shape))) if axis is None else axis, keepdim=True))
    squares = _sum(square(centred), axis=axis, keepdim=keepdim)
    if -1 in sizes:  # a size known only at run time: count the elements with ops
        count = _sum(ones_like(x), axis=axis, keepdim=keepdim)
        return divide(squares, scale(count, 1.0, -1.0) if unbiased else count)
    n = 1
    for d in sizes:
        n *= d
    freedom = n - 1 if unbiased else n
    return scale(squares, 1.0 / freedom if freedom > 0 else float("nan"))


def std(x: Any, axis: Any = None, unbiased: bool = True, keepdim: bool = False, name: str | None = None) -> Any:
    """The standard deviation over `axis`: sqrt(var)."""
    return sqrt(var(x, axis, unbiased, keepdim))
