"""Define-by-run autograd on the op registry.

`eager_apply` runs an op's kernel at once and, only when some input needs a gradient and
grad mode is on, records a `Node`. `backward` / `grad` order the nodes reachable from the
outputs topologically (an iterative depth-first search, so deep graphs cannot overflow the
stack), walk them in reverse, and ask each op's registered grad maker, through an
`EagerGradBuilder`, for its input gradients: the very makers `append_backward` uses.
Gradients of intermediate outputs live in the engine's dict; only leaves get `.grad`.
"""
from __future__ import annotations

import itertools
from operator import attrgetter
from typing import Any, Callable, Sequence

import numpy as np

from ..framework.errors import FluidgradError
from ..ops.registry import Slot, get_op_def
from .tensor import Tensor

_ndarray = np.ndarray
_asarray = np.asarray


def _no_gradient(g: Any) -> None:
    from ..ops.registry import require_gradient
    require_gradient(g.call.op_def)


class OpCall:
    """What running one op type needs, computed once per op type (the eager hot path)."""

    __slots__ = ("type", "op_def", "kernel", "in_slots", "in_names", "in_index", "out_slots", "out_index",
                 "defaults", "single_out", "has_dup_out", "has_dup_in", "grad_maker", "needs_runtime")

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


_next_seq = itertools.count().__next__


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
        self.seq = _next_seq()  # creation stamp: a node is always newer than the nodes it reads

    def free(self) -> None:
        self.inputs = None
        self.outs = None

    def __repr__(self) -> str:
        return f"<Node {self.call.type}{' (freed)' if self.inputs is None else ''}>"


# ------------------------------------------------------------------ grad mode
_grad_enabled = True
_tracer: Any = None  # set by jit.to_static while tracing


def is_grad_enabled() -> bool:
    return _grad_enabled


def set_grad_enabled(mode: bool) -> None:
    global _grad_enabled
    _grad_enabled = bool(mode)


