"""What the engine records: `OpCall` (per op type, computed once) and `Node` (per recorded op).

A Node keeps its input Tensors and its output *arrays*, never the output Tensors, so a graph
is freed by reference counting as soon as its last output dies.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

from ..framework.op_def import Slot, get_op_def, require_gradient
from .infer import attr_key


def _no_gradient(g: Any) -> None:
    require_gradient(g.call.op_def)


class OpCall:
    """What running one op type needs, computed once per op type (the eager hot path)."""

    __slots__ = ("type", "op_def", "kernel", "in_slots", "in_names", "in_index", "out_slots", "out_index",
                 "defaults", "single_out", "has_dup_out", "has_dup_in", "grad_maker", "needs_runtime",
                 "infer", "infer_cache", "infer_attrs", "default_attr_key")

    def __init__(self, op_def: Any) -> None:
        self.type = op_def.type
        self.op_def = op_def
        self.kernel = op_def.kernel
        self.in_slots = tuple((s.name, s.duplicable) for s in op_def.inputs)
        self.in_names = tuple(s.name for s in op_def.inputs)
        self.in_index = {s.name: i for i, s in enumerate(op_def.inputs)}
        self.has_dup_in = any(s.duplicable for s in op_def.inputs)
        self.out_slots = tuple((s.name, s.duplicable) for s in op_def.outputs)
        self.out_index = {s.name: i for i, s in enumerate(op_def.outputs)}
        self.defaults = dict(op_def.attrs)
        self.single_out = len(op_def.outputs) == 1 and not op_def.outputs[0].duplicable
        self.has_dup_out = any(s.duplicable for s in op_def.outputs)
        # an op without a gradient still records a node when a float output depends on an input
        # that needs a gradient: backward reaching it is then an error naming the op, never a silent zero
        self.grad_maker = op_def.grad if op_def.has_gradient else _no_gradient
        self.needs_runtime = op_def.needs_runtime
        # the shape rule, and its verdicts cached by input shapes, dtypes and the attributes it
        # reads (learnt as it runs): see infer.py
        self.infer = getattr(op_def, "infer", None)
        self.infer_cache: dict[tuple, Any] = {}
        self.infer_attrs: tuple[str, ...] = ()
        self.default_attr_key: tuple = attr_key(self, self.defaults, None)


_CALLS: dict[str, OpCall] = {}


def op_call(op_type: str) -> OpCall:
    call = _CALLS.get(op_type)
    if call is None:
        call = _CALLS[op_type] = OpCall(get_op_def(op_type))
    return call


class CustomOp:
    """An OpDef-like description for nodes whose backward is not a registered op (PyLayer,
    to_static): inputs `X*`, outputs `Out*`, and a grad maker written against the builder."""

    def __init__(self, type: str, grad: Callable[[Any], None]) -> None:
        self.type = type
        self.inputs = (Slot("X", duplicable=True),)
        self.outputs = (Slot("Out", duplicable=True),)
        self.attrs: dict[str, Any] = {}
        self.kernel = None
        self.grad = grad
        self.has_gradient = True
        self.needs_runtime = False
        self.call = OpCall(self)


next_seq = itertools.count().__next__


class Node:
    """One recorded op: its call info, attributes, input Tensors (per slot) and output arrays.

    `out_ranges` maps an output slot to its (start, stop) in `outs` when a slot is duplicable.
    `inputs is None` once the graph was freed by a backward pass without retain_graph.
    """

    __slots__ = ("call", "attrs", "inputs", "outs", "out_ranges", "hooks", "seq", "__weakref__")

    def __init__(self, call: OpCall, attrs: dict, inputs: tuple, outs: tuple, out_ranges: Any = None) -> None:
        self.call = call
        self.attrs = attrs
        self.inputs = inputs
        self.outs = outs
        self.out_ranges = out_ranges
        self.hooks = None
        self.seq = next_seq()  # creation stamp: a node is always newer than the nodes it reads

    def __repr__(self) -> str:
        return f"<Node {self.call.type}{' (freed)' if self.inputs is None else ''}>"


_FREED = ("the graph has been freed: backward already ran through it (op {op}); call backward(retain_graph=True) "
          "the first time to run it again, or recompute the forward pass")
