"""Elementwise ops beyond the basic arithmetic: rounding, erf, trigonometry and hyperbolic
functions and their inverses, log/exp variants, remainders, floor division, float tests, bitwise.

Every gradient is written with ordinary registered ops, so grad of grad comes for free.
Rounding, floor division and the float tests are piecewise constant: their gradient is an
explicit zero (a grad maker that sets nothing), never a missing one.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .grad_builder import GradBuilder
from .registry import NO_GRADIENT, ZERO_GRADIENT, register_op
from .shape_rules import binary_broadcast, broadcast_shapes, float_only, same_as


def _float_same_as(ctx):
    float_only(ctx, "X")
    same_as()(ctx)


def _op(g: GradBuilder, type, x, **attrs):
    return g.op(type, {"X": x}, **attrs)


def _mul(g: GradBuilder, a, b):
    return g.op("elementwise_mul", {"X": a, "Y": b})


def _div(g: GradBuilder, a, b):
    return g.op("elementwise_div", {"X": a, "Y": b})


def _scale(g: GradBuilder, x, scale=1.0, bias=0.0):
    return g.op("scale", {"X": x}, scale=scale, bias=bias)


def _chain(derivative):
    """dX = DOut * f'(X), with f' built by `derivative(g, x, out)` from registered ops."""
    def grad(g: GradBuilder):
        if g.needs_input_grad("X"):
            slope = derivative(g, g.input("X"), g.output("Out"))
            g.set_input_grad("X", _mul(g, g.output_grad("Out"), slope))
    return grad


def _unary(name, kernel, derivative, doc=""):
    register_op(name, inputs="X", outputs="Out", kernel=kernel, infer=_float_same_as,
                grad=ZERO_GRADIENT if derivative is None else _chain(derivative), doc=doc)


# ---------------------------------------------------------------- rounding (zero gradient)
_unary("floor", np.floor, None, "Rounds down; its gradient is zero.")
_unary("ceil", np.ceil, None, "Rounds up; its gradient is zero.")
_unary("round", np.round, None, "Rounds half to even (as ONNX Round and PyTorch); its gradient is zero.")
_unary("trunc", np.trunc, None, "Rounds toward zero; its gradient is zero.")


# ---------------------------------------------------------------- erf, logs and exponentials
@functools.cache
def _erf_ufunc():
    """SciPy's erf when installed (the `fast` extra); else math.erf per element (exact, slow)."""
    try:
        from scipy.special import erf  # optional: NumPy has no erf
        return erf
    except ImportError:
        return np.vectorize(math.erf, otypes=[np.float64])


# float32 erf as tanh(x P(x^2)): atanh(erf(x)) / x is smooth and even, so a degree-6
# polynomial in x^2 (least squares, weighted by erf's sensitivity 1 - erf^2, on [0, 3.3])
# gives erf within 1.8e-7 absolutely (3.3e-7 relatively near 0) over the whole line; NumPy's
# SIMD tanh then saturates it exactly to +-1. 14 NumPy passes against the 27 of a rational
# P(x^2) / Q(x^2), and 15-20x faster than SciPy's erf, which computes in double precision.
ERF_TANH_COEFFS = (1.1283793003295925, 0.1027684247697691, -0.0001896845226941742, -0.0006221275611667081,
                   8.866672095552397e-05, -5.856294119314844e-06, 1.535410716018777e-07)


def erf_tanh_argument(x: np.ndarray, x2: np.ndarray, coeffs=ERF_TANH_COEFFS) -> np.ndarray:
    """u = x P(x^2) in a new float32 array (x2 = x * x is read, not changed), so erf(x) = tanh(u);
    `coeffs` may be rescaled to fold a factor of x into P (gelu's erf(x / sqrt(2)))."""
    u = np.multiply(x2, np.float32(coeffs[-1]), out=np.empty(np.shape(x), dtype=np.float32))
    for c in coeffs[-2:0:-1]:
        u += np.float32(c)
        u *= x2
    u += np.float32(coeffs[0])
    u *= x
    return u


