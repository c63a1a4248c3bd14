"""Compile a Block into straight-line Python: one line per op, locals for variables.

A plan is generated source such as

    def run(scope, feed):
        v0 = feed['x']
        v1 = _load(scope, 'fc_0.w_0', 0)
        v2 = k0(v0, v1)                  # op 0: matmul
        del v0
        ...
        return (v5,)

compiled once and cached. Kernels are bound as globals (with their attributes), simple
ops are pasted as expressions, and every intermediate is `del`eted after its last use,
so the interpreter does no dispatch at run time. `plan.source` shows what will run.

Buffer reuse (`REUSE_BUFFERS`): an elementwise op may write into an input that dies there
(`(into x)` in the source; inplace.py checks at run time that nobody else holds the array); a
value whose later readers need only its shape is replaced by a memory-free stand-in after its
last real use (`_meta`); optimizer ops run as soon as the gradient they read is complete
(`schedule`). A sub-block's step scope keeps only what its grad blocks read.
"""
from __future__ import annotations

import functools
from typing import Any, Iterable

import numpy as np

from ..framework import OPTIMIZE, Block, Operator
from ..framework.errors import ExecutionError, NanInfError
from ..framework.names import EMPTY_VAR_NAME
from ..framework.op_def import SHAPE_ONLY_SLOTS as _SHAPE_ONLY
from ..ops.registry import get_op_def
from . import inplace, placement
from .nan_inf import non_finite

# write elementwise results into inputs that die at the op (inplace.py); off: every op allocates
REUSE_BUFFERS = True


class Plan:
    """A compiled block: the generated `source`, its function `fn`, and the map from generated lines to ops (for error messages)."""
    def __init__(self, block: Block, source: str, fn: Any, line_ops: dict[int, int],
                 idents: dict[str, str], inplace: dict[str, str] | None = None,
                 freed_early: dict[str, int] | None = None, never_computed: set[str] | None = None,
                 order: list[int] | None = None, placed: dict[str, int] | None = None) -> None:
        self.block = block
        self.source = source
        self.fn = fn
        self.line_ops = line_ops  # generated line number -> op index
        self.idents = idents      # variable name -> local name in the generated code
        self.inplace = inplace or {}  # output -> the dying input whose buffer it may take
        # values whose last readers need only their shape: freed after this op (a stand-in lives on)
        self.freed_early = freed_early or {}
        self.never_computed = never_computed or set()  # values only ever read for their shape
        # the block's op indices in the order the plan runs them (optimizer ops move up to
        # right after the gradient they read); freed_early counts positions in this order
        self.order = order if order is not None else list(range(len(block.ops)))
        # values their producer writes straight into a buffer a later op offers (placement.py):
        # variable -> the offering op's index
        self.placed = placed or {}

    def op_at_line(self, lineno: int) -> int | None:
        return self.line_ops.get(lineno)


def _load(block: Block, scope: Any, name: str, op_index: int, op_type: str, later_writer: str | None = None) -> Any:
    owner = scope.find_owner(name)
    if owner is None:
        if _is_persistable(block, name):  # a parameter or optimizer state: never initialised
            raise ExecutionError(f"op #{op_index} ({op_type}) reads variable {name!r}, which is neither fed nor in "
                                 f"the scope: it is persistable, so run the startup program first "
                                 f"(exe.run(startup_program)), or load its saved value into the scope"
                                 + (f"; {later_writer} only updates it later" if later_writer else ""))
        if later_writer is not None:  # ops run in block order: the value would come too late
            raise ExecutionError(f"op #{op_index} ({op_type}) reads variable {name!r} before {later_writer} "
                                 f"writes it, and it is neither fed nor in the scope (ops run in the order "
                                 f"they were appended; append the writer first)")
        raise ExecutionError(f"op #{op_index} ({op_type}) reads variable {name!r}, which is neither fed "
                             f"nor in the scope nor written by an earlier op (run the startup program first, "
                             f"or feed it)")
    return owner.vars[name]


