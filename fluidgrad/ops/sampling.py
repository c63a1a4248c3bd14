"""Ops that draw from distributions given as tensors: `multinomial` (category indices from rows
of probabilities: sampling tokens from a language model's softmax) and `bernoulli` (0 / 1 draws
with per-element probabilities: random masks).

They draw from the same generators as ops/random.py (an op's own `seed`, a seeded program's,
else the global one `fluidgrad.seed` resets). No gradient flows through a draw: multinomial's
indices are integers, bernoulli's draws are piecewise constant in the probabilities (its
gradient is zero, as PyTorch's).
"""
from __future__ import annotations

import numpy as np

from .random import generator
from .registry import NO_GRADIENT, ZERO_GRADIENT, register_op
from .shape_rules import float_only


def _rows_of(op_type: str, probs: np.ndarray) -> np.ndarray:
    """The probabilities as [rows, categories] in float64, checked: finite, non-negative, and a
    positive sum in every row (they need not sum to 1)."""
    rows = probs.reshape(-1, probs.shape[-1]).astype(np.float64)
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise ValueError(f"op {op_type}: X (shape {list(probs.shape)}, {probs.dtype}) must hold finite, "
                         f"non-negative probabilities")
    if probs.shape[-1] == 0 or (rows.size and np.any(rows.sum(axis=1) <= 0)):
        raise ValueError(f"op {op_type}: every row of X (shape {list(probs.shape)}) needs a positive sum")
    return rows


def _multinomial_kernel(x, num_samples, replacement, seed):
    rows = _rows_of("multinomial", x)
    rng = generator(seed)
    count, categories = rows.shape
    if replacement:
        # the inverse CDF: the first category whose cumulative share exceeds a uniform draw
        cdf = np.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]
        draws = rng.random((count, num_samples))
        out = np.stack([np.searchsorted(c, d, side="right") for c, d in zip(cdf, draws)]) if count else \
            np.zeros((0, num_samples), np.int64)
        out = np.minimum(out, categories - 1)
    else:
        if np.any(np.count_nonzero(rows, axis=1) < num_samples):
            raise ValueError(f"op multinomial: without replacement, num_samples={num_samples} needs that many "
                             f"categories of non-zero probability in every row of X (shape {list(x.shape)})")
        # an exponential race: each category's arrival time is Exp(p); the first num_samples to arrive
        # are a draw without replacement, in order (Efraimidis and Spirakis' weighted sampling)
        with np.errstate(divide="ignore"):
            arrivals = rng.exponential(size=rows.shape) / rows
        out = np.argsort(arrivals, axis=1, kind="stable")[:, :num_samples]
    return out.astype(np.int64).reshape(x.shape[:-1] + (num_samples,))


def _multinomial_infer(ctx):
    float_only(ctx, "X")
    shape, samples = ctx.shape("X"), ctx.attr("num_samples")
    if len(shape) not in (1, 2):
        raise ctx.shape_error(f"X must be 1-D or 2-D (rows of category probabilities), got {ctx.describe('X')}")
    if samples < 1:
        raise ctx.shape_error(f"num_samples must be >= 1, got {samples}")
    if not ctx.attr("replacement") and shape[-1] >= 0 and samples > shape[-1]:
        raise ctx.shape_error(f"without replacement, num_samples={samples} exceeds the {shape[-1]} categories of "
                              f"{ctx.describe('X')}")
    ctx.set_output("Out", list(shape[:-1]) + [samples], "int64")


def _bernoulli_kernel(x, seed):
    if not np.all((x >= 0) & (x <= 1)):
        raise ValueError(f"op bernoulli: X (shape {list(x.shape)}, {x.dtype}) must hold probabilities in [0, 1]")
    return (generator(seed).random(x.shape) < x).astype(x.dtype)


def _bernoulli_infer(ctx):
    float_only(ctx, "X")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


register_op("multinomial", inputs="X", outputs="Out", attrs={"num_samples": 1, "replacement": False, "seed": 0},
            kernel=_multinomial_kernel, infer=_multinomial_infer, grad=NO_GRADIENT,
            doc="num_samples category indices per row of X, drawn with probabilities proportional to X "
                "(paddle.multinomial, torch.multinomial); int64.")
register_op("bernoulli", inputs="X", outputs="Out", attrs={"seed": 0}, kernel=_bernoulli_kernel,
            infer=_bernoulli_infer, grad=ZERO_GRADIENT,
            doc="1 with probability X, else 0, per element, in X's dtype (paddle.bernoulli, torch.bernoulli).")
