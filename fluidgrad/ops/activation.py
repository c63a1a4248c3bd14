"""Elementwise unary functions. Gradients are ordinary ops, so they differentiate again.

relu, sigmoid and tanh, the activations every network runs, get one fused gradient op each
(`<name>_grad(Out, DOut)`) instead of two or three small ones; each fused op has a grad maker
of its own, so second derivatives still come for free."""
from __future__ import annotations

import numpy as np

from .registry import register_op
from .shape_rules import float_only, same_as


def _float_same_as(ctx):
    float_only(ctx, "X")
    same_as()(ctx)


def _unary(name, kernel, grad, inline=None, doc=""):
    register_op(name, inputs="X", outputs="Out", kernel=kernel, infer=_float_same_as, grad=grad,
                inline=inline, doc=doc)


def _mul(g, a, b):
    return g.op("elementwise_mul", {"X": a, "Y": b})


def _exp_grad(g):
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), g.output("Out")))


def _log_grad(g):
    g.set_input_grad("X", g.op("elementwise_div", {"X": g.output_grad("Out"), "Y": g.input("X")}))


def _sqrt_grad(g):
    half = g.op("scale", {"X": g.output_grad("Out")}, scale=0.5)
    g.set_input_grad("X", g.op("elementwise_div", {"X": half, "Y": g.output("Out")}))


def _square_grad(g):
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), g.op("scale", {"X": g.input("X")}, scale=2.0)))


def _fused_grad(name):
    """The activation's gradient is `<name>_grad(Out, DOut)`, computed from its output."""
    def grad(g):
        g.set_input_grad("X", g.op(f"{name}_grad", {"Out": g.output("Out"), "DOut": g.output_grad("Out")}))
    return grad


def _fused_grad_grad(name, d_out_factor):
    """DX = DOut * f'(Out) is linear in DOut (its gradient is the same op again); in Out,
    its gradient is G * DOut * d f'(Out) / d Out, which `d_out_factor(g, out)` builds."""
    def grad(g):
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


_register_fused_grad("relu", lambda out, dout: dout * (out > 0), None)  # piecewise linear: f'' = 0
_register_fused_grad("sigmoid", lambda out, dout: dout * (out * (1 - out)),
                     lambda g, out: g.op("scale", {"X": out}, scale=-2.0, bias=1.0))    # 1 - 2 out
_register_fused_grad("tanh", lambda out, dout: dout * (1 - out * out),
                     lambda g, out: g.op("scale", {"X": out}, scale=-2.0))             # -2 out
_relu_grad, _sigmoid_grad, _tanh_grad = (_fused_grad(n) for n in ("relu", "sigmoid", "tanh"))


def _abs_grad(g):
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), g.op("sign", {"X": g.input("X")})))


def _pow_grad(g):
    factor = g.attr("factor")
    if factor == 0:  # x^0 = 1: the gradient is 0, also at x = 0 (never 0 * x^-1 = 0 * inf)
        g.set_input_grad("X", g.op("scale", {"X": g.output_grad("Out")}, scale=0.0))
        return
    dpow = g.op("scale", {"X": g.op("pow", {"X": g.input("X")}, factor=factor - 1.0)}, scale=factor)
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), dpow))


def _leaky_relu_grad(g):
    slope = g.op("leaky_step", {"X": g.input("X")}, alpha=g.attr("alpha"))
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), slope))


def _sin_grad(g):
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), g.op("cos", {"X": g.input("X")})))


def _cos_grad(g):
    neg_sin = g.op("scale", {"X": g.op("sin", {"X": g.input("X")})}, scale=-1.0)
    g.set_input_grad("X", _mul(g, g.output_grad("Out"), neg_sin))


def _zero_grad(g):
    """Piecewise-constant functions: the gradient is a (symbolic) zero."""


def _sigmoid_kernel(x):
    # split by sign so that neither branch overflows
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


_unary("exp", np.exp, _exp_grad)
_unary("log", np.log, _log_grad)
_unary("sqrt", np.sqrt, _sqrt_grad)
_unary("square", np.square, _square_grad, inline="{X} * {X}")
_unary("relu", lambda x: np.maximum(x, 0, dtype=x.dtype), _relu_grad)
_unary("sigmoid", _sigmoid_kernel, _sigmoid_grad)
_unary("tanh", np.tanh, _tanh_grad)
_unary("abs", np.abs, _abs_grad)
_unary("sin", np.sin, _sin_grad)
_unary("cos", np.cos, _cos_grad)
_unary("sign", np.sign, _zero_grad, doc="-1, 0 or 1; its gradient is zero.")
register_op("pow", inputs="X", outputs="Out", attrs={"factor": 1.0},
            kernel=lambda x, factor: np.power(x, x.dtype.type(factor)), infer=_float_same_as, grad=_pow_grad)
register_op("leaky_relu", inputs="X", outputs="Out", attrs={"alpha": 0.02},
            kernel=lambda x, alpha: np.where(x > 0, x, x * x.dtype.type(alpha)), infer=_float_same_as,
            grad=_leaky_relu_grad)
register_op("leaky_step", inputs="X", outputs="Out", attrs={"alpha": 0.02},
            kernel=lambda x, alpha: np.where(x > 0, 1.0, alpha).astype(x.dtype), infer=_float_same_as,
            grad=_zero_grad, doc="leaky_relu's slope: 1 where X > 0 else alpha.")
