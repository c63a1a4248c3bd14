"""The gamma family: lgamma, digamma and polygamma(n).

Each one's derivative is the next (lgamma' = digamma, digamma' = polygamma(1), polygamma(n)' =
polygamma(n + 1)), so the grad makers emit the next op and every order of gradient exists.
The kernels use SciPy when installed (the `fast` extra); without it, lgamma runs math.lgamma
per element and digamma / polygamma the recurrence, reflection and asymptotic series below.
All compute in float64 and round to the input's dtype, as torch's float32 results are.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import float_only, same_as

# B_2k / (2k)! for the asymptotic series (Bernoulli numbers B_2 .. B_16)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _lgamma_scalar(value: float) -> float:
    try:
        return math.lgamma(value)
    except ValueError:      # a pole (0, -1, -2, ...): log|gamma| is +inf there, as SciPy and torch say
        return math.inf


def lgamma_fallback(x: np.ndarray) -> np.ndarray:
    """log|gamma(x)| without SciPy: math.lgamma per element (exact, slow)."""
    return np.vectorize(_lgamma_scalar, otypes=[np.float64])(x)


def _cot_derivative_polynomial(n: int) -> np.polynomial.Polynomial:
    """P_n with d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x)): P_0(c) = c, P_k+1 = -(1 + c^2) P_k'."""
    poly = np.polynomial.Polynomial([0.0, 1.0])
    for _ in range(n):
        poly = -np.polynomial.Polynomial([1.0, 0.0, 1.0]) * poly.deriv()
    return poly


def _polygamma_large(n: int, y: np.ndarray) -> np.ndarray:
    """The asymptotic series of polygamma(n, y), accurate to double precision for y >= 20 + 2n."""
    if n == 0:
        total = np.log(y) - 0.5 / y
        for k, b in enumerate(_BERNOULLI, start=1):
            total -= b / (2 * k) / y ** (2 * k)
        return total
    total = math.factorial(n - 1) / y ** n + math.factorial(n) / (2 * y ** (n + 1))
    for k, b in enumerate(_BERNOULLI, start=1):
        total += b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / y ** (2 * k + n)
    return (-1) ** (n + 1) * total


def _polygamma_positive(n: int, x: np.ndarray) -> np.ndarray:
    """polygamma(n, x) for x > 0: the recurrence psi_n(x) = psi_n(x + 1) - (-1)^n n! / x^(n+1)
    climbs to where the series holds."""
    bound = 20.0 + 2 * n
    y, shift = x.copy(), np.zeros_like(x)
    step = (-1) ** n * math.factorial(n)
    while True:
        low = y < bound
        if not low.any():
            break
        shift[low] -= step / y[low] ** (n + 1)
        y[low] += 1.0
    return _polygamma_large(n, y) + shift


def polygamma_fallback(n: int, x: np.ndarray) -> np.ndarray:
    """polygamma(n, x) without SciPy (n = 0 is digamma). Negative x by reflection:
    psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x)). At the poles (0, -1, ...) it gives
    what SciPy does: digamma -inf at 0 and NaN below, the higher orders +-inf."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    positive = x > 0
    out[positive] = _polygamma_positive(n, x[positive])
    pole = (x <= 0) & (x == np.floor(x))
    negative = (x <= 0) & ~pole
    if negative.any():
        cot = 1.0 / np.tan(math.pi * x[negative])
        mirrored = _polygamma_positive(n, 1.0 - x[negative])
        out[negative] = (-1) ** n * mirrored - math.pi ** (n + 1) * _cot_derivative_polynomial(n)(cot)
    if n == 0:
        out[x == 0] = -np.inf
    else:
        out[pole] = np.inf if n % 2 == 1 else -np.inf
    return out


@functools.cache
def _scipy_special():
    try:
        from scipy import special  # optional (the `fast` extra): NumPy has no gamma functions
        return special
    except ImportError:
        return None


def _lgamma_kernel(x: np.ndarray) -> np.ndarray:
    special = _scipy_special()
    wide = x.astype(np.float64)
    out = special.gammaln(wide) if special else lgamma_fallback(wide)
    return np.asarray(out).astype(x.dtype, copy=False)


def _polygamma_kernel(x: np.ndarray, n: int = 0) -> np.ndarray:
    special, wide = _scipy_special(), x.astype(np.float64)
    if special is None:
        out = polygamma_fallback(int(n), wide)
    else:
        out = special.psi(wide) if n == 0 else special.polygamma(int(n), wide)
    return np.asarray(out).astype(x.dtype, copy=False)


def _float_same_as(ctx):
    float_only(ctx, "X")
    same_as()(ctx)


def _next_order(op_type: str, **attrs):
    """dX = DOut * (the next function of the family)(X)."""
    def grad(g: GradBuilder):
        if g.needs_input_grad("X"):
            order = {name: value(g) for name, value in attrs.items()}
            slope = g.op(op_type, {"X": g.input("X")}, **order)
            g.set_input_grad("X", g.op("elementwise_mul", {"X": g.output_grad("Out"), "Y": slope}))
    return grad


def _polygamma_infer(ctx):
    if int(ctx.attr("n")) < 0:
        raise ctx.shape_error(f"the order n must be >= 0, got {ctx.attr('n')}")
    _float_same_as(ctx)


register_op("lgamma", inputs="X", outputs="Out", kernel=_lgamma_kernel, infer=_float_same_as,
            grad=_next_order("digamma"), doc="log|gamma(x)| (+inf at the poles 0, -1, ...); its slope is digamma.")
register_op("digamma", inputs="X", outputs="Out", kernel=lambda x: _polygamma_kernel(x, 0), infer=_float_same_as,
            grad=_next_order("polygamma", n=lambda g: 1), doc="gamma'(x) / gamma(x); its slope is polygamma(1, x).")
register_op("polygamma", inputs="X", outputs="Out", attrs={"n": 1}, kernel=_polygamma_kernel, infer=_polygamma_infer,
            grad=_next_order("polygamma", n=lambda g: int(g.attr("n")) + 1),
            doc="The n-th derivative of digamma (n = 0 is digamma itself); its slope is polygamma(n + 1).")
