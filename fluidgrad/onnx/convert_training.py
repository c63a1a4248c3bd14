"""ONNX's training update rules (domain ai.onnx.preview.training): Adagrad, Momentum, Adam.

Each is a formula over the learning rate R, the step count T and, per tensor, the weight X,
its gradient G and the optimizer state: written with elementwise ops, so an imported update
step is an ordinary part of the program. Several tensors may be updated by one node: the
inputs are R, T, X1..Xn, G1..Gn, then the states in the same order.
"""
from __future__ import annotations

from typing import Any

from ..framework import Variable
from .convert_common import binary, cast
from .convert_table import converter

DOMAIN = "ai.onnx.preview.training"


class _Formula:
    """Arithmetic on Variables of one float dtype, scalars made constants as needed."""

    def __init__(self, ctx: Any, dtype: str) -> None:
        self.ctx, self.dtype = ctx, dtype

    def v(self, x: Any) -> Variable:
        return x if isinstance(x, Variable) else self.ctx.scalar(float(x), self.dtype)

    def add(self, x, y):
        return binary(self.ctx, "elementwise_add", self.v(x), self.v(y))

    def sub(self, x, y):
        return binary(self.ctx, "elementwise_sub", self.v(x), self.v(y))

    def mul(self, x, y):
        return binary(self.ctx, "elementwise_mul", self.v(x), self.v(y))

    def div(self, x, y):
        return binary(self.ctx, "elementwise_div", self.v(x), self.v(y))

    def sqrt(self, x):
        return self.ctx.op("sqrt", {"X": x})

    def pow(self, base: float, exponent: Variable):
        return binary(self.ctx, "elementwise_pow", self.v(base), exponent)

    def where_positive(self, t: Variable, then: Variable, otherwise: Variable) -> Variable:
        positive = self.ctx.op("greater_than", {"X": t, "Y": self.v(0.0)})
        return self.ctx.op("where", {"Condition": positive, "X": self.v(then), "Y": self.v(otherwise)})


def _groups(ctx: Any, n_states: int) -> tuple[Any, Any, list[list[Variable]], _Formula]:
    inputs = [ctx.input(i) for i in range(ctx.num_inputs)]
    n = (len(inputs) - 2) // (2 + n_states)
    dtype = inputs[2].dtype
    f = _Formula(ctx, dtype)
    r = cast(ctx, inputs[0], dtype)
    t = cast(ctx, inputs[1], dtype)
    groups = [[inputs[2 + k * n + i] for k in range(2 + n_states)] for i in range(n)]
    return r, t, groups, f


def _regularized(f: _Formula, ctx: Any, x: Variable, g: Variable) -> Variable:
    return f.add(f.mul(ctx.attr("norm_coefficient", 0.0), x), g)


@converter(f"{DOMAIN}:Adagrad")
def _adagrad(ctx):
    r, t, groups, f = _groups(ctx, 1)
    rate = f.div(r, f.add(1.0, f.mul(t, ctx.attr("decay_factor", 0.0))))
    xs, hs = [], []
    for x, g, h in groups:
        g = _regularized(f, ctx, x, g)
        h_new = f.add(h, f.mul(g, g))
        xs.append(f.sub(x, f.div(f.mul(rate, g), f.add(f.sqrt(h_new), ctx.attr("epsilon", 0.0)))))
        hs.append(h_new)
    return xs + hs


@converter(f"{DOMAIN}:Momentum")
def _momentum(ctx):
    r, t, groups, f = _groups(ctx, 1)
    alpha, beta = ctx.attr("alpha"), ctx.attr("beta")
    nesterov = ctx.attr("mode", "standard") == "nesterov"
    beta_now = f.where_positive(t, f.v(beta), f.v(1.0))
    xs, vs = [], []
    for x, g, v in groups:
        g = _regularized(f, ctx, x, g)
        v_new = f.add(f.mul(alpha, v), f.mul(beta_now, g))
        step = f.add(g, f.mul(alpha, v_new)) if nesterov else v_new
        xs.append(f.sub(x, f.mul(r, step)))
        vs.append(v_new)
    return xs + vs


@converter(f"{DOMAIN}:Adam")
def _adam(ctx):
    r, t, groups, f = _groups(ctx, 2)
    alpha, beta = ctx.attr("alpha", 0.9), ctx.attr("beta", 0.999)
    t_safe = f.where_positive(t, t, f.v(1.0))  # no 0 / 0 at T = 0, where the correction is not used
    corrected = f.div(f.mul(r, f.sqrt(f.sub(1.0, f.pow(beta, t_safe)))), f.sub(1.0, f.pow(alpha, t_safe)))
    rate = f.where_positive(t, corrected, r)
    post = 1.0 - ctx.attr("norm_coefficient_post", 0.0)
    xs, vs, hs = [], [], []
    for x, g, v, h in groups:
        g = _regularized(f, ctx, x, g)
        v_new = f.add(f.mul(alpha, v), f.mul(1.0 - alpha, g))
        h_new = f.add(f.mul(beta, h), f.mul(1.0 - beta, f.mul(g, g)))
        x_new = f.sub(x, f.mul(rate, f.div(v_new, f.add(f.sqrt(h_new), ctx.attr("epsilon", 1e-6)))))
        xs.append(f.mul(post, x_new))
        vs.append(v_new)
        hs.append(h_new)
    return xs + vs + hs
