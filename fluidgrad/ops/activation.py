"""Elementwise unary functions. Gradients are ordinary ops, so they differentiate again.

relu, sigmoid and tanh, the activations every network runs, get one fused gradient op each
(`<name>_grad(Out, DOut)`) instead of two or three small ones; each fused op has a grad maker
of its own, so second derivatives still come for free."""
from __future__ import annotations

import math

import numpy as np

from . import fused_activation, fused_elementwise
from .elementwise import ERF_TANH_COEFFS, _erf_kernel, erf_tanh_argument
from ..framework.dtypes import REAL_OF
from .complex import complex_abs_grad
from .grad_builder import GradBuilder
from .registry import ZERO_GRADIENT, register_op
from .shape_rules import float_only, same_as


_same_as_x = same_as()


def _float_same_as(ctx):
    float_only(ctx, "X")
    _same_as_x(ctx)


def _numeric_same_as(ctx):
    if ctx.dtype("X") == "bool":
        raise ctx.dtype_error(f"expects a number, got {ctx.describe('X')}")
    _same_as_x(ctx)


def _relu_kernel(x):
    """max(x, 0): a compiled compare-and-select when numba takes x, else np.maximum."""
    compiled = fused_elementwise.relu(x)
    return compiled if compiled is not None else np.maximum(x, 0, dtype=x.dtype)


def _unary(name, kernel, grad, inline=None, doc=""):
    register_op(name, inputs="X", outputs="Out", kernel=kernel, infer=_float_same_as, grad=grad,
                inline=inline, doc=doc)


def _mul(g, a, b):
    return g.op("elementwise_mul", {"X": a, "Y": b})


def _exp_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), g.output("Out")))


def _log_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("elementwise_div", {"X": g.output_grad("Out"), "Y": g.input("X")}))


def _sqrt_grad(g: GradBuilder) -> None:
    half = g.op("scale", {"X": g.output_grad("Out")}, scale=0.5)
    g.set_input_grad("X", g.op("elementwise_div", {"X": half, "Y": g.output("Out")}))


def _square_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), g.op("scale", {"X": g.input("X")}, scale=2.0)))


def _fused_grad(name):
    """The activation's gradient is `<name>_grad(Out, DOut)`, computed from its output."""
    def grad(g: GradBuilder) -> None:
        g.set_input_grad("X", g.op(f"{name}_grad", {"Out": g.output("Out"), "DOut": g.output_grad("Out")}))
    return grad


def _fused_grad_grad(name, d_out_factor):
    """DX = DOut * f'(Out) is linear in DOut (its gradient is the same op again); in Out,
    its gradient is G * DOut * d f'(Out) / d Out, which `d_out_factor(g, out)` builds."""
    def grad(g: GradBuilder) -> None:
        out, dout, cotangent = g.input("Out"), g.input("DOut"), g.output_grad("DX")
        if g.needs_input_grad("DOut"):
            g.set_input_grad("DOut", g.op(f"{name}_grad", {"Out": out, "DOut": cotangent}))
        if d_out_factor is not None and g.needs_input_grad("Out"):
            g.set_input_grad("Out", _mul(g, _mul(g, cotangent, dout), d_out_factor(g, out)))
    return grad


def _fused_grad_infer(ctx):
    float_only(ctx, "Out", "DOut")
    if ctx.dtype("Out") != ctx.dtype("DOut") or ctx.shape("Out") != ctx.shape("DOut"):
        raise ctx.shape_error(f"Out and DOut must match, got {ctx.describe('Out')} and {ctx.describe('DOut')}")
    ctx.set_output("DX", ctx.shape("DOut"), ctx.dtype("DOut"))


def _register_fused_grad(name, kernel, d_out_factor):
    register_op(f"{name}_grad", inputs="Out DOut", outputs="DX", kernel=kernel, infer=_fused_grad_infer,
                grad=_fused_grad_grad(name, d_out_factor), doc=f"The gradient of {name}, from its output.")


