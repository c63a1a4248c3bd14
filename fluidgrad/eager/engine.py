"""The engine loop: take the newest node that received a gradient, run its maker, accumulate.

A node is always created after the nodes that produced its inputs (its `seq` stamp), so
running the nodes that received a gradient newest first is a topological order: when a node
runs, every node reading its outputs has run. The builder queues a node on its first
gradient (`EagerGradBuilder.ready`, a heap), so the walk needs no separate ordering pass and
never visits a node no gradient reaches (a symbolic zero). Each node's registered grad
maker, run through an `EagerGradBuilder`, gives its input gradients: the very makers
`append_backward` uses. `grad(outputs, inputs)` also orders the reachable nodes up front
(`topological_order`, an iterative search: deep graphs cannot overflow the stack) to run
only the nodes some input's gradient flows through. Gradients of intermediate outputs live in the builder's
dict; only leaves get `.grad`, each an array of its own (`_owned`). Running ops forward is
apply.py; what is recorded is node.py; grad mode is mode.py.
"""
from __future__ import annotations

from heapq import heappop
from operator import attrgetter
from typing import Any, Sequence

import numpy as np

from .apply import apply_unary
from .grad_builder import ConstantsGradBuilder, EagerGradBuilder
from .mode import enable_grad, state
from .node import _FREED, Node
from .tensor import Tensor, relinked

_ndarray = np.ndarray
_asarray = np.asarray


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


def relink_superseded(roots: Sequence[Node]) -> None:
    """Give every node reachable from `roots` that read a Tensor before an in-place update
    moved the Tensor's graph link (`x[i] = v`) the link that was current when it was recorded
    (`tensor.relinked`), as PyTorch's edges do. Runs only while some such Tensor lives."""
    seen = set(roots)
    stack = list(seen)
    while stack:
        node = stack.pop()
        inputs = node.inputs
        if inputs is None:
            continue
        moved = False
        linked = []
        for value in inputs:
            if type(value) is list:
                items = [_as_of(t, node.seq) for t in value]
                moved = moved or any(a is not b for a, b in zip(items, value))
                linked.append(items)
            else:
                items = [_as_of(value, node.seq)] if value is not None else []
                moved = moved or (items and items[0] is not value)
                linked.append(items[0] if items else None)
            for t in items:
                parent = t._node
                if parent is not None and parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
        if moved:
            node.inputs = tuple(linked)


def _as_of(tensor: Any, seq: int) -> Any:
    """`tensor` as a node created at `seq` read it: its link before the first update after `seq`."""
    if type(tensor) is not Tensor:
        return tensor  # a stand-in keeps the link it was made with
    entry = relinked.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return tensor
    for stamp, before in entry[1]:
        if stamp > seq:
            return before
    return tensor


def run_backward(roots: Sequence[Tensor], seeds: Sequence[Any], retain_graph: bool, create_graph: bool,
                 targets: Sequence[Tensor] | None = None, blocked: set | None = None) -> dict:
    """The engine: seed the roots, walk the nodes that receive a gradient newest first running
    each one's grad maker, then hand out the leaves' gradients. Returns the gradients of
    `targets` (key: id of the tensor) when given, else accumulates into the `.grad` of every
    leaf reached and returns {}."""
    if relinked:
        relink_superseded([r._node for r in roots if r._node is not None])
    builder = (EagerGradBuilder({}, {}, create_graph) if blocked is None
               else ConstantsGradBuilder({}, {}, create_graph, blocked))
    for root, seed in zip(roots, seeds):
        builder.accumulate(root, seed)
    walk = None
    if targets is not None:
        builder.fills_leaves = False
        walk = _Walk(targets, topological_order([r._node for r in roots if r._node is not None]))
    # arrays the caller may still hold (seeds, hooks' results): never stored as a gradient as is
    external = {id(_array_of(seed)) for seed in seeds}
    _walk(builder, retain_graph, walk, external)
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


def _walk(builder: Any, retain_graph: bool, walk: _Walk | None, external: set) -> None:
    """Run the grad maker of every node that received a gradient, newest first (grad mode on
    only to record the backward pass itself, with create_graph)."""
    create_graph = builder.create_graph
    saved_mode, saved_phase = state.grad_enabled, state.in_backward
    state.grad_enabled, state.in_backward = create_graph, True
    ready, pop = builder.ready, builder.node_grads.pop
    try:
        while ready:
            node = heappop(ready)[1]
            grads = pop(node)
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
        state.grad_enabled, state.in_backward = saved_mode, saved_phase
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
    return value._array if isinstance(value, Tensor) else value


