"""Which of torch's and Paddle's target forms a `cross_entropy` call uses, read from the shapes.

Why: Paddle's classes are on the last axis (`axis=-1`), with integer labels shaped like the logits
without that axis or with it of size 1, and probabilities only with `soft_label=True`; torch's
classes are on axis 1, with integer targets [N, d1, ...] for logits [N, C, d1, ...] (every
segmentation model) or float class probabilities of the logits' own shape (mixup, distillation).
Without `axis=` the shapes tell them apart; where both readings fit ([N, C, C] logits with [N, C]
labels) guessing could give a wrong loss silently, so that is an error asking for `axis=`.
"""
from __future__ import annotations

from typing import Any, NamedTuple


class TargetForm(NamedTuple):
    """`axis`: the class axis (may be negative); `torch_probabilities`: a float target of the
    logits' shape, weighed and averaged as torch does (not Paddle's soft_label rule)."""

    axis: int
    torch_probabilities: bool = False


def _fits(a: list[int], b: list[int]) -> bool:
    """Same rank, each size equal or unknown (-1, static mode)."""
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b))


def _is_integer(label: Any) -> bool:
    return str(label.dtype).replace("paddle.", "").startswith(("int", "uint"))


def target_form(input: Any, label: Any, axis: int | None, soft_label: bool) -> TargetForm:
    """The class axis (and whether the target is torch's probabilities) of cross_entropy(input,
    label); `axis` None: not given by the caller."""
    shape, labels = list(input.shape), list(label.shape)
    ndim = len(shape)
    if soft_label:
        return TargetForm(-1 if axis is None else axis)
    if not _is_integer(label) and ndim >= 1 and _fits(labels, shape):
        return TargetForm((1 if ndim >= 2 else 0) if axis is None else axis, True)
    if axis is not None or ndim < 3 or len(labels) != ndim - 1:
        return TargetForm(-1 if axis is None else axis)
    paddle, torch = _fits(labels, shape[:-1]), _fits(labels, shape[:1] + shape[2:])
    if paddle and torch and -1 not in labels + shape:
        raise ValueError(f"cross_entropy: labels of shape {labels} fit logits of shape {shape} with the classes on "
                         f"axis 1 (torch's layout) and on the last axis (Paddle's): pass axis=1 or axis=-1")
    return TargetForm(1 if torch and not paddle else -1)


def check_class_weight(fn: str, input: Any, weight: Any, axis: int) -> None:
    """A class weight has one value per class: another size would broadcast against the wrong axis
    or fail inside an elementwise op whose message names neither the loss nor the weight."""
    if weight is None:
        return
    classes = list(input.shape)[axis] if input.shape else -1
    sizes = list(weight.shape)
    if len(sizes) != 1 or -1 not in (sizes[0], classes) and sizes[0] != classes:
        raise ValueError(f"{fn}: weight of shape {sizes} must hold one value per class: {classes} for input of "
                         f"shape {list(input.shape)} (classes on axis {axis})")
