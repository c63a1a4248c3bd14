"""The protocol grad makers are written against, its shared bookkeeping, and the static builder.

A grad maker says only the maths of one op's gradient:

    def matmul_grad(g: GradBuilder) -> None:
        x, y, dout = g.input("X"), g.input("Y"), g.output_grad("Out")
        if g.needs_input_grad("X"):
            g.set_input_grad("X", g.op("matmul", {"X": dout, "Y": y}, transpose_y=True))

`GradBuilder` is that interface, and does once what every maker would otherwise repeat:
checking the number of gradients given for a slot, skipping inputs that need none (one
definition of "differentiable" per mode), and summing a broadcast gradient back to its
input's shape (the registry's `reduce_as` op). Its two implementations differ only in what a
value is and how a gradient is delivered: `StaticGradBuilder` (here) appends op descriptions
for `append_backward`; the eager engine's builder (`eager/grad_builder.py`) runs kernels at
once. Both live on the IR side of the layering: the static one needs no NumPy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection

from .dtypes import has_gradients
from .names import EMPTY_VAR_NAME, grad_var_name, unique_name
from .op_def import InferContext, OpDef, get_op_def, require_gradient, run_infer


class GradBuilder:
    """What a grad maker may call. Subclasses say what a value is (a variable name, an array or a
    Tensor) through the primitives at the bottom; the bookkeeping above them is shared."""

    grad_sub_block: Any = None
    op_def: Any

    # -- what a grad maker reads (each builder implements these for its kind of value)
    def input(self, slot: str) -> Any:
        """The forward input of `slot` (a list for a duplicable slot, None when absent)."""
        raise NotImplementedError

    def input_like(self, slot: str) -> Any:
        """A stand-in for the forward input of `slot` with its shape and dtype, for a maker that
        reads nothing else of it (`g.shape`, `g.dtype`, a Target of `reduce_as` / `slice_grad`):
        eager mode then need not keep its value, and an in-place update after the op is no
        error. Static mode: the variable itself."""
        return self.input(slot)

    def output(self, slot: str) -> Any:
        """The forward output of `slot`."""
        raise NotImplementedError

    def output_grad(self, slot: str) -> Any:
        """The gradient flowing into an output (zeros where none flows)."""
        raise NotImplementedError

    def has_output_grad(self, slot: str) -> bool:
        """Whether any gradient flows into this output (the rest are zero)."""
        raise NotImplementedError

    def attr(self, name: str) -> Any:
        raise NotImplementedError

    def shape(self, value: Any) -> tuple[int, ...]:
        raise NotImplementedError

    def dtype(self, value: Any) -> str:
        raise NotImplementedError

    def grad_name(self, name: str) -> str:
        return grad_var_name(name)

    # -- what a grad maker writes
    def op(self, type: str, inputs: dict[str, Any], n_out: int | None = None, **attrs: Any) -> Any:
        """Emit one registered op; its output (a tuple for several slots, a list for a duplicable one)."""
        raise NotImplementedError

    def grad_op(self, slot: str, type: str, inputs: dict[str, Any], **attrs: Any) -> Any:
        """`op(type, inputs, **attrs)` whose one output is the gradient of input `slot`: a builder
        may then write it where that gradient is wanted (eager: a buffer the node that made
        the input offers, see `EagerGradBuilder.grad_op`); the value is the same."""
        return self.op(type, inputs, **attrs)

    # -- shared bookkeeping
    def needs_input_grad(self, slot: str, index: int | None = None) -> bool:
        """Whether some input of `slot` (or its `index`-th) wants a gradient."""
        values = self._input_values(slot)
        if index is not None:
            values = values[index:index + 1]
        return any(v is not None and self._differentiable(v) for v in values)

    def set_input_grad(self, slot: str, value: Any) -> None:
        """Deliver the gradient(s) of input `slot`: None (or an input needing none) is skipped,
        a broadcast gradient is summed back to its input's shape."""
        targets = self._input_values(slot)
        values = value if isinstance(value, (list, tuple)) else [value]
        if len(values) != len(targets):
            raise ValueError(f"grad of op {self.op_def.type}: slot {slot} has {len(targets)} inputs, "
                             f"the grad maker gave {len(values)} gradients")
        for target, grad in zip(targets, values):
            if grad is not None and target is not None and self._differentiable(target):
                self._deliver(target, self._unbroadcast(grad, target))

    def _unbroadcast(self, grad: Any, target: Any) -> Any:
        if self._same_shape(grad, target):
            return grad
        return self.op("reduce_as", {"X": grad, "Target": self._reduce_target(target)})

    # -- primitives each builder implements
    def _input_values(self, slot: str) -> list:
        """The forward inputs of `slot` as a list ([] when absent)."""
        raise NotImplementedError

    def _differentiable(self, value: Any) -> bool:
        """A float input not excluded (no_grad_set in static mode, stop_gradient in eager)."""
        raise NotImplementedError

    def _same_shape(self, grad: Any, target: Any) -> bool:
        raise NotImplementedError

    def _reduce_target(self, target: Any) -> Any:
        return target

    def _deliver(self, target: Any, grad: Any) -> None:
        """Hand `grad` over as (part of) the gradient of input `target`."""
        raise NotImplementedError


