"""ONNX sequences and optionals, resolved when the program is built.

fluidgrad has no runtime sequence type. An ONNX sequence whose length is known at import
(built by SequenceConstruct / SplitToSequence, or a graph input whose length the backend
binds) is a Python list of Variables, a `SequenceValue`; the sequence ops are list
operations on it, and SequenceMap converts its body once per element. An optional is its
value, or `EMPTY` when it holds none. A sequence whose length changes from one loop step to
the next (SequenceInsert in a Loop body) cannot be imported this way and is refused.
"""
from __future__ import annotations

import numpy as np

from ..framework import Variable
from .convert_common import normalize_axes
from .convert_table import converter


class SequenceValue(list):
    """An ONNX sequence at import: its elements' Variables, in order."""


class _Empty:
    """The value of an optional holding nothing."""

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY = _Empty()


def _sequence(ctx, i: int) -> SequenceValue:
    value = ctx.graph.value(ctx.node.input[i]) if ctx.has_input(i) else None
    if not isinstance(value, SequenceValue):
        raise ctx.unsupported(f"input {i} ({ctx.node.input[i]!r}) is not a sequence known at import")
    return value


def _position(ctx, i: int, length: int, default: int, insert: bool = False) -> int:
    if not ctx.has_input(i):
        return default
    pos = int(ctx.const(i, "position").reshape(-1)[0])
    bound = length + 1 if insert else length
    if not -bound <= pos < bound:
        raise ctx.unsupported(f"position {pos} is outside a sequence of {length} elements")
    return pos + bound if pos < 0 else pos


@converter("SequenceConstruct")
def _construct(ctx):
    return SequenceValue(ctx.inputs())


@converter("SequenceEmpty")
def _empty(ctx):
    return SequenceValue()


@converter("SequenceAt")
def _at(ctx):
    seq = _sequence(ctx, 0)
    return seq[_position(ctx, 1, len(seq), 0)]


@converter("SequenceInsert")
def _insert(ctx):
    seq = SequenceValue(_sequence(ctx, 0))
    seq.insert(_position(ctx, 2, len(seq), len(seq), insert=True), ctx.input(1))
    return seq


@converter("SequenceErase")
def _erase(ctx):
    seq = SequenceValue(_sequence(ctx, 0))
    del seq[_position(ctx, 1, len(seq), len(seq) - 1)]
    return seq


@converter("SequenceLength")
def _length(ctx):
    return np.asarray(len(_sequence(ctx, 0)), dtype="int64")


@converter("SplitToSequence")
def _split_to_sequence(ctx):
    x = ctx.input(0)
    axis = normalize_axes([ctx.attr("axis", 0)], len(x.shape))[0]
    size = x.shape[axis]
    if size < 0:
        raise ctx.unsupported(f"splitting axis {axis} of unknown size in {list(x.shape)}")
    split = ctx.const(1, "split sizes") if ctx.has_input(1) else None
    if split is None:
        sizes = [1] * size
    elif split.ndim == 0:
        chunk = int(split)
        sizes = [chunk] * (size // chunk) + ([size % chunk] if size % chunk else [])
    else:
        sizes = [int(s) for s in split]
    parts = ctx.op("split", {"X": x}, n_out=len(sizes), num_or_sections=sizes, axis=axis)
    parts = parts if isinstance(parts, list) else [parts]
    if split is None and not ctx.attr("keepdims", 1):
        parts = [ctx.op("squeeze", {"X": p}, axes=[axis]) for p in parts]
    return SequenceValue(parts)


@converter("ConcatFromSequence")
def _concat_from_sequence(ctx):
    seq = _sequence(ctx, 0)
    if not seq:
        raise ctx.unsupported("concatenating an empty sequence")
    rank = len(seq[0].shape)
    if ctx.attr("new_axis", 0):
        axis = normalize_axes([ctx.attr("axis")], rank + 1)[0]
        seq = [ctx.op("unsqueeze", {"X": v}, axes=[axis]) for v in seq]
    else:
        axis = normalize_axes([ctx.attr("axis")], rank)[0]
    return ctx.op("concat", {"X": list(seq)}, axis=axis)


@converter("SequenceMap")
def _sequence_map(ctx):
    """The body converted once per element (the length is known at import)."""
    body = ctx.attr("body")
    length = len(_sequence(ctx, 0))
    values = [ctx.graph.value(name) if name else None for name in ctx.node.input]
    outputs = [SequenceValue() for _ in body.output]
    for k in range(length):
        sub = ctx.subgraph(body)
        for value_info, value in zip(body.input, values):
            element = value[k] if isinstance(value, SequenceValue) else value
            sub.bind(value_info.name, element)
        sub.convert_nodes(ctx.opset)
        for out, value_info in zip(outputs, body.output):
            out.append(sub.value(value_info.name))
    return outputs if len(outputs) > 1 else [outputs[0]]


@converter("Optional")
def _optional(ctx):
    return ctx.graph.value(ctx.node.input[0]) if ctx.has_input(0) else EMPTY


@converter("OptionalHasElement")
def _has_element(ctx):
    present = ctx.has_input(0) and ctx.graph.value(ctx.node.input[0]) is not EMPTY
    return np.asarray(present)


@converter("OptionalGetElement")
def _get_element(ctx):
    value = ctx.graph.value(ctx.node.input[0])
    if value is EMPTY:
        raise ctx.unsupported(f"input {ctx.node.input[0]!r} is an empty optional")
    return value


def is_structured(value: object) -> bool:
    """A value that is not one tensor: a sequence or an empty optional."""
    return isinstance(value, SequenceValue) or value is EMPTY


__all__ = ["EMPTY", "SequenceValue", "Variable", "is_structured"]
