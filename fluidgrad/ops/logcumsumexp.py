"""logcumsumexp as one op, exact for every prefix (NumPy's logaddexp.accumulate, as PyTorch's running
log-add): shifting the whole axis by its largest value, as a composition of exp / cumsum / log must, turns
the prefixes far below it into -inf.

Its gradient, R_j = sum_{i >= j} V_i exp(x_j - out_i), is `logcumsumexp_grad(X, Out, V)`; with jvp=True
the same op gives the transposed map R_i = sum_{j <= i} V_j exp(x_j - out_i). Each is the other's
gradient in V, so every order of derivative is these two and elementwise ops. Both run a recurrence
whose factors exp(out_j - out_{j+1}) are at most 1 (out grows along the axis): no overflow."""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import float_only, normalize_axis


def _logcumsumexp_kernel(x, axis=-1):
    if x.ndim == 0:
        return x.copy()
    if x.dtype.itemsize < 4:   # float16 / bfloat16: accumulate in float32, as PyTorch
        return np.logaddexp.accumulate(x.astype(np.float32), axis=axis).astype(x.dtype)
    return np.logaddexp.accumulate(x, axis=axis)


def _exp_gap(a, b):
    """exp(a - b), and 0 where a is -inf (an entry that adds nothing; -inf - -inf would be nan)."""
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.exp(a - b)
    return np.where(np.isneginf(a), a.dtype.type(0), gap)


def _logcumsumexp_grad_kernel(x, out, v, axis=-1, jvp=False):
    if x.ndim == 0:
        return (v * _exp_gap(x, out)).astype(x.dtype)
    x, out, v = (np.moveaxis(a, axis, 0) for a in (x, out, v))
    r = np.empty(x.shape, x.dtype)
    n = len(x)
    if n:
        own, step = _exp_gap(x, out), _exp_gap(out[:-1], out[1:])   # exp(x_j - out_j), exp(out_j - out_j+1)
        if jvp:   # T_i = V_i own_i + step_{i-1} T_{i-1}
            r[0] = v[0] * own[0]
            for i in range(1, n):
                r[i] = v[i] * own[i] + step[i - 1] * r[i - 1]
        else:     # S_j = V_j + step_j S_{j+1}; R_j = own_j S_j
            r[-1] = v[-1]
            for j in range(n - 2, -1, -1):
                r[j] = v[j] + step[j] * r[j + 1]
            r *= own
    return np.ascontiguousarray(np.moveaxis(r, 0, axis))


def _infer(ctx):
    float_only(ctx, "X")
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _grad_infer(ctx):
    float_only(ctx, "X", "Out", "V")
    for slot in ("Out", "V"):
        if ctx.shape(slot) != ctx.shape("X") or ctx.dtype(slot) != ctx.dtype("X"):
            raise ctx.shape_error(f"X, Out and V must match, got {ctx.describe('X')} and {ctx.describe(slot)}")
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    ctx.set_output("R", ctx.shape("X"), ctx.dtype("X"))


def _logcumsumexp_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("logcumsumexp_grad", {"X": g.input("X"), "Out": g.output("Out"),
                                                     "V": g.output_grad("Out")}, axis=g.attr("axis"), jvp=False))


def _mul(g, a, b):
    return g.op("elementwise_mul", {"X": a, "Y": b})


def _logcumsumexp_grad_grad(g: GradBuilder) -> None:
    """With w_ij = exp(x_j - out_i) (j <= i) and C the cotangent of R: V's gradient is the other
    map of C; X's and Out's follow from dw_ij / dx_j = w_ij and dw_ij / dout_i = -w_ij."""
    x, out, v, jvp = g.input("X"), g.input("Out"), g.input("V"), g.attr("jvp")
    c, r = g.output_grad("R"), g.output("R")
    other = g.op("logcumsumexp_grad", {"X": x, "Out": out, "V": c}, axis=g.attr("axis"), jvp=not jvp)
    if g.needs_input_grad("V"):
        g.set_input_grad("V", other)
    if g.needs_input_grad("X"):
        g.set_input_grad("X", _mul(g, v, other) if jvp else _mul(g, c, r))
    if g.needs_input_grad("Out"):
        g.set_input_grad("Out", g.op("scale", {"X": _mul(g, c, r) if jvp else _mul(g, v, other)}, scale=-1.0))


register_op("logcumsumexp", inputs="X", outputs="Out", attrs={"axis": -1}, kernel=_logcumsumexp_kernel,
            infer=_infer, grad=_logcumsumexp_grad,
            doc="log(cumsum(exp(X))) along `axis`, exact for every prefix (a running log-add).")
register_op("logcumsumexp_grad", inputs="X Out V", outputs="R", attrs={"axis": -1, "jvp": False},
            kernel=_logcumsumexp_grad_kernel, infer=_grad_infer, grad=_logcumsumexp_grad_grad,
            doc="logcumsumexp's VJP (jvp=False: sum over i >= j of V_i exp(X_j - Out_i)) or JVP (jvp=True: "
                "sum over j <= i of V_j exp(X_j - Out_i)).")