class _GradMode:
    """Context manager and decorator setting grad mode for a block or a function."""

    mode = True

    def __enter__(self) -> None:
        self._saved = _grad_enabled
        set_grad_enabled(self.mode)

    def __exit__(self, *exc: Any) -> None:
        set_grad_enabled(self._saved)

    def __call__(self, fn: Callable) -> Callable:
        import functools
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            saved = _grad_enabled
            set_grad_enabled(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                set_grad_enabled(saved)
        return wrapper


class no_grad(_GradMode):
    """Record nothing inside: `with no_grad(): ...` or `@no_grad()` (also `@no_grad`)."""

    mode = False

    def __new__(cls, fn: Callable | None = None):
        self = super().__new__(cls)
        if fn is not None and callable(fn):
            return self(fn)
        return self


class enable_grad(_GradMode):
    """Record again inside a `no_grad` block."""

    mode = True


def set_tracer(tracer: Any) -> Any:
    global _tracer
    saved, _tracer = _tracer, tracer
    return saved


# ------------------------------------------------------------------ running ops
def _as_tensor(value: Any, op_type: str, slot: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return Tensor(value)
    from ..framework import Variable
    if isinstance(value, Variable):
        raise TypeError(f"{op_type}: input {slot} is the static Variable {value.name}, mixed with eager "
                        f"Tensors; use one mode per computation (or jit.to_static)")
    raise TypeError(f"{op_type}: input {slot} must be a Tensor, got {type(value).__name__}")


def _kernel_error(call: OpCall, args: list, attrs: dict, exc: Exception) -> Exception:
    """Name the op, its inputs' shapes and dtypes, and the attributes; the shape rule may say more."""
    parts = []
    for (slot, _), value in zip(call.in_slots, args):
        if isinstance(value, list):
            parts.append(f"{slot}=[{', '.join(f'{list(v.shape)} {v.dtype}' for v in value)}]")
        elif value is not None:
            parts.append(f"{slot}={list(value.shape)} {value.dtype}")
    shown = {k: v for k, v in attrs.items() if not k.startswith("_")}
    rule_error = _shape_rule_error(call, args, attrs)
    if rule_error is not None:  # the static shape rule says what is wrong, as at build time
        return type(rule_error)(f"{rule_error} (in eager mode)")
    message = f"op {call.type} failed in eager mode on inputs {', '.join(parts)} attrs {shown}: " \
              f"{type(exc).__name__}: {exc}"
    kind = exc.__class__ if isinstance(exc, FluidgradError) else FluidgradError
    try:
        return kind(message)
    except TypeError:
        return FluidgradError(message)


def _shape_rule_error(call: OpCall, args: list, attrs: dict) -> Exception | None:
    """Run the op's shape rule on the failing inputs (only after a kernel failed: never on
    the hot path); return its ShapeError / DTypeError, if it has one."""
    from ..framework.errors import DTypeError, ShapeError
    from ..ops.registry import InferContext
    if not hasattr(call.op_def, "infer"):
        return None
    values: dict[str, tuple] = {}
    names: dict[str, list[str]] = {}
    for (slot, _), value in zip(call.in_slots, args):
        items = value if isinstance(value, list) else ([] if value is None else [value])
        names[slot] = []
        for i, item in enumerate(items):
            name = f"<{slot.lower()}{i if isinstance(value, list) else ''}>"
            values[name] = (tuple(np.shape(item)), np.asarray(item).dtype.name)
            names[slot].append(name)
    outputs = {slot: [f"{slot}@out"] for slot, _ in call.out_slots}
    try:
        call.op_def.infer(InferContext(call.op_def, names, outputs, {**call.defaults, **attrs},
                                       values.__getitem__, lambda *_: None))
    except (ShapeError, DTypeError) as err:
        return err
    except Exception:
        return None
    return None


def eager_apply(op_type: str, inputs: dict, attrs: dict, n_out: int | None = None) -> Any:
    """Run `op_type` now on Tensors; return Tensors shaped like `dispatch.apply_op`'s result."""
    if _tracer is not None:
        return _tracer.apply(op_type, inputs, attrs, n_out)
    call = _CALLS.get(op_type) or op_call(op_type)
    if call.needs_runtime:
        raise FluidgradError(f"op {op_type} runs sub-blocks and exists in static mode only; "
                             f"in eager mode write the Python loop or branch directly")
    requires = False
    if not call.has_dup_in:  # the common case: one Tensor (or None) per slot
        tensors = list(map(inputs.get, call.in_names))
        args = []
        for i, value in enumerate(tensors):
            if value is None:
                args.append(None)
                continue
            if type(value) is not Tensor:
                value = tensors[i] = _as_tensor(value, op_type, call.in_names[i])
            args.append(value.data)
            if not value.stop_gradient:
                requires = True
        return _run(call, args, tensors, attrs, requires)
    args = []
    tensors = []
    for slot, dup in call.in_slots:
        value = inputs.get(slot)
        if value is None:
            args.append(None)
            tensors.append(None)
        elif dup:
            items = [v if type(v) is Tensor else _as_tensor(v, op_type, slot) for v in value]
            args.append([t.data for t in items])
            tensors.append(items)
            if not requires:
                requires = any(not t.stop_gradient for t in items)
        else:
            if type(value) is not Tensor:
                value = _as_tensor(value, op_type, slot)
            args.append(value.data)
            tensors.append(value)
            if not value.stop_gradient:
                requires = True
    return _run(call, args, tensors, attrs, requires)


def _run(call: OpCall, args: list, tensors: list, attrs: dict, requires: bool) -> Any:
    """Run the kernel on `args`; wrap the outputs; record a node when `requires` and grad mode."""
    defaults = call.defaults
    if defaults:
        kw = {**defaults, **attrs} if attrs else defaults
        try:
            out = call.kernel(*args, **kw)
        except Exception as exc:
            raise _kernel_error(call, args, kw, exc) from exc
    else:
        kw = defaults
        try:
            out = call.kernel(*args)
        except Exception as exc:
            raise _kernel_error(call, args, attrs, exc) from exc
    record = requires and _grad_enabled
    if call.single_out:
        if type(out) is not _ndarray:
            out = _asarray(out)
        if record and out.dtype.kind == "f":
            node = Node(call, kw, tuple(tensors), (out,))
            return Tensor(out, False, node, 0)
        return Tensor(out)
    return _wrap_outputs(call, out, kw, tensors, record)


def apply_binary(op_type: str, x: Tensor, y: Tensor) -> Tensor:
    """`eager_apply` for an attribute-less binary op (X, Y -> Out) on two Tensors, without
    building dicts: the path of `a * b`, `a + b`... (Tensor's operators)."""
    if _tracer is not None:
        return _tracer.apply(op_type, {"X": x, "Y": y}, {}, None)
    call = _CALLS.get(op_type) or op_call(op_type)
    try:
        out = call.kernel(x.data, y.data)
    except Exception as exc:
        raise _kernel_error(call, [x.data, y.data], {}, exc) from exc
    if type(out) is not _ndarray:
        out = _asarray(out)
    if (not x.stop_gradient or not y.stop_gradient) and _grad_enabled and out.dtype.kind == "f":
        return Tensor(out, False, Node(call, call.defaults, (x, y), (out,)), 0)
    return Tensor(out)


def apply_unary(op_type: str, x: Tensor, attrs: dict) -> Tensor:
    """`eager_apply` for a one-input, one-output op given all its attributes (e.g. `scale`)."""
    if _tracer is not None:
        return _tracer.apply(op_type, {"X": x}, attrs, None)
    call = _CALLS.get(op_type) or op_call(op_type)
    try:
        out = call.kernel(x.data, **attrs)
    except Exception as exc:
        raise _kernel_error(call, [x.data], attrs, exc) from exc
    if type(out) is not _ndarray:
        out = _asarray(out)
    if not x.stop_gradient and _grad_enabled and out.dtype.kind == "f":
        return Tensor(out, False, Node(call, attrs, (x,), (out,)), 0)
    return Tensor(out)


def _wrap_outputs(call: OpCall, out: Any, kw: dict, tensors: list, record: bool) -> Any:
    per_slot = out if len(call.out_slots) > 1 else (out,)
    if len(per_slot) != len(call.out_slots):
        raise FluidgradError(f"op {call.type}: kernel returned {len(per_slot)} outputs for slots "
                             f"{[s for s, _ in call.out_slots]}")
    flat: list[np.ndarray] = []
    ranges: dict[str, tuple[int, int]] | None = {} if call.has_dup_out else None
    for (slot, dup), value in zip(call.out_slots, per_slot):
        start = len(flat)
        if dup:
            flat.extend(_asarray(v) for v in value)
        else:
            flat.append(value if type(value) is _ndarray else _asarray(value))
        if ranges is not None:
            ranges[slot] = (start, len(flat))
    record = record and any(a.dtype.kind == "f" for a in flat)
    node = Node(call, kw, tuple(tensors), tuple(flat), ranges) if record else None
    outs = [Tensor(a, not (record and a.dtype.kind == "f"), node if a.dtype.kind == "f" else None, i)
            for i, a in enumerate(flat)]
    values = []
    pos = 0
    for slot, dup in call.out_slots:
        if dup:
            stop = ranges[slot][1]
            values.append(outs[pos:stop])
            pos = stop
        else:
            values.append(outs[pos])
            pos += 1
    return values[0] if len(values) == 1 else tuple(values)


def record_custom(op: CustomOp | OpCall, inputs: Sequence[Tensor], outputs: Sequence[np.ndarray],
                  attrs: dict) -> list[Tensor]:
    """Record a node whose backward is `op.grad` (inputs X*, outputs Out*); return output Tensors.

    Nothing is recorded (plain Tensors come back) when grad mode is off or no input needs a
    gradient, as for registered ops.
    """
    call = op if isinstance(op, OpCall) else op.call
    inputs = list(inputs)
    outs = tuple(_asarray(a) for a in outputs)
    if not (_grad_enabled and any(not t.stop_gradient for t in inputs)):
        return [Tensor(a) for a in outs]
    node = Node(call, attrs, (inputs,), outs, {"Out": (0, len(outs))})
    return [Tensor(a, a.dtype.kind != "f", node if a.dtype.kind == "f" else None, i) for i, a in enumerate(outs)]


# ------------------------------------------------------------------ backward
def topological_order(roots: Sequence[Node]) -> list[Node]:
    """Nodes reachable from `roots`, each after every node it reads from.

    An iterative depth-first search (no recursion limit on deep graphs) collects the
    reachable nodes; ordering them by creation stamp is then a topological order, because a
    node is created after the nodes that produced its inputs. Deterministic, and cheaper than
    keeping a post-order stack.
    """
    seen = set(roots)
    stack = list(seen)
    while stack:
        inputs = stack.pop().inputs
        if inputs is None:
            continue  # freed: reported when the walk reaches it
        for value in inputs:
            if value is None:
                continue
            if type(value) is list:
                for t in value:
                    parent = t._node
                    if parent is not None and parent not in seen:
                        seen.add(parent)
                        stack.append(parent)
            else:
                parent = value._node
                if parent is not None and parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
    return sorted(seen, key=_by_seq)


_by_seq = attrgetter("seq")


_FREED = ("the graph has been freed: backward already ran through it (op {op}); call backward(retain_graph=True) "
          "the first time to run it again, or recompute the forward pass")


def run_backward(roots: Sequence[Tensor], seeds: Sequence[Any], retain_graph: bool, create_graph: bool,
                 targets: Sequence[Tensor] | None = None) -> dict:
    """The engine. Returns the gradients of `targets` (key: the tensor) when given, else
    accumulates into the `.grad` of every leaf reached and returns {}."""
    from .grad_builder import EagerGradBuilder
    node_grads: dict[Node, list] = {}
    leaf_grads: dict[Tensor, Any] = {}
    builder = EagerGradBuilder(node_grads, leaf_grads, create_graph)
    for root, seed in zip(roots, seeds):
        builder.accumulate(root, seed)
    order = topological_order([r._node for r in roots if r._node is not None])
    wanted = _target_keys(targets)
    needed = _needed_nodes(order, wanted, targets) if targets is not None else None
    captured: dict[Any, Any] = {}
    saved_mode = _grad_enabled
    set_grad_enabled(create_graph)
    pop = node_grads.pop
    run = builder.run
    try:
        for node in reversed(order):
            grads = pop(node, None)
            if grads is None:
                continue  # a symbolic zero: no output of this node received a gradient
            if node.inputs is None:
                raise RuntimeError(_FREED.format(op=node.call.type))
            if node.hooks:
                _run_node_hooks(node, grads, create_graph)
            if needed is not None:
                for i, g in enumerate(grads):
                    if g is not None and (id(node), i) in wanted:
                        captured[(id(node), i)] = g
                if id(node) not in needed:
                    continue
            run(node, grads)
            if not retain_graph:
                node.free()  # a second pass reports it
    finally:
        set_grad_enabled(saved_mode)
        builder.node = builder.grads = None
    for leaf, g in leaf_grads.items():
        if leaf._hooks:
            g = _run_hooks(leaf._hooks, g, create_graph)
            leaf_grads[leaf] = g
    if targets is not None:
        result = {}
        for t in targets:
            key = (id(t._node), t._idx) if t._node is not None else None
            result[id(t)] = captured.get(key) if key is not None else leaf_grads.get(t)
        return result
    for leaf, g in leaf_grads.items():
        _accumulate_leaf(leaf, g, create_graph)
    return {}


def _target_keys(targets: Sequence[Tensor] | None) -> set:
    if not targets:
        return set()
    return {(id(t._node), t._idx) for t in targets if t._node is not None}


def _needed_nodes(order: list[Node], wanted: set, targets: Sequence[Tensor]) -> set[int]:
    """With grad(..., inputs): only the nodes some input's gradient flows through are run."""
    wanted_leaves = {id(t) for t in targets if t._node is None}
    needed: set[int] = set()
    for node in order:  # parents come first
        if node.inputs is None:
            needed.add(id(node))  # let the walk report the freed graph
            continue
        for value in node.inputs:
            for t in (value if type(value) is list else (value,)):
                if t is None or t.stop_gradient:
                    continue
                if (id(t) in wanted_leaves if t._node is None
                        else id(t._node) in needed or (id(t._node), t._idx) in wanted):
                    needed.add(id(node))
                    break
            if id(node) in needed:
                break
    return needed


def _hook_value(value: Any, create_graph: bool) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(_asarray(value))


def _run_hooks(hooks: list, g: Any, create_graph: bool) -> Any:
    for hook in list(hooks):
        result = hook(_hook_value(g, create_graph))
        if result is not None:
            g = result if create_graph else (result.data if isinstance(result, Tensor) else _asarray(result))
    return g


def _run_node_hooks(node: Node, grads: list, create_graph: bool) -> None:
    for i, hooks in node.hooks.items():
        if grads[i] is not None and hooks:
            grads[i] = _run_hooks(hooks, grads[i], create_graph)


def _accumulate_leaf(leaf: Tensor, g: Any, create_graph: bool) -> None:
    if create_graph:
        g = g if isinstance(g, Tensor) else Tensor(_asarray(g))
        leaf.grad = g if leaf.grad is None else leaf.grad + g
        return
    g = g.data if isinstance(g, Tensor) else g
    if type(g) is not _ndarray:
        g = _asarray(g)
    if g.dtype != leaf.data.dtype:
        g = g.astype(leaf.data.dtype)
    if leaf.grad is None:
        leaf.grad = Tensor(g)
    else:
        leaf.grad = Tensor(leaf.grad.data + g)


def _seed_values(outputs: list[Tensor], grad_outputs: Sequence[Any] | None, create_graph: bool,
                 what: str) -> list[Any]:
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"{what}: {len(outputs)} outputs but {len(grad_outputs)} output gradients")
    seeds = []
    for out, g in zip(outputs, grad_outputs):
        if g is None:
            value = np.ones_like(out.data)
        else:
            value = g.data if isinstance(g, Tensor) else _asarray(g, dtype=out.data.dtype)
            if value.shape != out.data.shape:
                raise ValueError(f"{what}: output has shape {list(out.shape)} but its gradient has shape "
                                 f"{list(value.shape)}")
        if create_graph:
            seeds.append(g if isinstance(g, Tensor) else Tensor(value))
        else:
            seeds.append(value)
    return seeds


def _check_outputs(outputs: Any, what: str) -> list[Tensor]:
    items = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    for out in items:
        if not isinstance(out, Tensor):
            raise TypeError(f"{what}: expected Tensors, got {type(out).__name__}")
    return items


def backward(tensors: Sequence[Tensor], grad_tensors: Sequence[Any] | None = None,
             retain_graph: bool = False, create_graph: bool = False) -> None:
    """Accumulate the gradients of `tensors` into the `.grad` of the leaves they depend on."""
    outputs = _check_outputs(tensors, "backward")
    for out in outputs:
        if out.stop_gradient:
            raise RuntimeError(f"backward: tensor {out.name or ''} of shape {list(out.shape)} has "
                               f"stop_gradient=True, so no gradient flows from it (does any input of the "
                               f"computation have stop_gradient=False, and was it run outside no_grad?)")
    seeds = _seed_values(outputs, grad_tensors, create_graph, "backward")
    run_backward(outputs, seeds, retain_graph or create_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False, no_grad_vars: Any = None) -> list[Tensor | None]:
    """d(sum of outputs)/d(each input), PyTorch semantics; `.grad` of leaves is left untouched.

    create_graph=True records the backward pass itself, so the results can be differentiated
    again. An input the outputs do not depend on raises unless allow_unused=True (then None).
    """
    outs = _check_outputs(outputs, "grad")
    ins = _check_outputs(inputs, "grad")
    if isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    for x in ins:
        if x.stop_gradient:
            raise RuntimeError(f"grad: input of shape {list(x.shape)} has stop_gradient=True; set "
                               f"stop_gradient=False before computing with it")
    for out in outs:
        if out.stop_gradient:
            raise RuntimeError(f"grad: output of shape {list(out.shape)} does not depend on any input that "
                               f"needs a gradient (stop_gradient=True)")
        if grad_outputs is None and out.data.size != 1:
            raise RuntimeError(f"grad: output of shape {list(out.shape)} is not a scalar; pass grad_outputs")
    retain = create_graph if retain_graph is None else retain_graph
    seeds = _seed_values(outs, grad_outputs, create_graph, "grad")
    found = run_backward(outs, seeds, retain, create_graph, targets=ins)
    result: list[Tensor | None] = []
    for i, x in enumerate(ins):
        g = found.get(id(x))
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"grad: input {i} (shape {list(x.shape)}) was not used to compute the "
                                   f"outputs; pass allow_unused=True to get None for it")
            result.append(None)
        elif create_graph:
            result.append(g if isinstance(g, Tensor) else Tensor(_asarray(g)))
        else:
            g = g.data if isinstance(g, Tensor) else g
            result.append(Tensor(g if type(g) is _ndarray else _asarray(g)))
    return result
