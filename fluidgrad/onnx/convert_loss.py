"""Converter of ONNX's SoftmaxCrossEntropyLoss: fluidgrad's softmax_with_cross_entropy on the class
axis 1 (with ONNX's ignore_index), then the class weights and the reduction, as
nn.functional.cross_entropy composes them (the mean divides by the counted labels' weight).
fluidgrad's own export of softmax_with_cross_entropy (export_loss.py) writes this node."""
from __future__ import annotations

import numpy as np

from .convert_common import binary
from .convert_table import converter

_NO_LABEL = int(np.iinfo(np.int64).min)   # ONNX without ignore_index: no label is ignored


@converter("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy_loss(ctx):
    scores, labels = ctx.input(0), ctx.input(1)
    reduction = ctx.attr("reduction", "mean")
    if isinstance(reduction, bytes):
        reduction = reduction.decode()
    if len(scores.shape) < 2 or reduction not in ("none", "sum", "mean"):
        raise ctx.unsupported(f"scores {list(scores.shape)} (need [N, C, ...]) or reduction {reduction!r}")
    ignore_index = int(ctx.attr("ignore_index", _NO_LABEL))
    _, loss = ctx.op("softmax_with_cross_entropy", {"Logits": scores, "Label": labels}, axis=1,
                     ignore_index=ignore_index)
    loss = ctx.op("squeeze", {"X": loss}, axes=[1])
    weight = None
    if ctx.has_input(2):   # weight[label], 0 where ignored
        one_hot = ctx.op("one_hot_like", {"Label": labels, "Logits": scores}, axis=1, ignore_index=ignore_index)
        along = ctx.op("reshape", {"X": ctx.input(2)}, shape=[1, -1] + [1] * (len(scores.shape) - 2))
        weight = ctx.op("reduce_sum", {"X": binary(ctx, "elementwise_mul", one_hot, along)}, axis=[1])
        loss = binary(ctx, "elementwise_mul", loss, weight)
    if reduction == "sum":
        loss = ctx.op("reduce_sum", {"X": loss}, reduce_all=True)
    elif reduction == "mean" and weight is None:
        loss = ctx.op("counted_mean", {"X": loss, "Label": labels}, axis=1, ignore_index=ignore_index)
    elif reduction == "mean":
        loss = binary(ctx, "elementwise_div", ctx.op("reduce_sum", {"X": loss}, reduce_all=True),
                      ctx.op("reduce_sum", {"X": weight}, reduce_all=True))
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        return [loss, ctx.op("log_softmax", {"X": scores}, axis=1)]
    return loss
