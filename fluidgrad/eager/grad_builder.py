"""EagerGradBuilder: the grad-maker protocol (`framework/grad_builder.py`), run at once.

The registry's grad makers (`op_def.grad(g)`) are written against `GradBuilder`. The static
builder appends op descriptions; this one computes: `g.op` calls the kernel directly on
arrays (no descriptor, no shape inference), or, with `create_graph=True`, goes through
`eager_apply` on Tensors so that the backward pass is itself recorded (grad of grad).
Unbroadcasting to the input's shape (the registry's `reduce_as` op) and summing gradients
of a tensor read by several nodes are done here, once, not by each maker. One builder
serves a whole backward pass.
"""
from __future__ import annotations

from heapq import heappush
from typing import Any

import numpy as np

from ..framework.dtypes import carries_gradient
from ..framework.grad_builder import GradBuilder
from ..ops.math import matmul_into
from . import apply
from .apply import eager_apply
from .node import _CALLS, _FREED, Node, OpCall, ShapeOnly, Superseded, op_call
from .tensor import Tensor, modified_tensors

_ndarray = np.ndarray
_asarray = np.asarray
# op type -> `form(buffer, inputs, **attrs)`: the op's value written into `buffer` (returned),
# or None where it cannot be (see grad_op)
_INTO_FORMS = {"matmul": matmul_into}


