"""Placement: an op that copies its inputs into a buffer of its own lets their producers write
there directly, so the copy disappears (Paddle's coalesce_tensor, PyTorch DDP's
gradient_as_bucket_view).

The case it is for: `c_bucket_allreduce` packs every gradient into this rank's row of a
shared-memory bucket (2.7 MB per step for the benchmark's MLP), then sums the rows. With
placement, the weight gradient's `matmul` writes into the row itself.

The protocol (`OpDef.offer`, framework/op_def.py). When a plan is compiled, `choose` asks each
op with an offer (the consumer) whether it takes placement at all (`offer(shapes, dtypes,
**attrs)`: None, or a run-time offer), and picks the inputs of its first slot whose producer may
write into a destination: the input's only writer before the consumer, an op with one output,
that is read by nothing but the consumer (once) until the consumer overwrites it or it dies
there; not fed, loaded, persistable, read in another block, nor (unless the consumer overwrites
it) fetched. Between the first such producer and the consumer no op may use the same buffer: no
other consumer offering it (the offer names its buffer) or declining to say, no op running a
sub-block.

At run time the plan calls the offer just before the first chosen producer; each chosen producer
runs its placement form `form(destination, *inputs)` (a matmul writes with `out=`; any other op
runs its kernel and copies, which costs what the consumer's copy cost), and the consumer gets
the destinations as `placed=` and skips what is already in place. A destination is checked at
run time (a plain, C-contiguous, writeable array of the value's shape and dtype), else the value
is returned as it is and the consumer copies it: placement never changes a result's bits, only
where the same operations write them.

Values other ops read too (`OpDef.offer_reads`: an op that publishes its inputs, e.g. the layers'
activations that c_split_* ops share between the ranks of a node). The buffer keeps such a value
readable, unchanged and unscaled, until the consumer runs, so its producer may write it there even
though other ops read it meanwhile: the value's array is made by one op (through `assign`s, which
pass the same array on under another name), and no name it goes by is fed, loaded, persistable,
fetched, read in another block or read by an op that stores a persistable value (which might keep
a view of the buffer past the run). Nothing else writes into the buffer in between: the consumer
offers only a region of its own, and an in-place kernel never writes into a view.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..framework import Block, Operator
from ..framework.names import EMPTY_VAR_NAME
from ..ops.math import matmul_into
from ..ops.registry import get_op_def

# on: producers write into the buffers consumers offer; off (FLUIDGRAD_PLACEMENT=0): consumers
# copy, as before (read when a plan is compiled)
ENABLED = os.environ.get("FLUIDGRAD_PLACEMENT", "1") != "0"


@dataclass
class Placement:
    """One consumer's placement in a plan: positions are in the plan's run order."""

    consumer: int
    offer: Callable[[], Any]
    n_inputs: int
    producers: dict[int, int] = field(default_factory=dict)  # producer position -> input index

    @property
    def first(self) -> int:
        return min(self.producers)


def choose(block: Block, ops: list[Operator], kept: set[str]) -> list[Placement]:
    """The placements of a block's plan (ops in run order; `kept`: fetched and persistable names)."""
    offers = {c: _compiled_offer(block, op) for c, op in enumerate(ops) if get_op_def(op.type).offer is not None}
    chosen = []
    claimed: set[int] = set()  # producers already writing into some buffer
    elsewhere: set[str] | None = None
    for c, offered in offers.items():
        if offered is None:
            continue
        buffer, offer = offered
        if elsewhere is None:
            elsewhere = _read_in_other_blocks(block)
        op_def = get_op_def(ops[c].type)
        names = _offered_inputs(ops[c])
        find = _shared_producer if op_def.offer_reads else _sole_producer
        placement = Placement(c, offer, len(names))
        for j, name in enumerate(names):
            p = find(block, ops, c, name, kept, elsewhere)
            if p is not None and p not in claimed:
                placement.producers[p] = j
        # between the offer and the consumer, nothing else may use the buffer
        last_barrier = max((i for i in range(min(placement.producers, default=c), c)
                            if _runs_blocks(ops[i]) or (i in offers and (offers[i] is None or offers[i][0] == buffer))),
                           default=-1)
        placement.producers = {p: j for p, j in placement.producers.items() if p > last_barrier}
        if placement.producers:
            claimed.update(placement.producers)
            chosen.append(placement)
    return chosen


