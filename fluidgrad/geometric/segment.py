"""Segment reductions (paddle.geometric.segment_sum / segment_mean / segment_max / segment_min,
also paddle.incubate.segment_*): each a `segment_pool` op (ops/segment.py), so they serve both
modes and differentiate, and a Program's output has an unknown (-1) first axis until it runs."""
from __future__ import annotations

from typing import Any

from ..dispatch import apply_op

__all__ = ["segment_max", "segment_mean", "segment_min", "segment_sum"]


def _segment(pooltype: str, data: Any, segment_ids: Any) -> Any:
    out, _counts = apply_op("segment_pool", {"X": data, "SegmentIds": segment_ids}, {"pooltype": pooltype})
    return out


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """out[i] = the sum of the rows data[j] with segment_ids[j] == i; segment_ids is sorted,
    non-negative, int32/int64, one per row; out has max(segment_ids) + 1 rows (zeros where no
    row has the id)."""
    return _segment("SUM", data, segment_ids)


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """out[i] = the mean of the rows with segment id i (zeros where none has it); an integer
    mean is truncated toward zero, as Paddle's."""
    return _segment("MEAN", data, segment_ids)


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """out[i] = the elementwise maximum of the rows with segment id i (zeros where none has it).
    Gradient: Paddle's rule, every row equal to the maximum gets the whole output gradient (ties
    are not split, unlike torch's scatter_reduce amax)."""
    return _segment("MAX", data, segment_ids)


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """out[i] = the elementwise minimum of the rows with segment id i (zeros where none has it);
    the gradient goes whole to every row equal to the minimum (Paddle's rule)."""
    return _segment("MIN", data, segment_ids)
