"""Define-by-run autograd on the op registry.

`eager_apply` checks the inputs with the op's registered shape rule, as static mode does
when it appends the op (cached, see infer.py), runs the kernel at once and, only when some
input needs a gradient and grad mode is on, records a `Node`. `backward` / `grad` order the
nodes reachable from the outputs topologically (an iterative depth-first search, so deep
graphs cannot overflow the stack), walk them in reverse, and ask each op's registered grad
maker, through an `EagerGradBuilder`, for its input gradients: the very makers
`append_backward` uses. Gradients of intermediate outputs live in the engine's dict; only
leaves get `.grad`, each an array of its own (`_owned`).
"""
from __future__ import annotations

import itertools
from operator import attrgetter
from typing import Any, Callable, Sequence

import numpy as np

from ..framework.errors import FluidgradError, IndexRangeError
from ..ops.registry import Slot, get_op_def
from .infer import attr_key, cache_key, key_or_none, run_rule
from .tensor import Tensor

_ndarray = np.ndarray
_asarray = np.asarray
_MISS = object()


def _no_gradient(g: Any) -> None:
    from ..ops.registry import require_gradient
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
    """Name the op, its inputs' shapes and dtypes, and the attributes (the shape rule passed,
    so this is something only the values show, e.g. an index out of range)."""
    parts = []
    for (slot, _), value in zip(call.in_slots, args):
        if isinstance(value, list):
            parts.append(f"{slot}=[{', '.join(f'{list(v.shape)} {v.dtype}' for v in value)}]")
        elif value is not None:
            parts.append(f"{slot}={list(value.shape)} {value.dtype}")
    shown = {k: v for k, v in attrs.items() if not k.startswith("_")}
    message = f"op {call.type} failed in eager mode on inputs {', '.join(parts)} attrs {shown}: " \
              f"{type(exc).__name__}: {exc}"
    kind = exc.__class__ if isinstance(exc, FluidgradError) else IndexRangeError if isinstance(exc, IndexError) \
        else FluidgradError
    try:
        return kind(message)
    except TypeError:
        return FluidgradError(message)


def _dtype_error(call: OpCall, got: Any, expected: Any) -> FluidgradError:
    return FluidgradError(f"op {call.type}: the kernel computed {got} where the shape rule declares "
                          f"{expected} in eager mode; the op's kernel and rule disagree (a registration bug)")


def eager_apply(op_type: str, inputs: dict, attrs: dict, n_out: int | None = None) -> Any:
    """Run `op_type` now on Tensors; return Tensors shaped like `dispatch.apply_op`'s result."""
    if _tracer is not None:
        return _tracer.apply(op_type, inputs, attrs, n_out)
    call = _CALLS.get(op_type) or op_call(op_type)
    if call.needs_runtime:
        raise FluidgradError(f"op {op_type} runs sub-blocks and exists in static mode only; "
                             f"in eager mode write the Python loop or branch directly")
    args: list = []
    tensors = list(map(inputs.get, call.in_names))
    requires = _gather_inputs(call, tensors, args) if call.has_dup_in else _gather_single(call, tensors, args)
    kw = {**call.defaults, **attrs} if attrs else call.defaults
    try:
        expected = call.infer_cache[cache_key(call, args, kw, n_out)]
    except (KeyError, TypeError):  # not seen yet (or an unhashable attribute): run the rule
        expected = run_rule(call, key_or_none(call, args, kw, n_out), args, tensors, kw, n_out)
    return _run(call, args, tensors, kw, requires, expected)


def _gather_single(call: OpCall, tensors: list, args: list) -> bool:
    """One Tensor (or None) per slot, the common case: fill `args` with their arrays (lifting
    arrays to Tensors in `tensors`); return whether one of them needs a gradient."""
    requires = False
    for i, value in enumerate(tensors):
        if value is None:
            args.append(None)
            continue
        if type(value) is not Tensor:
            value = tensors[i] = _as_tensor(value, call.type, call.in_names[i])
        args.append(value.data)
        if not value.stop_gradient:
            requires = True
    return requires


def _gather_inputs(call: OpCall, tensors: list, args: list) -> bool:
    """`_gather_single` for an op with a duplicable input slot (a list of Tensors)."""
    requires = False
    for i, (slot, dup) in enumerate(call.in_slots):
        value = tensors[i]
        if value is None:
            args.append(None)
        elif dup:
            items = tensors[i] = [v if type(v) is Tensor else _as_tensor(v, call.type, slot) for v in value]
            args.append([t.data for t in items])
            if not requires:
                requires = any(not t.stop_gradient for t in items)
        else:
            if type(value) is not Tensor:
                value = tensors[i] = _as_tensor(value, call.type, slot)
            args.append(value.data)
            if not value.stop_gradient:
                requires = True
    return requires


