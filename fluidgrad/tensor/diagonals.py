"""A matrix's transpose and diagonals: t, diagonal, trace (Paddle 2 and PyTorch names), composed
of transpose, indexing (a gather of the diagonal's positions) and sum, so differentiable twice."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import apply_op
from ..functions import sum as _sum

__all__ = ["diagonal", "t", "trace"]


def t(input: Any, name: str | None = None) -> Any:
    """The transpose of a matrix; a 0-D or 1-D tensor is returned as it is (paddle.t, torch.t)."""
    rank = len(input.shape)
    if rank > 2:
        raise ValueError(f"t: expects a tensor of at most 2 dimensions, got shape {list(input.shape)}; "
                         f"use transpose(x, perm)")
    return input if rank < 2 else apply_op("transpose", {"X": input}, {"perm": [1, 0]})


def diagonal(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None) -> Any:
    """The diagonal of the matrices on axes (axis1, axis2), `offset` above the main one (below
    when negative), as a last axis after the other axes (paddle.diagonal, torch.diagonal)."""
    shape, rank = list(x.shape), len(x.shape)
    if rank < 2:
        raise ValueError(f"diagonal: expects at least 2 dimensions, got shape {shape}")
    first, second = axis1 % rank, axis2 % rank
    if first == second or not (-rank <= axis1 < rank and -rank <= axis2 < rank):
        raise ValueError(f"diagonal: axis1={axis1} and axis2={axis2} must be two different axes of shape {shape}")
    rows, cols = shape[first], shape[second]
    if rows < 0 or cols < 0:
        raise ValueError(f"diagonal: the axes {first} and {second} of shape {shape} must have known sizes")
    rest = [a for a in range(rank) if a not in (first, second)]
    moved = apply_op("transpose", {"X": x}, {"perm": rest + [first, second]})
    count = max(0, min(rows - max(0, -offset), cols - max(0, offset)))
    positions = np.arange(count, dtype=np.int64)
    return moved[(Ellipsis, positions + max(0, -offset), positions + max(0, offset))]


def trace(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None) -> Any:
    """The sum of `diagonal(x, offset, axis1, axis2)` (paddle.trace; torch.trace for matrices)."""
    return _sum(diagonal(x, offset, axis1, axis2), axis=-1)
