"""A matrix's transpose and diagonals: t, diagonal, trace (Paddle 2 and PyTorch names), composed
of transpose, indexing (a gather of the diagonal's positions) and sum, so differentiable twice."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import views
from ..dispatch import apply_op
from ..functions import sum as _sum
from ..indexing import index_put

__all__ = ["diagonal", "t", "trace"]


def t(input: Any, name: str | None = None) -> Any:
    """The transpose of a matrix; a 0-D or 1-D tensor is returned as it is (paddle.t, torch.t)."""
    rank = len(input.shape)
    if rank > 2:
        raise ValueError(f"t: expects a tensor of at most 2 dimensions, got shape {list(input.shape)}; "
                         f"use transpose(x, perm)")
    if rank < 2:
        return input
    return views.mark(apply_op("transpose", {"X": input}, {"perm": [1, 0]}), input,
                      lambda: views.Permuted(input, [1, 0], "t"))


def diagonal(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None) -> Any:
    """The diagonal of the matrices on axes (axis1, axis2), `offset` above the main one (below
    when negative), as a last axis after the other axes (paddle.diagonal, torch.diagonal); of an
    eager Tensor a view, as torch's (x.diagonal().fill_(0) zeroes x's diagonal)."""
    out = _diagonal(x, offset, axis1, axis2)
    return views.mark(out, x, lambda: Diagonal(x, int(offset), axis1 % len(x.shape), axis2 % len(x.shape)))


class Diagonal:
    """How x.diagonal(offset, axis1, axis2) is a view of x: written back as x[..., i, i + offset]."""

    tracks_grad = True

    def __init__(self, base: Any, offset: int, axis1: int, axis2: int) -> None:
        self.base_shape, self.offset, self.axis1, self.axis2 = tuple(base.shape), offset, axis1, axis2

    def read(self, base: Any) -> Any:
        return _diagonal(base, self.offset, self.axis1, self.axis2)

    def into_base(self, base: Any, value: Any) -> Any:
        rank, count = len(self.base_shape), value.shape[-1]
        item: list = [slice(None)] * rank
        positions = np.arange(count, dtype=np.int64)
        item[self.axis1] = positions + max(0, -self.offset)
        item[self.axis2] = positions + max(0, self.offset)
        # x[item] puts the diagonal where the two index arrays are when they are adjacent, else first
        place = min(self.axis1, self.axis2) if abs(self.axis1 - self.axis2) == 1 else 0
        perm = list(range(rank - 2))
        perm.insert(place, rank - 2)
        return index_put(base, tuple(item), apply_op("transpose", {"X": value}, {"perm": perm}))

    def check_writable(self, what: str) -> None:
        pass

    def layout(self, base_layout: np.ndarray) -> np.ndarray:
        return np.diagonal(base_layout, self.offset, self.axis1, self.axis2)

    def describe(self) -> str:
        return f"x.diagonal({self.offset}, {self.axis1}, {self.axis2})"


def _diagonal(x: Any, offset: int, axis1: int, axis2: int) -> Any:
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
