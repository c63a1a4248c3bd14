"""If and Loop become `conditional_block` and `while` sub-blocks (through static.nn.cond and
static.nn.while_loop), so `append_backward` differentiates imported control flow.

A subgraph reads outer values by name; its nodes convert inside the sub-block, with names
looked up through the enclosing graphs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import Variable
from ..static.control_flow import _append_conditional_block, _branch, while_loop
from .convert_common import add_scalar, binary, cast, full
from .convert_sequence import is_structured
from .convert_table import converter
from .convert_tensor import _filled_like
from .fold import SymDim


def _one_element_bool(ctx: Any, value: Any) -> Variable:
    var = cast(ctx, value if isinstance(value, Variable) else ctx.constant(value), "bool")
    return var if all(d == 1 for d in var.shape) else ctx.op("reshape", {"X": var}, shape=[1])


@converter("If")
def _if(ctx):
    """`static.nn.cond`'s structure (two conditional_blocks and select_input). ONNX lets the
    branches give different shapes; the merged variable then has -1 where they differ.
    Branches giving sequences or optionals need the condition known at import (importer.py
    then converts the chosen branch only): fluidgrad has no runtime sequence to merge."""
    if any(out.type.WhichOneof("value") in ("sequence_type", "optional_type")
           for out in list(ctx.attr("then_branch").output) + list(ctx.attr("else_branch").output)):
        ctx.const(0, "condition, as the branches give sequences or optionals")
    pred = _one_element_bool(ctx, ctx.input(0))
    program = ctx.graph.model.program
    parent = program.current_block()

    def build(graph, which):
        def run():
            sub = ctx.subgraph(graph)
            sub.convert_nodes(ctx.opset)
            return [sub.variable(out.name) for out in graph.output]
        return _branch(program, parent, run, which)

    true_block, true_outs, _ = build(ctx.attr("then_branch"), "true")
    false_block, false_outs, _ = build(ctx.attr("else_branch"), "false")
    for t, f in zip(true_outs, false_outs):
        if t.dtype != f.dtype:
            raise ctx.unsupported(f"branches give {t.dtype} and {f.dtype} for one output")
        if t.shape != f.shape:
            merged = _merge_shapes(t.shape, f.shape)
            t.shape = f.shape = merged
    _append_conditional_block(parent, true_block, pred, true_outs)
    _append_conditional_block(parent, false_block, ctx.op("logical_not", {"X": pred}), false_outs)
    return [ctx.op("select_input", {"X": [f, t], "Mask": pred}) for t, f in zip(true_outs, false_outs)]


def _merge_shapes(a, b):
    if len(a) != len(b):
        return tuple(-1 for _ in (a if len(a) > len(b) else b))
    return tuple(x if x == y else -1 for x, y in zip(a, b))


@converter("Loop")
def _loop(ctx):
    """A `while`; each scan output grows by one row per step, so the trip count need not be
    known when the program is built (see ScanBuffer: the scan outputs are forward only)."""
    body = ctx.attr("body")
    n_carried = len(ctx.node.input) - 2
    n_scan = len(body.output) - 1 - n_carried
    if any(is_structured(ctx.graph.value(ctx.node.input[2 + k])) for k in range(n_carried)):
        return _unrolled_loop(ctx, body, n_carried, n_scan)
    counter = full(ctx, [], 0, "int64")
    keep_going = _one_element_bool(ctx, ctx.input(1)) if ctx.has_input(1) else full(ctx, [], 1, "bool")
    limit = cast(ctx, ctx.input(0), "int64") if ctx.has_input(0) else None
    carried = [ctx.input(2 + k) for k in range(n_carried)]
    trips = ctx.maybe_const(0) if ctx.has_input(0) else None
    starts_going = not ctx.has_input(1) or (ctx.maybe_const(1) is not None and bool(ctx.maybe_const(1)))
    scans = [ScanBuffer(ctx, None) for _ in range(n_scan)]

    def condition(i, going, *rest):
        if limit is None:
            return going
        within = ctx.op("less_than", {"X": i, "Y": limit})
        within = within if len(within.shape) == len(going.shape) else ctx.op("reshape", {"X": within},
                                                                               shape=list(going.shape))
        return ctx.op("logical_and", {"X": within, "Y": going})

    def step(i, going, *values):
        sub = ctx.subgraph(body)
        bound = [i, going] + list(values[:n_carried])
        for value_info, var in zip(body.input, bound):
            sub.env[value_info.name] = var
        sub.convert_nodes(ctx.opset)
        outs = [sub.variable(out.name) for out in body.output]
        next_going = ctx.op("reshape", {"X": cast(ctx, outs[0], "bool")}, shape=list(going.shape))
        new_values = [_keep_dtype(ctx, v, old) for v, old in zip(outs[1:1 + n_carried], values)]
        if trips is not None and starts_going and _never_stops_early(body, sub):
            for scan in scans:  # exactly `trips` rows: a fixed buffer, differentiable
                scan.length = int(trips.reshape(-1)[0])
        grown = [scan.grow(acc, y, i) for scan, acc, y in zip(scans, values[n_carried:], outs[1 + n_carried:])]
        return [binary(ctx, "elementwise_add", i, full(ctx, [], 1, "int64")), next_going] + new_values + grown

    finals = while_loop(condition, step, [counter, keep_going] + carried + [s.initial for s in scans])
    return finals[2:]


@converter("Scan", since=9)
def _scan(ctx):
    """A `while` over the scan axis (its length T read at run time when unknown, the scan
    outputs then growing row by row): step i reads row i (or T-1-i, reversed) of each scan input
    and appends (or prepends) one row to each scan output; the states are carried."""
    body = ctx.attr("body")
    n_inputs = int(ctx.attr("num_scan_inputs"))
    n_states = ctx.num_inputs - n_inputs
    n_outputs = len(body.output) - n_states
    in_axes = list(ctx.attr("scan_input_axes") or [0] * n_inputs)
    in_reverse = list(ctx.attr("scan_input_directions") or [0] * n_inputs)
    out_axes = list(ctx.attr("scan_output_axes") or [0] * n_outputs)
    out_reverse = list(ctx.attr("scan_output_directions") or [0] * n_outputs)
    xs = [ctx.input(n_states + j) for j in range(n_inputs)]
    in_axes = [a + len(x.shape) if a < 0 else a for a, x in zip(in_axes, xs)]
    lengths = {x.shape[a] for x, a in zip(xs, in_axes)} - {-1}
    if len(lengths) > 1:
        raise ctx.unsupported(f"scan inputs of lengths {sorted(lengths)} (they must be equal)")
    length = lengths.pop() if lengths else None   # None: read at run time (a dynamic batch)
    states = [ctx.input(k) for k in range(n_states)]
    scans = [ScanBuffer(ctx, length, reverse=bool(out_reverse[k])) for k in range(n_outputs)]
    if length is None:
        ones = _filled_like(ctx, [SymDim(xs[0].name, in_axes[0])], 1, "int64")
        limit = ctx.op("reshape", {"X": ctx.op("reduce_sum", {"X": ones}, axis=[0])}, shape=[])
    else:
        limit = full(ctx, [], length, "int64")
    last = add_scalar(ctx, limit, -1)

    def condition(i, *rest):
        return ctx.op("less_than", {"X": i, "Y": limit})

    def step(i, *values):
        sub = ctx.subgraph(body)
        rows = []
        for x, axis, reverse in zip(xs, in_axes, in_reverse):
            index = binary(ctx, "elementwise_sub", last, i) if reverse else i
            row = ctx.op("gather", {"X": x, "Index": ctx.op("reshape", {"X": index}, shape=[1])}, axis=axis)
            rows.append(ctx.op("squeeze", {"X": row}, axes=[axis]))
        for value_info, var in zip(body.input, list(values[:n_states]) + rows):
            sub.env[value_info.name] = var
        sub.convert_nodes(ctx.opset)
        outs = [sub.variable(out.name) for out in body.output]
        new_states = [_keep_dtype(ctx, v, old) for v, old in zip(outs[:n_states], values)]
        grown = [scan.grow(acc, y, i) for scan, acc, y in zip(scans, values[n_states:], outs[n_states:])]
        return [binary(ctx, "elementwise_add", i, full(ctx, [], 1, "int64"))] + new_states + grown

    finals = while_loop(condition, step, [full(ctx, [], 0, "int64")] + states + [s.initial for s in scans])
    outputs = finals[1 + n_states:]
    for k, axis in enumerate(out_axes):
        rank = len(outputs[k].shape)
        axis = axis + rank if axis < 0 else axis
        if axis:
            perm = list(range(1, rank))
            perm.insert(axis, 0)
            outputs[k] = ctx.op("transpose", {"X": outputs[k]}, perm=perm)
    return finals[1:1 + n_states] + outputs


def _unrolled_loop(ctx: Any, body: Any, n_carried: int, n_scan: int) -> list:
    """A Loop carrying a sequence (whose length may change each step): fluidgrad has no
    runtime sequence, so the loop is unrolled at import. It needs the trip count and every
    step's condition known then."""
    trips = int(ctx.const(0, "trip count (a loop over a sequence is unrolled)").reshape(-1)[0]) \
        if ctx.has_input(0) else None
    going = bool(ctx.const(1, "condition").reshape(-1)[0]) if ctx.has_input(1) else True
    values = [ctx.graph.value(ctx.node.input[2 + k]) for k in range(n_carried)]
    rows: list[list] = [[] for _ in range(n_scan)]
    i = 0
    while going and (trips is None or i < trips):
        if i >= UNROLL_LIMIT:
            raise ctx.unsupported(f"a loop over a sequence of more than {UNROLL_LIMIT} steps (it is unrolled)")
        sub = ctx.subgraph(body)
        for value_info, value in zip(body.input, [np.asarray(i, "int64"), np.asarray(going)] + values):
            sub.bind(value_info.name, value)
        sub.convert_nodes(ctx.opset)
        outs = [sub.value(out.name) for out in body.output]
        if not isinstance(outs[0], np.ndarray):
            raise ctx.unsupported("a loop over a sequence whose condition is not known at import")
        going = bool(outs[0].reshape(-1)[0])
        values = outs[1:1 + n_carried]
        for k, row in enumerate(outs[1 + n_carried:]):
            rows[k].append(ctx.graph.model.add_constant(row) if isinstance(row, np.ndarray) else row)
        i += 1
    stacked = [ctx.op("stack", {"X": r}, axis=0) if r else None for r in rows]
    return values + stacked


