"""The softmax of attention scores, fused with their scale, mask and causal mask.

softmax(X * scale + Mask) along the last axis, with -inf above the diagonal when `causal`
(query i sees keys 0..i, PyTorch's top-left alignment). One kernel, one output buffer:
the scaled, masked scores are never kept. Mask is float (added) or bool (True: attend).
A query whose every key is masked (a padded query) gets weights of 0, not NaN, as PyTorch's
scaled_dot_product_attention (its _safe_softmax); its gradient is then 0 too.
The gradient is softmax's fused gradient op (on the output), which differentiates again:
an output row of zeros gives a zero gradient row at every order.
"""
from __future__ import annotations

import functools

import numpy as np

from . import fused_softmax
from .loss import row_max, row_sum
from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import broadcast_shapes, float_only


@functools.lru_cache(maxsize=32)
def _causal_upper(rows: int, cols: int) -> np.ndarray:
    """True where key j lies after query i (j > i): the entries a causal mask removes."""
    return np.triu(np.ones((rows, cols), dtype=bool), k=1)


def _attention_softmax_kernel(x, mask=None, scale=1.0, causal=False):
    if fused_softmax.compiled(x, *([] if mask is None or mask.dtype == np.bool_ else [mask])):
        return fused_softmax.attention_softmax(x, mask, scale, causal)
    s = np.multiply(x, x.dtype.type(scale))
    if mask is not None:
        if mask.dtype == np.bool_:
            np.copyto(s, -np.inf, where=~mask)
        else:
            s += mask
    if causal:
        np.copyto(s, -np.inf, where=_causal_upper(*x.shape[-2:]))
    peak = row_max(s)
    masked_rows = peak == -np.inf
    if masked_rows.any():                      # exp(-inf - 0) = 0 there; then divide by 1, not 0
        peak[masked_rows] = 0
    s -= peak
    np.exp(s, out=s)
    total = row_sum(s)
    if masked_rows.any():
        total[masked_rows] = 1
    s /= total
    return s


def _attention_softmax_infer(ctx):
    float_only(ctx, "X")
    shape = ctx.shape("X")
    if len(shape) < 2:
        raise ctx.shape_error(f"scores must have at least 2 axes [..., queries, keys], got {ctx.describe('X')}")
    if ctx.has_input("Mask"):
        if ctx.dtype("Mask") != "bool" and ctx.dtype("Mask") != ctx.dtype("X"):
            raise ctx.dtype_error(f"Mask must be bool or {ctx.dtype('X')}, got {ctx.describe('Mask')}")
        out = broadcast_shapes(ctx, shape, ctx.shape("Mask"),
                               lambda: f"{ctx.describe('Mask')} to {ctx.describe('X')}")
        if len(out) != len(shape) or any(a != b and a != -1 and b != -1 for a, b in zip(out, shape)):
            raise ctx.shape_error(f"{ctx.describe('Mask')} must broadcast to {ctx.describe('X')}")
    ctx.set_output("Out", shape, ctx.dtype("X"))


def _attention_softmax_grad(g: GradBuilder):
    dscores = g.op("softmax_grad", {"Out": g.output("Out"), "DOut": g.output_grad("Out")}, axis=-1)
    if g.needs_input_grad("X"):
        g.set_input_grad("X", g.op("scale", {"X": dscores}, scale=float(g.attr("scale"))))
    if g.input("Mask") is not None and g.needs_input_grad("Mask"):
        g.set_input_grad("Mask", dscores)


register_op("attention_softmax", inputs="X Mask?", outputs="Out", attrs={"scale": 1.0, "causal": False},
            kernel=_attention_softmax_kernel, infer=_attention_softmax_infer, grad=_attention_softmax_grad,
            doc="softmax(X * scale + Mask) over the last axis, keys after the query masked when causal.")
