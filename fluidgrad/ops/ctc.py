"""CTC loss (connectionist temporal classification): `ctc_loss` and its gradient op.

Loss[n] = -log p(Labels[n] | LogProbs[:InputLengths[n], n]), summed over every alignment of
the label sequence (blanks between and around the labels, repeats merged), by the
forward-backward (alpha-beta) recursions in log space over the extended label sequence
l' = (blank, l_1, blank, l_2, ..., blank).

Layout as PyTorch and Paddle: LogProbs [T, N, C] (time-major), Labels [N, S] padded,
InputLengths and LabelLengths [N]. LogProbs is normalised over the classes first
(log_softmax), as Paddle's warpctc does with its input; on log-probabilities (PyTorch's input)
that changes nothing, and the gradient is then PyTorch's: softmax(LogProbs) - gamma, with
gamma[t, n, c] the posterior of class c at time t (zero from InputLengths[n] on). A sample
whose labels cannot fit in its frames has an infinite loss and a NaN gradient on its frames (0
past its input length), as in PyTorch (without zero_infinity).

The forward saves the log alphas; `ctc_loss_grad` runs the beta recursion. The gradient op
has no gradient itself (NO_GRADIENT): asking for a second derivative is a clear error. Both
recursions step through time; with numba (ops/accel.py) each is one compiled loop, otherwise
NumPy steps over all samples and positions at once.
"""
from __future__ import annotations

import numpy as np

from ..framework import dtypes
from ..framework.errors import ExecutionError
from . import accel
from .grad_builder import GradBuilder
from .registry import NO_GRADIENT, register_op
from .shape_rules import float_only

_NEG_INF = -np.inf


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _check_values(log_probs, labels, input_lengths, label_lengths, blank):
    """Lengths and labels the recursions can use; a clear error otherwise (never a wrong loss)."""
    t_max, _, classes = log_probs.shape
    bad = (input_lengths < 0) | (input_lengths > t_max)
    if bad.any():
        raise ExecutionError(f"op ctc_loss: InputLengths must lie in [0, {t_max}] (the time axis of LogProbs, shape "
                         f"{list(log_probs.shape)}), got {input_lengths.tolist()}")
    bad = (label_lengths < 0) | (label_lengths > labels.shape[1])
    if bad.any():
        raise ExecutionError(f"op ctc_loss: LabelLengths must lie in [0, {labels.shape[1]}] (the label axis of Labels, "
                         f"shape {list(labels.shape)}), got {label_lengths.tolist()}")
    used = np.arange(labels.shape[1])[None, :] < label_lengths[:, None]
    wrong = used & ((labels < 0) | (labels >= classes) | (labels == blank))
    if wrong.any():
        n, s = np.argwhere(wrong)[0]
        raise ExecutionError(f"op ctc_loss: Labels[{n}, {s}] = {labels[n, s]} is not a class in [0, {classes}) other "
                         f"than the blank {blank} (LogProbs has shape {list(log_probs.shape)})")


def _extended(labels: np.ndarray, label_lengths: np.ndarray, blank: int) -> tuple[np.ndarray, np.ndarray]:
    """l' per sample ([N, 2S + 1]: blanks at even positions) and where a path may skip from
    s - 2 to s (a label differing from the label two positions back). The padding past a
    sample's label length is any value (PyTorch ignores it): l' holds blanks there, so
    _emissions never indexes LogProbs with it."""
    n, s = labels.shape
    ext = np.full((n, 2 * s + 1), blank, dtype=np.int64)
    used = np.arange(s)[None, :] < label_lengths[:, None]
    ext[:, 1::2] = np.where(used, labels, blank)
    skip = np.zeros(ext.shape, dtype=bool)
    skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
    return ext, skip


def _emissions(log_probs: np.ndarray, ext: np.ndarray) -> np.ndarray:
    """log p(l'_s at time t) for every sample: [T, N, 2S + 1]."""
    return np.take_along_axis(log_probs, np.broadcast_to(ext[None], (log_probs.shape[0],) + ext.shape), axis=2)


def _shift(a: np.ndarray, by: int, fill: float = _NEG_INF) -> np.ndarray:
    """a moved `by` places along the last axis (towards higher s for by > 0), filled with -inf."""
    out = np.full_like(a, fill)
    if by > 0:
        out[..., by:] = a[..., :-by]
    else:
        out[..., :by] = a[..., -by:]
    return out


def _logaddexp3(a, b, c):
    return np.logaddexp(np.logaddexp(a, b), c)


def _alpha_steps(emit, skip, label_lengths, alpha):
    """alpha[t, n, s]: log p(the first s + 1 symbols of l' in frames 0..t, ending at s)."""
    if not len(emit):
        return
    alpha[0, :, 0] = emit[0, :, 0]
    if emit.shape[2] > 1:
        alpha[0, :, 1] = np.where(label_lengths > 0, emit[0, :, 1], _NEG_INF)
    for t in range(1, len(emit)):
        prev = alpha[t - 1]
        alpha[t] = _logaddexp3(prev, _shift(prev, 1), np.where(skip, _shift(prev, 2), _NEG_INF)) + emit[t]