def _hook_value(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(_asarray(value))


def _run_hooks(hooks: list, g: Any, create_graph: bool, external: set) -> Any:
    for hook in list(hooks):
        result = hook(_hook_value(g))
        if result is not None:
            _check_hook_shape(hook, np.shape(_array_of(g)), np.shape(_array_of(result)))
            g = result if create_graph else (result._array if isinstance(result, Tensor) else _asarray(result))
            external.add(id(_array_of(g)))  # the hook's caller may keep it
    return g


def _check_hook_shape(hook: Any, shape: tuple, returned: tuple) -> None:
    """As PyTorch: a hook may replace a gradient but not change its shape (it would become .grad
    of the wrong shape, or fail later in a kernel naming neither the hook nor the shapes)."""
    if tuple(returned) != tuple(shape):
        name = getattr(hook, "__qualname__", None) or type(hook).__name__
        raise RuntimeError(f"register_hook: the hook {name} returned a gradient of shape {list(returned)} "
                           f"for a tensor of shape {list(shape)}; a hook must keep the gradient's shape")


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
        if _shared(g._array, taken):
            with enable_grad():
                g = apply_unary("scale", g, {"scale": 1.0, "bias": 0.0, "bias_after_scale": True})
        taken.add(id(g._array))
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
    g = g._array if isinstance(g, Tensor) else g
    if type(g) is not _ndarray:
        g = _asarray(g)
    if g.dtype != leaf._array.dtype:
        g = g.astype(leaf._array.dtype)  # a new array
    elif leaf.grad is None:
        g = _owned(g, taken)
    leaf.grad = Tensor(g) if leaf.grad is None else Tensor(leaf.grad._array + g)


def _seed_values(outputs: list[Tensor], grad_outputs: Sequence[Any] | None, create_graph: bool,
                 what: str) -> list[Any]:
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"{what}: {len(outputs)} outputs but {len(grad_outputs)} output gradients")
    seeds = []
    for out, g in zip(outputs, grad_outputs):
        if g is None:
            value = np.ones_like(out._array)
        else:
            value = g._array if isinstance(g, Tensor) else _asarray(g, dtype=out._array.dtype)
            if value.shape != out._array.shape:
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
    again. An input the outputs do not depend on raises unless allow_unused=True (then None);
    this is checked before anything runs, so a refused call leaves the graph as it was. An
    input reached only through ops whose gradient is zero (e.g. `sign`) gets zeros, as in PyTorch.
    `no_grad_vars`: Tensors treated as constants (no gradient flows through them).
    """
    outs = _check_outputs(outputs, "grad")
    ins = _check_outputs(inputs, "grad")
    constants = [] if no_grad_vars is None else _check_outputs(no_grad_vars, "grad: no_grad_vars")
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
        if grad_outputs is None and out._array.size != 1:
            raise RuntimeError(f"grad: output of shape {list(out.shape)} is not a scalar; pass grad_outputs")
    blocked = {_tensor_key(t) for t in constants}
    if relinked:
        relink_superseded([t._node for t in outs if t._node is not None])
    used = _reached_tensors(outs, blocked)
    for i, x in enumerate(ins):
        if _tensor_key(x) not in used and not allow_unused:
            through = " except through no_grad_vars" if constants else ""
            raise RuntimeError(f"grad: input {i} (shape {list(x.shape)}) was not used to compute the "
                               f"outputs{through}; pass allow_unused=True to get None for it")
    retain = create_graph if retain_graph is None else retain_graph
    seeds = _seed_values(outs, grad_outputs, create_graph, "grad")
    found = run_backward(outs, seeds, retain, create_graph, targets=ins, blocked=blocked or None)
    result: list[Tensor | None] = []
    for x in ins:
        g = found.get(id(x))
        if g is None and not allow_unused:  # reached, but every path has a zero gradient (e.g. sign)
            g = np.zeros_like(x._array)
        result.append(None if g is None else g if isinstance(g, Tensor) else Tensor(g))
    return result


def _tensor_key(tensor: Tensor) -> Any:
    """What identifies a value in the graph: a leaf itself, else (its node, its output index)."""
    return id(tensor) if tensor._node is None else (id(tensor._node), tensor._idx)


def _reached_tensors(outputs: Sequence[Tensor], blocked: set) -> set:
    """Keys of the tensors a gradient from `outputs` can reach, not passing through `blocked`."""
    reached: set = set()
    stack = [t for t in outputs if _tensor_key(t) not in blocked]
    seen_nodes: set[int] = set()
    while stack:
        tensor = stack.pop()
        key = _tensor_key(tensor)
        if key in reached:
            continue
        reached.add(key)
        node = tensor._node
        if node is None or id(node) in seen_nodes or node.inputs is None:
            continue
        seen_nodes.add(id(node))
        for value in node.inputs:
            for t in (value if type(value) is list else (value,)):
                if t is not None and not t.stop_gradient and _tensor_key(t) not in blocked:
                    stack.append(t)
    return reached
