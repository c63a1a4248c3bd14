"""Elementwise and reduction maths: floor, erf, sinh, mod, clip, prod, logsumexp, cumsum, ...

Paddle 2's names and signatures; each function serves both modes through `apply_op`.
"""
from __future__ import annotations

import math as _math
from typing import Any

import numpy as np

from ..dispatch import apply_op, is_tensor
from ..indexing import constant
from ..framework import Variable
from ..framework.dtypes import get_default_dtype, is_float
from ..functions import _axis_attrs, _binary, cast, floor_divide, maximum, minimum, remainder, reshape
from ..framework.torch_forms import torch_keywords

__all__ = [
    "acos",
    "acosh",
    "all",
    "amax",
    "amin",
    "any",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "ceil",
    "clip",
    "cosh",
    "cumprod",
    "cumsum",
    "erf",
    "erfinv",
    "expm1",
    "floor",
    "floor_divide",
    "floor_mod",
    "fmod",
    "isin",
    "log1p",
    "logit",
    "log2",
    "log10",
    "logsumexp",
    "mod",
    "outer",
    "prod",
    "reciprocal",
    "remainder",
    "round",
    "rsqrt",
    "sinh",
    "tan",
    "trunc",
]


def _unary(op_type: str, doc: str):
    def fn(x: Any, name: str | None = None) -> Any:
        return apply_op(op_type, {"X": x})
    fn.__name__ = fn.__qualname__ = op_type
    fn.__doc__ = doc
    return fn


floor = _unary("floor", "Rounds down elementwise; the gradient is zero.")
ceil = _unary("ceil", "Rounds up elementwise; the gradient is zero.")
round = _unary("round", "Rounds half to even (as NumPy, PyTorch and ONNX Round); the gradient is zero.")
trunc = _unary("trunc", "Rounds toward zero; the gradient is zero.")
erf = _unary("erf", "The error function.")
tan, asin, acos, atan = (_unary(n, f"Elementwise {n}.") for n in ("tan", "asin", "acos", "atan"))
sinh, cosh, asinh, acosh, atanh = (_unary(n, f"Elementwise {n}.")
                                   for n in ("sinh", "cosh", "asinh", "acosh", "atanh"))
log1p = _unary("log1p", "log(1 + x), accurate for small x.")
erfinv = _unary("erfinv", "The inverse error function: erf(erfinv(x)) = x on (-1, 1); +-inf at +-1, NaN outside.")


def _as_float(x: Any) -> Any:
    return x if not _is_value(x) or is_float(x.dtype) else cast(x, get_default_dtype())


def atan2(x: Any, y: Any, name: str | None = None) -> Any:
    """The angle in (-pi, pi] of the point (y, x), elementwise with broadcasting (paddle.atan2(x, y),
    torch.atan2(input, other)); integers are computed in the default float dtype."""
    return _binary("atan2", _as_float(x), _as_float(y))


def isin(x: Any, test_x: Any, assume_unique: bool = False, invert: bool = False, name: str | None = None) -> Any:
    """Whether each element of x occurs anywhere in test_x: a bool tensor of x's shape (not of it,
    with invert=True). Two dtypes meet in the one NumPy promotes them to."""
    if not _is_value(test_x):
        test_x = constant(np.asarray(test_x), x)
    if x.dtype != test_x.dtype:
        common = np.result_type(np.dtype(x.dtype), np.dtype(test_x.dtype)).name
        x, test_x = cast(x, common), cast(test_x, common)
    return apply_op("isin", {"X": x, "TestX": test_x}, {"invert": bool(invert)})


def logit(x: Any, eps: float | None = None, name: str | None = None) -> Any:
    """log(x / (1 - x)), the inverse of sigmoid; with `eps`, x is first clipped to [eps, 1 - eps]."""
    return apply_op("logit", {"X": x if eps is None else clip(x, eps, 1.0 - eps)})
expm1 = _unary("expm1", "exp(x) - 1, accurate for small x.")
log2, log10 = _unary("log2", "Base-2 logarithm."), _unary("log10", "Base-10 logarithm.")
rsqrt = _unary("rsqrt", "1 / sqrt(x).")
reciprocal = _unary("reciprocal", "1 / x.")


mod = floor_mod = remainder  # Python's remainder (`x % y`): fluidgrad/functions.py


def fmod(x: Any, y: Any, name: str | None = None) -> Any:
    """C's fmod: the result takes the sign of x (ONNX Mod with fmod=1, torch.fmod)."""
    return _binary("elementwise_fmod", x, y)


