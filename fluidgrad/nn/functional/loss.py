"""Loss functions (Paddle 2 names), for both modes.

Every loss here is a composition of registered ops (the fused `softmax_with_cross_entropy`
among them), so each has a gradient, and a gradient of the gradient, without a grad maker of
its own. Reductions follow Paddle and PyTorch: "mean" (weighted losses divide by the total
weight of the counted elements), "sum" or "none".
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from ... import functions as F
from ...dispatch import apply_op, axis_of_input, is_tensor
from ...framework import DTypeError
from ...tensor.search import take_along_axis, where
from .cross_entropy_forms import check_class_weight, target_form
from .spellings import either
from ...framework.torch_forms import torch_keywords

__all__ = ['softmax_with_cross_entropy', 'cross_entropy', 'nll_loss', 'mse_loss', 'l1_loss', 'smooth_l1_loss',
           'huber_loss', 'binary_cross_entropy', 'binary_cross_entropy_with_logits', 'kl_div',
           'margin_ranking_loss', 'cosine_similarity', 'square_error_cost', 'soft_margin_loss', 'gaussian_nll_loss',
           'sigmoid_focal_loss', 'hinge_embedding_loss', 'multi_label_soft_margin_loss', 'multilabel_soft_margin_loss',
           'poisson_nll_loss', 'multi_margin_loss']


@torch_keywords
def softmax_with_cross_entropy(logits: Any, label: Any, soft_label: bool = False, ignore_index: int = -100,
                               numeric_stable_mode: bool = True, return_softmax: bool = False,
                               axis: int = -1) -> Any:
    """Per-example loss, shaped like logits with `axis` of size 1 (label: [N, 1] or [N] ints).

    A hard label equal to `ignore_index` gives loss 0 and no gradient; any other label outside
    [0, C) is an error. `numeric_stable_mode` is accepted for Paddle's signature: the loss is
    always computed the stable way (logsumexp)."""
    softmax_out, loss = apply_op("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
                                 {"soft_label": bool(soft_label), "axis": int(axis),
                                  "ignore_index": int(ignore_index)})
    return (loss, softmax_out) if return_softmax else loss


def _reduce(loss: Any, reduction: str, fn: str) -> Any:
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{fn}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _check_reduction(reduction: str, fn: str, allowed: tuple[str, ...] = ("mean", "sum", "none")) -> None:
    if reduction not in allowed:
        raise ValueError(f"{fn}: reduction must be one of {', '.join(map(repr, allowed))}, got {reduction!r}")


def _same_shape(a: Any, b: Any) -> bool:
    """Whether two shapes match, an axis of unknown size (-1, static mode) matching any size."""
    return len(a.shape) == len(b.shape) and all(x == y or -1 in (x, y) for x, y in zip(a.shape, b.shape))


def _refuse_another_shape(fn: str, input: Any, label: Any, input_name: str = "input") -> Any:
    """The binary cross-entropies take a label shaped like their input, as PyTorch's and Paddle's:
    a [N] label against a [N, 1] input would broadcast to an [N, N] loss (a wrong answer).
    Returns the label, checked again at run time where a size is unknown until then."""
    if not _same_shape(input, label):
        raise ValueError(f"{fn}: label of shape {list(label.shape)} differs from {input_name} of shape "
                         f"{list(input.shape)}; they must be the same (reshape the label, e.g. "
                         f"label.reshape({list(input.shape)}))")
    return _checked_at_run_time(fn, input, label, -1)


def _refuse_another_batch(fn: str, input: Any, label: Any, class_axis: int) -> Any:
    """A label of one class index per element of `input` (its shape without `class_axis`), as
    PyTorch requires: a label batch of one would otherwise broadcast over every row. Returns the
    label, checked again at run time where a size is unknown until then."""
    want = [d for axis, d in enumerate(input.shape) if axis != class_axis]
    got = list(label.shape)
    if len(got) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(got, want)):
        raise ValueError(f"{fn}: label of shape {got} does not fit input of shape {list(input.shape)}: "
                         f"expected {want}, one class index per element (the batch sizes differ)")
    return _checked_at_run_time(fn, input, label, class_axis)


def _checked_at_run_time(fn: str, input: Any, label: Any, class_axis: int) -> Any:
    """`label` through a `check_label_shape` op when a static shape leaves a size to run time."""
    if is_tensor(label) or is_tensor(input) or -1 not in (*label.shape, *input.shape):
        return label
    return apply_op("check_label_shape", {"Label": label, "Input": input}, {"loss": fn, "class_axis": class_axis})


def _broadcastable(*shapes: Any) -> bool:
    """Whether shapes broadcast together (NumPy's rule); -1 (unknown until run time) fits any size."""
    rank = max(len(s) for s in shapes)
    for axis in range(1, rank + 1):
        sizes = {s[-axis] for s in shapes if len(s) >= axis and s[-axis] not in (1, -1)}
        if len(sizes) > 1:
            return False
    return True


def _describe(**tensors: Any) -> str:
    return ", ".join(f"{name} of shape {list(t.shape)}" for name, t in tensors.items())


def _refuse_unbroadcastable(fn: str, **tensors: Any) -> None:
    """A clear error naming the loss, before an elementwise op's own (which names only the op)."""
    if not _broadcastable(*(t.shape for t in tensors.values())):
        raise ValueError(f"{fn}: {_describe(**tensors)} do not broadcast together")


def _warn_another_shape(fn: str, input: Any, label: Any) -> None:
    """The regression losses broadcast a label of another shape, as PyTorch's, which warns that
    this is likely a mistake ([N, 1] against [N] gives [N, N] differences): so do they."""
    if not _same_shape(input, label):
        warnings.warn(f"{fn}: label of shape {list(label.shape)} differs from input of shape {list(input.shape)}; "
                      f"they broadcast, which is likely wrong (an [N, 1] input against an [N] label compares every "
                      f"pair). Give them the same shape.", UserWarning, stacklevel=3)


def _clip(x: Any, min: float = float("-inf"), max: float = float("inf")) -> Any:
    return apply_op("clip", {"X": x}, {"min": float(min), "max": float(max)})


def _class_one_hot(label: Any, like: Any, axis: int, ignore_index: int = -100) -> Any:
    """Constant one-hot of integer `label` laid out like `like` along `axis` (label has that
    axis of size 1, or lacks it); zeros where label == ignore_index."""
    return apply_op("one_hot_like", {"Label": label, "Logits": like}, {"axis": axis, "ignore_index": int(ignore_index)})


def _along(weight: Any, ndim: int, axis: int) -> Any:
    """A [C] vector reshaped to broadcast along `axis` of an ndim-array."""
    shape = [1] * ndim
    shape[axis] = -1
    return F.reshape(weight, shape)


def _hard_label_terms(input: Any, label: Any, weight: Any, ignore_index: int, axis: int, fn: str):
    """For hard labels: (label with ignored entries moved to class 0 and a size-1 `axis`,
    the mask label != ignore_index and the per-element weight w[label] * mask, both float and
    shaped like that label). Float labels are refused, as the fused ops refuse them: compared
    with a one-hot of class indices they would silently pick nothing and give 0."""
    if not str(label.dtype).startswith(("int", "uint")):
        raise DTypeError(f"{fn}: hard labels must be integers, got label (shape {list(label.shape)}, {label.dtype})"
                         + (" (pass soft_label=True for probabilities)" if fn == "cross_entropy" else ""))
    ndim = len(input.shape)
    if len(label.shape) == ndim - 1:
        label = F.unsqueeze(label, axis)
    if len(label.shape) != ndim:
        raise ValueError(f"{fn}: label of shape {list(label.shape)} does not fit input of shape "
                         f"{list(input.shape)} (class axis {axis})")
    counted = F.not_equal(label, ignore_index)
    label = F.multiply(label, F.cast(counted, label.dtype))          # ignored labels read class 0
    factor = counted = F.cast(counted, input.dtype)
    if weight is not None:
        one_hot = _class_one_hot(label, input, axis)
        picked = F.sum(F.multiply(one_hot, _along(weight, ndim, axis)), axis=axis, keepdim=True)
        factor = F.multiply(counted, picked)
    return label, counted, factor


def _weighted_reduce(loss: Any, factor: Any, reduction: str, fn: str) -> Any:
    loss = F.multiply(loss, factor)
    if reduction == "mean":
        return F.divide(F.sum(loss), F.sum(factor))
    return _reduce(loss, reduction, fn)


@torch_keywords(target="label")
def cross_entropy(input: Any, label: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                  soft_label: bool = False, axis: int | None = None, use_softmax: bool = True,
                  label_smoothing: float = 0.0, name: str | None = None) -> Any:
    """Paddle 2 semantics: `input` are logits (softmax applied inside) unless use_softmax=False,
    in which case `input` are probabilities along the class axis.

    The class axis is `axis`, else read from the shapes (cross_entropy_forms.py): Paddle's last
    axis, or torch's axis 1 for [N, C, d1, ...] logits with [N, d1, ...] integer labels; where both
    fit it is an error asking for axis=. A float target of the logits' shape without soft_label
    is torch's class probabilities (classes on axis 1): loss -sum_c w_c y_c log p_c per element,
    the mean over the elements (not weighed), label smoothing mixing y with the uniform e / C.
    Soft labels (soft_label=True) with a class `weight` weigh each sample's loss by label . weight,
    the mean dividing by the total of those (Paddle's rule).
    Hard labels may carry a class `weight` ([C]) and an `ignore_index`;
    a label equal to `ignore_index` (default -100, as Paddle and PyTorch) adds 0 to the loss and
    nothing to the gradient, and the mean divides by the number (weighted: the total weight) of the
    counted labels, NaN when none counts. Any other label outside [0, C) is an error.
    `label_smoothing` = e mixes the target with the uniform distribution as PyTorch does:
    (1 - e) * (the hard-label loss) + e / C * sum_c w_c * (-log p_c), p the softmax of the logits
    or, with use_softmax=False, the probabilities given.
    With reduction='none' the loss has the labels' shape: [N] for labels [N], [N, 1] for [N, 1].
    """
    _check_reduction(reduction, "cross_entropy")
    form = target_form(input, label, axis, soft_label)
    axis = axis_of_input("cross_entropy", input, form.axis, "input")
    check_class_weight("cross_entropy", input, weight, axis)
    if form.torch_probabilities:
        return _torch_probability_cross_entropy(input, label, weight, reduction, axis, use_softmax,
                                                float(label_smoothing))
    loss = _cross_entropy(input, label, weight, ignore_index, reduction, soft_label, axis, use_softmax,
                          label_smoothing)
    if reduction == "none" and not soft_label and len(label.shape) == len(input.shape) - 1:
        return F.squeeze(loss, axis)  # the labels' shape
    return loss


def _cross_entropy(input: Any, label: Any, weight: Any, ignore_index: int, reduction: str, soft_label: bool,
                   axis: int, use_softmax: bool, label_smoothing: float) -> Any:
    """cross_entropy with the class axis kept (size 1) in an unreduced loss."""
    if soft_label and weight is not None and label_smoothing > 0.0:
        raise ValueError("cross_entropy: weight with soft labels is not supported together with label_smoothing")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], got {label_smoothing}")
    if label_smoothing > 0.0:
        log_p = apply_op("log_softmax", {"X": input}, {"axis": axis}) if use_softmax else F.log(input)
        return _smoothed_cross_entropy(input, log_p, label, weight, ignore_index, reduction, soft_label, axis,
                                       float(label_smoothing))
    if use_softmax:
        loss = softmax_with_cross_entropy(input, label, soft_label=soft_label, ignore_index=ignore_index, axis=axis)
    else:
        loss = _probability_cross_entropy(input, label, soft_label, ignore_index, axis)
    if soft_label and weight is not None:   # Paddle's rule: each sample's loss times label . weight
        picked = F.sum(F.multiply(label, _along(weight, len(input.shape), axis)), axis=axis, keepdim=True)
        return _weighted_reduce(loss, picked, reduction, "cross_entropy")
    if soft_label:
        return _reduce(loss, reduction, "cross_entropy")
    if weight is not None:
        one_hot = _class_one_hot(label, input, axis, ignore_index)            # zeros where ignored
        picked = F.sum(F.multiply(one_hot, _along(weight, len(input.shape), axis)), axis=axis, keepdim=True)
        return _weighted_reduce(loss, picked, reduction, "cross_entropy")
    if reduction == "mean":                         # over the counted labels: NaN when none counts
        return apply_op("counted_mean", {"X": loss, "Label": label}, {"axis": axis, "ignore_index": int(ignore_index)})
    return _reduce(loss, reduction, "cross_entropy")