def _erf_float32(x):
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):   # |x| > ~1e3: u = +-inf, tanh = +-1
        u = erf_tanh_argument(x, x * x)
    return np.tanh(u, out=u)


def _erf_kernel(x):
    if x.dtype.itemsize <= 4:   # float32 and float16 (computed in float32, then rounded)
        return _erf_float32(x).astype(x.dtype, copy=False)
    return np.asarray(_erf_ufunc()(x)).astype(x.dtype, copy=False)


def _erf_derivative(g: GradBuilder, x, out):
    """2/sqrt(pi) exp(-x^2)."""
    return _scale(g, _op(g, "exp", _scale(g, _op(g, "square", x), -1.0)), 2.0 / math.sqrt(math.pi))


_unary("erf", _erf_kernel, _erf_derivative, "The error function.")


# erfinv's first guess: Giles' single-precision approximation ("Approximating the erfinv
# function", GPU Computing Gems, 2011), good to ~4e-7 relatively; two Newton steps on erf then
# reach double precision (each about doubles the correct digits).
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv_guess(x: np.ndarray) -> np.ndarray:
    w = -np.log((1.0 - x) * (1.0 + x))
    central, tail = w - 2.5, np.sqrt(np.maximum(w, 5.0)) - 3.0
    p_central, p_tail = np.zeros_like(x), np.zeros_like(x)
    for a, b in zip(_ERFINV_CENTRAL, _ERFINV_TAIL):
        p_central, p_tail = p_central * central + a, p_tail * tail + b
    return np.where(w < 5.0, p_central, p_tail) * x


def _erfinv_newton(x: np.ndarray) -> np.ndarray:
    """erfinv without SciPy: the guess refined by Newton steps, on erf(y) = x in the middle and
    on log erfc(|y|) = log(1 - |x|) in the tails (where 1 - erf loses the digits and log erfc is
    nearly quadratic); exact at 0, +-inf at +-1, NaN outside [-1, 1]."""
    erf, erfc = _erf_ufunc(), np.vectorize(math.erfc, otypes=[np.float64])
    size = np.abs(x)
    inside = size < 1
    target = np.where(inside, size, 0.0)
    y = np.abs(_erfinv_guess(target))
    tail = target >= 0.5
    log_rest = np.log1p(-np.where(tail, target, 0.0))     # 1 - |x| is exact for |x| >= 0.5
    for _ in range(4):
        slope = 2.0 / math.sqrt(math.pi) * np.exp(-y * y)
        rest = np.where(tail, erfc(y), 1.0)
        step_tail = (np.log(rest) - log_rest) * rest / slope
        step_middle = (erf(y) - target) / slope
        y = y + np.where(tail, step_tail, -step_middle)
    edge = np.where(size == 1, np.inf, np.nan)
    return np.copysign(np.where(inside, y, edge), x)


def _erfinv_kernel(x):
    try:
        from scipy.special import erfinv  # optional (the `fast` extra): NumPy has no erfinv
    except ImportError:
        erfinv = _erfinv_newton
    return np.asarray(erfinv(x.astype(np.float64))).astype(x.dtype, copy=False)


_unary("erfinv", _erfinv_kernel,   # d erfinv(x) = sqrt(pi) / 2 exp(erfinv(x)^2)
       lambda g, x, out: _scale(g, _op(g, "exp", _op(g, "square", out)), math.sqrt(math.pi) / 2.0),
       "The inverse error function: erf(erfinv(x)) = x on (-1, 1); +-inf at +-1, NaN outside.")
_unary("logit", lambda x: np.log(x) - np.log1p(-x),
       lambda g, x, out: _op(g, "reciprocal", _mul(g, x, _scale(g, x, -1.0, 1.0))),
       "log(X / (1 - X)), the inverse of sigmoid; its slope is 1 / (X (1 - X)).")
