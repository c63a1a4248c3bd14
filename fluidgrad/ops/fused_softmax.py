"""One-pass softmax loops over the last axis, compiled by numba (ops/accel.py) when installed:
softmax and its gradient, log_softmax, softmax with hard-label cross-entropy, and the scaled,
masked, causal softmax of attention scores.

NumPy takes five passes and a transposed copy for a softmax over short rows (the rows of
attention scores, a small vocabulary); these loops take each row's maximum, exponentiate and
normalise it while it is in cache. Rows shorter than SHORT_ROW are exponentiated in one flat
loop over the whole array instead: a vectorised loop needs about 64 elements before its main
body runs at all. ops/loss.py, ops/nn.py and ops/attention.py call these from their kernels
(last axis, float32/float64, not empty); their NumPy code is the fallback and the reference.
"""
from __future__ import annotations

import numpy as np

from . import accel
from .fused_math import exp, jit, row_max

SHORT_ROW = 64


# The loops call no other loop (numba compiles only `exp` and `row_max` into them), so the
# short-row stages are written out in each.
@jit
def softmax_rows(x, out):
    """out = exp(x - max) / sum(exp(x - max)) for each row of 2-D x (out C-contiguous; may be x)."""
    rows, width = x.shape
    one = x.dtype.type(1)
    if width < SHORT_ROW:
        for i in range(rows):
            m = row_max(x, i)
            for j in range(width):
                out[i, j] = x[i, j] - m
        flat = out.reshape(-1)
        for k in range(flat.size):
            flat[k] = exp(flat[k])
        for i in range(rows):
            total = x.dtype.type(0)
            for j in range(width):
                total += out[i, j]
            r = one / total
            for j in range(width):
                out[i, j] *= r
        return
    for i in range(rows):
        m = row_max(x, i)
        total = x.dtype.type(0)
        for j in range(width):
            e = exp(x[i, j] - m)
            out[i, j] = e
            total += e
        r = one / total
        for j in range(width):
            out[i, j] *= r


@jit
def softmax_grad_rows(out, dout, dx):
    """dx = out * (dout - sum(dout * out)) row by row."""
    for i in range(out.shape[0]):
        dot = out.dtype.type(0)
        for j in range(out.shape[1]):
            dot += dout[i, j] * out[i, j]
        for j in range(out.shape[1]):
            dx[i, j] = out[i, j] * (dout[i, j] - dot)


@jit
def log_softmax_rows(x, out):
    """out = (x - max) - log(sum(exp(x - max))) row by row."""
    rows, width = x.shape
    for i in range(rows):
        m = row_max(x, i)
        for j in range(width):
            out[i, j] = x[i, j] - m
    if width < SHORT_ROW:
        e = np.empty(rows * width, x.dtype)
        flat = out.reshape(-1)
        for k in range(flat.size):
            e[k] = exp(flat[k])
        for i in range(rows):
            total = x.dtype.type(0)
            for j in range(width):
                total += e[i * width + j]
            log_total = np.log(total)
            for j in range(width):
                out[i, j] -= log_total
        return
    for i in range(rows):
        total = x.dtype.type(0)
        for j in range(width):
            total += exp(out[i, j])
        log_total = np.log(total)
        for j in range(width):
            out[i, j] -= log_total


@jit
def softmax_cross_entropy_rows(x, label, ignore_index, softmax, loss):
    """softmax of each row, and loss[i] = log(sum(exp(x[i] - max))) - (x[i, label[i]] - max),
    or 0 where label[i] == ignore_index (the caller has checked every other label is a class)."""
    rows, width = x.shape
    one = x.dtype.type(1)
    for i in range(rows):
        m = row_max(x, i)
        for j in range(width):
            softmax[i, j] = x[i, j] - m
        loss[i] = 0 if label[i] == ignore_index else -softmax[i, label[i]]
    if width < SHORT_ROW:
        flat = softmax.reshape(-1)
        for k in range(flat.size):
            flat[k] = exp(flat[k])
    else:
        for i in range(rows):
            for j in range(width):
                softmax[i, j] = exp(softmax[i, j])
    for i in range(rows):
        total = x.dtype.type(0)
        for j in range(width):
            total += softmax[i, j]
        if label[i] != ignore_index:
            loss[i] += np.log(total)
        r = one / total
        for j in range(width):
            softmax[i, j] *= r