def _torch_probability_cross_entropy(input: Any, label: Any, weight: Any, reduction: str, axis: int,
                                     use_softmax: bool, eps: float) -> Any:
    """torch's loss for class probabilities `label` (the logits' shape, classes on `axis`):
    -sum_c w_c ((1 - e) y_c + e / C) log p_c, e / C * sum_c as e * mean_c (C may be unknown until
    run time); "mean" averages over the elements, whatever the weights."""
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], got {eps}")
    if label.dtype != input.dtype:
        label = F.cast(label, input.dtype)
    log_p = apply_op("log_softmax", {"X": input}, {"axis": axis}) if use_softmax else F.log(input)
    if weight is not None:
        log_p = F.multiply(log_p, _along(weight, len(input.shape), axis))
    loss = F.sum(F.multiply(label, log_p), axis=axis)
    if eps > 0.0:
        loss = F.add(F.scale(loss, 1.0 - eps), F.scale(F.mean(log_p, axis=axis), eps))
    return _reduce(F.scale(loss, -1.0), reduction, "cross_entropy")


def _probability_cross_entropy(input: Any, label: Any, soft_label: bool, ignore_index: int, axis: int) -> Any:
    """The `cross_entropy` op (probabilities, classes on the last axis) for classes on `axis`:
    input and label moved so that `axis` is last, the loss moved back (size 1 on `axis`)."""
    ndim = len(input.shape)
    attrs = {"soft_label": bool(soft_label), "ignore_index": int(ignore_index)}
    if axis == ndim - 1:
        return apply_op("cross_entropy", {"X": input, "Label": label}, attrs)
    to_last = [a for a in range(ndim) if a != axis] + [axis]
    back = sorted(range(ndim), key=to_last.__getitem__)
    if len(label.shape) == ndim:
        label = F.transpose(label, to_last)
    loss = apply_op("cross_entropy", {"X": F.transpose(input, to_last), "Label": label}, attrs)
    return F.transpose(loss, back)