class EagerGradBuilder(GradBuilder):
    """Runs one node's grad maker; `node_grads` / `leaf_grads` are the engine's dicts. Values
    are arrays (Tensors with create_graph); delivering a gradient adds it to the engine's dict."""

    grad_sub_block = None

    __slots__ = ("node", "call", "grads", "node_grads", "leaf_grads", "create_graph", "ready", "fills_leaves")

    def __init__(self, node_grads: dict, leaf_grads: dict, create_graph: bool) -> None:
        self.node_grads = node_grads
        self.leaf_grads = leaf_grads
        self.create_graph = create_graph
        # backward() (the leaves' gradients go to their .grad), not grad(inputs) (returned): a maker
        # may then set a leaf's .grad itself (DataParallel's deferred average)
        self.fills_leaves = True
        self.node: Node | None = None
        self.call: OpCall | None = None
        self.grads: list = []
        # the nodes that received a gradient and have not run yet, as a heap of (-seq, node):
        # the engine runs the newest first (see engine.py)
        self.ready: list[tuple[int, Node]] = []

    # ---- accumulation (the engine's dict)
    def accumulate(self, tensor: Tensor, grad: Any) -> None:
        """Add `grad` to what flows into `tensor`: a leaf's entry, or its node's output slot."""
        node = tensor._node
        if node is None:
            if tensor.stop_gradient:
                return
            prev = self.leaf_grads.get(tensor)
            self.leaf_grads[tensor] = grad if prev is None else prev + grad
            return
        slot_grads = self.node_grads.get(node)
        if slot_grads is None:  # the node's first gradient: it will run
            if node.outs is None:
                raise RuntimeError(_FREED.format(op=node.call.type))
            slot_grads = self.node_grads[node] = [None] * len(node.outs)
            heappush(self.ready, (-node.seq, node))
        prev = slot_grads[tensor._idx]
        slot_grads[tensor._idx] = grad if prev is None else prev + grad

    # ---- what a grad maker reads
    def _out_range(self, slot: str) -> tuple[int, int]:
        ranges = self.node.out_ranges
        if ranges is not None:
            return ranges[slot]
        i = self.call.out_index[slot]
        return i, i + 1

    def input(self, slot: str) -> Any:
        value = self.node.inputs[self.call.in_index[slot]]
        if type(value) is not Tensor:  # a stand-in, a list (duplicable slot) or None
            for t in (value if type(value) is list else (value,)):
                if type(t) is Superseded:
                    _modified_error(self.node, slot, t, t.shape, t.dtype)
            if type(value) is ShapeOnly or type(value) is list and any(type(t) is ShapeOnly for t in value):
                _not_kept(self.node, "input", slot)
            if value is None:
                return None
        if modified_tensors:
            _check_not_modified(self.node, slot, value)
        if self.create_graph:
            return value
        if type(value) is list:
            return [t._array for t in value]
        return value._array

    def input_like(self, slot: str) -> Any:
        """No version check (the value is not read), and a kept `ShapeOnly` serves as well."""
        value = self.node.inputs[self.call.in_index[slot]]
        if type(value) is list:
            return [_like(self, slot, t) for t in value]
        return None if value is None else _like(self, slot, value)

    def output(self, slot: str) -> Any:
        start, stop = self._out_range(slot)
        outs = self.node.outs
        if any(type(outs[i]) is ShapeOnly for i in range(start, stop)):
            _not_kept(self.node, "output", slot)
        if self.create_graph:
            # the same (node, index) as the forward output: gradients flow through it again
            values = [Tensor(outs[i], False, self.node, i) for i in range(start, stop)]
        else:
            values = list(outs[start:stop])
        return values if self.node.out_ranges is not None and self._is_dup_out(slot) else values[0]

    def _is_dup_out(self, slot: str) -> bool:
        for name, dup in self.call.out_slots:
            if name == slot:
                return dup
        raise KeyError(f"op {self.call.type} has no output slot {slot!r}")

    def output_grad(self, slot: str) -> Any:
        """The gradient flowing into an output; zeros (made now) where none flows."""
        if self.node.out_ranges is None:
            i = self.call.out_index[slot]
            g = self.grads[i]
            if g is None:
                g = _zeros_like(self.node.outs[i])
                return Tensor(g) if self.create_graph else g
            return g
        start, stop = self._out_range(slot)
        values = []
        for i in range(start, stop):
            g = self.grads[i]
            if g is None:
                zeros = _zeros_like(self.node.outs[i])
                g = Tensor(zeros) if self.create_graph else zeros
            values.append(g)
        return values if self.node.out_ranges is not None and self._is_dup_out(slot) else values[0]

    def output_grads_or_none(self, slot: str) -> list:
        """The gradients flowing into each output of `slot`, None where none flows (PyTorch's
        undefined gradients: what a PyLayer with set_materialize_grads(False) is handed)."""
        start, stop = self._out_range(slot)
        return [self.grads[i] for i in range(start, stop)]

    def has_output_grad(self, slot: str) -> bool:
        start, stop = self._out_range(slot)
        return any(self.grads[i] is not None for i in range(start, stop))

    def attr(self, name: str) -> Any:
        try:
            return self.node.attrs[name]
        except KeyError:
            raise KeyError(f"grad of op {self.call.type}: no attribute {name!r}") from None

    @property
    def op_def(self) -> Any:
        return self.call.op_def

    def needs_input_grad(self, slot: str, index: int | None = None) -> bool:
        """`GradBuilder.needs_input_grad`, with the common case (one input in the slot) first:
        this runs for nearly every node of every backward pass."""
        value = self.node.inputs[self.call.in_index[slot]]
        if type(value) is list:
            return GradBuilder.needs_input_grad(self, slot, index)
        if value is None or value.stop_gradient:
            return False
        # a stand-in's own dtype: its `data` is a property call, and this runs for every node
        return carries_gradient(value.dtype if type(value) is ShapeOnly else value._array.dtype)

    def _input_values(self, slot: str) -> list:
        value = self.node.inputs[self.call.in_index[slot]]
        return value if type(value) is list else [value]

    def _differentiable(self, tensor: Tensor) -> bool:
        return not tensor.stop_gradient and carries_gradient(tensor._array.dtype)

    @staticmethod
    def shape(value: Any) -> tuple[int, ...]:
        return tuple(value.shape)

    @staticmethod
    def dtype(value: Any) -> str:
        dtype = value.dtype
        return dtype if type(dtype) is str else dtype.name

    # ---- what a grad maker writes
    def op(self, type: str, inputs: dict[str, Any], n_out: int | None = None, **attrs: Any) -> Any:
        """Run one op now: on arrays through its kernel, or recorded on Tensors (create_graph)."""
        if self.create_graph:
            return eager_apply(type, {k: _tensor(v) for k, v in inputs.items()}, attrs, n_out)
        call = _CALLS.get(type) or op_call(type)
        args = list(map(inputs.get, call.in_names))
        defaults = call.defaults
        if defaults:
            out = call.kernel(*args, **({**defaults, **attrs} if attrs else defaults))
        else:
            out = call.kernel(*args)
        if apply.output_check is not None:
            apply.output_check(call, args, out)
        if call.single_out:
            return out
        if len(call.out_slots) == 1:
            return list(out)
        return tuple(list(v) if dup else v for v, (_, dup) in zip(out, call.out_slots))

    def grad_op(self, slot: str, type: str, inputs: dict[str, Any], **attrs: Any) -> Any:
        """`op`, written straight into a buffer when the node that made input `slot` offers one
        for its gradient (DataParallel's gather offers each parameter's place in its bucket:
        no copy into the bucket afterwards) and the op has a form that writes into it."""
        if not self.create_graph:
            target = self.node.inputs[self.call.in_index[slot]]
            source = getattr(target, "_node", None)  # None for a leaf, a list or no input
            if source is not None:
                offer = getattr(source.call.op_def, "offer_grad_buffer", None)
                form = _INTO_FORMS.get(type)
                if offer is not None and form is not None:
                    buffer = offer(source, target._idx)
                    if buffer is not None:
                        out = form(buffer, inputs, **attrs)
                        if out is not None:
                            return out
        return self.op(type, inputs, **attrs)

    def set_input_grad(self, slot: str, value: Any) -> None:
        """The common case first (an array for one float input, of its shape): straight into
        the engine's dict; everything else (a Tensor with create_graph, a list, a gradient to
        unbroadcast) takes the shared path."""
        if type(value) is _ndarray:
            inputs = self.node.inputs[self.call.in_index[slot]]
            kind = type(inputs)
            if kind is ShapeOnly or kind is Tensor:
                if inputs.stop_gradient:
                    return  # nothing flows into a constant
                data = inputs if kind is ShapeOnly else inputs._array  # see needs_input_grad
                if value.shape == data.shape and carries_gradient(data.dtype):
                    self.accumulate(inputs, value)
                    return
        GradBuilder.set_input_grad(self, slot, value)

    def zero_input_grads(self) -> None:
        """ZERO_GRADIENT in eager mode (round, sign, ...): zeros flow into every input that needs a
        gradient, so a leaf reached only through such ops gets a zero `.grad`, as in PyTorch and
        Paddle (an optimizer still applies its decay and momentum to it)."""
        for slot in self.call.in_names:
            value = self.node.inputs[self.call.in_index[slot]]
            if type(value) is list or not self.needs_input_grad(slot):
                continue
            zeros = _zeros_like(value._array)
            self.set_input_grad(slot, Tensor(zeros) if self.create_graph else zeros)

    def _same_shape(self, grad: Any, target: Tensor) -> bool:
        return grad.shape == target._array.shape

    def _reduce_target(self, target: Tensor | ShapeOnly) -> Any:
        if isinstance(target, ShapeOnly):  # reduce_as reads only the shape: a zero-stride stand-in
            array = np.broadcast_to(np.zeros((), target.dtype), target.shape)
            return Tensor(array) if self.create_graph else array
        return target.detach() if self.create_graph else target._array

    def _deliver(self, target: Tensor, grad: Any) -> None:
        self.accumulate(target, grad)