# relu selects DOut (never DOut * mask: an inf DOut from a later sqrt at 0 would give inf * 0 = nan where
# relu cut x off, and torch's gradient there is 0); piecewise linear: f'' = 0
_register_fused_grad("relu", lambda out, dout: np.where(out > 0, dout, dout.dtype.type(0)), None)
_register_fused_grad("sigmoid", lambda out, dout: dout * (out * (1 - out)),
                     lambda g, out: g.op("scale", {"X": out}, scale=-2.0, bias=1.0))    # 1 - 2 out
_register_fused_grad("tanh", lambda out, dout: dout * (1 - out * out),
                     lambda g, out: g.op("scale", {"X": out}, scale=-2.0))             # -2 out
_relu_grad, _sigmoid_grad, _tanh_grad = (_fused_grad(n) for n in ("relu", "sigmoid", "tanh"))


def _abs_grad(g: GradBuilder) -> None:
    if g.dtype(g.input("X")) in REAL_OF:
        complex_abs_grad(g)
        return
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), g.op("sign", {"X": g.input("X")})))


def _abs_infer(ctx):
    """|x| keeps x's dtype; a complex x's magnitude is real."""
    if ctx.dtype("X") in REAL_OF:
        ctx.set_output("Out", ctx.shape("X"), REAL_OF[ctx.dtype("X")])
        return
    _numeric_same_as(ctx)


def _pow_grad(g: GradBuilder) -> None:
    factor = g.attr("factor")
    if factor == 0:  # x^0 = 1: the gradient is 0, also at x = 0 (never 0 * x^-1 = 0 * inf)
        g.set_input_grad("X", g.op("scale", {"X": g.output_grad("Out")}, scale=0.0))
        return
    dpow = g.op("scale", {"X": g.op("pow", {"X": g.input("X")}, factor=factor - 1.0)}, scale=factor)
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), dpow))


def _leaky_relu_grad(g: GradBuilder) -> None:
    slope = g.op("leaky_step", {"X": g.input("X")}, alpha=g.attr("alpha"))
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), slope))


def _sin_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), g.op("cos", {"X": g.input("X")})))


def _cos_grad(g: GradBuilder) -> None:
    neg_sin = g.op("scale", {"X": g.op("sin", {"X": g.input("X")})}, scale=-1.0)
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), neg_sin))


def _sigmoid_kernel(x):
    """1 / (1 + exp(-x)): exp overflowing to inf gives exactly 0, never nan. (Masks and np.where
    are branchy in NumPy, 30x slower on mixed signs than these four vectorised passes.)"""
    out = np.empty_like(x)
    np.negative(x, out=out)
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


_unary("exp", np.exp, _exp_grad)
_unary("log", np.log, _log_grad)
_unary("sqrt", np.sqrt, _sqrt_grad)
_unary("square", np.square, _square_grad, inline="{X} * {X}")
_unary("relu", _relu_kernel, _relu_grad)
_unary("sigmoid", _sigmoid_kernel, _sigmoid_grad)
_unary("tanh", np.tanh, _tanh_grad)
register_op("abs", inputs="X", outputs="Out", kernel=np.abs, infer=_abs_infer, grad=_abs_grad,
            doc="|x|, for floating, integer and complex x (as PyTorch and Paddle); the gradient is sign(x) for "
                "floats, x / |x| for complex x.")
_unary("sin", np.sin, _sin_grad)
_unary("cos", np.cos, _cos_grad)
_unary("sign", np.sign, ZERO_GRADIENT, doc="-1, 0 or 1; its gradient is zero.")
register_op("pow", inputs="X", outputs="Out", attrs={"factor": 1.0},
            kernel=lambda x, factor: np.power(x, x.dtype.type(factor)), infer=_float_same_as, grad=_pow_grad)
register_op("leaky_relu", inputs="X", outputs="Out", attrs={"alpha": 0.02},
            kernel=lambda x, alpha: np.maximum(x, 0) + np.minimum(x, 0) * x.dtype.type(alpha), infer=_float_same_as,
            grad=_leaky_relu_grad)
