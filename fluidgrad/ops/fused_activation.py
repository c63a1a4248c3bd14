"""GELU (exact and tanh forms) and its gradient in one compiled pass (numba, ops/accel.py).

NumPy evaluates GELU as a chain of eight to twelve ufunc passes with a temporary each; here
each element is read once. Both forms are written as x * sigmoid(2u), since
0.5 (1 + tanh(u)) = sigmoid(2u): u = sqrt(2/pi) (x + 0.044715 x^3) for the tanh form, and
u = x Q(x^2) with erf(x / sqrt(2)) = tanh(x Q(x^2)) (the float32 erf of ops/elementwise.py)
for the exact one. The sigmoid form has no cancellation in 1 + tanh(u) for negative x, and
its exp is fused_math's vectorised one. The exact form's polynomial is float32-accurate, so
float64 exact GELU stays on NumPy's erf. ops/activation.py calls these from its kernels.
Divisions are np.divide: numba's `/` checks for a zero divisor (Python's ZeroDivisionError),
and that branch keeps the loop from vectorising.
"""
from __future__ import annotations

import math

import numpy as np

from . import accel
from .elementwise import ERF_TANH_COEFFS
from .fused_math import exp, jit

_SQRT_2_OVER_PI, _A = math.sqrt(2.0 / math.pi), 0.044715
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# |x| past which the tanh form's sigmoid(2u) is exactly 0 or 1 in float32 and float64 (u(-21) is
# below float64's exp overflow; u(8) above its 1 - ulp), yet whose x u'(x) ~ 0.2 x^3 is finite
_GELU_SATURATED = 1e3
# erf(x / sqrt(2)) = tanh(x Q(x^2)), the 1 / sqrt(2) folded into the coefficients
_Q = tuple(c / (2.0 ** k * math.sqrt(2.0)) for k, c in enumerate(ERF_TANH_COEFFS))
_Q0, _Q1, _Q2, _Q3, _Q4, _Q5, _Q6 = _Q


@jit
def gelu_flat(x, approximate, out):
    """out = x * sigmoid(2u) over flat arrays."""
    t = x.dtype.type
    one, two = t(1), t(2)
    c, ca = t(_SQRT_2_OVER_PI), t(_SQRT_2_OVER_PI * _A)
    q0, q1, q2, q3, q4, q5, q6 = t(_Q0), t(_Q1), t(_Q2), t(_Q3), t(_Q4), t(_Q5), t(_Q6)
    if approximate:
        for k in range(x.size):
            v = x[k]
            u = v * (c + ca * v * v)
            out[k] = np.divide(v, one + exp(-two * u))
    else:
        for k in range(x.size):
            v = x[k]
            v2 = v * v
            u = v * (q0 + v2 * (q1 + v2 * (q2 + v2 * (q3 + v2 * (q4 + v2 * (q5 + v2 * q6))))))
            out[k] = np.divide(v, one + exp(-two * u))


@jit
def gelu_grad_flat(x, dout, approximate, dx):
    """dx = dout * (Phi(x) + x Phi'(x)) over flat arrays (Phi: the form's sigmoid(2u))."""
    t = x.dtype.type
    one, two, half = t(1), t(2), t(0.5)
    c, ca, ca3 = t(_SQRT_2_OVER_PI), t(_SQRT_2_OVER_PI * _A), t(3 * _SQRT_2_OVER_PI * _A)
    q0, q1, q2, q3, q4, q5, q6 = t(_Q0), t(_Q1), t(_Q2), t(_Q3), t(_Q4), t(_Q5), t(_Q6)
    inv_sqrt_2pi = t(_INV_SQRT_2PI)
    saturated, inf = t(_GELU_SATURATED), t(np.inf)
    if approximate:   # Phi' = 2 s (1 - s) u', u' = c (1 + 3a x^2)
        for k in range(x.size):
            # past +-saturated, s (1 - s) is 0 and the slope 1 or 0: x clamped there keeps
            # x u'(x) finite, which reassociation may multiply before the zero (inf * 0 = NaN
            # from |x| ~ 5e13 in float32). +-inf still give NaN, as NumPy's and PyTorch's.
            xk = x[k]
            v = min(max(xk, -saturated), saturated)
            v2 = v * v
            s = np.divide(one, one + exp(-two * v * (c + ca * v2)))
            slope = s + two * v * s * (one - s) * (c + ca3 * v2)
            dx[k] = dout[k] * (slope if abs(xk) < inf else xk - xk)
    else:             # Phi' = pdf(x) = exp(-x^2 / 2) / sqrt(2 pi)
        for k in range(x.size):
            v = x[k]
            v2 = v * v
            u = v * (q0 + v2 * (q1 + v2 * (q2 + v2 * (q3 + v2 * (q4 + v2 * (q5 + v2 * q6))))))
            s = np.divide(one, one + exp(-two * u))
            dx[k] = dout[k] * (s + v * inv_sqrt_2pi * exp(-half * v2))


def compiled(x: np.ndarray, *others: np.ndarray, approximate: bool = False) -> bool:
    """Whether the compiled loop takes x: numba on, float32 (float64 too for the tanh form)."""
    return x.size > 0 and accel.enabled() and accel.takes(x, *others) and \
        (approximate or x.dtype == np.float32)


def gelu(x: np.ndarray, approximate: bool) -> np.ndarray:
    out = np.empty(x.shape, x.dtype)
    gelu_flat(np.ascontiguousarray(x).reshape(-1), bool(approximate), out.reshape(-1))
    return out


def gelu_grad(x: np.ndarray, dout: np.ndarray, approximate: bool) -> np.ndarray:
    dx = np.empty(x.shape, x.dtype)
    gelu_grad_flat(np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(dout).reshape(-1), bool(approximate),
                   dx.reshape(-1))
    return dx