def _offered_inputs(op: Operator) -> list[str]:
    """The inputs an op's offer covers: those of its `offer_reads` slots, else of its first slot."""
    op_def = get_op_def(op.type)
    slots = op_def.offer_reads or (op_def.inputs[0].name,)
    return [n for slot in slots for n in op.inputs.get(slot, [])]


def _compiled_offer(block: Block, op: Operator) -> tuple[Any, Callable[[], Any]] | None:
    """The consumer's answer when the plan is compiled: (buffer key, run-time offer) or None."""
    op_def = get_op_def(op.type)
    if op_def.needs_runtime or not op_def.inputs:
        return None
    names = _offered_inputs(op)
    variables = [block._find_var_recursive(n) for n in names]
    if (not names or any(v is None or (any(d < 0 for d in v.shape) and not op_def.offer_reads) for v in variables)
            or (any(_persistable(block, n) for n in op.output_arg_names) and not op_def.offer_keeps_state)):
        return None
    attrs = {k: op.attrs.get(k, default) for k, default in op_def.attrs.items()}
    return op_def.offer([tuple(v.shape) for v in variables], [v.dtype for v in variables], **attrs)


def _sole_producer(block: Block, ops: list[Operator], c: int, name: str, kept: set[str],
                   elsewhere: set[str]) -> int | None:
    """The position of the op writing `name` for the consumer at `c`, when it may write into a
    destination instead (see the module's docstring), else None."""
    consumer = ops[c]
    var = block._find_var_recursive(name)
    if (name == EMPTY_VAR_NAME or var is None or var.persistable or name in elsewhere
            or consumer.input_arg_names.count(name) != 1):
        return None
    overwritten = name in consumer.output_arg_names
    if not overwritten and (name in kept or any(name in op.input_arg_names for op in ops[c + 1:])):
        return None
    for p in range(c - 1, -1, -1):
        op = ops[p]
        if name in op.output_arg_names:
            return p if _plain_producer(op, name) else None
        if name in op.input_arg_names:
            return None  # another reader would see the destination
    return None  # fed or loaded


def _shared_producer(block: Block, ops: list[Operator], c: int, name: str, kept: set[str],
                     elsewhere: set[str]) -> int | None:
    """For an offer that keeps values readable (`offer_reads`): the position of the op making the
    array the consumer at `c` reads as `name`, when it may write it into a destination although
    other ops read it too (see the module's docstring), else None."""
    consumer, aliases = ops[c], []
    while True:
        var = block._find_var_recursive(name)
        if (name == EMPTY_VAR_NAME or var is None or var.persistable or name in elsewhere or name in kept
                or name in aliases):
            return None
        aliases.append(name)
        writers = [p for p in range(c) if name in ops[p].output_arg_names]
        if len(writers) != 1:
            return None  # fed, loaded, or written twice
        producer = ops[writers[0]]
        if not (producer.type == "assign" and len(producer.input_arg_names) == 1):
            break
        name = producer.input_arg_names[0]  # the same array under another name
    if not _plain_producer(producer, name) or sum(consumer.input_arg_names.count(n) for n in aliases) != 1:
        return None
    for i, op in enumerate(ops):
        if i != c and any(n in op.input_arg_names for n in aliases) and any(
                _persistable(block, n) for n in op.output_arg_names):
            return None  # might store a view of the buffer
    return writers[0]


def _plain_producer(op: Operator, name: str) -> bool:
    """One output (`name`), not also read; a plain kernel: no runtime, no sub-block, no offer."""
    op_def = get_op_def(op.type)
    return (op.output_arg_names == [name] and len(op_def.outputs) == 1 and not op_def.outputs[0].duplicable
            and name not in op.input_arg_names and not _runs_blocks(op) and op_def.offer is None)


def _runs_blocks(op: Operator) -> bool:
    """An op that runs other ops (which might use any buffer)."""
    return get_op_def(op.type).needs_runtime or "sub_block" in op.attrs


def _read_in_other_blocks(block: Block) -> set[str]:
    return {n for other in block.program.blocks if other is not block for op in other.ops
            for n in op.input_arg_names}


def _persistable(block: Block, name: str) -> bool:
    var = block._find_var_recursive(name)
    return var is not None and var.persistable


# ------------------------------------------------------------------ run time
def _writable(array: Any) -> bool:
    return (type(array) is np.ndarray and array.flags.c_contiguous and array.flags.writeable)