def _beta_steps(emit, skip_next, final, input_lengths, beta):
    """beta[t, n, s]: log p(the rest of l' from s in frames t..T_n - 1, starting at s)."""
    nxt = np.full(emit.shape[1:], _NEG_INF, dtype=emit.dtype)
    for t in range(len(emit) - 1, -1, -1):
        step = _logaddexp3(nxt, _shift(nxt, -1), np.where(skip_next, _shift(nxt, -2), _NEG_INF)) + emit[t]
        start = np.where(final, emit[t], _NEG_INF)
        here = (t == input_lengths - 1)[:, None]
        inside = (t < input_lengths - 1)[:, None]
        beta[t] = np.where(here, start, np.where(inside, step, _NEG_INF))
        nxt = beta[t]


@accel.jit
def _alpha_loop(emit, skip, label_lengths, alpha):
    """_alpha_steps as one compiled loop (alpha starts at -inf)."""
    steps, batch, width = emit.shape
    for n in range(batch):
        if steps == 0:
            continue
        alpha[0, n, 0] = emit[0, n, 0]
        if width > 1 and label_lengths[n] > 0:
            alpha[0, n, 1] = emit[0, n, 1]
        for t in range(1, steps):
            for s in range(width):
                b = alpha[t - 1, n, s - 1] if s >= 1 else -np.inf
                c = alpha[t - 1, n, s - 2] if s >= 2 and skip[n, s] else -np.inf
                a = alpha[t - 1, n, s]
                top = max(a, max(b, c))  # log(e^a + e^b + e^c), -inf when all are
                if top != -np.inf:
                    alpha[t, n, s] = top + np.log(np.exp(a - top) + np.exp(b - top) + np.exp(c - top)) + emit[t, n, s]


@accel.jit
def _beta_loop(emit, skip_next, final, input_lengths, beta):
    """_beta_steps as one compiled loop (beta starts at -inf)."""
    steps, batch, width = emit.shape
    for n in range(batch):
        last = input_lengths[n] - 1
        if last < 0:
            continue
        for s in range(width):
            if final[n, s]:
                beta[last, n, s] = emit[last, n, s]
        for t in range(last - 1, -1, -1):
            for s in range(width):
                b = beta[t + 1, n, s + 1] if s + 1 < width else -np.inf
                c = beta[t + 1, n, s + 2] if s + 2 < width and skip_next[n, s] else -np.inf
                a = beta[t + 1, n, s]
                top = max(a, max(b, c))
                if top != -np.inf:
                    beta[t, n, s] = top + np.log(np.exp(a - top) + np.exp(b - top) + np.exp(c - top)) + emit[t, n, s]


def ctc_loss_kernel(log_probs, labels, input_lengths, label_lengths, blank=0):
    """Loss [N] and the log alphas [T, N, 2S + 1] the gradient reuses."""
    labels, input_lengths, label_lengths = (np.asarray(a, dtype=np.int64) for a in (labels, input_lengths,
                                                                                    label_lengths))
    _check_values(log_probs, labels, input_lengths, label_lengths, blank)
    t_max, batch, _ = log_probs.shape
    ext, skip = _extended(labels, label_lengths, blank)
    emit = _emissions(_log_softmax(log_probs), ext)
    alpha = np.full(emit.shape, _NEG_INF, dtype=log_probs.dtype)
    if accel.enabled() and accel.takes(emit):
        _alpha_loop(emit, skip, label_lengths, alpha)
    else:
        _alpha_steps(emit, skip, label_lengths, alpha)
    rows = np.arange(batch)
    last = np.maximum(input_lengths - 1, 0)
    end = alpha[last, rows, 2 * label_lengths] if t_max else np.full(batch, _NEG_INF, log_probs.dtype)
    before = alpha[last, rows, np.maximum(2 * label_lengths - 1, 0)] if t_max else end
    total = np.logaddexp(end, np.where(label_lengths > 0, before, _NEG_INF))
    # no frames: only the empty label sequence, with probability 1
    total = np.where(input_lengths == 0, np.where(label_lengths == 0, 0.0, _NEG_INF), total)
    return (-total).astype(log_probs.dtype), alpha


