"""Special functions of Paddle 2 and PyTorch: lgamma, digamma, polygamma (the gamma family of
ops/special.py), frac and heaviside (composed of registered ops)."""
from __future__ import annotations

from numbers import Integral
from typing import Any

from ..dispatch import apply_op
from ..functions import equal, full_like, greater_than, subtract
from .keywords import paddle_or_torch
from .search import where

__all__ = ["digamma", "frac", "heaviside", "lgamma", "polygamma"]


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def lgamma(x: Any, name: str | None = None) -> Any:
    """log|gamma(x)| elementwise (+inf at 0, -1, -2, ...); its gradient is digamma(x)."""
    return apply_op("lgamma", {"X": x})


def digamma(x: Any, name: str | None = None) -> Any:
    """The logarithmic derivative of gamma, gamma'(x) / gamma(x); its gradient is polygamma(1, x)."""
    return apply_op("digamma", {"X": x})


def polygamma(x: Any, n: Any, name: str | None = None) -> Any:
    """The n-th derivative of digamma (Paddle: polygamma(x, n)); PyTorch's order polygamma(n, x)
    is taken too, told apart by which argument is the integer."""
    if isinstance(x, Integral) and not isinstance(n, Integral):
        x, n = n, x
    if not isinstance(n, Integral) or isinstance(n, bool) or n < 0:
        raise ValueError(f"polygamma: the order n must be an integer >= 0, got {n!r}")
    return apply_op("digamma", {"X": x}) if n == 0 else apply_op("polygamma", {"X": x}, {"n": int(n)})


def frac(x: Any, name: str | None = None) -> Any:
    """The fractional part x - trunc(x), with x's sign; its gradient is 1. Integers have none: 0."""
    if not str(x.dtype).startswith(("float", "bfloat")):
        if str(x.dtype) == "bool":
            raise TypeError(f"frac: needs a floating-point or integer input, got {_describe(x)}")
        return full_like(x, 0)
    return subtract(x, apply_op("trunc", {"X": x}))


def heaviside(x: Any, y: Any = None, name: str | None = None, *, values: Any = None) -> Any:
    """The step function: 0 where x < 0, y where x == 0, 1 where x > 0 (broadcasting; NaN in x
    gives 0, as both frameworks; PyTorch's values= for y). The gradient reaches y where x == 0
    (Paddle's; PyTorch has none)."""
    y = paddle_or_torch("heaviside", "y", y, "values", values)
    if y is None:
        raise TypeError("heaviside: missing the argument y= (PyTorch's values=)")
    if str(x.dtype) != str(y.dtype):
        raise TypeError(f"heaviside: x {_describe(x)} and y {_describe(y)} must have the same dtype")
    step = where(greater_than(x, full_like(x, 0)), full_like(x, 1), full_like(x, 0))
    return where(equal(x, full_like(x, 0)), y, step)