UNROLL_LIMIT = 1000


def _never_stops_early(body: Any, sub: Any) -> bool:
    """The body's condition output is its condition input passed on, or a constant true."""
    out = body.output[0].name
    if out == body.input[1].name:
        return True
    const = sub.lookup_const(out)
    if const is not None:
        return bool(const.reshape(-1)[0])
    producer = next((n for n in body.node if out in n.output), None)
    return producer is not None and producer.op_type == "Identity" and producer.input[0] == body.input[1].name


def _keep_dtype(ctx: Any, value: Variable, old: Variable) -> Variable:
    value = cast(ctx, value, old.dtype)
    if len(value.shape) != len(old.shape):
        value = ctx.op("reshape", {"X": value}, shape=[d if d >= 0 else 0 for d in old.shape])
    return value


class ScanBuffer:
    """A scan output, a loop var of the `while`. With a known number of steps it is a buffer
    of that many rows, step i adding its row at position i by a one-hot product (ordinary
    differentiable ops, the shape fixed, so `append_backward` differentiates it). With an
    unknown number it starts empty and grows by one row (concat) per step: right for any trip
    count, but its shape changes from step to step, which the `while` gradient does not
    follow (forward only). The start is a `fill_constant` whose shape and dtype are set when
    the body first gives a row (ONNX bodies need not declare their output types)."""

    def __init__(self, ctx: Any, length: int | None, reverse: bool = False) -> None:
        self.ctx, self.length, self.reverse, self.sized = ctx, length, reverse, False
        self.initial = full(ctx, [0], 0, "float32")
        self.start_op = ctx.graph.model.program.current_block().ops[-1]

    def grow(self, buffer: Variable, row: Variable, i: Variable) -> Variable:
        if any(d < 0 for d in row.shape):
            raise self.ctx.unsupported(f"a scan output whose rows have unknown sizes {list(row.shape)}")
        if not self.sized:
            self._size(buffer, row)
        ctx = self.ctx
        if self.length is None:
            row = ctx.op("unsqueeze", {"X": row}, axes=[0])
            return ctx.op("concat", {"X": [row, buffer] if self.reverse else [buffer, row]}, axis=0)
        position = binary(ctx, "elementwise_sub", full(ctx, [], self.length - 1, "int64"), i) if self.reverse else i
        hot = ctx.op("one_hot", {"X": position}, depth=self.length, dtype="float64")
        hot = cast(ctx, ctx.op("reshape", {"X": hot}, shape=[self.length] + [1] * len(row.shape)), row.dtype)
        placed = binary(ctx, "elementwise_mul", hot, ctx.op("unsqueeze", {"X": row}, axes=[0]))
        return binary(ctx, "elementwise_add", buffer, placed)

    def _size(self, buffer: Variable, row: Variable) -> None:
        rows = 0 if self.length is None else self.length
        shape = [rows] + list(row.shape)
        self.start_op.attrs.update(shape=shape, dtype=row.dtype)
        for var in (self.initial, buffer):
            var.dtype = row.dtype
        self.initial.shape = tuple(shape)
        buffer.shape = tuple([-1 if self.length is None else rows] + list(row.shape))
        self.sized = True