def ctc_loss_grad_kernel(log_probs, labels, input_lengths, label_lengths, log_alpha, loss, dloss, blank=0):
    """DLogProbs = dLoss * (softmax(LogProbs) * sum_c gamma - gamma), gamma from alpha * beta."""
    labels, input_lengths, label_lengths = (np.asarray(a, dtype=np.int64) for a in (labels, input_lengths,
                                                                                    label_lengths))
    t_max, batch, classes = log_probs.shape
    ext, skip = _extended(labels, label_lengths, blank)
    normalised = _log_softmax(log_probs)
    emit = _emissions(normalised, ext)
    width = ext.shape[1]
    positions = np.arange(width)[None, :]
    final = (positions == 2 * label_lengths[:, None]) | ((positions == 2 * label_lengths[:, None] - 1)
                                                        & (label_lengths[:, None] > 0))
    skip_next = _shift(skip, -2, fill=False)   # from s a path may jump to s + 2
    beta = np.full(emit.shape, _NEG_INF, dtype=log_probs.dtype)
    if accel.enabled() and accel.takes(emit):
        _beta_loop(emit, skip_next, final, input_lengths, beta)
    else:
        _beta_steps(emit, skip_next, final, input_lengths, beta)
    finite = np.isfinite(loss)
    log_post = log_alpha + beta - emit + np.where(finite, loss, 0.0)[None, :, None]
    posterior = np.exp(np.where(np.isfinite(log_post), log_post, _NEG_INF))
    one_hot = (ext[:, :, None] == np.arange(classes)).astype(log_probs.dtype)   # [N, 2S + 1, C]
    gamma = np.einsum("tnw,nwc->tnc", posterior, one_hot)
    grad = np.exp(normalised) * gamma.sum(axis=2, keepdims=True) - gamma
    # the gradient of an infinite loss is undefined (NaN) on the sample's frames; past its input
    # length it is 0, as PyTorch's (those frames take no part in the loss)
    in_frames = np.arange(t_max)[:, None] < input_lengths[None, :]
    grad = np.where((finite[None, :] | ~in_frames)[:, :, None], grad, np.nan)
    return (grad * dloss[None, :, None]).astype(log_probs.dtype, copy=False)


def _ctc_infer(ctx):
    float_only(ctx, "LogProbs")
    shape = list(ctx.shape("LogProbs"))
    if len(shape) != 3:
        raise ctx.shape_error(f"expects LogProbs of shape [time, batch, classes], got {ctx.describe('LogProbs')}")
    labels = list(ctx.shape("Labels"))
    if len(labels) != 2:
        raise ctx.shape_error(f"expects Labels of shape [batch, max_label_length] (padded), got {ctx.describe('Labels')}")
    for slot in ("Labels", "InputLengths", "LabelLengths"):
        dtype = ctx.dtype(slot)
        if dtype == "bool" or dtypes.is_storage(dtype) or dtypes.dtype_kind(dtype) != dtypes.INTEGER:
            raise ctx.dtype_error(f"expects integer {slot}, got {ctx.describe(slot)}")
    batch = shape[1]
    for slot, dims in (("Labels", labels[:1]), ("InputLengths", ctx.shape("InputLengths")),
                       ("LabelLengths", ctx.shape("LabelLengths"))):
        if len(dims) != 1 or (batch >= 0 and dims[0] >= 0 and dims[0] != batch):
            raise ctx.shape_error(f"{ctx.describe(slot)} must have batch size {batch} on its first axis (the "
                                  f"second of {ctx.describe('LogProbs')}){'' if slot == 'Labels' else ' and one axis'}")
    classes, blank = shape[2], ctx.attr("blank")
    if classes >= 0 and not 0 <= blank < classes:
        raise ctx.shape_error(f"blank={blank} must be a class in [0, {classes}) of {ctx.describe('LogProbs')}")
    width = 2 * labels[1] + 1 if labels[1] >= 0 else -1
    ctx.set_output("Loss", [batch], ctx.dtype("LogProbs"))
    ctx.set_output("LogAlpha", [shape[0], batch, width], ctx.dtype("LogProbs"))


def _ctc_grad(g: GradBuilder) -> None:
    g.set_input_grad("LogProbs", g.op("ctc_loss_grad", {
        "LogProbs": g.input("LogProbs"), "Labels": g.input("Labels"), "InputLengths": g.input("InputLengths"),
        "LabelLengths": g.input("LabelLengths"), "LogAlpha": g.output("LogAlpha"), "Loss": g.output("Loss"),
        "DLoss": g.output_grad("Loss")}, blank=g.attr("blank")))


def _ctc_grad_infer(ctx):
    float_only(ctx, "LogProbs", "DLoss")
    ctx.set_output("DLogProbs", ctx.shape("LogProbs"), ctx.dtype("LogProbs"))


register_op("ctc_loss", inputs="LogProbs Labels InputLengths LabelLengths", outputs="Loss LogAlpha",
            attrs={"blank": 0}, kernel=ctc_loss_kernel, infer=_ctc_infer, grad=_ctc_grad,
            doc="Per-sample CTC loss (negative log-likelihood of the labels over all alignments), LogProbs "
                "[T, N, C] normalised over C first; LogAlpha: the forward recursion, kept for the gradient.")
register_op("ctc_loss_grad", inputs="LogProbs Labels InputLengths LabelLengths LogAlpha Loss DLoss",
            outputs="DLogProbs", attrs={"blank": 0}, kernel=ctc_loss_grad_kernel, infer=_ctc_grad_infer,
            grad=NO_GRADIENT,
            doc="The gradient of ctc_loss by the beta recursion. No gradient itself: CTC's second derivative "
                "is not available (PyTorch has none either).")