@jit
def attention_scores_rows(x, scale, add, has_add, keep, has_keep, queries, causal, out, masked):
    """out = x * scale + add where keep, -inf elsewhere and, when causal, at keys after the
    query (row i is query i % queries). add and keep are [rows, keys] when has_add / has_keep,
    else placeholders never read (said, not guessed from their shapes: one row is [1, keys]).
    A row left all -inf (a query that may see no key) becomes zeros, masked[i] True: the
    caller zeroes its softmax (PyTorch's safe softmax) instead of dividing 0 by 0."""
    rows, keys = x.shape
    minus_inf = x.dtype.type(-np.inf)
    for i in range(rows):
        stop = min(i % queries + 1, keys) if causal else keys
        for j in range(stop):
            out[i, j] = x[i, j] * scale
        if has_add:
            for j in range(stop):
                out[i, j] += add[i, j]
        if has_keep:
            for j in range(stop):
                out[i, j] = out[i, j] if keep[i, j] else minus_inf
        for j in range(stop, keys):
            out[i, j] = minus_inf
        masked[i] = True
        for j in range(stop):
            if out[i, j] != minus_inf:
                masked[i] = False
                break
        if masked[i]:
            for j in range(keys):
                out[i, j] = 0


# ---------------------------------------------------------------- callers (NumPy arrays in, out)
def compiled(x: np.ndarray, *others: np.ndarray, axis: int = -1) -> bool:
    """Whether the compiled loops take x: numba on, float32/float64 (others the same dtype),
    softmax along the last axis, and something to compute."""
    return x.ndim > 0 and x.size > 0 and axis % x.ndim == x.ndim - 1 and accel.enabled() and \
        accel.takes(x, *others)


def _rows(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).reshape(-1, x.shape[-1])


def softmax(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, x.dtype)
    softmax_rows(_rows(x), out.reshape(-1, x.shape[-1]))
    return out


def softmax_grad(out: np.ndarray, dout: np.ndarray) -> np.ndarray:
    dx = np.empty(out.shape, out.dtype)
    softmax_grad_rows(_rows(out), _rows(dout), dx.reshape(-1, out.shape[-1]))
    return dx


def log_softmax(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, x.dtype)
    log_softmax_rows(_rows(x), out.reshape(-1, x.shape[-1]))
    return out


def softmax_cross_entropy(logits: np.ndarray, label: np.ndarray,
                          ignore_index: int = -100) -> tuple[np.ndarray, np.ndarray]:
    """Softmax and Loss (shaped like logits with a last axis of 1) for hard labels that are
    classes or `ignore_index` (loss 0 there)."""
    softmax = np.empty(logits.shape, logits.dtype)
    loss = np.empty(logits.shape[:-1] + (1,), logits.dtype)
    softmax_cross_entropy_rows(_rows(logits), np.ascontiguousarray(label, np.int64).reshape(-1), int(ignore_index),
                               softmax.reshape(-1, logits.shape[-1]), loss.reshape(-1))
    return softmax, loss


def attention_softmax(x: np.ndarray, mask: np.ndarray | None, scale: float, causal: bool) -> np.ndarray:
    """softmax(x * scale + mask) over the last axis of [..., queries, keys] x, causal or not;
    a bool mask (True: attend) replaces the scores it masks by -inf; a row of only -inf gives
    zeros, as ops/attention.py's NumPy kernel."""
    keys = x.shape[-1]
    is_bool = mask is not None and mask.dtype == np.bool_
    is_float = mask is not None and not is_bool
    full = None if mask is None else np.ascontiguousarray(np.broadcast_to(mask, x.shape)).reshape(-1, keys)
    add = full if is_float else np.empty((0, 0), x.dtype)
    keep = full if is_bool else np.empty((0, 0), np.bool_)
    out = np.empty(x.shape, x.dtype)
    rows = out.reshape(-1, keys)
    masked = np.empty(rows.shape[0], np.bool_)
    attention_scores_rows(_rows(x), x.dtype.type(scale), add, is_float, keep, is_bool, x.shape[-2], bool(causal),
                          rows, masked)
    softmax_rows(rows, rows)
    if masked.any():
        rows[masked] = 0
    return out