def _own(value: Any, shared: set[int]) -> Any:
    """A fetched value the caller may write into: itself when it is a fresh writable array that
    is not one of the run's inputs or stored values, else a copy."""
    if type(value) is np.ndarray and value.base is None and value.flags.writeable and id(value) not in shared:
        return value
    return np.array(value)


def _check_finite(block: Block, index: int, values: Iterable[Any]) -> None:
    for value in values:
        kind = non_finite(value) if isinstance(value, np.ndarray) else None
        if kind is not None:
            op = block.ops[index]
            raise NanInfError(
                f"{kind} in the output of op #{index} ({op.type}, {op.role} op, block {block.idx}); "
                f"its inputs: {', '.join(op.input_arg_names) or 'none'}; outputs: {', '.join(op.output_arg_names)}")


class _Writer:
    """Builds the generated source, handing out identifiers and tracking line numbers."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.line_ops: dict[int, int] = {}
        self.idents: dict[str, str] = {}
        self.globals: dict[str, Any] = {}

    def ident(self, name: str) -> str:
        if name not in self.idents:
            self.idents[name] = f"v{len(self.idents)}"
        return self.idents[name]

    def constant(self, prefix: str, value: Any) -> str:
        key = f"{prefix}{len(self.globals)}"
        self.globals[key] = value
        return key

    def emit(self, line: str, op_index: int | None = None) -> None:
        self.lines.append("    " + line)
        if op_index is not None:
            self.line_ops[len(self.lines) + 1] = op_index  # +1 for the `def` line


# ops whose common case the plan writes out, calling the kernel ({kernel}) for the rest:
# `reduce_as` of a float gradient that already has its target's shape is the gradient itself
_FAST_PATHS = {
    "reduce_as": "({X} if {X}.shape == {Target}.shape and {X}.dtype.kind == 'f' else {kernel}({X}, {Target}))",
}


def _kernel_ref(w: _Writer, op: Operator, op_index: int) -> tuple[str, bool]:
    """The callable for an op (a global), and whether it is an inline expression template."""
    op_def = get_op_def(op.type)
    if op_def.inline and not op_def.attrs and not op_def.needs_runtime:
        return op_def.inline, True
    if op.type in _FAST_PATHS:
        ref = w.constant(f"k{op_index}_", op_def.kernel)
        return _FAST_PATHS[op.type].replace("{kernel}", ref), True
    kernel = op_def.kernel
    attrs = {k: op.attrs.get(k, default) for k, default in op_def.attrs.items()}   # saved programs may predate an attr
    if op_def.needs_runtime:
        kernel = functools.partial(kernel, op=op, **attrs)
    elif attrs:
        kernel = functools.partial(kernel, **attrs)
    return w.constant(f"k{op_index}_", kernel), False


def _arguments(w: _Writer, op: Operator, index: int = -1, metas: dict[str, int] | None = None) -> list[str]:
    args = []
    meta_slots = _SHAPE_ONLY.get(op.type, ()) if metas else ()
    for slot in get_op_def(op.type).inputs:
        names = op.inputs.get(slot.name, [])
        if slot.name in meta_slots:
            names = [n + META_SUFFIX if metas.get(n, index) < index else n for n in names]
        if slot.duplicable:
            args.append("[" + ", ".join(w.ident(n) for n in names) + "]")
        else:
            args.append(w.ident(names[0]) if names else "None")
    return args


def _targets(w: _Writer, op: Operator, dead: set[str]) -> str:
    def one(name: str) -> str:
        return "_" if name == EMPTY_VAR_NAME or name in dead else w.ident(name)
    parts = []
    for slot in get_op_def(op.type).outputs:
        names = op.outputs.get(slot.name, [])
        if slot.duplicable:
            parts.append("_" if not names else "(" + ", ".join(one(n) for n in names) + ",)")
        else:
            parts.append(one(names[0]) if names else "_")
    return parts[0] if len(parts) == 1 else ", ".join(parts)


META_SUFFIX = "@META"
_ZERO_BYTES = bytes(16)


def _meta_of(ufunc: np.ufunc, *args: Any) -> Any:
    """The stand-in of `ufunc(*args)` without computing it: float inputs of one dtype give that
    dtype over the broadcast shape (the plan picks only ops declared so); anything else is computed."""
    dtype = getattr(args[0], "dtype", None)
    if dtype is not None and dtype.kind == "f" and all(type(a) is np.ndarray and a.dtype == dtype for a in args):
        return _stand_in(np.broadcast_shapes(*(a.shape for a in args)), dtype)
    return _meta(ufunc(*args))


_STAND_INS: dict[tuple, np.ndarray] = {}


def _stand_in(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """One read-only, zero-stride array per (shape, dtype), shared: only its shape is ever read."""
    key = (shape, dtype)
    found = _STAND_INS.get(key)
    if found is None:
        if len(_STAND_INS) > 512:
            _STAND_INS.clear()
        found = _STAND_INS[key] = np.ndarray(shape, dtype, buffer=_ZERO_BYTES, strides=(0,) * len(shape))
    return found


def _pure_elementwise(block: Block, op: Operator) -> bool:
    """An op whose one output is a NumPy ufunc of its inputs, with no attributes, all declared
    with one float dtype: the shape and dtype of its result follow from its inputs'."""
    op_def = get_op_def(op.type)
    kernel = op_def.kernel
    if not (isinstance(kernel, np.ufunc) and kernel.nout == 1 and kernel.nin == len(op_def.inputs)
            and not op_def.attrs and not op_def.needs_runtime and len(op.output_arg_names) == 1
            and all(not slot.duplicable and len(op.inputs.get(slot.name, ())) == 1 for slot in op_def.inputs)):
        return False
    variables = [block._find_var_recursive(n) for n in op.input_arg_names + op.output_arg_names]
    return all(v is not None and v.dtype == variables[-1].dtype for v in variables) \
        and variables[-1].dtype.startswith("float")


