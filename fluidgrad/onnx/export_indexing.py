"""Exporter of set_value (`x[...] = v` through integers and slices) to ONNX: the written axes
moved first, one ScatterND whose addresses (the region) are a constant, the value broadcast to
the region, the axes moved back. export_table.py imports this module, which adds it to the table.

The addresses are computed at export time, so every axis the subscript slices or indexes needs a
known size; an axis of unknown size (the batch) may be left whole, as in `x[:, 0] = v`.
"""
from __future__ import annotations

import numpy as np

from .export_ops import exporter


def _i64(c, values) -> str:
    return c.const(np.asarray(values, "int64"))


def _region(c, shape, axes) -> list[np.ndarray]:
    """The positions written on each of `axes`."""
    strides = c.attr("strides") or [1] * len(axes)
    if len(set(axes)) != len(axes):
        raise c.refuse(f"axes {axes} name an axis twice")
    picked = []
    for axis, start, end, step in zip(axes, c.attr("starts"), c.attr("ends"), strides):
        if shape[axis] < 0:
            raise c.refuse(f"axis {axis} of unknown size is sliced or indexed (only whole axes may be unknown)")
        picked.append(np.arange(shape[axis])[slice(start, end, step)])
    return picked


def _value_over_all_axes(c, rank: int) -> str:
    """Value (broadcasting to the region without its decrease_axes) with X's rank: the missing
    leading axes and the decreased (integer-indexed) axes put back with size 1."""
    value, decrease = c.x("Value"), sorted(int(a) % rank for a in c.attr("decrease_axes"))
    missing = rank - len(decrease) - len(c.shape_in("Value"))
    if missing > 0:
        value = c.node("Unsqueeze", [value, _i64(c, list(range(missing)))])
    if decrease:
        value = c.node("Unsqueeze", [value, _i64(c, decrease)])
    return value


@exporter("set_value")
def _set_value(c):
    shape = c.shape_in("X")
    rank = len(shape)
    axes = [int(a) % rank for a in c.attr("axes")]
    value = _value_over_all_axes(c, rank)
    if not axes:   # x[...] = v: the whole tensor
        c.node("Where", [c.const(np.ones((), bool)), value, c.x("X")], [c.out("Out")])
        return
    picked = _region(c, shape, axes)
    if any(len(p) == 0 for p in picked):
        c.node("Identity", [c.x("X")], [c.out("Out")])
        return
    perm = axes + [a for a in range(rank) if a not in axes]
    moved = perm != list(range(rank))
    x = c.node("Transpose", [c.x("X")], perm=perm) if moved else c.x("X")
    value = c.node("Transpose", [value], perm=perm) if moved else value
    index = c.const(np.stack(np.meshgrid(*picked, indexing="ij"), axis=-1).astype(np.int64))
    # value broadcast to the region's shape by Where (an Expand to a run-time shape would not
    # import back: a size-1 axis growing to a size unknown when the program is built)
    region = c.node("GatherND", [x, index])
    updates = c.node("Where", [c.const(np.ones((), bool)), value, region])
    if not moved:
        c.node("ScatterND", [x, index, updates], [c.out("Out")])
        return
    written = c.node("ScatterND", [x, index, updates])
    c.node("Transpose", [written], [c.out("Out")], perm=[int(i) for i in np.argsort(perm)])