@dataclass(eq=False, slots=True)
class OpDesc:
    """An op not yet in a block: what `get_grad_op_desc` returns."""

    type: str
    inputs: dict[str, list[str]]
    outputs: dict[str, list[str]]
    attrs: dict[str, Any] = field(default_factory=dict)
    # shapes and dtypes of the outputs, as inferred when the desc was made
    out_vars: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)

    def input_arg_names(self) -> list[str]:
        return [n for names in self.inputs.values() for n in names]

    def output_arg_names(self) -> list[str]:
        return [n for names in self.outputs.values() for n in names]


class StaticGradBuilder(GradBuilder):
    """Collects the grad op descriptions of one forward op: values are variable names."""

    def __init__(self, op: Any, no_grad_set: Collection[str], grad_sub_block: Any = None,
                 grad_name: Callable[[str], str] = grad_var_name,
                 available_grads: Collection[str] | None = None) -> None:
        self.fwd = op
        self.grad_name = grad_name
        self.available_grads = available_grads
        self.op_def: OpDef = get_op_def(op.type)
        self.no_grad_set = no_grad_set
        self.grad_sub_block = grad_sub_block
        self.descs: list[OpDesc] = []
        self._temps: dict[str, tuple[tuple[int, ...], str]] = {}
        self._grad_to_var: dict[str, str] = {}
        self._assigns: list[OpDesc] = []
        self._block_vars = op.block.vars  # where most names are found, before any ancestor
        self._temp_prefix = op.type + "@GRAD@TMP"

    # -- what a grad maker reads
    def _slot_value(self, args: dict[str, list[str]], slot: str, duplicable: bool) -> Any:
        names = args.get(slot, [])
        if duplicable:
            return list(names)
        return names[0] if names else None

    def input(self, slot: str) -> Any:
        return self._slot_value(self.fwd.inputs, slot, self.op_def.input_slot(slot).duplicable)

    def output(self, slot: str) -> Any:
        return self._slot_value(self.fwd.outputs, slot, self.op_def.output_slot(slot).duplicable)

    def output_grad(self, slot: str) -> Any:
        names = [self.grad_name(n) for n in self.fwd.outputs.get(slot, [])]
        for name, fwd_name in zip(names, self.fwd.outputs.get(slot, [])):
            self._grad_to_var[name] = fwd_name
        return names if self.op_def.output_slot(slot).duplicable else (names[0] if names else None)

    def has_output_grad(self, slot: str) -> bool:
        """Whether any gradient flows into this output (the rest are zero)."""
        names = self.fwd.outputs.get(slot, [])
        if self.available_grads is None:
            return bool(names)
        return any(self.grad_name(n) in self.available_grads for n in names)

    def attr(self, name: str) -> Any:
        return self.fwd.attrs[name]

    def _input_values(self, slot: str) -> list:
        return self.fwd.inputs.get(slot, [])

    def _differentiable(self, name: str) -> bool:
        return name not in self.no_grad_set and has_gradients(self._lookup(name)[1])

    def shape(self, value: str) -> tuple[int, ...]:
        return self._lookup(value)[0]

    def dtype(self, value: str) -> str:
        return self._lookup(value)[1]

    def _lookup(self, name: str) -> tuple[tuple[int, ...], str]:
        known = self._temps.get(name)
        if known is not None:
            return known
        var = self._block_vars.get(name)
        if var is None:
            block = self.fwd.block
            var = block._find_var_recursive(name)
            if var is None and name in self._grad_to_var:
                var = block._find_var_recursive(self._grad_to_var[name])
            if var is None:
                raise KeyError(f"grad of op {self.fwd.type}: variable {name!r} is unknown")
        return var.shape, var.dtype

    # -- what a grad maker writes
    def op(self, type: str, inputs: dict[str, Any], n_out: int | None = None, **attrs: Any) -> Any:
        """Emit one op; return its output name, or a tuple (several slots) or list (duplicable)."""
        op_def = get_op_def(type)
        in_names = {slot: (list(v) if isinstance(v, (list, tuple)) else [v])
                    for slot, v in inputs.items() if v is not None}
        outputs: dict[str, list[str]] = {}
        values = []
        prefix = self._temp_prefix
        for slot in op_def.outputs:
            if slot.duplicable:
                names = [unique_name(prefix) for _ in range(n_out or 1)]
                values.append(names)
            else:
                names = [unique_name(prefix)]
                values.append(names[0])
            outputs[slot.name] = names
        desc = OpDesc(type, in_names, outputs, {**op_def.attrs, **attrs} if attrs else op_def.attrs.copy())
        run_infer(op_def, InferContext(op_def, in_names, outputs, desc.attrs, self._lookup, self._store_temp))
        self.descs.append(desc)
        return values[0] if len(values) == 1 else tuple(values)

    def _store_temp(self, name: str, shape: tuple[int, ...], dtype: str) -> None:
        self._temps[name] = (shape, dtype)

    def _same_shape(self, grad: str, target: str) -> bool:
        """Only when the shapes are known to agree: a -1 may hide a broadcast, unless the forward
        op cannot have broadcast that dimension of `target`. An op declared `broadcasts=False`
        gives every gradient its input's shape."""
        if not self.op_def.broadcasts:
            return True
        shape = self._lookup(target)[0]
        if self._lookup(grad)[0] != shape:
            return False
        return -1 not in shape or self._never_expanded(target, shape)

    def _never_expanded(self, target: str, shape: tuple[int, ...]) -> bool:
        """Whether the forward op leaves `target`'s unknown (-1) dimensions as they are: an op
        with no other input broadcasts nothing; an operator expression (`inline`, NumPy's
        right-aligned broadcasting) only when every other input has no dimension there or a 1."""
        others = [n for n in self.fwd.input_arg_names if n != target]
        if not others:
            return True
        if not self.op_def.inline:
            return False
        for name in others:
            other = self._lookup(name)[0]
            offset = len(shape) - len(other)
            if any(size == -1 and d >= offset and other[d - offset] != 1 for d, size in enumerate(shape)):
                return False
        return True

    def _deliver(self, target: str, grad: str) -> None:
        name = self.grad_name(target)
        self._grad_to_var[name] = target
        assign = OpDesc("assign", {"X": [grad]}, {"Out": [name]}, {})
        self.descs.append(assign)
        self._assigns.append(assign)

    # -- result
    def finish(self) -> tuple[list[OpDesc], dict[str, str]]:
        counts = self._read_counts()
        if self._assigns:
            self._fold_assigns(counts)
        self._keep_used(counts)
        return self.descs, self._grad_to_var

    def _var_info(self, name: str, desc: OpDesc) -> tuple[tuple[int, ...], str]:
        forward = self._grad_to_var.get(name)
        if forward is not None:  # an input gradient: exactly its forward variable's shape
            return self._lookup(forward)
        if name in self._temps:
            return self._temps[name]
        return self._lookup(desc.input_arg_names()[0])  # an `assign` that was not folded

    def _read_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for desc in self.descs:
            for names in desc.inputs.values():
                for name in names:
                    counts[name] = counts.get(name, 0) + 1
        return counts

    def _fold_assigns(self, counts: dict[str, int]) -> None:
        """`t = f(..); x@GRAD = assign(t)` becomes `x@GRAD = f(..)` when nothing else reads t."""
        producers = {n: d for d in self.descs for names in d.outputs.values() for n in names}
        folded: set[int] = set()
        for assign in self._assigns:
            temp, target = assign.inputs["X"][0], assign.outputs["Out"][0]
            if counts.get(temp, 0) != 1 or temp not in self._temps:
                continue
            producer = producers.get(temp)
            if producer is None:
                continue
            for names in producer.outputs.values():
                names[:] = [target if n == temp else n for n in names]
            folded.add(id(assign))
        if folded:
            self.descs = [d for d in self.descs if id(d) not in folded]

    def _keep_used(self, counts: dict[str, int]) -> None:
        """Unread temporaries become @EMPTY@; an op none of whose outputs is used goes. A kept
        op gets its role and the shapes and dtypes of its outputs (`out_vars`).
        (`counts` may still count reads by folded assigns: those temporaries are renamed.)"""
        kept = []
        temps = self._temps
        for desc in self.descs:
            out_vars = {}
            for names in desc.outputs.values():
                for i, n in enumerate(names):
                    if n in temps and not counts.get(n):
                        names[i] = EMPTY_VAR_NAME
                    elif n != EMPTY_VAR_NAME:
                        out_vars[n] = None
            if out_vars:
                if "op_role" not in desc.attrs:
                    desc.attrs["op_role"] = "backward"
                for n in out_vars:
                    out_vars[n] = self._var_info(n, desc)
                desc.out_vars = out_vars
                kept.append(desc)
        self.descs = kept


def get_grad_op_desc(op: Any, no_grad_set: Collection[str], grad_sub_block: Any = None,
                     grad_name: Callable[[str], str] = grad_var_name,
                     available_grads: Collection[str] | None = None) -> tuple[list[OpDesc], dict[str, str]]:
    """The grad ops of `op` and the map from each gradient name to its forward variable."""
    builder = StaticGradBuilder(op, no_grad_set, grad_sub_block, grad_name, available_grads)
    op_def = builder.op_def
    require_gradient(op_def)
    op_def.grad(builder)
    return builder.finish()