def _meta(value: Any) -> Any:
    """A stand-in with `value`'s shape and dtype that holds no memory (zero strides, read-only)."""
    if (type(value) is not np.ndarray or value.size < inplace.MIN_ELEMENTS or value.dtype.hasobject
            or value.dtype.itemsize > len(_ZERO_BYTES)):
        return value  # small enough to keep: a stand-in would cost more than it frees
    return _stand_in(value.shape, value.dtype)


class _Liveness:
    """Where each variable is first read before any write (`external`), first written, and
    last touched, in one pass over the ops."""

    def __init__(self, ops: list[Operator], fetch_names: list[str]) -> None:
        self.defined: set[str] = set()
        self.external: dict[str, int] = {}      # name -> index of the first op reading it (-1: a fetch)
        self.last_touch: dict[str, int] = {}
        self.first_writer: dict[str, int] = {}  # in order of first write
        self.shape_only_values: set[str] = set()  # written, then only read for their shape
        for i, op in enumerate(ops):
            for name in op.input_arg_names:
                if name not in self.defined and name not in self.external:
                    self.external[name] = i
                self.last_touch[name] = i
            for name in op.output_arg_names:
                if name != EMPTY_VAR_NAME:
                    self.first_writer.setdefault(name, i)
                    self.defined.add(name)
                    self.last_touch[name] = i
        for name in fetch_names:
            if name not in self.defined and name not in self.external:
                self.external[name] = -1

    @property
    def written(self) -> list[str]:
        return list(self.first_writer)

    def cut_shape_only_reads(self, block: Block, ops: list[Operator], kept: set[str]) -> dict[str, int]:
        """Values whose last readers need only their shape and dtype (`reduce_as` Target, ...):
        the plan keeps a zero-stride stand-in after the last real use (`_meta`) and frees the
        value there. Returns name -> index of the op after which the stand-in replaces it, and
        moves the value's last touch back to that op (its stand-in, `name@META`, lives on)."""
        real_last: dict[str, int] = {}
        shape_last: dict[str, int] = {}
        for i, op in enumerate(ops):
            meta_slots = _SHAPE_ONLY.get(op.type, ())
            for slot, names in op.inputs.items():
                for name in names:
                    (shape_last if slot in meta_slots else real_last)[name] = i
            for name in op.output_arg_names:
                real_last[name] = i
        cut = {}
        for name, last in shape_last.items():
            real = real_last.get(name)
            var = block._find_var_recursive(name)
            if (real is not None and last > real and name in self.first_writer and name not in kept
                    and name not in self.external and name != EMPTY_VAR_NAME
                    and var is not None and not _small(var.shape)):
                cut[name] = real
                self.last_touch[name] = real
                self.last_touch[name + META_SUFFIX] = last
                if real == self.first_writer[name] and _pure_elementwise(block, ops[real]):
                    self.shape_only_values.add(name)  # only its shape is ever read: never computed
        return cut