register_op("leaky_step", inputs="X", outputs="Out", attrs={"alpha": 0.02},
            kernel=lambda x, alpha: (x > 0).astype(x.dtype) if alpha == 0 else np.where(x > 0, 1.0, alpha).astype(x.dtype),
            infer=_float_same_as,
            grad=ZERO_GRADIENT, doc="leaky_relu's slope: 1 where X > 0 else alpha.")


# ---------------------------------------------------------------- modern activations
# Each gets one fused forward op and one fused gradient op `<name>_grad(X, DOut) -> DX`
# (NumPy makes one pass per ufunc, so a fused kernel saves the temporaries of a chain of
# ops); the gradient op's own grad maker writes f'' with registered ops, so every order of
# derivative stays available.
def _register_activation(name, kernel, slope_kernel, second, attrs=None, doc=""):
    """`kernel(x, **attrs)` computes f, `slope_kernel(x, dout, **attrs)` DOut * f'(x), and
    `second(g, x, **attrs)` builds f''(x) from registered ops (None: f'' = 0)."""
    attrs = dict(attrs or {})

    def grad(g: GradBuilder) -> None:
        kw = {k: g.attr(k) for k in attrs}
        g.set_input_grad("X", g.op(f"{name}_grad", {"X": g.input("X"), "DOut": g.output_grad("Out")}, **kw))

    def grad_grad(g: GradBuilder) -> None:
        kw = {k: g.attr(k) for k in attrs}
        x, dout, cotangent = g.input("X"), g.input("DOut"), g.output_grad("DX")
        if g.needs_input_grad("DOut"):
            g.set_input_grad("DOut", g.op(f"{name}_grad", {"X": x, "DOut": cotangent}, **kw))
        if second is not None and g.needs_input_grad("X"):
            g.set_input_grad("X", _mul(g, _mul(g, cotangent, dout), second(g, x, **kw)))

    def grad_infer(ctx):
        float_only(ctx, "X", "DOut")
        if ctx.dtype("X") != ctx.dtype("DOut") or ctx.shape("X") != ctx.shape("DOut"):
            raise ctx.shape_error(f"X and DOut must match, got {ctx.describe('X')} and {ctx.describe('DOut')}")
        ctx.set_output("DX", ctx.shape("X"), ctx.dtype("X"))

    register_op(name, inputs="X", outputs="Out", attrs=attrs, kernel=kernel, infer=_float_same_as, grad=grad,
                doc=doc)
    register_op(f"{name}_grad", inputs="X DOut", outputs="DX", attrs=attrs, kernel=slope_kernel,
                infer=grad_infer, grad=grad_grad, doc=f"DOut times the derivative of {name} at X.")


def _g_scale(g, x, scale=1.0, bias=0.0):
    return g.op("scale", {"X": x}, scale=scale, bias=bias)


def _g_unary(g, type, x, **attrs):
    return g.op(type, {"X": x}, **attrs)


def _sub(g, a, b):
    return g.op("elementwise_sub", {"X": a, "Y": b})


def _add(g, a, b):
    return g.op("elementwise_add", {"X": a, "Y": b})


# -- gelu: exact (erf) or the tanh approximation
_SQRT_2_OVER_PI, _GELU_A = math.sqrt(2.0 / math.pi), 0.044715
_INV_SQRT_2PI, _INV_SQRT_2 = 1.0 / math.sqrt(2.0 * math.pi), 1.0 / math.sqrt(2.0)


# erf(x / sqrt(2)) = tanh(x Q(x^2)): the 1 / sqrt(2) folded into the erf polynomial's coefficients
_GELU_ERF_COEFFS = tuple(c / (2.0 ** k * math.sqrt(2.0)) for k, c in enumerate(ERF_TANH_COEFFS))
_LOG_INV_SQRT_2PI = math.log(_INV_SQRT_2PI)


def _gelu_float32_cdf(x, x2):
    """2 Phi(x) - 1 = erf(x / sqrt(2)) for float32 x, in a new array (x2 = x * x)."""
    with np.errstate(over="ignore", invalid="ignore"):
        u = erf_tanh_argument(x, x2, _GELU_ERF_COEFFS)
    return np.tanh(u, out=u)


