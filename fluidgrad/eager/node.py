"""What the engine records: `OpCall` (per op type, computed once) and `Node` (per recorded op).

A Node keeps its input Tensors and its output *arrays*, never the output Tensors, so a graph
is freed by reference counting as soon as its last output dies. Of the inputs and outputs its
backward does not read (saved.py), it keeps only a `ShapeOnly`: their values die as soon as
nothing else holds them.
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable, Iterator

from ..framework.op_def import Slot, get_op_def, require_gradient
from .infer import attr_key
from .saved import GradReads, grad_reads


def _no_gradient(g: Any) -> None:
    require_gradient(g.call.op_def)


class OpCall:
    """What running one op type needs, computed once per op type (the eager hot path)."""

    __slots__ = ("type", "op_def", "kernel", "in_slots", "in_names", "in_index", "out_slots", "out_index",
                 "defaults", "single_out", "has_dup_out", "has_dup_in", "grad_maker", "needs_runtime",
                 "infer", "infer_cache", "infer_attrs", "default_attr_key", "reads", "keep_plans",
                 "simple", "keep_all_below", "dtype_keyed", "simple_plans")

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
        self.dtype_keyed = (getattr(self.infer, "numpy_broadcast", False) and not self.has_dup_in
                            and not self.has_dup_out)
        # what the backward reads (None: unknown, keep everything), and per pattern of inputs
        # needing a gradient, which inputs and outputs a node keeps (see `record_node`)
        self.reads: GradReads | None = (None if isinstance(op_def, CustomOp) else
                                        grad_reads(op_def.grad, {s.name for s in op_def.inputs if s.duplicable})
                                        if op_def.has_gradient else GradReads())
        self.keep_plans: dict[int, Any] | None = None if self.reads is None else {}
        self.simple = self.single_out and not self.has_dup_in
        self.keep_all_below = _keep_all_below(self)
        # a one-output op with one or two single-Tensor inputs (most ops): its plans, flat and
        # computed now, indexed by the pattern of inputs needing a gradient (`record_node`)
        self.simple_plans: tuple | None = None
        if self.simple and self.keep_plans is not None and 1 <= len(self.in_names) <= 2:
            self.simple_plans = tuple(_flat_plan(self, needing) for needing in range(1 << len(self.in_names)))


def _keep_all_below(call: OpCall) -> float:
    """Output size (bytes) under which a node of `call` keeps all its inputs and its output
    as they are, with no plan to look up: any size when what the backward reads is unknown;
    `SLIM_BYTES` for an op with one output and single-Tensor inputs (see `record_node`);
    else none (`record_node` decides input by input)."""
    if call.keep_plans is None:
        return float("inf")
    return SLIM_BYTES if call.simple else 0


_CALLS: dict[str, OpCall] = {}


def op_call(op_type: str) -> OpCall:
    call = _CALLS.get(op_type)
    if call is None:
        call = _CALLS[op_type] = OpCall(get_op_def(op_type))
    return call


class CustomOp:
    """An OpDef-like description for nodes whose backward is not a registered op (PyLayer,
    to_static): inputs `X*`, outputs `Out*`, and a grad maker written against the builder."""

    def __init__(self, type: str, grad: Callable[[Any], None],
                 offer_grad_buffer: Callable[[Any, int], Any] | None = None) -> None:
        self.type = type
        # optional `(node, output index) -> array or None`: where the backward may write the
        # gradient of that output (see EagerGradBuilder.grad_op)
        self.offer_grad_buffer = offer_grad_buffer
        self.inputs = (Slot("X", duplicable=True),)
        self.outputs = (Slot("Out", duplicable=True),)
        self.attrs: dict[str, Any] = {}
        self.kernel = None
        self.grad = grad
        self.has_gradient = True
        self.needs_runtime = False
        self.call = OpCall(self)


next_seq = itertools.count().__next__
_new = object.__new__


class Node:
    """One recorded op: its call info, attributes, input Tensors (per slot) and output arrays.

    `out_ranges` maps an output slot to its (start, stop) in `outs` when a slot is duplicable.
    `inputs is None` once the graph was freed by a backward pass without retain_graph.
    Made by `new_node`: a class with an `__init__` costs, on every recorded op, a C-level
    re-entry of the interpreter that a plain function call does not.
    """

    __slots__ = ("call", "attrs", "inputs", "outs", "out_ranges", "hooks", "seq", "__weakref__")

    def __repr__(self) -> str:
        return f"<Node {self.call.type}{' (freed)' if self.inputs is None else ''}>"


def new_node(call: OpCall, attrs: dict, inputs: tuple, outs: tuple, out_ranges: Any = None) -> Node:
    """A Node for an op just run (see Node)."""
    node = _new(Node)
    node.call = call
    node.attrs = attrs
    node.inputs = inputs
    node.outs = outs
    node.out_ranges = out_ranges
    node.hooks = None
    node.seq = next_seq()  # creation stamp: a node is always newer than the nodes it reads
    return node


_FREED = ("the graph has been freed: backward already ran through it (op {op}); call backward(retain_graph=True) "
          "the first time to run it again, or recompute the forward pass")


class ShapeOnly:
    """In a Node, in place of an input Tensor or output array that the backward does not read:
    the graph link, `stop_gradient`, shape and dtype, without the values. `_array` is itself,
    so `t._array.shape` and `t._array.dtype` read as on a Tensor."""

    __slots__ = ("_node", "_idx", "stop_gradient", "shape", "dtype")

    def __init__(self, node: Node | None, idx: int, stop_gradient: bool, shape: tuple, dtype: Any) -> None:
        self._node = node
        self._idx = idx
        self.stop_gradient = stop_gradient
        self.shape = shape
        self.dtype = dtype

    @property
    def _array(self) -> "ShapeOnly":
        return self

    @property
    def ndim(self) -> int:
        return len(self.shape)


class Superseded(ShapeOnly):
    """The graph link a Tensor had before an in-place update (`x[i] = v`) moved it, put back
    by the engine into the nodes recorded before the update (see `tensor.relinked`). It holds
    no value: a backward that reads the value the op saw raises, as PyTorch's version check."""

    __slots__ = ("name", "stamp")

    def __init__(self, tensor: Any) -> None:
        data = tensor._array
        super().__init__(tensor._node, tensor._idx, tensor.stop_gradient, data.shape, data.dtype)
        self.name = tensor.name
        self.stamp = 0  # set to the update's creation stamp when recorded