class ConstantsGradBuilder(EagerGradBuilder):
    """`grad(..., no_grad_vars=...)`: nothing flows into the tensors in `blocked` (keys: a leaf's
    id, else (id of its node, output index)), so they act as constants."""

    __slots__ = ("blocked",)

    def __init__(self, node_grads: dict, leaf_grads: dict, create_graph: bool, blocked: set) -> None:
        super().__init__(node_grads, leaf_grads, create_graph)
        self.blocked = blocked

    def accumulate(self, tensor: Tensor, grad: Any) -> None:
        node = tensor._node
        if (id(tensor) if node is None else (id(node), tensor._idx)) in self.blocked:
            return
        EagerGradBuilder.accumulate(self, tensor, grad)


def _tensor(value: Any) -> Any:
    """create_graph mode: makers may pass arrays (e.g. zeros they built); lift them."""
    if value is None or isinstance(value, Tensor):
        return value
    if isinstance(value, (list, tuple)):
        return [_tensor(v) for v in value]
    return Tensor(_asarray(value))


def _like(builder: EagerGradBuilder, slot: str, value: Any) -> Any:
    """An array of `value`'s shape and dtype (a zero-stride stand-in when only those were kept)."""
    if type(value) is Tensor:
        array = value._array
    elif value.shape is None:  # a constant whose shape nothing was to read
        _not_kept(builder.node, "input", slot)
    else:
        array = np.broadcast_to(np.zeros((), value.dtype), value.shape)
    return Tensor(array) if builder.create_graph else array


def _zeros_like(value: Any) -> np.ndarray:
    return np.zeros(value.shape, value.dtype) if isinstance(value, ShapeOnly) else np.zeros_like(value)


def _not_kept(node: Node, kind: str, slot: str) -> None:
    """The maker read a value that eager mode did not keep (saved.py found it is not read for
    the inputs that needed a gradient when the op ran): only an input's stop_gradient turned
    off after the op ran leads here."""
    raise RuntimeError(f"backward of op {node.call.type}: its {kind} {slot} was not kept for the backward pass, "
                       f"because no input that needs it required a gradient when the op ran; set "
                       f"stop_gradient=False before running the op, not after")


def _check_not_modified(node: Node, slot: str, value: Any) -> None:
    """A tensor the gradient reads must still hold the value the op saw (a version check)."""
    for tensor in (value if type(value) is list else (value,)):
        while tensor is not None:
            entry = modified_tensors.get(id(tensor))
            if entry is not None and entry[0]() is tensor and entry[1] > node.seq:
                _modified_error(node, slot, tensor, tensor.shape, tensor.dtype)
            tensor = getattr(tensor, "_base", None)   # x.data (a DataView) reads x's value: x's updates count


def _modified_error(node: Node, slot: str, tensor: Any, shape: Any, dtype: Any) -> None:
    name = f"tensor {tensor.name!r}" if tensor.name else "a tensor"
    raise RuntimeError(
        f"backward of op {node.call.type}: its input {slot} ({name} of shape {list(shape)}, "
        f"{dtype}) was modified in place by set_value after the op ran, and the gradient "
        f"needs the value the op saw; run the forward pass again after the update, or update "
        f"a copy instead")
