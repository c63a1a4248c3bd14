"""Losses of embeddings compared by a distance or an angle (Paddle 2 names), for both modes:
pairwise_distance, pdist (PyTorch's distances between the rows of one matrix), triplet_margin_loss,
triplet_margin_with_distance_loss, cosine_embedding_loss.

Each is a composition of registered ops (norm, clip, minimum, ...), so it has a gradient and a
gradient of the gradient. They take Paddle's argument names and also PyTorch's where those
differ (anchor= for input=, eps= for epsilon=, target= for label=), as keywords."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ... import functions as F
from ...indexing import constant
from ...tensor.linalg import norm
from .loss import _broadcastable, _check_reduction, _clip, _describe, _reduce
from .spellings import either

__all__ = ['pairwise_distance', 'pdist', 'triplet_margin_loss', 'triplet_margin_with_distance_loss',
           'cosine_embedding_loss']


def pairwise_distance(x: Any, y: Any, p: float = 2.0, epsilon: float = 1e-6, keepdim: bool = False,
                      name: str | None = None, *, eps: float | None = None) -> Any:
    """||x - y + epsilon||_p over the last axis (x and y broadcast together), as Paddle and PyTorch:
    the epsilon keeps the norm's gradient finite where x == y."""
    epsilon = either("pairwise_distance", "epsilon", epsilon, 1e-6, "eps", eps)
    if not _broadcastable(x.shape, y.shape):
        raise ValueError(f"pairwise_distance: {_describe(x=x, y=y)} do not broadcast together")
    if max(len(x.shape), len(y.shape)) == 0:
        raise ValueError(f"pairwise_distance: {_describe(x=x, y=y)}: the inputs need an axis of vectors")
    return norm(F.scale(F.subtract(x, y), 1.0, float(epsilon)), p=p, axis=-1, keepdim=keepdim)


def pdist(input: Any, p: float = 2.0) -> Any:
    """||x_i - x_j||_p for every pair of rows i < j of the [N, M] input, in row-major order of the
    pairs: N (N - 1) / 2 values (PyTorch's pdist). A gather of both rows of each pair and a norm,
    so the gradient (0 where two rows are equal, as torch) and its gradient follow."""
    if len(input.shape) != 2 or input.shape[0] < 0:
        raise ValueError(f"pdist: expects a 2-D input [N, M] with N known, got shape {list(input.shape)}")
    first, second = np.triu_indices(int(input.shape[0]), k=1)
    rows = F.subtract(F.gather(input, constant(first.astype("int64"), input)),
                      F.gather(input, constant(second.astype("int64"), input)))
    return norm(rows, p=p, axis=-1)


def _check_triplet(fn: str, input: Any, positive: Any, negative: Any, reduction: str) -> None:
    _check_reduction(reduction, fn)
    ranks = {len(t.shape) for t in (input, positive, negative)}
    if len(ranks) > 1 or not _broadcastable(input.shape, positive.shape, negative.shape):
        raise ValueError(f"{fn}: {_describe(input=input, positive=positive, negative=negative)}: "
                         f"the three must have the same shape ([N, D] or [D])")


def _triplet(distance: Callable[[Any, Any], Any], input: Any, positive: Any, negative: Any, margin: float,
             swap: bool, reduction: str, fn: str) -> Any:
    """max(d(input, positive) - d(input, negative) + margin, 0), the negative distance the
    smaller of d(input, negative) and d(positive, negative) with `swap`. The clamp is `clip`
    (slope 1 at 0, as PyTorch's clamp_min): a triplet exactly at the margin still learns."""
    positive_distance = distance(input, positive)
    negative_distance = distance(input, negative)
    if swap:
        negative_distance = F.minimum(negative_distance, distance(positive, negative))
    loss = _clip(F.scale(F.subtract(positive_distance, negative_distance), 1.0, float(margin)), min=0.0)
    return _reduce(loss, reduction, fn)