# Below this many bytes a value is kept even where the backward does not read it (and a
# one-output op whose output is this small keeps all its inputs): a stand-in would save little
# memory and cost time on every op of a chain of small tensors.
SLIM_BYTES = 1024


@contextlib.contextmanager
def keep_only_what_is_read() -> Iterator[None]:
    """Inside: drop every value a backward does not read, however small (outside, values under
    `SLIM_BYTES` stay as they are). `fluidgrad.testing` runs eager cases this way, so that an
    op case fails if its grad maker reads a value eager mode did not keep."""
    global SLIM_BYTES
    saved, SLIM_BYTES = SLIM_BYTES, 0
    _refresh_thresholds()
    try:
        yield
    finally:
        SLIM_BYTES = saved
        _refresh_thresholds()


def _refresh_thresholds() -> None:
    for call in _CALLS.values():
        call.keep_all_below = _keep_all_below(call)


def _slim_input(tensor: Any) -> Any:
    """An input the backward does not read: a ShapeOnly, except for a small one and a leaf that
    needs a gradient (the engine accumulates into that very Tensor; its owner keeps it alive
    anyway). A constant (a leaf needing no gradient) gets the shared `_UNREAD_CONSTANT`."""
    if tensor is None:
        return None
    data = tensor._array
    if data.nbytes < SLIM_BYTES:
        return tensor
    node = tensor._node
    if node is not None:
        stand_in = _new(ShapeOnly)  # ShapeOnly(...) written out: this runs for most recorded ops
        stand_in._node = node
        stand_in._idx = tensor._idx
        stand_in.stop_gradient = tensor.stop_gradient
        stand_in.shape = data.shape
        stand_in.dtype = data.dtype
        return stand_in
    return tensor if not tensor.stop_gradient else _UNREAD_CONSTANT


