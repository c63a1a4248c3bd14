"""Axis arguments checked as torch checks them: an axis out of [-ndim, ndim - 1] (a 0-D tensor
counts as rank 1, so it takes 0 and -1) is an IndexError naming the function, the axes and the
shape, never wrapped modulo the rank (wrapping turns NCHW code given a CHW image into a silent
wrong answer)."""
from __future__ import annotations

from typing import Any, Sequence


def checked_axes(function: str, axes: Sequence[Any], shape: Sequence[int]) -> list[int]:
    """`axes` as non-negative ints for a tensor of `shape`, or IndexError if any is out of range."""
    shape = list(shape)
    rank = max(len(shape), 1)
    given = [int(a) for a in axes]
    bad = [a for a in given if not -rank <= a < rank]
    if bad:
        raise IndexError(f"{function}: dimension {bad[0]} of axes {given} is out of range for a tensor of "
                         f"shape {shape} (expected to be in range of [{-rank}, {rank - 1}])")
    return [a % rank for a in given]