def compile_block(block: Block, feed_names: Iterable[str] = (), fetch_names: Iterable[str] = (),
                  keep_all: bool = False, check_nan_inf: bool = False) -> Plan:
    """Generate and compile `run(scope, feed, _rt)` for `block`.

    keep_all: a sub-block run in its own scope (a loop step, a branch). Outer variables it writes
    are stored through `scope.parent`; of its own values the scope keeps those that a grad block
    of it reads (everything, for a grad block itself: the control-flow runtime reads what it
    wrote), and the rest are freed after their last use as in any plan.
    """
    feed_names, fetch_names = set(feed_names), list(fetch_names)
    order = schedule(block) if REUSE_BUFFERS else list(range(len(block.ops)))
    ops = [block.ops[i] for i in order]
    live = _Liveness(ops, fetch_names)
    for name in feed_names:
        if name not in live.external and name in live.first_writer:
            j = live.first_writer[name]
            raise ExecutionError(f"feed {name!r} would be ignored: op #{order[j]} ({ops[j].type}) writes it "
                                 f"before any op reads it")
    kept = set(fetch_names) | {n for n in live.written if _is_persistable(block, n)}
    reuse = REUSE_BUFFERS
    if keep_all:
        needed = _read_by_grad_blocks(block)
        if needed is None:
            kept |= set(live.written) | set(live.external)
            reuse = False
        else:
            kept |= {n for n in live.written if not _is_local(block, n)}
            kept |= needed & (set(live.written) | set(live.external))
    w = _Writer()
    w.globals.update(_load=functools.partial(_load, block), _chk=functools.partial(_check_finite, block), np=np)
    w.globals["_own"] = _own
    w.globals["_meta"] = _meta
    w.globals["_meta_of"] = _meta_of
    metas = live.cut_shape_only_reads(block, ops, kept) if reuse else {}
    placements = placement.choose(block, ops, kept) if placement.ENABLED and not keep_all else []
    _emit_loads(w, ops, order, live, feed_names, keep_all, kept)
    # a caller must not be able to write into the scope, or into its own feed, through a fetch:
    # a fetch of a fed or stored variable is copied; any other is copied unless it is a fresh
    # array of its own (an op may return a view of its input, `reshape`, or the input itself,
    # `assign`: so the ids of every value the run read or stores are kept to compare with)
    owned_elsewhere = {n for n in fetch_names if n in live.external or _is_persistable(block, n)}
    computed = [n for n in fetch_names if n not in owned_elsewhere]
    if computed:
        w.emit("_shared = {" + "".join(f"id({w.ident(n)}), " for n in live.external) + "}")
    inplace_outputs = _emit_ops(w, block, ops, order, live, kept, check_nan_inf, reuse, metas, placements)
    _emit_stores(w, block, live.written, live.external, kept, keep_all)
    stored = [n for n in live.written if _is_persistable(block, n)]
    if computed and stored:
        w.emit("_shared.update((" + "".join(f"id({w.ident(n)}), " for n in stored) + "))")
    w.emit("return (" + "".join((f"np.array({w.ident(n)})" if n in owned_elsewhere else
                                 f"_own({w.ident(n)}, _shared)") + ", " for n in fetch_names) + ")")
    source = "def run(scope, feed, _rt):\n" + ("\n".join(w.lines) if w.lines else "    pass")
    namespace = dict(w.globals)
    code = compile(source, f"<fluidgrad plan: block {block.idx}>", "exec")
    exec(code, namespace)
    placed = {ops[p].output_arg_names[0]: order[pl.consumer] for pl in placements for p in pl.producers}
    return Plan(block, source, namespace["run"], w.line_ops, w.idents, inplace_outputs,
                {n: live.last_touch[n] for n in metas}, live.shape_only_values, order, placed)


