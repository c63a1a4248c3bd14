"""The op side of placement (executor/placement.py): where an op that copies its inputs into a
buffer of its own (a gradient bucket) lets their producers write them instead.

A destination is `(array, scale)`: a plain, C-contiguous, writeable view of the buffer with the
input's shape, and the factor the op's own copy would have applied (an average's 1/p; None for
none); `Destination` also keeps the view's address. The op then recognises an input already in
place because it *is* the destination it offered, lying where the op is about to copy to
(`is_placed`): a stale destination (a buffer replaced since the offer) or a producer that
declined is simply copied as before.
"""
from __future__ import annotations

from math import prod
from typing import Any, NamedTuple, Sequence

import numpy as np


class Destination(NamedTuple):
    array: np.ndarray
    scale: Any      # None: the value itself
    address: int    # of array's first element


def pieces_of(flat: np.ndarray, shapes: Sequence[Sequence[int]], scale: Any) -> list[Destination]:
    """Destinations for tensors of `shapes` laid one after another in the flat buffer `flat`."""
    out, start = [], 0
    for shape in shapes:
        size = prod(shape)
        view = flat[start:start + size].reshape(tuple(shape))
        out.append(Destination(view, scale, _address(view)))
        start += size
    return out


class KeptPieces:
    """`pieces_of` for a kept bucket's next row, made once per row rather than at every offer (an
    offer runs every step; a bucket's rows are the same arrays from step to step). Keyed by the
    row's address: the views it keeps hold their buffer, so no other buffer can take that
    address meanwhile; the few most recent rows are kept."""

    def __init__(self, shapes: Sequence[Sequence[int]], scale: Any, keep: int = 4) -> None:
        self.shapes, self.scale, self.keep = [tuple(s) for s in shapes], scale, keep
        self.made: dict[int, list[Destination]] = {}

    def of(self, bucket: Any) -> list[Destination]:
        """The destinations in `bucket.input` (a bucket of ops/comm_buckets.py: it knows the address)."""
        address = bucket.input_address
        found = self.made.get(address)
        if found is None:
            if len(self.made) >= self.keep:
                self.made.pop(next(iter(self.made)))
            found = self.made[address] = pieces_of(bucket.input, self.shapes, self.scale)
        return found


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def is_placed(destination: Destination | None, array: Any, part: np.ndarray) -> bool:
    """Whether `array` is the offered destination and lies at `part` (its producer wrote it there)."""
    return (destination is not None and array is destination.array and array.size == part.size
            and array.dtype == part.dtype and destination.address == _address(part))