def triplet_margin_loss(input: Any = None, positive: Any = None, negative: Any = None, margin: float = 1.0,
                        p: float = 2.0, epsilon: float = 1e-6, swap: bool = False, reduction: str = "mean",
                        name: str | None = None, *, anchor: Any = None, eps: float | None = None) -> Any:
    """The triplet loss of anchors `input` ([N, D]) against `positive` and `negative` examples:
    max(||input - positive + epsilon||_p - ||input - negative + epsilon||_p + margin, 0) per row,
    reduced by `reduction` ('mean', 'sum' or 'none': shape [N])."""
    fn = "triplet_margin_loss"
    input = either(fn, "input", input, None, "anchor", anchor)
    epsilon = either(fn, "epsilon", epsilon, 1e-6, "eps", eps)
    _check_triplet(fn, input, positive, negative, reduction)
    return _triplet(lambda a, b: pairwise_distance(a, b, p, epsilon), input, positive, negative, margin, swap,
                    reduction, fn)


def triplet_margin_with_distance_loss(input: Any = None, positive: Any = None, negative: Any = None,
                                      distance_function: Callable[[Any, Any], Any] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean",
                                      name: str | None = None, *, anchor: Any = None) -> Any:
    """The triplet loss with any `distance_function(a, b)` (default: pairwise_distance, p = 2),
    which must return one non-negative distance per row."""
    fn = "triplet_margin_with_distance_loss"
    input = either(fn, "input", input, None, "anchor", anchor)
    if not margin > 0:
        raise ValueError(f"{fn}: margin must be positive, got {margin}")
    _check_triplet(fn, input, positive, negative, reduction)
    return _triplet(distance_function or pairwise_distance, input, positive, negative, margin, swap, reduction, fn)


_COSINE_EPSILON = 1e-12   # PyTorch's: added to each squared norm, so a zero vector gives cos = 0


def cosine_embedding_loss(input1: Any, input2: Any, label: Any = None, margin: float = 0.0, reduction: str = "mean",
                          name: str | None = None, *, target: Any = None) -> Any:
    """1 - cos(input1, input2) where label == 1, max(0, cos - margin) where label == -1 (0 for
    any other label), cos taken over the last axis of [N, D] inputs (label [N]) or [D] inputs
    (label [] or [1]). The norms are PyTorch's: sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12))."""
    fn = "cosine_embedding_loss"
    label = either(fn, "label", label, None, "target", target)
    _check_reduction(reduction, fn)
    if len(input1.shape) not in (1, 2) or len(input1.shape) != len(input2.shape) \
            or not _broadcastable(input1.shape, input2.shape):
        raise ValueError(f"{fn}: {_describe(input1=input1, input2=input2)}: expected two [N, D] or two [D] inputs")
    rows = input1.shape[:-1]
    if not (len(label.shape) == len(rows) and _broadcastable(label.shape, rows)
            or len(rows) == 0 and list(label.shape) == [1]):
        raise ValueError(f"{fn}: {_describe(label=label)} does not fit {_describe(input1=input1)} "
                         f"(expected [N] for [N, D] inputs, [] or [1] for [D])")
    if not -1.0 <= margin <= 1.0:
        raise ValueError(f"{fn}: margin must lie in [-1, 1], got {margin}")
    dot = F.sum(F.multiply(input1, input2), axis=-1)
    squares = [F.scale(F.sum(F.square(x), axis=-1), 1.0, _COSINE_EPSILON) for x in (input1, input2)]
    cos = F.divide(dot, F.sqrt(F.multiply(*squares)))
    similar = F.cast(F.equal(label, F.ones_like(label)), cos.dtype)
    dissimilar = F.cast(F.equal(label, F.full_like(label, -1)), cos.dtype)
    loss = F.add(F.multiply(similar, F.scale(cos, -1.0, 1.0)),
                 F.multiply(dissimilar, _clip(F.scale(cos, 1.0, -float(margin)), min=0.0)))
    return _reduce(loss, reduction, fn)