def schedule(block: Block) -> list[int]:
    """The order a plan runs `block`'s ops in: the block's own, except that an optimizer op
    (a parameter update) moves up to right after the last op it depends on, so that each
    gradient is used, and freed, as soon as it is complete rather than all held to the end.
    It never passes an op that writes what it reads, or reads or writes what it writes.

    An op that stays is the head of a group: itself, then the ops moved up behind it, in their
    own order. A moved op joins the latest group among those of the ops it depends on (the last
    writer of what it reads; every earlier reader and writer of what it writes), at that group's
    end: an op it depends on may itself have moved, into an earlier group than its own index."""
    moved_behind: dict[int, list[int]] = {}
    write_group: dict[str, int] = {}  # name -> the group of its last writer
    touch_group: dict[str, int] = {}  # name -> the latest group among every op that read or wrote it
    for index, op in enumerate(block.ops):
        group = index
        if op.role == OPTIMIZE and _movable(op):
            head = max([write_group.get(n, -1) for n in op.input_arg_names]
                       + [touch_group.get(n, -1) for n in op.output_arg_names], default=-1)
            if head < index - 1:
                moved_behind.setdefault(head, []).append(index)
                group = head
        for name in op.input_arg_names:
            touch_group[name] = max(touch_group.get(name, -1), group)
        for name in op.output_arg_names:
            write_group[name] = group
            touch_group[name] = max(touch_group.get(name, -1), group)
    if not moved_behind:
        return list(range(len(block.ops)))
    moved = {index for indices in moved_behind.values() for index in indices}
    order = list(moved_behind.get(-1, ()))
    for index in range(len(block.ops)):
        if index not in moved:
            order.append(index)
            order.extend(moved_behind.get(index, ()))
    return order


def _movable(op: Operator) -> bool:
    """A plain kernel: no sub-block, no runtime, no random state, no communication."""
    op_def = get_op_def(op.type)
    return not (op_def.needs_runtime or "sub_block" in op.attrs or "seed" in op.attrs or op.type.startswith("c_"))


def _is_local(block: Block, name: str) -> bool:
    return block.has_var(name) or block._find_var_recursive(name) is None


def _read_by_grad_blocks(block: Block) -> set[str] | None:
    """Every name read by ops of the blocks nested under `block` (its grad blocks among them,
    whose parent it is): what its step scopes must keep. None for a grad block itself."""
    if block.forward_block_idx >= 0:
        return None
    blocks = block.program.blocks
    below = set()
    for other in blocks:
        ancestor = other
        while ancestor.parent_idx >= 0 and ancestor.idx not in below:
            if ancestor.parent_idx == block.idx or ancestor.forward_block_idx == block.idx:
                below.add(other.idx)
                break
            ancestor = blocks[ancestor.parent_idx]
    return {n for idx in below for op in blocks[idx].ops for n in op.input_arg_names}


def _is_persistable(block: Block, name: str) -> bool:
    var = block._find_var_recursive(name)
    return var is not None and var.persistable