def _gelu_erf(x, x2):
    if x.dtype == np.float64:
        return _erf_kernel(x * _INV_SQRT_2)
    return _gelu_float32_cdf(x.astype(np.float32, copy=False), x2.astype(np.float32, copy=False))


def _gelu_kernel(x, approximate=False):
    if fused_activation.compiled(x, approximate=approximate):   # one pass (numba)
        return fused_activation.gelu(x, approximate)
    if approximate:
        inner = np.multiply(x, x, out=np.empty(x.shape, dtype=x.dtype))
        inner *= x.dtype.type(_SQRT_2_OVER_PI * _GELU_A)
        inner += x.dtype.type(_SQRT_2_OVER_PI)
        inner *= x
        out = np.tanh(inner, out=inner)
    else:
        with np.errstate(over="ignore"):   # x^2 of |x| > 1.8e19 is inf, as it should be
            out = _gelu_erf(x, x * x)
    out += 1
    out *= x
    out *= x.dtype.type(0.5)
    return out.astype(x.dtype, copy=False)


def _gelu_slope(x, dout, approximate=False):
    if fused_activation.compiled(x, dout, approximate=approximate) and x.shape == dout.shape:
        return fused_activation.gelu_grad(x, dout, approximate)
    t = x.dtype.type
    if approximate:
        x2 = x * x
        tanh = np.tanh(x * (x2 * t(_SQRT_2_OVER_PI * _GELU_A) + t(_SQRT_2_OVER_PI)))
        du = x2 * t(3 * _SQRT_2_OVER_PI * _GELU_A) + t(_SQRT_2_OVER_PI)  # d(inner)/dx
        slope = (1 - tanh * tanh) * x * du
        slope += tanh
        slope += 1
        slope *= t(0.5)
    else:   # Phi(x) + x pdf(x): x^2 serves both, then holds pdf = exp(-x^2 / 2 + log(1 / sqrt(2 pi)))
        with np.errstate(over="ignore"):
            x2 = np.multiply(x, x, out=np.empty(x.shape, dtype=x.dtype))   # an array also for 0-D x
        slope = _gelu_erf(x, x2)
        slope *= t(0.5)
        slope += t(0.5)
        x2 *= t(-0.5)
        x2 += t(_LOG_INV_SQRT_2PI)
        pdf = np.exp(x2, out=x2)
        pdf *= x
        slope += pdf
    slope *= dout
    return slope.astype(x.dtype, copy=False)


def _gelu_second(g, x, approximate=False):
    x2 = _g_unary(g, "square", x)
    if not approximate:  # pdf(x) (2 - x^2)
        pdf = _g_scale(g, _g_unary(g, "exp", _g_scale(g, x2, -0.5)), _INV_SQRT_2PI)
        return _mul(g, pdf, _g_scale(g, x2, -1.0, 2.0))
    c, a = _SQRT_2_OVER_PI, _GELU_A   # (1 - t^2) (p + 3ac x^2 - x t p^2), p = c (1 + 3a x^2)
    tanh = _g_unary(g, "tanh", _mul(g, x, _g_scale(g, x2, c * a, c)))
    p = _g_scale(g, x2, 3 * a * c, c)
    inner = _sub(g, _add(g, p, _g_scale(g, x2, 3 * a * c)), _mul(g, _mul(g, x, tanh), _g_unary(g, "square", p)))
    return _mul(g, _g_scale(g, _g_unary(g, "square", tanh), -1.0, 1.0), inner)


_register_activation("gelu", _gelu_kernel, _gelu_slope, _gelu_second, {"approximate": False},
                     "x * Phi(x); approximate=True uses the tanh form (ONNX Gelu approximate='tanh').")


# -- silu / swish: x * sigmoid(x)
def _silu_kernel(x):
    out = _sigmoid_kernel(x)
    out *= x
    return out


