"""Loss functions (Paddle 2 names), for both modes."""
from __future__ import annotations

from typing import Any

from ... import functions as F
from ...dispatch import apply_op

__all__ = ['softmax_with_cross_entropy', 'cross_entropy', 'mse_loss']


def softmax_with_cross_entropy(logits: Any, label: Any, soft_label: bool = False, axis: int = -1,
                               return_softmax: bool = False) -> Any:
    """Per-example loss, shaped like logits with `axis` of size 1 (label: [N, 1] or [N] ints)."""
    softmax_out, loss = apply_op("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
                                 {"soft_label": bool(soft_label), "axis": int(axis)})
    return (loss, softmax_out) if return_softmax else loss


def _reduce(loss: Any, reduction: str, fn: str) -> Any:
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{fn}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def cross_entropy(input: Any, label: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                  soft_label: bool = False, axis: int = -1, use_softmax: bool = True) -> Any:
    """Paddle 2 semantics: `input` are logits (softmax applied inside) unless use_softmax=False,
    in which case `input` are probabilities along the last axis.

    Hard labels ([N, 1] or [N] integers) may carry a class `weight` ([C]) and an `ignore_index`;
    the mean then divides by the total weight of the counted samples (as Paddle and PyTorch).
    With the default ignore_index=-100 no label is ignored, and a label outside [0, C) is an error.
    """
    if soft_label and weight is not None:
        raise ValueError("cross_entropy: weight is only supported with hard labels (soft_label=False)")
    weighted = not soft_label and (weight is not None or ignore_index != -100)
    if weighted:
        if len(label.shape) == len(input.shape) - 1:
            label = F.unsqueeze(label, axis % len(input.shape))
        counted = F.not_equal(label, ignore_index)
        label = F.multiply(label, F.cast(counted, label.dtype))       # ignored labels read class 0
    if use_softmax:
        loss = softmax_with_cross_entropy(input, label, soft_label=soft_label, axis=axis)
    else:
        loss = apply_op("cross_entropy", {"X": input, "Label": label}, {"soft_label": bool(soft_label)})
    if not weighted:
        return _reduce(loss, reduction, "cross_entropy")
    factor = F.cast(counted, loss.dtype)
    if weight is not None:
        factor = F.multiply(factor, F.gather(weight, label, axis=0))   # shaped like the loss
    loss = F.multiply(loss, factor)
    if reduction == "mean":
        return F.divide(F.sum(loss), F.sum(factor))
    return _reduce(loss, reduction, "cross_entropy")


def mse_loss(input: Any, label: Any, reduction: str = "mean") -> Any:
    """The squared error (input - label)**2, reduced by `reduction` ('mean', 'sum' or 'none')."""
    return _reduce(F.square(F.subtract(input, label)), reduction, "mse_loss")