_unary("log1p", np.log1p, lambda g, x, out: _op(g, "reciprocal", _scale(g, x, 1.0, 1.0)),
       "log(1 + x), accurate near 0.")
_unary("expm1", np.expm1, lambda g, x, out: _scale(g, out, 1.0, 1.0), "exp(x) - 1, accurate near 0.")
_unary("log2", np.log2, lambda g, x, out: _op(g, "reciprocal", _scale(g, x, math.log(2.0))))
_unary("log10", np.log10, lambda g, x, out: _op(g, "reciprocal", _scale(g, x, math.log(10.0))))


def _rsqrt_kernel(x):
    return 1 / np.sqrt(x)


_unary("rsqrt", _rsqrt_kernel,   # d x^(-1/2) = -1/2 out^3
       lambda g, x, out: _scale(g, _mul(g, out, _op(g, "square", out)), -0.5), "1 / sqrt(x).")
_unary("reciprocal", lambda x: np.divide(1, x, dtype=x.dtype),
       lambda g, x, out: _scale(g, _op(g, "square", out), -1.0), "1 / x.")


# ---------------------------------------------------------------- trigonometry
def _one_minus_square(g: GradBuilder, x):
    return _scale(g, _op(g, "square", x), -1.0, 1.0)


def _one_plus_square(g: GradBuilder, x):
    return _scale(g, _op(g, "square", x), 1.0, 1.0)


_unary("tan", np.tan, lambda g, x, out: _one_plus_square(g, out))
_unary("asin", np.arcsin, lambda g, x, out: _op(g, "rsqrt", _one_minus_square(g, x)))
_unary("acos", np.arccos, lambda g, x, out: _scale(g, _op(g, "rsqrt", _one_minus_square(g, x)), -1.0))
_unary("atan", np.arctan, lambda g, x, out: _op(g, "reciprocal", _one_plus_square(g, x)))
_unary("sinh", np.sinh, lambda g, x, out: _op(g, "cosh", x))
_unary("cosh", np.cosh, lambda g, x, out: _op(g, "sinh", x))
_unary("asinh", np.arcsinh, lambda g, x, out: _op(g, "rsqrt", _one_plus_square(g, x)))
_unary("acosh", np.arccosh, lambda g, x, out: _op(g, "rsqrt", _scale(g, _op(g, "square", x), 1.0, -1.0)))
_unary("atanh", np.arctanh, lambda g, x, out: _op(g, "reciprocal", _one_minus_square(g, x)))


def _atan2_infer(ctx):
    float_only(ctx, "X", "Y")
    binary_broadcast()(ctx)


def _atan2_grad(g: GradBuilder):
    """atan2(x, y) is the angle of the point (y, x): dX = dOut y / r^2, dY = -dOut x / r^2; at the
    origin r^2 counts as 1, so the gradient is 0 there as torch's (not 0 / 0 = nan, which one zero
    vector of padding would spread to every gradient)."""
    x, y, dout = g.input("X"), g.input("Y"), g.output_grad("Out")
    radius2 = g.op("elementwise_add", {"X": _op(g, "square", x), "Y": _op(g, "square", y)})
    at_origin = _scale(g, _op(g, "sign", radius2), -1.0, 1.0)      # 1 where r^2 = 0, else 0
    weight = _div(g, dout, g.op("elementwise_add", {"X": radius2, "Y": at_origin}))
    if g.needs_input_grad("X"):
        g.set_input_grad("X", _mul(g, weight, y))
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", _scale(g, _mul(g, weight, x), -1.0))


register_op("atan2", inputs="X Y", outputs="Out", kernel=np.arctan2, infer=_atan2_infer, grad=_atan2_grad,
            doc="The angle in (-pi, pi] of the point (Y, X): arctan(X / Y) in the right quadrant "
                "(paddle.atan2(x, y), torch.atan2(input, other)).")