def _emit_loads(w: _Writer, ops: list[Operator], order: list[int], live: _Liveness, feed_names: set[str],
                keep_all: bool, kept: set[str]) -> None:
    """Variables read before written come from the feed, else from the scope chain (a persistable
    one there missing says to run the startup program)."""
    for name, first in live.external.items():
        op_type = ops[first].type if first >= 0 else "fetch"
        if name in feed_names:
            w.emit(f"{w.ident(name)} = feed[{name!r}]")
        else:
            j = live.first_writer.get(name)
            writer = None if j is None else f"op #{order[j]} ({ops[j].type})"
            w.emit(f"{w.ident(name)} = _load(scope, {name!r}, {order[first] if first >= 0 else first}, "
                   f"{op_type!r}, {writer!r})")
        if keep_all and name in live.defined and name in kept:
            w.emit(f"_read_{w.ident(name)} = {w.ident(name)}")


def _emit_ops(w: _Writer, block: Block, ops: list[Operator], order: list[int], live: _Liveness, kept: set[str],
              check_nan_inf: bool, reuse: bool, metas: dict[str, int],
              placements: list[placement.Placement]) -> dict[str, str]:
    """One line per op; `del` each intermediate after its last use. Returns the outputs written
    into a dying input's buffer (output -> input). `i` counts positions in the run order, `n`
    is the op's index in the block (what messages name)."""
    offers_before = {}
    produces, consumes = {}, {}
    for pl in placements:
        offers_before.setdefault(pl.first, []).append(pl)
        consumes[pl.consumer] = pl
        for p, j in pl.producers.items():
            produces[p] = (pl, j)
    frees: dict[int, list[str]] = {}
    for name, i in live.last_touch.items():
        if name not in kept:
            frees.setdefault(i, []).append(name)
    inplace_outputs: dict[str, str] = {}
    for i, op in enumerate(ops):
        n = order[i]
        dead = {n for n in op.output_arg_names if live.last_touch.get(n) == i and n not in kept
                and n not in op.input_arg_names and n not in metas}
        args = _arguments(w, op, i, metas)
        op_def = get_op_def(op.type)
        names = f"{', '.join(op.output_arg_names)} = {op.type}({', '.join(op.input_arg_names)})"
        into = _inplace_input(block, op, i, live, kept, dead) if reuse else None
        shape_only = [n for n in op.output_arg_names if n in live.shape_only_values]
        for pl in offers_before.get(i, ()):
            nones = w.constant("nones", (None,) * pl.n_inputs)
            w.emit(f"_place{order[pl.consumer]} = {w.constant(f'offer{order[pl.consumer]}_', pl.offer)}() "
                   f"or {nones}  # op {order[pl.consumer]} ({ops[pl.consumer].type}) offers its buffer")
        if i in produces:
            pl, j = produces[i]
            attrs = {k: op.attrs.get(k, default) for k, default in op_def.attrs.items()}
            ref = w.constant(f"pl{n}_", placement.producer_form(op.type, op_def.kernel, attrs))
            w.emit(f"{_targets(w, op, dead)} = {ref}(_place{order[pl.consumer]}[{j}], {', '.join(args)})  "
                   f"# op {n}: {names} (into op {order[pl.consumer]}'s buffer)", n)
        elif i in consumes:
            attrs = {k: op.attrs.get(k, default) for k, default in op_def.attrs.items()}
            ref = w.constant(f"k{n}_", functools.partial(op_def.kernel, **attrs))
            w.emit(f"{_targets(w, op, dead)} = {ref}({', '.join(args)}, placed=_place{n})  # op {n}: {names}", n)
            w.emit(f"del _place{n}")
        elif shape_only:
            ref = w.constant(f"k{n}_", op_def.kernel)
            w.emit(f"{w.ident(shape_only[0] + META_SUFFIX)} = _meta_of({ref}, {', '.join(args)})  "
                   f"# op {n}: {names} (only its shape is read)", n)
        elif into is not None:
            form = inplace.inplace_form(op.type, op_def.kernel, [s.name for s in op_def.inputs], into[0])
            ref = w.constant(f"ip{n}_", form)
            inplace_outputs[op.output_arg_names[0]] = into[1]
            w.emit(f"{_targets(w, op, dead)} = {ref}({', '.join(args)})  # op {n}: {names} (into {into[1]})", n)
        else:
            ref, inline = _kernel_ref(w, op, n)
            if inline:
                call = ref.format(**dict(zip([s.name for s in op_def.inputs], args)))
            elif op_def.needs_runtime:
                call = f"{ref}(_rt, {', '.join(args)})"
            else:
                call = f"{ref}({', '.join(args)})"
            w.emit(f"{_targets(w, op, dead)} = {call}  # op {n}: {names}", n)
        if check_nan_inf:
            outs = [w.ident(n) for n in op.output_arg_names if n != EMPTY_VAR_NAME and n not in dead]
            if outs:
                w.emit(f"_chk({n}, ({', '.join(outs)},))", n)
        for name in op.input_arg_names + op.output_arg_names:
            if metas.get(name) == i and f"{name}{META_SUFFIX}" not in w.idents:
                w.emit(f"{w.ident(name + META_SUFFIX)} = _meta({w.ident(name)})")
        to_free = [n for n in frees.get(i, []) if n not in dead and n not in live.shape_only_values]
        if to_free:
            w.emit(f"del {', '.join(w.ident(n) for n in to_free)}")
    return inplace_outputs