def _silu_slope(x, dout):
    s = _sigmoid_kernel(x)
    slope = (1 - s) * x
    slope += 1
    slope *= s
    slope *= dout
    return slope


def _silu_second(g, x):   # s (1 - s) (2 + x (1 - 2 s))
    s = _g_unary(g, "sigmoid", x)
    ds = _mul(g, s, _g_scale(g, s, -1.0, 1.0))
    return _mul(g, ds, _g_scale(g, _mul(g, x, _g_scale(g, s, -2.0, 1.0)), 1.0, 2.0))


_register_activation("silu", _silu_kernel, _silu_slope, _silu_second, doc="x * sigmoid(x) (swish).")


# -- softplus: log(1 + exp(beta x)) / beta, linear above the threshold (as PyTorch and Paddle)
def _softplus0(x):
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): never overflows (np.logaddexp is exact too,
    but 100x slower)."""
    out = np.empty_like(x)
    np.abs(x, out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += np.maximum(x, 0)
    return out


def _softplus_kernel(x, beta=1.0, threshold=20.0):
    bx = x * x.dtype.type(beta) if beta != 1.0 else x
    out = _softplus0(np.asarray(bx))
    if beta != 1.0:
        out /= x.dtype.type(beta)
    np.copyto(out, x, where=bx > threshold)   # linear above the threshold (rare: cheap)
    return out


def _softplus_slope(x, dout, beta=1.0, threshold=20.0):
    bx = x * x.dtype.type(beta) if beta != 1.0 else x
    slope = _sigmoid_kernel(np.asarray(bx))
    np.copyto(slope, 1, where=bx > threshold)
    slope *= dout
    return slope


def _softplus_second(g, x, beta=1.0, threshold=20.0):   # beta s (1 - s) below the threshold, else 0
    bx = _g_scale(g, x, beta)
    s = _g_unary(g, "sigmoid", bx)
    curve = _g_scale(g, _mul(g, s, _g_scale(g, s, -1.0, 1.0)), beta)
    return _mul(g, curve, _g_unary(g, "clip_mask", bx, min=-math.inf, max=float(threshold)))


_register_activation("softplus", _softplus_kernel, _softplus_slope, _softplus_second,
                     {"beta": 1.0, "threshold": 20.0}, "log(1 + exp(beta x)) / beta, computed without overflow.")


# -- log_sigmoid: min(x, 0) - log1p(exp(-|x|)), finite for every finite x
def _log_sigmoid_kernel(x):
    out = np.minimum(x, 0)
    out -= np.log1p(np.exp(-np.abs(x)))
    return out


def _log_sigmoid_slope(x, dout):
    return dout * _sigmoid_kernel(-x)


def _log_sigmoid_second(g, x):   # -s (1 - s) = s^2 - s
    s = _g_unary(g, "sigmoid", x)
    return _sub(g, _g_unary(g, "square", s), s)


_register_activation("log_sigmoid", _log_sigmoid_kernel, _log_sigmoid_slope, _log_sigmoid_second,
                     doc="log(sigmoid(x)), stable at large magnitudes.")


# -- mish: x * tanh(softplus(x))
def _mish_kernel(x):
    out = np.tanh(_softplus0(x))
    out *= x
    return out


def _mish_slope(x, dout):
    t = np.tanh(_softplus0(x))
    slope = 1 - t * t
    slope *= _sigmoid_kernel(x)
    slope *= x
    slope += t
    slope *= dout
    return slope


def _mish_second(g, x):   # s (1 - t^2) (2 + x (1 - s) - 2 x t s), t = tanh(softplus(x)), s = sigmoid(x)
    t = _g_unary(g, "tanh", _g_unary(g, "softplus", x))
    s = _g_unary(g, "sigmoid", x)
    bracket = _sub(g, _mul(g, x, _g_scale(g, s, -1.0, 1.0)), _g_scale(g, _mul(g, _mul(g, x, t), s), 2.0))
    return _mul(g, _mul(g, s, _g_scale(g, _g_unary(g, "square", t), -1.0, 1.0)), _g_scale(g, bracket, 1.0, 2.0))


_register_activation("mish", _mish_kernel, _mish_slope, _mish_second, doc="x * tanh(softplus(x)).")


# -- elu: x above 0, alpha (exp(x) - 1) below (selu and celu are scalings of it)
def _elu_kernel(x, alpha=1.0):
    out = np.expm1(np.minimum(x, 0))   # 0 where x > 0: no mask needed
    out *= x.dtype.type(alpha)
    out += np.maximum(x, 0)
    return out


def _elu_slope(x, dout, alpha=1.0):
    above = (x > 0).astype(x.dtype)
    slope = np.exp(np.minimum(x, 0))
    slope *= x.dtype.type(alpha)
    slope *= 1 - above
    slope += above
    slope *= dout
    return slope


def _elu_second(g, x, alpha=1.0):   # alpha exp(x) below 0 (exp of min(x, 0): no inf * 0 above)
    below = _g_scale(g, _g_unary(g, "leaky_step", x, alpha=0.0), -1.0, 1.0)
    negative_part = _sub(g, x, _g_unary(g, "relu", x))
    return _mul(g, _g_scale(g, _g_unary(g, "exp", negative_part), alpha), below)


_register_activation("elu", _elu_kernel, _elu_slope, _elu_second, {"alpha": 1.0},
                     "x for x > 0, alpha (exp(x) - 1) otherwise.")


# -- hardswish: x * relu6(x + 3) / 6
def _hardswish_kernel(x):
    out = np.clip(x + 3, 0, 6).astype(x.dtype, copy=False)  # bfloat16: np.clip answers float32
    out *= x
    out /= 6
    return out


def _hardswish_slope(x, dout):   # as PyTorch: 0 up to -3, (2x + 3) / 6 inside (-3, 3), 1 from 3 on
    inside = ((x > -3) & (x < 3)).astype(x.dtype)
    slope = x * x.dtype.type(1 / 3)
    slope += x.dtype.type(0.5)
    slope *= inside
    slope += x >= 3
    slope *= dout
    return slope


_register_activation("hardswish", _hardswish_kernel, _hardswish_slope,
                     lambda g, x: _g_scale(g, _g_unary(g, "clip_mask", x, min=-3.0, max=3.0, closed=False), 1.0 / 3.0),
                     doc="x * relu6(x + 3) / 6.")


# -- prelu: leaky_relu with a learned slope Alpha (broadcast against X)
def _prelu_infer(ctx):
    float_only(ctx, "X", "Alpha")
    if ctx.dtype("Alpha") != ctx.dtype("X"):
        raise ctx.dtype_error(f"X and Alpha must share a dtype, got {ctx.describe('X')} and {ctx.describe('Alpha')}")
    x, alpha = ctx.shape("X"), ctx.shape("Alpha")
    if len(alpha) > len(x) or any(a not in (1, d, -1) and d != -1 for a, d in zip(alpha[::-1], x[::-1])):
        raise ctx.shape_error(f"Alpha must broadcast to X, got {ctx.describe('Alpha')} for {ctx.describe('X')}")
    ctx.set_output("Out", x, ctx.dtype("X"))


def _prelu_grad(g: GradBuilder) -> None:
    x, alpha, dout = g.input("X"), g.input("Alpha"), g.output_grad("Out")
    above = _g_unary(g, "leaky_step", x, alpha=0.0)
    below = _g_scale(g, above, -1.0, 1.0)
    if g.needs_input_grad("X"):
        g.set_input_grad("X", _mul(g, dout, _add(g, above, _mul(g, alpha, below))))
    if g.needs_input_grad("Alpha"):
        g.set_input_grad("Alpha", _mul(g, dout, _mul(g, x, below)))


register_op("prelu", inputs="X Alpha", outputs="Out", kernel=lambda x, alpha: np.maximum(x, 0) + alpha * np.minimum(x, 0),
            infer=_prelu_infer, grad=_prelu_grad, doc="x for x > 0, Alpha * x otherwise (ONNX PRelu).")