# ---------------------------------------------------------------- float tests (bool out)
def _float_test_infer(ctx):
    ctx.set_output("Out", ctx.shape("X"), "bool")


for _name, _fn in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
    register_op(_name, inputs="X", outputs="Out", kernel=_fn, infer=_float_test_infer, grad=NO_GRADIENT,
                doc="A bool mask; integers are always finite.")


# ---------------------------------------------------------------- remainders and floor division
def _check_int_divisor(op_type, y):
    if y.dtype.kind in "iu" and not np.all(y):
        raise ZeroDivisionError(f"op {op_type}: integer division by zero (Y has a 0)")


def _mod_kernel(x, y):
    _check_int_divisor("elementwise_mod", y)
    return np.mod(x, y)


def _fmod_kernel(x, y):
    _check_int_divisor("elementwise_fmod", y)
    return np.fmod(x, y)


def _floordiv_kernel(x, y):
    _check_int_divisor("elementwise_floordiv", y)
    return np.floor_divide(x, y)


def _remainder_grad(rounding):
    """x - rounding(x / y) * y: dX = dOut, dY = -dOut * rounding(x / y)."""
    def grad(g: GradBuilder):
        x, y, dout = g.input("X"), g.input("Y"), g.output_grad("Out")
        g.set_input_grad("X", dout)
        if g.needs_input_grad("Y"):
            quotient = _op(g, rounding, _div(g, x, y))
            g.set_input_grad("Y", _scale(g, _mul(g, dout, quotient), -1.0))
    return grad


def _numeric_broadcast(ctx):
    for slot in ("X", "Y"):
        if ctx.dtype(slot) == "bool":
            raise ctx.dtype_error(f"expects numbers, got {ctx.describe(slot)}")
    binary_broadcast()(ctx)


register_op("elementwise_mod", inputs="X Y", outputs="Out", kernel=_mod_kernel, infer=_numeric_broadcast,
            grad=_remainder_grad("floor"),
            doc="Python's remainder: the result has the sign of Y (ONNX Mod with fmod=0, paddle.remainder).")
register_op("elementwise_fmod", inputs="X Y", outputs="Out", kernel=_fmod_kernel, infer=_numeric_broadcast,
            grad=_remainder_grad("trunc"),
            doc="C's fmod: the result has the sign of X (ONNX Mod with fmod=1, torch.fmod).")
register_op("elementwise_floordiv", inputs="X Y", outputs="Out", kernel=_floordiv_kernel,
            infer=_numeric_broadcast, grad=ZERO_GRADIENT,
            doc="floor(X / Y); piecewise constant, so its gradient is zero.")


# ---------------------------------------------------------------- bitwise (integers and bool)
def _bitwise_infer(ctx):
    for slot in ("X", "Y"):
        if ctx.has_input(slot) and not (ctx.dtype(slot) == "bool" or "int" in ctx.dtype(slot)):
            raise ctx.dtype_error(f"expects integer or bool inputs, got {ctx.describe(slot)}")
    if not ctx.has_input("Y"):
        ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))
        return
    if ctx.dtype("X") != ctx.dtype("Y"):
        raise ctx.dtype_error(f"inputs must have one dtype, got {ctx.describe('X')} and {ctx.describe('Y')}")
    shape = broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"),
                             lambda: f"{ctx.describe('X')} with {ctx.describe('Y')}")
    ctx.set_output("Out", shape, ctx.dtype("X"))


for _name, _fn in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                   ("bitwise_xor", np.bitwise_xor)):
    register_op(_name, inputs="X Y", outputs="Out", kernel=_fn, infer=_bitwise_infer, grad=NO_GRADIENT)
register_op("bitwise_not", inputs="X", outputs="Out", kernel=np.invert, infer=_bitwise_infer, grad=NO_GRADIENT)