def _inplace_input(block: Block, op: Operator, index: int, live: _Liveness, kept: set[str],
                   dead: set[str]) -> tuple[str, str] | None:
    """(slot, variable) of an input the op may write its one output into: read for the last time
    here and nowhere else kept (not fed, loaded, fetched or stored), read once by the op, and
    declared with the output's shape and float dtype. The run-time check in inplace.py then
    makes sure no other reference to the array exists."""
    op_def = get_op_def(op.type)
    if op_def.needs_runtime or len(op.outputs) != 1:
        return None
    outputs = op.output_arg_names
    if len(outputs) != 1 or outputs[0] == EMPTY_VAR_NAME or outputs[0] in dead:
        return None
    slots = inplace.inplace_slots(op.type, op_def.kernel, [s.name for s in op_def.inputs], bool(op_def.attrs))
    if not slots:
        return None
    out_var = block._find_var_recursive(outputs[0])
    if out_var is None or not out_var.dtype.startswith("float") or _small(out_var.shape):
        return None
    inputs = op.input_arg_names
    for slot in slots:
        names = op.inputs.get(slot, [])
        if len(names) != 1:
            continue
        name = names[0]
        var = block._find_var_recursive(name)
        if (live.last_touch.get(name) == index and name not in kept and name not in live.external
                and inputs.count(name) == 1 and name not in outputs and var is not None
                and var.dtype == out_var.dtype and var.shape == out_var.shape):
            return slot, name
    return None


def _small(shape: tuple[int, ...]) -> bool:
    """Known to hold fewer elements than in-place writing pays for."""
    if any(d < 0 for d in shape):
        return False
    size = 1
    for d in shape:
        size *= d
    return size < inplace.MIN_ELEMENTS


def _emit_stores(w: _Writer, block: Block, written: list[str], external: dict[str, int], kept: set[str],
                 keep_all: bool) -> None:
    """At the end, persistables go to the scope; a kept sub-block scope gets everything."""
    for name in written:
        var = block._find_var_recursive(name)
        is_local = block.has_var(name) or var is None
        if keep_all and is_local:
            if name in kept:
                w.emit(f"scope.vars[{name!r}] = {w.ident(name)}")
        elif keep_all:
            w.emit(f"scope.parent.assign({name!r}, {w.ident(name)})")
        elif var is not None and var.persistable:
            w.emit(f"scope.assign({name!r}, {w.ident(name)})")
    if keep_all:
        for name in external:
            if name not in kept:
                continue
            if name not in written:
                w.emit(f"scope.vars[{name!r}] = {w.ident(name)}")
            elif not (block.has_var(name) or block._find_var_recursive(name) is None):
                # an outer variable read, then overwritten: the step keeps the value it read
                w.emit(f"scope.vars[{name!r}] = _read_{w.ident(name)}")