def _is_value(v: Any) -> bool:
    return isinstance(v, Variable) or is_tensor(v)


def clip(x: Any, min: Any = None, max: Any = None, name: str | None = None) -> Any:
    """Clamp into [min, max]; either bound may be None (ONNX Clip), a number or a tensor."""
    if (_is_value(min) or _is_value(max)) and x.dtype.startswith("float"):
        out = x if min is None else _clamp_to(x, min, "less_than")
        return out if max is None else _clamp_to(out, max, "greater_than")
    if _is_value(min) or _is_value(max) or not x.dtype.startswith("float"):
        out = x if min is None else maximum(x, min)
        return out if max is None else minimum(out, max)
    lo = -_math.inf if min is None else float(min)
    hi = _math.inf if max is None else float(max)
    return apply_op("clip", {"X": x}, {"min": lo, "max": hi})


def _clamp_to(x: Any, bound: Any, beyond: str) -> Any:
    """bound where x is beyond it (`beyond`: less_than for min, greater_than for max), else x: a select, so
    at x == bound the gradient is x's alone (torch's clamp; maximum / minimum would split it); a NaN
    bound gives NaN, as torch."""
    bound = bound if _is_value(bound) else constant(np.asarray(bound, x.dtype), x)
    bound = bound if bound.dtype == x.dtype else cast(bound, x.dtype)
    cut = apply_op("logical_or", {"X": apply_op(beyond, {"X": x, "Y": bound}),
                                  "Y": apply_op("isnan", {"X": bound})})
    return apply_op("where", {"Condition": cut, "X": bound, "Y": x})


# ---------------------------------------------------------------- reductions
def _axes_list(axis: Any, ndim: int) -> list[int]:
    if axis is None:
        return list(range(ndim))
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    return sorted({int(a) % max(ndim, 1) for a in axes})


@torch_keywords
def prod(x: Any, axis: Any = None, keepdim: bool = False, dtype: Any = None, name: str | None = None) -> Any:
    """The product over `axis` (all axes when None); zeros in x get an exact gradient."""
    if dtype is not None:
        x = cast(x, dtype)
    ndim = len(x.shape)
    if axis is None and not keepdim:
        return apply_op("reduce_prod", {"X": reshape(x, [-1])}, {"axis": 0, "keepdim": False})
    for a in reversed(_axes_list(axis, ndim)):  # from the last axis, so earlier indices stay valid
        x = apply_op("reduce_prod", {"X": x}, {"axis": a, "keepdim": keepdim})
    return x


@torch_keywords
def logsumexp(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """log(sum(exp(x))) over `axis`, stable for large magnitudes."""
    return apply_op("logsumexp", {"X": x}, _axis_attrs(axis, keepdim))


@torch_keywords
def amax(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """The maximum over `axis`; equal maxima share the gradient evenly."""
    return apply_op("reduce_max", {"X": x}, _axis_attrs(axis, keepdim))


@torch_keywords
def amin(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """The minimum over `axis`; equal minima share the gradient evenly."""
    return apply_op("reduce_min", {"X": x}, _axis_attrs(axis, keepdim))


@torch_keywords
def all(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """Whether every element is true (non-zero) over `axis`; a bool result."""
    return apply_op("reduce_all", {"X": x}, _axis_attrs(axis, keepdim))


@torch_keywords
def any(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """Whether any element is true (non-zero) over `axis`; a bool result."""
    return apply_op("reduce_any", {"X": x}, _axis_attrs(axis, keepdim))


def _scan(op_type: str, x: Any, axis: Any, dtype: Any, exclusive: bool, reverse: bool) -> Any:
    if dtype is not None:
        x = cast(x, dtype)
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    return apply_op(op_type, {"X": x}, {"axis": int(axis), "exclusive": bool(exclusive), "reverse": bool(reverse)})


@torch_keywords
def cumsum(x: Any, axis: int | None = None, dtype: Any = None, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Any:
    """Running sum along `axis` (the flattened x when None); `exclusive` and `reverse` as ONNX CumSum."""
    return _scan("cumsum", x, axis, dtype, exclusive, reverse)


def cumprod(x: Any, dim: int | None = None, dtype: Any = None, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Any:
    """Running product along `dim` (the flattened x when None); exact gradient also at zeros."""
    return _scan("cumprod", x, dim, dtype, exclusive, reverse)


def outer(x: Any, y: Any, name: str | None = None) -> Any:
    """The outer product of the flattened x and y: [x.size, y.size]."""
    return _binary("elementwise_mul", reshape(x, [-1, 1]), reshape(y, [1, -1]))


