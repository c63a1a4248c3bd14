"""Exporters of the cross-entropy ops: softmax_with_cross_entropy (hard labels: ONNX's
SoftmaxCrossEntropyLoss with its ignore_index; soft labels: LogSoftmax and a sum), cross_entropy
on probabilities (`cross_entropy(use_softmax=False)`: Log and a sum, or GatherElements of the
labels), binary cross-entropy of probabilities (bce_loss: Log, clamped), and counted_mean (cross_entropy's mean over the labels not ignored). export_table.py
imports this module, which adds them to the one table.

SoftmaxCrossEntropyLoss wants the classes on axis 1 and labels without a class axis; fluidgrad's
op takes the classes on any axis and labels with a size-1 class axis or without it, and its Loss
keeps the size-1 class axis. So the logits are transposed (when the class axis is not 1), the
labels squeezed, and the loss unsqueezed back.
"""
from __future__ import annotations

import numpy as np

from .export_ops import exporter


def _i64(c, values) -> str:
    return c.const(np.asarray(values, "int64"))


def _labels_without_class_axis(c, axis: int, rank: int) -> str:
    """Label as int64 without the class axis (ONNX's layout for the labels)."""
    label = c.x("Label")
    if len(c.shape_in("Label")) == rank:
        label = c.node("Squeeze", [label, _i64(c, [axis])])
    return label if c.dtype_in("Label") in ("int64", "int32") else c.cast(label, "int64")


@exporter("softmax_with_cross_entropy")
def _softmax_with_cross_entropy(c):
    rank = len(c.shape_in("Logits"))
    axis = int(c.attr("axis")) % rank
    logits = c.x("Logits")
    if c.attr("soft_label"):   # -sum(Label * log_softmax(Logits)) along the axis
        log_p = c.node("LogSoftmax", [logits], axis=axis)
        total = c.node("ReduceSum", [c.node("Mul", [c.x("Label"), log_p]), _i64(c, [axis])], keepdims=1)
        c.node("Neg", [total], [c.out("Loss")])
        c.node("Exp", [log_p], [c.out("Softmax")])
        return
    if rank < 2:
        raise c.refuse("SoftmaxCrossEntropyLoss needs a batch axis besides the classes (logits of rank >= 2)")
    others = [a for a in range(rank) if a != axis]
    if axis != 1:   # ONNX: [N, C, d1, ...]; the labels keep the other axes' order
        logits = c.node("Transpose", [logits], perm=[others[0], axis] + others[1:])
    loss = c.node("SoftmaxCrossEntropyLoss", [logits, _labels_without_class_axis(c, axis, rank)],
                  reduction="none", ignore_index=int(c.attr("ignore_index")))
    c.node("Unsqueeze", [loss, _i64(c, [axis])], [c.out("Loss")])
    c.node("Softmax", [c.x("Logits")], [c.out("Softmax")], axis=axis)


@exporter("cross_entropy")
def _cross_entropy(c):
    """Probabilities X (classes on the last axis): -sum(Label * log X) for soft labels, else
    -log X[Label] along the last axis, 0 where Label equals ignore_index. No NegativeLogLikelihoodLoss:
    it wants the classes on axis 1 and a batch axis; GatherElements takes X as it is."""
    rank, x = len(c.shape_in("X")), c.x("X")
    last = rank - 1
    if c.attr("soft_label"):
        total = c.node("ReduceSum", [c.node("Mul", [c.x("Label"), c.node("Log", [x])]), _i64(c, [last])], keepdims=1)
        c.node("Neg", [total], [c.out("Y")])
        return
    label = c.x("Label")
    if len(c.shape_in("Label")) == rank - 1:
        label = c.node("Unsqueeze", [label, _i64(c, [last])])
    label = label if c.dtype_in("Label") == "int64" else c.cast(label, "int64")
    ignored = c.node("Equal", [label, _i64(c, int(c.attr("ignore_index")))])
    safe = c.node("Where", [ignored, _i64(c, 0), label])   # an ignored label may lie outside [0, C)
    loss = c.node("Neg", [c.node("Log", [c.node("GatherElements", [x, safe], axis=last)])])
    c.node("Where", [ignored, c.const(np.zeros((), c.dtype_in("X"))), loss], [c.out("Y")])


@exporter("bce_loss")
def _bce_loss(c):
    """-(Label log X + (1 - Label) log(1 - X)), each log clamped at -100 as the kernel (and
    PyTorch) clamps it, so X = 0 or 1 gives a finite loss in onnxruntime too."""
    dtype = c.dtype_in("X")
    floor, one = c.const(np.asarray(-100.0, dtype)), c.const(np.asarray(1.0, dtype))
    x, label = c.x("X"), c.x("Label")
    log_x = c.node("Max", [c.node("Log", [x]), floor])
    log_not_x = c.node("Max", [c.node("Log", [c.node("Sub", [one, x])]), floor])
    kept = c.node("Mul", [c.node("Sub", [label, one]), log_not_x])
    c.node("Sub", [kept, c.node("Mul", [label, log_x])], [c.out("Out")])


@exporter("counted_mean")
def _counted_mean(c):
    """sum(X where Label != ignore_index) / count, NaN (0 / 0) or 0 when nothing counts."""
    dtype, rank = c.dtype_in("X"), len(c.shape_in("X"))
    label = c.x("Label")
    if rank and len(c.shape_in("Label")) == rank - 1:
        label = c.node("Unsqueeze", [label, _i64(c, [int(c.attr("axis")) % rank])])
    ignored = c.node("Equal", [label, c.const(np.asarray(int(c.attr("ignore_index")), c.dtype_in("Label")))])
    counted = c.node("Expand", [c.cast(c.node("Not", [ignored]), dtype), c.node("Shape", [c.x("X")])])
    total = c.node("ReduceSum", [c.node("Mul", [c.x("X"), counted])], keepdims=0)
    count = c.node("ReduceSum", [counted], keepdims=0)
    if c.attr("nan_when_empty"):
        c.node("Div", [total, count], [c.out("Out")])
        return
    zero = c.const(np.zeros((), dtype))
    empty = c.node("Equal", [count, zero])
    safe = c.node("Where", [empty, c.const(np.ones((), dtype)), count])
    c.node("Where", [empty, zero, c.node("Div", [total, safe])], [c.out("Out")])


@exporter("one_hot_like")
def _one_hot_like(c):
    """Label (size-1 class axis, or none) == arange(C) along the class axis, times label !=
    ignore_index: the class weights of a weighted cross-entropy read through it."""
    rank = len(c.shape_in("Logits"))
    axis = int(c.attr("axis")) % rank
    classes = c.shape_in("Logits")[axis]
    if classes < 0:
        raise c.refuse("the number of classes (Logits' class axis) must be known")
    label, dtype = c.x("Label"), c.dtype_in("Label")
    if len(c.shape_in("Label")) < rank:
        label = c.node("Unsqueeze", [label, _i64(c, [axis])])
    positions = c.const(np.arange(classes, dtype=dtype).reshape([classes] + [1] * (rank - axis - 1)))
    hit = c.cast(c.node("Equal", [label, positions]), c.dtype_of("Out"))
    counted = c.node("Not", [c.node("Equal", [label, c.const(np.asarray(int(c.attr("ignore_index")), dtype))])])
    c.node("Mul", [hit, c.cast(counted, c.dtype_of("Out"))], [c.out("Out")])


@exporter("check_label_shape")
def _check_label_shape(c):
    """The label itself (ONNX has no run-time check of a shape against another's)."""
    c.node("Identity", [c.x("Label")], [c.out("Out")])