def _run(call: OpCall, args: list, tensors: Any, kw: dict, requires: bool, expected: Any) -> Any:
    """Run the kernel on `args` (the shape rule passed, declaring `expected` dtypes); wrap the
    outputs; record a node when `requires` and grad mode is on."""
    try:
        out = call.kernel(*args, **kw) if kw else call.kernel(*args)
    except Exception as exc:
        raise _kernel_error(call, args, kw, exc) from exc
    record = requires and _grad_enabled
    if call.single_out:
        if type(out) is not _ndarray:
            out = _asarray(out)
        if out.dtype is not expected and expected is not None and out.dtype.name != expected.name:
            raise _dtype_error(call, out.dtype, expected)
        if record and out.dtype.kind == "f":
            return Tensor(out, False, Node(call, kw, tuple(tensors), (out,)), 0)
        return Tensor(out)
    return _wrap_outputs(call, out, kw, tensors, record, expected)


def apply_binary(op_type: str, x: Tensor, y: Tensor) -> Tensor:
    """`eager_apply` for an attribute-less binary op (X, Y -> Out) on two Tensors, without
    building dicts: the path of `a * b`, `a + b`... (Tensor's operators). It does what `_run`
    does, inlined: calling `_run` costs ~0.1 µs per op, 10% of the forward pass of
    benchmarks/bench_eager.py's chain."""
    if _tracer is not None:
        return _tracer.apply(op_type, {"X": x, "Y": y}, {}, None)
    call = _CALLS.get(op_type) or op_call(op_type)
    xd = x.data
    yd = y.data
    expected = call.infer_cache.get((xd.shape, xd.dtype, yd.shape, yd.dtype, call.default_attr_key), _MISS)
    if expected is _MISS:
        expected = run_rule(call, key_or_none(call, [xd, yd], call.defaults, None), [xd, yd], (x, y),
                            call.defaults, None)
    try:
        out = call.kernel(xd, yd)
    except Exception as exc:
        raise _kernel_error(call, [xd, yd], {}, exc) from exc
    if type(out) is not _ndarray:
        out = _asarray(out)
    dtype = out.dtype
    if dtype is not expected and expected is not None and dtype.name != expected.name:
        raise _dtype_error(call, dtype, expected)
    if (not x.stop_gradient or not y.stop_gradient) and _grad_enabled and dtype.kind == "f":
        return Tensor(out, False, Node(call, call.defaults, (x, y), (out,)), 0)
    return Tensor(out)


def apply_unary(op_type: str, x: Tensor, attrs: dict) -> Tensor:
    """`eager_apply` for a one-input, one-output op given all its attributes (e.g. `scale`)."""
    if _tracer is not None:
        return _tracer.apply(op_type, {"X": x}, attrs, None)
    call = _CALLS.get(op_type) or op_call(op_type)
    xd = x.data
    try:
        expected = call.infer_cache[(xd.shape, xd.dtype, attr_key(call, attrs, None) if call.infer_attrs else ())]
    except (KeyError, TypeError):
        expected = run_rule(call, key_or_none(call, [xd], attrs, None), [xd], (x,), attrs, None)
    return _run(call, [xd], (x,), attrs, not x.stop_gradient, expected)


def _wrap_outputs(call: OpCall, out: Any, kw: dict, tensors: list, record: bool, expected: Any) -> Any:
    flat, ranges = _flatten_outputs(call, out)
    if expected is not None:
        for array, dtype in zip(flat, expected):
            if dtype is not None and array.dtype.name != dtype.name:
                raise _dtype_error(call, array.dtype, dtype)
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


def _flatten_outputs(call: OpCall, out: Any) -> tuple[list[np.ndarray], dict | None]:
    """The kernel's outputs as one list of arrays, and each duplicable slot's (start, stop) in it."""
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
    return flat, ranges


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
    """The engine: seed the roots, order the reachable nodes, walk them newest first running
    each one's grad maker, then hand out the leaves' gradients. Returns the gradients of
    `targets` (key: id of the tensor) when given, else accumulates into the `.grad` of every
    leaf reached and returns {}."""
    from .grad_builder import EagerGradBuilder
    builder = EagerGradBuilder({}, {}, create_graph)
    for root, seed in zip(roots, seeds):
        builder.accumulate(root, seed)
    order = topological_order([r._node for r in roots if r._node is not None])
    # arrays the caller may still hold (seeds, hooks' results): never stored as a gradient as is
    external = {id(_array_of(seed)) for seed in seeds}
    walk = _Walk(targets, order) if targets is not None else None
    _walk(order, builder, retain_graph, walk, external)
    leaf_grads = builder.leaf_grads
    _run_leaf_hooks(leaf_grads, create_graph, external)
    if walk is not None:
        return _target_grads(targets, walk.captured, leaf_grads, external)
    for leaf, g in leaf_grads.items():
        _accumulate_leaf(leaf, g, create_graph, external)
    return {}