def write(destination: tuple[np.ndarray, Any], value: Any) -> Any:
    """`value` (times the destination's scale) written into the destination, which is returned;
    `value` itself when it does not fit there (then the consumer copies it as before)."""
    array, scale = destination[0], destination[1]
    if not (_writable(array) and type(value) is np.ndarray and value.shape == array.shape
            and value.dtype == array.dtype):
        return value
    if scale is None:
        np.copyto(array, value)
    else:
        np.multiply(value, scale, out=array)
    return array


def _copying_form(kernel: Callable[..., Any]) -> Callable[..., Any]:
    def placed(destination: Any, *args: Any) -> Any:
        value = kernel(*args)
        return value if destination is None else write(destination, value)
    return placed


def _matmul_form(kernel: Callable[..., Any], transpose_x: bool = False, transpose_y: bool = False) -> Callable[..., Any]:
    """matmul's 2-D product written with `out=` (ops/math.matmul_into: the same GEMM call as its
    kernel's, so the same bits); every other case (vectors, batches, K=1 outer products) through
    the kernel, then a copy."""
    def placed(destination: Any, x: Any, y: Any) -> Any:
        if destination is None:
            return kernel(x, y)
        array, scale = destination[0], destination[1]
        if _writable(array) and matmul_into(array, {"X": x, "Y": y}, transpose_x, transpose_y) is not None:
            if scale is not None:
                np.multiply(array, scale, out=array)
            return array
        return write(destination, kernel(x, y))
    return placed


def _scaled(array: np.ndarray, scale: Any) -> np.ndarray:
    if scale is not None:
        np.multiply(array, scale, out=array)
    return array


def _relu_form(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """max(x, 0) written with `out=` (np.maximum, as relu's in-place form: the same bits)."""
    def placed(destination: Any, x: Any) -> Any:
        if destination is None:
            return kernel(x)
        array, scale = destination[0], destination[1]
        if _writable(array) and type(x) is np.ndarray and x.shape == array.shape and x.dtype == array.dtype:
            return _scaled(np.maximum(x, 0, out=array, dtype=x.dtype), scale)
        return write(destination, kernel(x))
    return placed


def _relu_grad_form(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """DOut where out > 0, else 0, written into the destination (a select, as relu_grad's kernel)."""
    def placed(destination: Any, out: Any, dout: Any) -> Any:
        if destination is None:
            return kernel(out, dout)
        array, scale = destination[0], destination[1]
        if (_writable(array) and type(dout) is np.ndarray and dout.shape == array.shape and dout.dtype == array.dtype
                and dout.dtype.kind == "f" and getattr(out, "shape", None) == dout.shape):
            np.copyto(array, dout)
            np.copyto(array, 0, where=~(out > 0))
            return _scaled(array, scale)
        return write(destination, kernel(out, dout))
    return placed


def _ufunc_form(ufunc: np.ufunc) -> Callable[..., Any]:
    """An elementwise op's ufunc written with `out=` when its result has the destination's shape
    and dtype (casting="no"), else the ufunc, then a copy."""
    def placed(destination: Any, *args: Any) -> Any:
        if destination is None:
            return ufunc(*args)
        array, scale = destination[0], destination[1]
        if _writable(array) and all(type(a) is np.ndarray for a in args) and np.broadcast_shapes(
                *(a.shape for a in args)) == array.shape:
            try:
                return _scaled(ufunc(*args, out=array, casting="no"), scale)
            except TypeError:  # another result dtype
                pass
        return write(destination, ufunc(*args))
    return placed


# op type -> factory(kernel with its attributes bound, **attributes) of its placement form
_FORMS: dict[str, Callable[..., Callable[..., Any]]] = {"matmul": _matmul_form, "relu": _relu_form,
                                                        "relu_grad": _relu_grad_form}


def producer_form(op_type: str, kernel: Callable[..., Any], attrs: dict[str, Any]) -> Callable[..., Any]:
    """`form(destination, *inputs)`: the op's value, written into `destination` when not None."""
    bound = functools.partial(kernel, **attrs) if attrs else kernel
    factory = _FORMS.get(op_type)
    if factory is not None:
        return factory(bound, **attrs)
    if isinstance(kernel, np.ufunc) and kernel.nout == 1 and not attrs:
        return _ufunc_form(kernel)
    return _copying_form(bound)
