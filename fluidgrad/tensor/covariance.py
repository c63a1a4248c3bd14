"""cov and corrcoef: paddle.linalg.cov(x, rowvar, ddof, fweights, aweights) and
torch.cov(x, correction=, fweights=, aweights=) in one function, and corrcoef: rows are
variables, columns observations (NumPy's convention). Composed of registered ops (mean, matmul,
divide, clip): both modes, twice differentiable."""
from __future__ import annotations

import math
from typing import Any


from ..dispatch import is_tensor
from ..functions import cast, divide, matmul, maximum, multiply, reshape, sqrt, transpose, unsqueeze
from ..functions import mean as _mean
from ..functions import sum as _sum
from .diagonals import diagonal
from .math import clip

__all__ = ["corrcoef", "cov"]


def _observations(function: str, x: Any, rowvar: bool) -> Any:
    """x as [variables, observations]."""
    if len(x.shape) not in (1, 2):
        raise ValueError(f"{function}: x must be 1-D or 2-D (variables by observations), got shape {list(x.shape)}")
    if "float" not in str(x.dtype):
        x = cast(x, "float64") if "int" in str(x.dtype) or "bool" in str(x.dtype) else x
    if len(x.shape) == 1:
        return reshape(x, [1, -1])
    return x if rowvar else transpose(x, [1, 0])


def _weights(x: Any, values: Any, what: str) -> Any:
    """fweights / aweights as a [observations] row of x's dtype, checked as torch checks them."""
    if values is None:
        return None
    count = x.shape[1]
    if len(values.shape) != 1 or values.shape[0] != count:
        raise ValueError(f"cov: {what} must be 1-D with one weight per observation ({count}), got shape "
                         f"{list(values.shape)}")
    if what == "fweights" and "int" not in str(values.dtype):
        raise TypeError(f"cov: fweights must be integers (frequencies), got {values.dtype}")
    if is_tensor(values) and (values.numpy() < 0).any():
        raise ValueError(f"cov: {what} must not be negative, got {values.numpy().tolist()}")
    return cast(values, str(x.dtype)) if str(values.dtype) != str(x.dtype) else values


def _correction(ddof: Any, correction: Any) -> float:
    if correction is None:
        return 1.0 if ddof else 0.0
    if ddof is not True:
        raise TypeError("cov: give ddof= (Paddle) or correction= (torch), not both")
    return float(correction)


def cov(x: Any, rowvar: bool = True, ddof: bool = True, fweights: Any = None, aweights: Any = None,
        name: str | None = None, *, correction: int | None = None) -> Any:
    """The covariance matrix of the variables in x's rows (columns when rowvar is False), the
    observations weighted by integer frequencies fweights and / or weights aweights; divided by
    the (weighted) count less `correction` (torch; Paddle's ddof=True is 1, False 0). A 1-D x is
    one variable: a 0-D result. A non-positive divisor gives inf / nan, as both frameworks."""
    data = _observations("cov", x, rowvar)
    if data.shape[1] < 0:
        raise ValueError(f"cov: the number of observations must be known, got shape {list(x.shape)}")
    correction = _correction(ddof, correction)
    freq, weight = _weights(data, fweights, "fweights"), _weights(data, aweights, "aweights")
    w = freq if weight is None else (weight if freq is None else multiply(freq, weight))
    if w is None:
        centred = data - _mean(data, axis=1, keepdim=True)
        divisor = max(data.shape[1] - correction, 0.0)
        products = matmul(centred, centred, transpose_y=True)
        out = products / divisor if divisor else products * math.inf     # c / 0, as torch
    else:
        total = _sum(w)
        centred = data - unsqueeze(divide(_sum(multiply(data, w), axis=1), total), 1)
        if correction == 0:
            divisor = total
        elif weight is None:
            divisor = total - correction
        else:
            divisor = total - divide(_sum(multiply(w, weight)), total) * correction
        out = divide(matmul(multiply(centred, w), centred, transpose_y=True), maximum(divisor, divisor * 0))
    size_one = [a for a, d in enumerate(out.shape) if d == 1]
    return reshape(out, [d for d in out.shape if d != 1]) if size_one else out


def corrcoef(x: Any, rowvar: bool = True, name: str | None = None) -> Any:
    """Pearson's correlation coefficients of the variables in x's rows (columns when rowvar is
    False): cov divided by both standard deviations, clipped to [-1, 1] (paddle.linalg.corrcoef,
    torch.corrcoef). A 1-D x gives 1 (0-D)."""
    c = cov(x, rowvar)
    if len(c.shape) == 0:
        return divide(c, c)
    deviations = sqrt(diagonal(c))
    c = divide(divide(c, unsqueeze(deviations, 1)), unsqueeze(deviations, 0))
    return clip(c, -1.0, 1.0)