class _Walk:
    """What a `grad(outputs, inputs)` pass needs besides the nodes: the (node, output index)
    of each wanted non-leaf input, the nodes worth running, and the gradients captured."""

    __slots__ = ("wanted", "needed", "captured")

    def __init__(self, targets: Sequence[Tensor], order: list[Node]) -> None:
        self.wanted = {(id(t._node), t._idx) for t in targets if t._node is not None}
        self.needed = _needed_nodes(order, self.wanted, targets)
        self.captured: dict[tuple[int, int], Any] = {}

    def visit(self, node: Node, grads: list) -> bool:
        """Capture the gradients of wanted outputs of `node`; say whether to run its maker."""
        for i, g in enumerate(grads):
            if g is not None and (id(node), i) in self.wanted:
                self.captured[(id(node), i)] = g
        return id(node) in self.needed


def _walk(order: list[Node], builder: Any, retain_graph: bool, walk: _Walk | None, external: set) -> None:
    """Run the grad maker of every node that received a gradient, newest first (grad mode on
    only to record the backward pass itself, with create_graph)."""
    create_graph = builder.create_graph
    saved_mode = _grad_enabled
    set_grad_enabled(create_graph)
    pop = builder.node_grads.pop
    try:
        for node in reversed(order):
            grads = pop(node, None)
            if grads is None:
                continue  # a symbolic zero: no output of this node received a gradient
            if node.inputs is None:
                raise RuntimeError(_FREED.format(op=node.call.type))
            if node.hooks:
                _run_node_hooks(node, grads, create_graph, external)
            if walk is not None and not walk.visit(node, grads):
                continue
            builder.node = node  # builder.run(node, grads), inlined: this loop is the per-node cost
            builder.grads = grads
            call = builder.call = node.call
            call.grad_maker(builder)
            if not retain_graph:
                node.inputs = node.outs = None  # free the graph as we go; a second pass reports it
    finally:
        set_grad_enabled(saved_mode)
        builder.node = builder.grads = None


def _target_grads(targets: Sequence[Tensor], captured: dict, leaf_grads: dict, external: set) -> dict:
    """grad(): each input's gradient, an array of its own (see `_owned`)."""
    result = {}
    taken = set(external)
    for t in targets:
        g = captured.get((id(t._node), t._idx)) if t._node is not None else leaf_grads.get(t)
        result[id(t)] = None if g is None else _owned(g, taken)
    return result


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


def _array_of(value: Any) -> Any:
    return value.data if isinstance(value, Tensor) else value


def _hook_value(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(_asarray(value))


def _run_hooks(hooks: list, g: Any, create_graph: bool, external: set) -> Any:
    for hook in list(hooks):
        result = hook(_hook_value(g))
        if result is not None:
            g = result if create_graph else (result.data if isinstance(result, Tensor) else _asarray(result))
            external.add(id(_array_of(g)))  # the hook's caller may keep it
    return g


def _run_node_hooks(node: Node, grads: list, create_graph: bool, external: set) -> None:
    for i, hooks in node.hooks.items():
        if grads[i] is not None and hooks:
            grads[i] = _run_hooks(hooks, grads[i], create_graph, external)


def _run_leaf_hooks(leaf_grads: dict, create_graph: bool, external: set) -> None:
    for leaf, g in leaf_grads.items():
        if leaf._hooks:
            leaf_grads[leaf] = _run_hooks(leaf._hooks, g, create_graph, external)


def _owned(g: Any, taken: set) -> Any:
    """`g` if nothing else can reach its array, else a copy: a gradient handed out (a leaf's
    `.grad`, a result of `grad`) must be an array of its own, so that writing into one never
    changes another. Others may hold views (of a forward value or of another gradient),
    read-only arrays (broadcast views), arrays already handed out in this pass (`d(a+b)` is
    one array for a and b) and `taken`'s seeds and hook results. The common case, a fresh
    kernel result, is kept without a copy."""
    if isinstance(g, Tensor):  # create_graph: copy by a recorded op, so it stays differentiable
        if _shared(g.data, taken):
            with enable_grad():
                g = apply_unary("scale", g, {"scale": 1.0, "bias": 0.0, "bias_after_scale": True})
        taken.add(id(g.data))
        return g
    array = g if type(g) is _ndarray else _asarray(g)
    if _shared(array, taken):
        array = array.copy()
    taken.add(id(array))
    return array


def _shared(array: np.ndarray, taken: set) -> bool:
    return array.base is not None or not array.flags.writeable or id(array) in taken


def _accumulate_leaf(leaf: Tensor, g: Any, create_graph: bool, taken: set) -> None:
    """Add `g` into `leaf.grad` (a new Tensor each time: a `.grad` read before stays as it was)."""
    if create_graph:
        g = g if isinstance(g, Tensor) else Tensor(_asarray(g))
        leaf.grad = _owned(g, taken) if leaf.grad is None else leaf.grad + g
        return
    g = g.data if isinstance(g, Tensor) else g
    if type(g) is not _ndarray:
        g = _asarray(g)
    if g.dtype != leaf.data.dtype:
        g = g.astype(leaf.data.dtype)  # a new array
    elif leaf.grad is None:
        g = _owned(g, taken)
    leaf.grad = Tensor(g) if leaf.grad is None else Tensor(leaf.grad.data + g)


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
        else:
            result.append(g if isinstance(g, Tensor) else Tensor(g))
    return result
