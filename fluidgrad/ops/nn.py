"""Neural-network op families: convolution (conv.py), pooling (pooling.py), resampling and
im2col (vision.py), registered on import; plus `clip` and `log_softmax`.

The 2-D kernel names below stay importable for scripts written against this module.
"""
from __future__ import annotations

import numpy as np

from . import conv, pooling, vision  # noqa: F401  (registration side effects)
from . import fused_softmax
from .conv import conv_filter_grad_kernel as conv2d_filter_grad_kernel  # noqa: F401
from .conv import conv_input_grad_kernel as conv2d_input_grad_kernel  # noqa: F401
from .conv import conv_kernel as conv2d_kernel  # noqa: F401
from .pooling import pool_grad_kernel as pool2d_grad_kernel  # noqa: F401
from .pooling import pool_kernel as pool2d_kernel  # noqa: F401
from .loss import in_float32
from .grad_builder import GradBuilder
from .registry import ZERO_GRADIENT, register_op
from .shape_rules import float_only, normalize_axis


# ---------------------------------------------------------------- clip, log_softmax
def _clip_infer(ctx):
    float_only(ctx, "X")
    if ctx.attr("min") > ctx.attr("max"):
        raise ctx.shape_error(f"min {ctx.attr('min')} is larger than max {ctx.attr('max')}")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _clip_grad(g: GradBuilder) -> None:
    """DOut where X is inside the bounds, else 0: a select, not DOut * mask, so an inf DOut (from a
    later sqrt at 0) gives torch's 0 in the clipped elements rather than inf * 0 = nan."""
    mask = g.op("clip_mask", {"X": g.input("X")}, min=g.attr("min"), max=g.attr("max"), closed=g.attr("closed"))
    dout = g.output_grad("Out")
    inside = g.op("cast", {"X": mask}, dtype="bool")
    g.set_input_grad("X", g.op("where", {"Condition": inside, "X": dout, "Y": g.op("fill_zeros_like", {"X": g.input("X")})}))


def _clip_kernel(x, min, max, closed=True):
    return np.clip(x, x.dtype.type(min), x.dtype.type(max)).astype(x.dtype, copy=False)


def _clip_mask_kernel(x, min, max, closed=True):
    if closed:
        return ((x >= min) & (x <= max)).astype(x.dtype)
    return ((x > min) & (x < max)).astype(x.dtype)


# `closed` says where clip's slope is 1: on [min, max] (torch.clamp, fluidgrad.clip) or only on
# (min, max) (closed=False: hardtanh, relu6 and hardsigmoid, whose PyTorch gradients are 0 at the corners)
_CLIP_ATTRS = {"min": -np.inf, "max": np.inf, "closed": True}
register_op("clip", inputs="X", outputs="Out", attrs=_CLIP_ATTRS, kernel=_clip_kernel, infer=_clip_infer,
            grad=_clip_grad, doc="Clamp X into [min, max]; `closed` picks the slope at min and max (1 or 0).")
register_op("clip_mask", inputs="X", outputs="Out", attrs=_CLIP_ATTRS, kernel=_clip_mask_kernel,
            infer=_clip_infer, grad=ZERO_GRADIENT,
            doc="1 where min <= X <= max (closed=False: min < X < max), else 0 (clip's slope).")


def _log_softmax_kernel(x, axis=-1):
    if x.size == 0:  # nothing to normalise (x.max would raise): an empty result, as in PyTorch
        return x.copy()
    if fused_softmax.compiled(x, axis=axis):   # one pass per row (numba)
        return fused_softmax.log_softmax(x)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _log_softmax_infer(ctx):
    float_only(ctx, "X")
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _log_softmax_grad(g: GradBuilder) -> None:
    """dX = dOut - softmax * sum(dOut, axis)."""
    dout, axis = g.output_grad("Out"), g.attr("axis")
    total = g.op("reduce_sum", {"X": dout}, axis=[axis], keepdim=True, reduce_all=False)
    softmax = g.op("exp", {"X": g.output("Out")})
    g.set_input_grad("X", g.op("elementwise_sub", {"X": dout, "Y": g.op("elementwise_mul",
                                                                         {"X": softmax, "Y": total})}))


register_op("log_softmax", inputs="X", outputs="Out", attrs={"axis": -1}, kernel=in_float32(_log_softmax_kernel),
            infer=_log_softmax_infer, grad=_log_softmax_grad, doc="log(softmax(X)) along `axis`, computed stably.")