def _slim_output(array: Any) -> Any:
    return array if array.nbytes < SLIM_BYTES else ShapeOnly(None, 0, True, array.shape, array.dtype)


# Shared stand-ins whose shape nothing reads (shape None: any use is an error, never a guess):
# - a constant input: the backward asks only whether it needs a gradient (no), never its shape;
# - the `outs` of a one-output node whose backward does not read the output: a node runs
#   only when its one output received a gradient, so no zeros of its shape are ever made.
# A chain of large tensors then allocates no stand-in for them.
_UNREAD_CONSTANT = ShapeOnly(None, 0, True, None, None)
_UNREAD_OUTPUT = (_UNREAD_CONSTANT,)


def _flat_plan(call: OpCall, needing: int) -> tuple[bool, ...] | None:
    """`_keep_plan` of a simple op as one tuple: keep each input, then keep the output."""
    plan = _keep_plan(call, needing)
    return None if plan is None else (*plan[0], *plan[1])


def _keep_plan(call: OpCall, needing: int) -> tuple[tuple[bool, ...], tuple[bool, ...]] | None:
    """Which input and output slots a node keeps when the inputs flagged in `needing` (bit i:
    input slot i) need a gradient; None when it keeps them all."""
    ins, outs = call.reads.read_slots({name for i, name in enumerate(call.in_names) if needing >> i & 1})
    keep_in = tuple(name in ins for name in call.in_names)
    keep_out = tuple(name in outs for name, _ in call.out_slots)
    return None if all(keep_in) and all(keep_out) else (keep_in, keep_out)


def record_node(call: OpCall, attrs: dict, tensors: Any, outs: tuple, out_ranges: Any = None) -> Node:
    """A Node for an op just run, keeping of its inputs and outputs only what its backward reads.
    Ops with one or two single-Tensor inputs and one output (most of them) take a path written
    out for them: this runs for every recorded op. Such an op whose output is small keeps
    everything, and its caller (`apply._run`) makes that node itself: an op whose output is
    small and that drops a large input is rare, and the check per input would cost every op
    of a chain of small tensors."""
    plans = call.simple_plans
    if plans is not None:
        if len(tensors) == 2:
            x, y = tensors
            plan = plans[(x is not None and not x.stop_gradient) | (y is not None and not y.stop_gradient) << 1]
            if plan is None:
                return new_node(call, attrs, tensors, outs)
            keep_x, keep_y, keep_out = plan
            return new_node(call, attrs, (x if keep_x else _slim_input(x), y if keep_y else _slim_input(y)),
                            outs if keep_out else _UNREAD_OUTPUT)
        x, = tensors
        plan = plans[1]  # a recorded one-input op: its input needs a gradient
        if plan is None:
            return new_node(call, attrs, tensors, outs)
        keep_x, keep_out = plan
        return new_node(call, attrs, (x if keep_x else _slim_input(x),), outs if keep_out else _UNREAD_OUTPUT)
    plans = call.keep_plans
    if plans is None:  # what the backward reads is unknown: keep everything
        return new_node(call, attrs, tensors if type(tensors) is tuple else tuple(tensors), outs, out_ranges)
    needing = 0
    for i, value in enumerate(tensors):
        if value is not None and (not value.stop_gradient if type(value) is not list
                                  else any(not t.stop_gradient for t in value)):
            needing |= 1 << i
    plan = plans.get(needing, _MISSING)
    if plan is _MISSING:
        plan = plans[needing] = _keep_plan(call, needing)
    if plan is None:
        return new_node(call, attrs, tuple(tensors), outs, out_ranges)
    keep_in, keep_out = plan
    inputs = tuple([value if keep else [_slim_input(t) for t in value] if type(value) is list else _slim_input(value)
                    for value, keep in zip(tensors, keep_in)])
    if not all(keep_out):
        kept = list(keep_out)
        if out_ranges is not None:
            kept = [False] * len(outs)
            for (slot, _), keep in zip(call.out_slots, keep_out):
                start, stop = out_ranges[slot]
                kept[start:stop] = [keep] * (stop - start)
        outs = tuple([a if keep else _slim_output(a) for a, keep in zip(outs, kept)])
    return new_node(call, attrs, inputs, outs, out_ranges)


_MISSING = object()