def _smoothed_cross_entropy(input: Any, log_p: Any, label: Any, weight: Any, ignore_index: int, reduction: str,
                            soft_label: bool, axis: int, eps: float) -> Any:
    """The label-smoothed loss of log-probabilities `log_p` (classes on `axis`); e / C * sum_c as
    e * mean_c, so the class count C may be known only at run time (static mode)."""
    if soft_label:
        loss = F.add(F.scale(F.sum(F.multiply(label, log_p), axis=axis, keepdim=True), 1.0 - eps),
                     F.scale(F.mean(log_p, axis=axis, keepdim=True), eps))
        return _reduce(F.scale(loss, -1.0), reduction, "cross_entropy")
    label, counted, factor = _hard_label_terms(input, label, weight, ignore_index, axis, "cross_entropy")
    one_hot = _class_one_hot(label, input, axis)
    nll = F.scale(F.sum(F.multiply(one_hot, log_p), axis=axis, keepdim=True), -1.0)
    class_weight = log_p if weight is None else F.multiply(log_p, _along(weight, len(input.shape), axis))
    uniform = F.scale(F.mean(class_weight, axis=axis, keepdim=True), -eps)
    loss = F.add(F.scale(F.multiply(nll, factor), 1.0 - eps), F.multiply(uniform, counted))
    if reduction == "mean":
        return F.divide(F.sum(loss), F.sum(factor))
    return _reduce(loss, reduction, "cross_entropy")


