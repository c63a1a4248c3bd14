"""segment_pool: sums, means, maxima or minima of the rows of X that share a segment id (Paddle's
op behind paddle.geometric.segment_sum / segment_mean / segment_max / segment_min).

SegmentIds is a sorted 1-D int32/int64 tensor, one id per row of X; the output has
max(SegmentIds) + 1 rows, so in a Program its first axis is unknown (-1) until the op runs, as
bincount's, unless the attribute num_segments (fluidgrad's, default -1: from the ids) fixes it. A segment no row belongs to reads zeros (Paddle's CPU kernel). SummedIds, the second
output (Paddle's), holds each segment's row count shaped to broadcast against Out; the mean's
gradient divides by it, gathered at the ids.

Gradients, in registered ops so that the backward is itself differentiable: the sum's is the
output gradient gathered at the ids, the mean's that divided by the count. The maximum's and
minimum's follow Paddle's rule (segment_pooling.cc, SegmentPoolGradFunctor): every row equal to
its segment's extreme receives the segment's whole output gradient. With the attribute
split_ties (fluidgrad's, for embedding_bag) the tied rows share it equally, as torch's
scatter_reduce(amax) does: a table row repeated in a bag then gets its gradient once.
"""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op

POOLTYPES = ("SUM", "MEAN", "MAX", "MIN")
_DATA_DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64")
_REDUCERS = {"SUM": np.add, "MEAN": np.add, "MAX": np.maximum, "MIN": np.minimum}


def check_segment_ids(ids: np.ndarray, what: str = "segment_pool") -> None:
    """Refuse negative or unsorted ids at run time, naming the first offending position."""
    if not ids.size:
        return
    if ids[0] < 0:
        raise ValueError(f"{what}: SegmentIds must be non-negative, got {int(ids[0])} at position 0")
    drops = np.flatnonzero(ids[1:] < ids[:-1])
    if drops.size:
        i = int(drops[0])
        raise ValueError(f"{what}: SegmentIds must be sorted (non-decreasing), but SegmentIds[{i}] = {int(ids[i])} "
                         f"> SegmentIds[{i + 1}] = {int(ids[i + 1])}")


def _segment_kernel(x, ids, pooltype, num_segments, split_ties):
    if ids.shape[:1] != x.shape[:1]:
        raise ValueError(f"segment_pool: SegmentIds (shape {list(ids.shape)}) must hold one id per row of X "
                         f"(shape {list(x.shape)})")
    check_segment_ids(ids)
    count_shape = (-1,) + (1,) * (x.ndim - 1)
    segments = int(ids[-1]) + 1 if ids.size else 0
    if num_segments >= 0:
        if segments > num_segments:
            raise ValueError(f"segment_pool: SegmentIds holds {segments - 1}, outside [0, num_segments={num_segments})")
        segments = num_segments
    if not ids.size:
        return np.zeros((segments,) + x.shape[1:], x.dtype), np.zeros((segments,) + count_shape[1:], x.dtype)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    present = ids[starts]
    narrow = x.dtype.name in ("float16", "bfloat16")
    wide = x.astype(np.float32) if narrow else x   # float16 / bfloat16 sums accumulate in float32
    pooled = _REDUCERS[pooltype].reduceat(wide, starts, axis=0)
    counts = np.bincount(ids, minlength=segments)
    if pooltype == "MEAN":
        runs = counts[present].reshape(count_shape)
        if x.dtype.kind == "f" or narrow:
            pooled = pooled / runs
        else:   # integers: the quotient truncated toward zero, as Paddle's integer kernels divide
            pooled = np.sign(pooled) * (np.abs(pooled) // runs)
    out = np.zeros((segments,) + x.shape[1:], x.dtype)
    out[present] = pooled
    return out, counts.astype(x.dtype).reshape(count_shape)


def _segment_infer(ctx):
    if ctx.attr("pooltype") not in POOLTYPES:
        raise ctx.shape_error(f"pooltype must be one of {list(POOLTYPES)}, got {ctx.attr('pooltype')!r}")
    x, ids = ctx.shape("X"), ctx.shape("SegmentIds")
    if ctx.dtype("X") == "bool":
        raise ctx.dtype_error(f"segments of bool values are not supported (cast to int32), got {ctx.describe('X')}")
    if ctx.dtype("X") not in _DATA_DTYPES:
        raise ctx.dtype_error(f"X must be one of {list(_DATA_DTYPES)}, got {ctx.describe('X')}")
    if ctx.dtype("SegmentIds") not in ("int32", "int64"):
        raise ctx.dtype_error(f"SegmentIds must be int32 or int64, got {ctx.describe('SegmentIds')}")
    if not x:
        raise ctx.shape_error(f"X must have at least one axis (the rows), got {ctx.describe('X')}")
    if len(ids) != 1 or (ids[0] >= 0 and x[0] >= 0 and ids[0] != x[0]):
        raise ctx.shape_error(f"SegmentIds must be 1-D with one id per row of X, got {ctx.describe('SegmentIds')} "
                              f"for {ctx.describe('X')}")
    segments = max(int(ctx.attr("num_segments")), -1)
    ctx.set_output("Out", [segments] + list(x[1:]), ctx.dtype("X"))
    ctx.set_output("SummedIds", [segments] + [1] * (len(x) - 1), ctx.dtype("X"))


def _segment_grad(g: GradBuilder):
    pooltype, ids = g.attr("pooltype"), g.input("SegmentIds")
    spread = g.op("gather", {"X": g.output_grad("Out"), "Index": ids}, axis=0)
    if pooltype == "MEAN":   # the counts gathered too: an empty segment's zero count is never divided by
        counts = g.op("gather", {"X": g.output("SummedIds"), "Index": ids}, axis=0)
        spread = g.op("elementwise_div", {"X": spread, "Y": counts})
    if pooltype in ("MAX", "MIN"):
        x = g.input("X")
        extreme = g.op("gather", {"X": g.output("Out"), "Index": ids}, axis=0)
        hit = g.op("cast", {"X": g.op("equal", {"X": x, "Y": extreme})}, dtype=g.dtype(x))
        if g.attr("split_ties"):
            ties = g.op("segment_pool", {"X": hit, "SegmentIds": ids}, n_out=2, pooltype="SUM",
                        num_segments=g.attr("num_segments"), split_ties=False)[0]
            hit = g.op("elementwise_div", {"X": hit, "Y": g.op("gather", {"X": ties, "Index": ids}, axis=0)})
        spread = g.op("elementwise_mul", {"X": spread, "Y": hit})
    g.set_input_grad("X", spread)


register_op("segment_pool", inputs="X SegmentIds", outputs="Out SummedIds", attrs={"pooltype": "SUM", "num_segments": -1, "split_ties": False},
            kernel=_segment_kernel, infer=_segment_infer, grad=_segment_grad,
            doc="The SUM / MEAN / MAX / MIN of the rows of X sharing a (sorted, non-negative) segment id; "
                "Out has max(SegmentIds) + 1 rows, zeros for a segment without rows; SummedIds: the row counts.")
