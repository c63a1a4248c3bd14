"""If and Loop become `conditional_block` and `while` sub-blocks (through static.nn.cond and
static.nn.while_loop), so `append_backward` differentiates imported control flow.

A subgraph reads outer values by name; its nodes convert inside the sub-block, with names
looked up through the enclosing graphs.
"""
from __future__ import annotations

from typing import Any

from ..framework import Variable
from ..static.control_flow import _append_conditional_block, _branch, while_loop
from .convert_common import binary, cast, full
from .dtypes import value_info_type
from .convert_table import converter


def _one_element_bool(ctx: Any, value: Any) -> Variable:
    var = cast(ctx, value if isinstance(value, Variable) else ctx.constant(value), "bool")
    return var if all(d == 1 for d in var.shape) else ctx.op("reshape", {"X": var}, shape=[1])


@converter("If")
def _if(ctx):
    """`static.nn.cond`'s structure (two conditional_blocks and select_input). ONNX lets the
    branches give different shapes; the merged variable then has -1 where they differ."""
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
    body = ctx.attr("body")
    n_carried = len(ctx.node.input) - 2
    n_scan = len(body.output) - 1 - n_carried
    counter = full(ctx, [], 0, "int64")
    keep_going = _one_element_bool(ctx, ctx.input(1)) if ctx.has_input(1) else full(ctx, [], 1, "bool")
    limit = cast(ctx, ctx.input(0), "int64") if ctx.has_input(0) else None
    carried = [ctx.input(2 + k) for k in range(n_carried)]
    trips = _trip_count(ctx) if n_scan else 0
    scans = [_scan_buffer(ctx, body, 1 + n_carried + k, trips) for k in range(n_scan)]

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
        grown = [_scan_write(ctx, acc, y, i, trips) for acc, y in zip(values[n_carried:], outs[1 + n_carried:])]
        return [binary(ctx, "elementwise_add", i, full(ctx, [], 1, "int64")), next_going] + new_values + grown

    finals = while_loop(condition, step, [counter, keep_going] + carried + scans)
    return finals[2:]


def _keep_dtype(ctx: Any, value: Variable, old: Variable) -> Variable:
    value = cast(ctx, value, old.dtype)
    if len(value.shape) != len(old.shape):
        value = ctx.op("reshape", {"X": value}, shape=[d if d >= 0 else 0 for d in old.shape])
    return value


def _trip_count(ctx: Any) -> int:
    """Scan outputs need the number of steps when the program is built (their buffer's size)."""
    if not ctx.has_input(0) or ctx.maybe_const(0) is None:
        raise ctx.unsupported("scan outputs of a Loop whose trip count is not a constant")
    return int(ctx.maybe_const(0).reshape(-1)[0])


def _scan_buffer(ctx: Any, body: Any, index: int, trips: int) -> Variable:
    """A zero buffer [trips, *element shape]; step i adds its value at row i."""
    dtype, shape = value_info_type(body.output[index], f"Loop scan output {body.output[index].name!r}")
    if any(d < 0 for d in shape):
        raise ctx.unsupported(f"scan output {body.output[index].name!r} of unknown shape {shape}")
    return full(ctx, [trips] + shape, 0, dtype)


def _scan_write(ctx: Any, buffer: Variable, value: Variable, i: Variable, trips: int) -> Variable:
    """buffer + one_hot(i) (x) value: differentiable with ordinary ops (no scatter)."""
    row = ctx.op("one_hot", {"X": i}, depth=trips, dtype=buffer.dtype)
    row = ctx.op("reshape", {"X": row}, shape=[trips] + [1] * len(value.shape))
    placed = binary(ctx, "elementwise_mul", row, ctx.op("unsqueeze", {"X": cast(ctx, value, buffer.dtype)}, axes=[0]))
    return binary(ctx, "elementwise_add", buffer, placed)