def nll_loss(input: Any, label: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean") -> Any:
    """Negative log-likelihood of log-probabilities `input` ([N, C] or [N, C, d1, ...], classes on
    axis 1) at integer `label` ([N] or [N, d1, ...]): -w[label] * input[label], with the
    weighted mean of Paddle and PyTorch. Entries equal to `ignore_index` count nothing."""
    _check_reduction(reduction, "nll_loss")
    ndim = len(input.shape)
    if ndim < 2:
        raise ValueError(f"nll_loss: input must be [N, C, ...], got shape {list(input.shape)}")
    if len(label.shape) != ndim - 1:
        raise ValueError(f"nll_loss: label of shape {list(label.shape)} does not fit input of shape "
                         f"{list(input.shape)}: expected [N, d1, ...] without the class axis")
    check_class_weight("nll_loss", input, weight, 1)
    label = _refuse_another_batch("nll_loss", input, label, 1)
    label, _, factor = _hard_label_terms(input, label, weight, ignore_index, 1, "nll_loss")
    # selected, not multiplied by the one-hot: 0 * -inf of a masked class would make the loss NaN
    chosen = F.cast(_class_one_hot(label, input, 1), "bool")
    picked = F.sum(where(chosen, input, 0.0), axis=1, keepdim=True)
    loss = F.scale(picked, -1.0)
    if reduction == "none":
        return F.squeeze(F.multiply(loss, factor), 1)
    return _weighted_reduce(loss, factor, reduction, "nll_loss")


def mse_loss(input: Any, label: Any, reduction: str = "mean", name: str | None = None) -> Any:
    """The squared error (input - label)**2, reduced by `reduction` ('mean', 'sum' or 'none')."""
    _check_reduction(reduction, "mse_loss")
    _warn_another_shape("mse_loss", input, label)
    return _reduce(F.square(F.subtract(input, label)), reduction, "mse_loss")


def l1_loss(input: Any, label: Any, reduction: str = "mean") -> Any:
    """The absolute error |input - label|, reduced by `reduction`."""
    _check_reduction(reduction, "l1_loss")
    _warn_another_shape("l1_loss", input, label)
    return _reduce(F.abs(F.subtract(input, label)), reduction, "l1_loss")


def _huber(input: Any, label: Any, delta: float, fn: str) -> Any:
    """0.5 d^2 where |d| < delta, else delta (|d| - delta / 2), written without a branch:
    with q = min(|d|, delta), loss = 0.5 q^2 + delta (|d| - q)."""
    if delta <= 0:
        raise ValueError(f"{fn}: delta must be positive, got {delta}")
    size = F.abs(F.subtract(input, label))
    inner = _clip(size, max=delta)
    return F.add(F.scale(F.square(inner), 0.5), F.scale(F.subtract(size, inner), delta))


def _torch_smooth_l1(input: Any, label: Any, beta: float, fn: str) -> Any:
    """torch's smooth L1: 0.5 d^2 / beta where |d| < beta, else |d| - beta / 2 (the Huber loss
    divided by beta, so the slope outside is 1); with q = min(|d|, beta), 0.5 q^2 / beta + (|d| - q).
    beta = 0 is the L1 loss, as in torch."""
    if not beta >= 0:
        raise ValueError(f"{fn}: beta must be non-negative, got {beta}")
    size = F.abs(F.subtract(input, label))
    if beta == 0:
        return size
    inner = _clip(size, max=beta)
    return F.add(F.scale(F.square(inner), 0.5 / beta), F.subtract(size, inner))


def smooth_l1_loss(input: Any, label: Any = None, reduction: str = "mean", delta: float = 1.0,
                   name: str | None = None, *, beta: float | None = None, target: Any = None) -> Any:
    """Paddle's smooth L1 with `delta` (the Huber loss with threshold delta, = torch's huber_loss);
    torch's with `beta` (the Huber loss divided by beta: slope 1 outside beta). The two agree at
    1.0; giving both with other values is an error."""
    fn = "smooth_l1_loss"
    label = either(fn, "label", label, None, "target", target)
    _check_reduction(reduction, fn)
    _warn_another_shape(fn, input, label)
    if beta is None:
        return _reduce(_huber(input, label, float(delta), fn), reduction, fn)
    if delta != 1.0:
        raise TypeError(f"{fn}: give Paddle's delta= (the Huber loss) or torch's beta= (Huber / beta), not both")
    return _reduce(_torch_smooth_l1(input, label, float(beta), fn), reduction, fn)


def huber_loss(input: Any, label: Any = None, reduction: str = "mean", delta: float = 1.0, *,
               target: Any = None) -> Any:
    """The Huber loss (PyTorch's name): 0.5 d^2 where |d| < delta, else delta (|d| - delta / 2);
    the same as Paddle's `smooth_l1_loss(delta=)`."""
    fn = "huber_loss"
    label = either(fn, "label", label, None, "target", target)
    _check_reduction(reduction, fn)
    _warn_another_shape(fn, input, label)
    return _reduce(_huber(input, label, float(delta), fn), reduction, fn)


def binary_cross_entropy(input: Any, label: Any, weight: Any = None, reduction: str = "mean") -> Any:
    """-w (y log x + (1 - y) log(1 - x)) for probabilities x (label shaped like x); each log is
    clamped at -100 (as PyTorch and Paddle), so x = 0 or 1 gives a finite loss, and a finite
    gradient (x - y) / max(x (1 - x), 1e-12): the `bce_loss` op. x outside [0, 1] is an error."""
    _check_reduction(reduction, "binary_cross_entropy")
    label = _refuse_another_shape("binary_cross_entropy", input, label)
    loss = apply_op("bce_loss", {"X": input, "Label": label})
    if weight is not None:
        loss = F.multiply(loss, weight)
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(logit: Any, label: Any, weight: Any = None, reduction: str = "mean",
                                     pos_weight: Any = None) -> Any:
    """Sigmoid and binary cross-entropy in one stable expression:
    (1 - y) x - (1 + (p - 1) y) log_sigmoid(x), p = pos_weight. log_sigmoid is one op whose
    gradient is sigmoid(-x) everywhere, so a logit of exactly 0 (a zero-initialised head) gets
    sigmoid(0) - y, as PyTorch (a max(-x, 0) + log(1 + exp(-|x|)) form has kinks there)."""
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    label = _refuse_another_shape("binary_cross_entropy_with_logits", logit, label, "logit")
    softplus_neg = F.scale(apply_op("log_sigmoid", {"X": logit}), -1.0)      # log(1 + exp(-x))
    if pos_weight is not None:
        log_weight = F.add(F.multiply(F.scale(pos_weight, 1.0, -1.0), label), F.ones_like(label))
        softplus_neg = F.multiply(log_weight, softplus_neg)
    loss = F.add(F.multiply(F.scale(label, -1.0, 1.0), logit), softplus_neg)
    if weight is not None:
        loss = F.multiply(loss, weight)
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def kl_div(input: Any, label: Any, reduction: str = "mean", log_target: bool = False) -> Any:
    """KL(label || exp(input)) pointwise: label (log label - input), 0 where label = 0.
    "batchmean" divides the sum by the batch size (the mathematically right mean)."""
    _check_reduction(reduction, "kl_div", ("mean", "batchmean", "sum", "none"))
    if log_target:
        loss = F.multiply(F.exp(label), F.subtract(label, input))
    else:
        is_zero = F.cast(F.equal(label, F.zeros_like(label)), label.dtype)
        loss = F.multiply(label, F.subtract(F.log(F.add(label, is_zero)), input))
    if reduction == "batchmean":
        return _batch_mean(loss)
    return _reduce(loss, reduction, "kl_div")


def _batch_mean(loss: Any) -> Any:
    """The sum over all elements divided by the batch size (axis 0; a 0-D loss: by 1), as the mean
    over axis 0 of the per-example sums, so that a batch size known only at run time (static mode,
    `None`) divides as well; an empty batch gives 0 / 0 = NaN, as PyTorch."""
    if len(loss.shape) == 0:
        return loss
    per_example = F.sum(loss, axis=list(range(1, len(loss.shape)))) if len(loss.shape) > 1 else loss
    return F.mean(per_example)


def margin_ranking_loss(input: Any, other: Any, label: Any, margin: float = 0.0, reduction: str = "mean") -> Any:
    """max(0, -label (input - other) + margin), label in {1, -1}; clip (slope 1 at 0, as PyTorch's
    clamp_min), not relu (slope 0 there): a tie at the margin still pushes the pair apart."""
    _check_reduction(reduction, "margin_ranking_loss")
    loss = _clip(F.scale(F.multiply(label, F.subtract(input, other)), -1.0, float(margin)), min=0.0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def _broadcast_pair(x1: Any, x2: Any) -> tuple[Any, Any]:
    """x1 and x2 at their common broadcast shape, sizes known only at run time included: adding
    the other's zeros (fill_any_like passes no gradient) broadcasts, and the add's gradient sums back."""
    return (F.add(x1, F.zeros_like(x2, dtype=x1.dtype)), F.add(x2, F.zeros_like(x1, dtype=x2.dtype)))


@torch_keywords
def cosine_similarity(x1: Any, x2: Any, axis: int = 1, eps: float = 1e-8) -> Any:
    """(x1 / max(|x1|, eps)) . (x2 / max(|x2|, eps)) along `axis`, PyTorch's formula (Paddle's
    x1 . x2 / max(|x1| |x2|, eps) differs only for norms below eps): each vector scaled to at most
    length 1 first, so the result stays in [-1, 1]; a zero vector gives 0 and, as in PyTorch, the
    gradient x2 / (|x2| eps) there. The norms are the p_norm op's, which sums float16 squares in
    float32 (a float16 |x|^2 of a wide row overflows). Inputs of different shapes are broadcast
    first (as PyTorch does): a norm taken before broadcasting along `axis` would be the wrong one."""
    if list(x1.shape) != list(x2.shape):
        x1, x2 = _broadcast_pair(x1, x2)

    def unit(x: Any) -> Any:
        norm = apply_op("p_norm", {"X": x}, {"porder": 2.0, "axis": [int(axis)], "keepdim": True,
                                             "reduce_all": False})
        return F.divide(x, _clip(norm, min=float(eps)))
    return F.sum(F.multiply(unit(x1), unit(x2)), axis=axis)


def square_error_cost(input: Any, label: Any) -> Any:
    """(input - label)**2 elementwise, unreduced (Paddle's fit-a-line loss; PyTorch's
    mse_loss(reduction='none')). A label of another shape broadcasts, with a warning as mse_loss."""
    _refuse_unbroadcastable("square_error_cost", input=input, label=label)
    _warn_another_shape("square_error_cost", input, label)
    return F.square(F.subtract(input, label))


def soft_margin_loss(input: Any, label: Any = None, reduction: str = "mean", name: str | None = None, *,
                     target: Any = None) -> Any:
    """log(1 + exp(-label * input)) for labels in {1, -1}, as the one op log_sigmoid (stable for
    any margin: no exp overflow), reduced by `reduction`."""
    fn = "soft_margin_loss"
    label = either(fn, "label", label, None, "target", target)
    _check_reduction(reduction, fn)
    _refuse_unbroadcastable(fn, input=input, label=label)
    _warn_another_shape(fn, input, label)
    loss = F.scale(apply_op("log_sigmoid", {"X": F.multiply(label, input)}), -1.0)
    return _reduce(loss, reduction, fn)


def _same_size(a: int, b: int) -> bool:
    return a == b or -1 in (a, b)


def _fit_variance(fn: str, input: Any, variance: Any) -> Any:
    """PyTorch's rule: a variance shaped like input (heteroscedastic), or like input without its
    last axis, or like input with one axis of size 1 where input's is not (homoscedastic)."""
    ishape, vshape = list(input.shape), list(variance.shape)
    if len(ishape) == len(vshape) and all(map(_same_size, ishape, vshape)):
        return variance
    if len(vshape) == len(ishape) - 1 and all(map(_same_size, ishape[:-1], vshape)):
        return F.unsqueeze(variance, -1)
    if len(ishape) == len(vshape):
        differing = [v for i, v in zip(ishape, vshape) if not _same_size(i, v)]
        if differing == [1]:
            return variance
    raise ValueError(f"{fn}: {_describe(variance=variance)} does not fit {_describe(input=input)}: expected "
                     f"input's shape, input's without its last axis, or input's with one axis of size 1")


def _refuse_negative(fn: str, variance: Any) -> Any:
    """Eager: a ValueError for a negative variance, as PyTorch. Static (no values yet): NaN
    where the variance is negative, added to the loss, instead of a finite wrong answer."""
    if is_tensor(variance):
        if (variance.numpy() < 0).any():
            raise ValueError(f"{fn}: variance has negative entries")
        return F.zeros_like(variance)
    negative = F.less_than(variance, F.zeros_like(variance))
    return where(negative, F.full_like(variance, math.nan), F.zeros_like(variance))


def gaussian_nll_loss(input: Any, label: Any = None, variance: Any = None, full: bool = False,
                      epsilon: float = 1e-6, reduction: str = "mean", name: str | None = None, *,
                      target: Any = None, var: Any = None, eps: float | None = None) -> Any:
    """0.5 (log v + (input - label)^2 / v) (+ 0.5 log(2 pi) with `full`), v the variance clamped
    at `epsilon`. The clamp passes the gradient straight through to the variance, as PyTorch's
    (which clamps outside autograd): a variance below epsilon still learns. `variance` may be a
    Python number (one variance for all); a negative one is an error."""
    fn = "gaussian_nll_loss"
    label = either(fn, "label", label, None, "target", target)
    variance = either(fn, "variance", variance, None, "var", var)
    epsilon = either(fn, "epsilon", epsilon, 1e-6, "eps", eps)
    _check_reduction(reduction, fn)
    if isinstance(variance, (int, float)):
        if variance < 0:
            raise ValueError(f"{fn}: variance has negative entries (got {variance})")
        variance = F.full_like(input, float(variance))
    _refuse_unbroadcastable(fn, input=input, label=label)
    variance = _fit_variance(fn, input, variance)
    unclamped = F.add(F.subtract(_clip(variance, min=float(epsilon)), variance), _refuse_negative(fn, variance))
    clamped = F.add(variance, unclamped.detach())
    loss = F.scale(F.add(F.log(clamped), F.divide(F.square(F.subtract(input, label)), clamped)), 0.5)
    if full:
        loss = F.scale(loss, 1.0, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction, fn)


def sigmoid_focal_loss(logit: Any = None, label: Any = None, normalizer: Any = None, alpha: float = 0.25,
                       gamma: float = 2.0, reduction: str = "sum", name: str | None = None, *,
                       inputs: Any = None, targets: Any = None) -> Any:
    """The focal loss of logits: alpha_t (1 - p_t)^gamma times the binary cross-entropy, p_t the
    sigmoid's probability of the label (0 or 1), alpha_t = alpha for 1 and 1 - alpha for 0;
    divided by `normalizer` (e.g. the number of positives) when given. Paddle's signature and
    default reduction ('sum'); torchvision's inputs= / targets= also work, and its alpha < 0
    (no class weighting)."""
    fn = "sigmoid_focal_loss"
    logit = either(fn, "logit", logit, None, "inputs", inputs)
    label = either(fn, "label", label, None, "targets", targets)
    _check_reduction(reduction, fn)
    label = _refuse_another_shape(fn, logit, label, "logit")
    if normalizer is not None and len(normalizer.shape) > 1:
        raise ValueError(f"{fn}: normalizer must be a scalar ([] or [1]), got {_describe(normalizer=normalizer)}")
    if not str(label.dtype).startswith(("float", "bfloat")):
        label = F.cast(label, logit.dtype)
    loss = binary_cross_entropy_with_logits(logit, label, reduction="none")
    if gamma != 0:
        p = F.sigmoid(logit)
        p_t = F.add(F.multiply(p, label), F.multiply(F.scale(p, -1.0, 1.0), F.scale(label, -1.0, 1.0)))
        loss = F.multiply(loss, F.pow(F.scale(p_t, -1.0, 1.0), float(gamma)))
    if alpha >= 0:
        loss = F.multiply(loss, F.scale(label, 2.0 * alpha - 1.0, 1.0 - alpha))   # alpha y + (1 - alpha)(1 - y)
    if normalizer is not None:
        loss = F.divide(loss, normalizer)
    return _reduce(loss, reduction, fn)


def hinge_embedding_loss(input: Any, label: Any = None, margin: float = 1.0, reduction: str = "mean",
                         name: str | None = None, *, target: Any = None) -> Any:
    """input where label is 1, max(0, margin - input) where label is -1 (labels in {1, -1}), as
    PyTorch computes it: (label != 1) max(0, margin - input) + (label != -1) input, so another
    label value gets both terms. The clamp is `clip` (slope 1 at the margin, as clamp_min)."""
    fn = "hinge_embedding_loss"
    label = either(fn, "label", label, None, "target", target)
    _check_reduction(reduction, fn)
    _refuse_unbroadcastable(fn, input=input, label=label)
    _warn_another_shape(fn, input, label)
    zeros = F.zeros_like(input)
    below_margin = _clip(F.scale(input, -1.0, float(margin)), min=0.0)
    loss = F.add(where(F.not_equal(label, F.ones_like(label)), below_margin, zeros),
                 where(F.not_equal(label, F.full_like(label, -1.0)), input, zeros))
    return _reduce(loss, reduction, fn)


def multi_label_soft_margin_loss(input: Any, label: Any = None, weight: Any = None, reduction: str = "mean",
                                 name: str | None = None, *, target: Any = None) -> Any:
    """-(label log sigmoid(input) + (1 - label) log sigmoid(-input)), times `weight` (per class)
    when given, averaged over the classes (the last axis): one loss per example, then reduced.
    Labels are 0 or 1 (multi-hot), of input's shape. Paddle's name; PyTorch's spelling
    multilabel_soft_margin_loss is the same function."""
    fn = "multi_label_soft_margin_loss"
    label = either(fn, "label", label, None, "target", target)
    _check_reduction(reduction, fn)
    label = _refuse_another_shape(fn, input, label)
    if not str(label.dtype).startswith(("float", "bfloat")):
        label = F.cast(label, input.dtype)
    log_p = apply_op("log_sigmoid", {"X": input})
    log_not_p = apply_op("log_sigmoid", {"X": F.scale(input, -1.0)})
    loss = F.scale(F.add(F.multiply(label, log_p), F.multiply(F.scale(label, -1.0, 1.0), log_not_p)), -1.0)
    if weight is not None:
        _refuse_unbroadcastable(fn, input=input, weight=weight)
        loss = F.multiply(loss, weight)
    return _reduce(F.mean(loss, axis=-1), reduction, fn)


multilabel_soft_margin_loss = multi_label_soft_margin_loss


def poisson_nll_loss(input: Any, label: Any = None, log_input: bool = True, full: bool = False,
                     epsilon: float = 1e-8, reduction: str = "mean", name: str | None = None, *,
                     target: Any = None, eps: float | None = None) -> Any:
    """The negative log-likelihood of label under Poisson(rate), without the constant log(label!):
    exp(input) - label input when input is the log rate (log_input, the default), else
    input - label log(input + epsilon). With `full`, Stirling's approximation of log(label!),
    label log label - label + 0.5 log(2 pi label), is added where label > 1 (as both frameworks)."""
    fn = "poisson_nll_loss"
    label = either(fn, "label", label, None, "target", target)
    epsilon = either(fn, "epsilon", epsilon, 1e-8, "eps", eps)
    _check_reduction(reduction, fn)
    if not float(epsilon) > 0:
        raise ValueError(f"{fn}: epsilon must be > 0, got {epsilon}")
    _refuse_unbroadcastable(fn, input=input, label=label)
    _warn_another_shape(fn, input, label)
    if log_input:
        loss = F.subtract(F.exp(input), F.multiply(label, input))
    else:
        loss = F.subtract(input, F.multiply(label, F.log(F.scale(input, 1.0, float(epsilon)))))
    if full:
        counted = F.greater_than(label, F.ones_like(label))
        safe = where(counted, label, F.full_like(label, 2.0))     # (log of 0 nowhere, even unselected)
        stirling = F.add(F.subtract(F.multiply(safe, F.log(safe)), safe),
                         F.scale(F.log(F.scale(safe, 2 * math.pi)), 0.5))
        loss = F.add(loss, where(counted, stirling, F.zeros_like(stirling)))
    return _reduce(loss, reduction, fn)


def multi_margin_loss(input: Any, label: Any = None, p: int = 1, margin: float = 1.0, weight: Any = None,
                      reduction: str = "mean", name: str | None = None, *, target: Any = None) -> Any:
    """The multi-class hinge loss of scores input [N, C] (or [C]) and class indices label [N]
    (or []): the sum over the classes i other than the label y of max(0, margin - x[y] + x[i])^p,
    times weight[y] when a class weight is given, divided by C, as PyTorch (Paddle's weight
    multiplies inside the power instead). A score exactly at the margin has gradient 0 (relu),
    as torch's z > 0 test."""
    fn = "multi_margin_loss"
    label = either(fn, "label", label, None, "target", target)
    _check_reduction(reduction, fn)
    if not float(p) > 0:
        raise ValueError(f"{fn}: p must be > 0 (PyTorch takes 1 or 2), got {p}")
    if len(input.shape) not in (1, 2) or len(label.shape) != len(input.shape) - 1 or \
            (len(input.shape) == 2 and not _same_size(input.shape[0], label.shape[0])):
        raise ValueError(f"{fn}: expected input [N, C] with label [N] (or input [C] with a 0-D label), got "
                         f"{_describe(input=input, label=label)}")
    if "int" not in str(label.dtype):
        raise DTypeError(f"{fn}: label must hold integer class indices, got {label.dtype}")
    single = len(input.shape) == 1
    scores, classes = (F.unsqueeze(input, 0), F.reshape(label, [1])) if single else (input, label)
    count = scores.shape[1]
    if count < 0:
        raise ValueError(f"{fn}: the number of classes of {_describe(input=input)} must be known")
    _refuse_out_of_range(fn, classes, count)
    at_label = take_along_axis(scores, F.unsqueeze(classes, 1), 1)                    # [N, 1]
    hinge = F.relu(F.add(F.scale(at_label, -1.0, float(margin)), scores))             # [N, C]
    hinge = hinge if p == 1 else F.square(hinge) if p == 2 else F.pow(hinge, float(p))
    others = F.scale(F.one_hot(classes, count), -1.0, 1.0)                             # 0 at the label
    hinge = F.multiply(hinge, F.cast(others, hinge.dtype) if others.dtype != hinge.dtype else others)
    if weight is not None:
        if len(weight.shape) != 1 or not _same_size(weight.shape[0], count):
            raise ValueError(f"{fn}: weight must be [C] = [{count}], got {_describe(weight=weight)}")
        hinge = F.multiply(hinge, F.unsqueeze(F.gather(weight, classes), 1))
    loss = F.scale(F.sum(hinge, axis=1), 1.0 / count)
    if single:
        loss = F.reshape(loss, [])
    return _reduce(loss, reduction, fn)


def _refuse_out_of_range(fn: str, classes: Any, count: int) -> None:
    """Eager: a ValueError naming the class indices outside [0, C) (static: take_along_axis's)."""
    if is_tensor(classes):
        values = classes.numpy()
        bad = values[(values < 0) | (values >= count)]
        if bad.size:
            raise ValueError(f"{fn}: label holds class indices outside [0, {count}): {sorted(set(bad.tolist()))[:5]}")
