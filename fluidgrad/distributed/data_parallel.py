"""Eager data parallelism: `DataParallel(layer)` averages gradients over ranks during backward().

At wrap time every rank checks that it holds the same parameters (names, shapes, dtypes) and
takes rank 0's values. Each forward pass routes the parameters through two kinds of
recorded identity nodes (engine nodes with grad makers of their own, as PyLayers are, so the
autograd engine needs nothing new):

    param --> [gather: one node for all parameters] --> [ready_i: one per parameter] --> the layer

The engine runs a node's backward once every consumer of its output has run, so `ready_i`'s
backward sees parameter i's complete gradient; after the forward pass `ready_i` is restamped
just older than its parameter's first reader (`run_ready_nodes_early`), so it runs right after
that layer's backward, not after the whole pass: it copies it into its bucket's buffer and,
when the bucket is full, starts a non-blocking all-reduce (MPI `Iallreduce`), while the
backward pass goes on with earlier layers. `gather` was recorded first, so its backward runs
last: it waits for the buckets and hands each parameter its averaged gradient, which the
engine stores in `.grad`. Buckets start in one fixed order on every rank (a bucket found
ready early waits for its predecessors), as MPI requires.

When every rank is on one node the buckets are reduced through shared memory
(ops/comm_buckets.py): that is CPU work on each rank, not a transfer that could go on while
the backward pass computes, so there is nothing to overlap. Then the `ready_i` nodes are left
out (they cost more than they could hide) and `gather`'s backward packs every gradient itself,
into buckets without a small first one: fewer, larger collectives.

`gather` also offers each parameter's place in its bucket to the op that makes its gradient
(`GradBuilder.grad_op`: a weight's matmul writes it there, `offer`), so the weights are not
copied into the buckets; the average's 1/p is applied to the sum as it is handed out. The averaged gradients are written into the
arrays `.grad` held the step before, when nothing holds them any more (`_Layout`), and what a
step needs that does not change (buckets, where each gradient lies in them) is worked out once.

`no_sync()` skips all of it (gradients accumulate locally); the next synchronised backward
reduces the accumulated gradient. A parameter that got no gradient takes part with zeros.
A sharded optimizer updating these parameters (eager_sharding.py) takes the reduction over
(`reduced_by`): backward() then leaves each rank's own gradient, and its step() averages them.
"""
from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Iterator
from math import prod
from typing import Any

import numpy as np

from ..eager import Tensor, is_grad_enabled
from ..eager.apply import record_custom
from ..eager.engine import topological_order
from ..eager.node import CustomOp
from ..nn import Layer
from ..ops.comm import CollectiveMismatchError, World, get_world
from ..ops import comm_stream
from ..ops.comm_buckets import PairReduce, add_scaled
from ..optimizer import Optimizer
from . import eager_fused
from .eager_stores import StoreChooser
from .group import check_group
from .buckets import plan_buckets
from .eager_fused import DeferredGrad

MB = 1 << 20
_NO_ROWS = np.empty((0, 0), np.float32)  # eager_fused.update_bucket's rows when the sum is already made
# numbers this process's wrappers: their bucket keys (World.bucket) differ, so two wrappers
# never share a buffer. The keys need not agree across ranks: a key only names buffers of
# this process, and ranks pair their collectives by call order, as MPI does (a shared
# bucket is made at a wrapper's first forward, collectively, whatever its key). Wrappers
# created in different orders on different ranks are a user error the keys could not fix:
# the constructor's collective parameter check pairs them by order too, and refuses a pair
# whose parameters differ.
_WRAPPED = 0
# the live wrappers, for a sharded optimizer to find the one whose parameters it updates
_LIVE: weakref.WeakSet[DataParallel] = weakref.WeakSet()


class DataParallel(Layer):
    """Wraps a Layer for data-parallel training; call it as the layer itself."""

    def __init__(self, layers: Layer, strategy: Any = None, comm_buffer_size: float = 25,
                 last_comm_buffer_size: float | None = None, find_unused_parameters: bool = False,
                 group: Any = None) -> None:
        super().__init__()
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel wraps a fluidgrad.nn.Layer, got {type(layers).__name__}")
        if group is not None and check_group(group, "DataParallel").id != 0:
            raise ValueError(f"DataParallel averages gradients over every rank of the job; group must be None or "
                             f"the job's group, got {group!r}")
        self._layers = layers
        self._world = get_world()
        named = [(n, p) for n, p in layers.named_parameters() if not p.stop_gradient]
        self._param_names = [n for n, _ in named]
        self._params = [p for _, p in named]
        check_same_parameters(self._world, named)
        broadcast_parameters(self._world, layers)
        # overlap the all-reduce with the backward pass only where it is a transfer (MPI); then
        # the first bucket reduced (the last layers') is small, 1 MB unless given, so it starts early
        self._overlap = not self._world.shares_memory()
        first = last_comm_buffer_size if last_comm_buffer_size is not None else (1 if self._overlap else None)
        buckets = plan_buckets([p.shape for p in self._params], [p._array.dtype.name for p in self._params],
                               comm_buffer_size * MB, first * MB if comm_buffer_size > 0 and first is not None else None)
        global _WRAPPED
        _WRAPPED += 1
        self._layout = _Layout(self._params, buckets, f"DataParallel{_WRAPPED}")
        object.__setattr__(self, "_sync", True)
        object.__setattr__(self, "last_step", None)
        # the sharded optimizer that averages these gradients in its step (eager_sharding.py): then
        # backward() leaves each rank's own gradient in .grad, as under no_sync()
        object.__setattr__(self, "reduced_by", None)
        object.__setattr__(self, "_holders", parameter_holders(layers, self._params))
        _LIVE.add(self)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if (not self._sync or self.reduced_by is not None or self._world.size == 1 or not is_grad_enabled()
                or not self._params):
            return self._layers(*inputs, **kwargs)
        step = _ReduceStep(self._world, self._params, self._layout)
        object.__setattr__(self, "last_step", step)
        with _routed_parameters(self._layers, self._params, step, self._overlap, self._holders) as ready_nodes:
            outputs = self._layers(*inputs, **kwargs)
        if ready_nodes:
            run_ready_nodes_early(outputs, ready_nodes)
        return outputs

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Gradients of backward passes inside accumulate locally, unreduced."""
        previous = self._sync
        object.__setattr__(self, "_sync", False)
        try:
            yield
        finally:
            object.__setattr__(self, "_sync", previous)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self._layers.state_dict(*args, **kwargs)

    def set_state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self._layers.set_state_dict(*args, **kwargs)

    set_dict = load_dict = set_state_dict


def wrapper_of(params: list[Tensor]) -> DataParallel | None:
    """The live DataParallel all of whose parameters are among `params`, if any."""
    ids = {id(p) for p in params}
    for wrapper in list(_LIVE):
        if wrapper._params and all(id(p) in ids for p in wrapper._params):
            return wrapper
    return None


def averaged_in_backward() -> set[int]:
    """ids of the parameters whose gradients a live DataParallel averages during backward()."""
    return {id(p) for wrapper in list(_LIVE) if wrapper.reduced_by is None for p in wrapper._params}


def check_same_parameters(world: World, named: list[tuple[str, Tensor]]) -> None:
    """Every rank must wrap the same parameters; else an error naming rank and parameter."""
    if world.size == 1:
        return
    mine = [(n, list(p.shape), p._array.dtype.name) for n, p in named]
    every = world.all_gather_object(mine, "DataParallel (parameter check)")
    for rank, theirs in enumerate(every):
        if theirs == every[0]:
            continue
        for a, b in zip(every[0], theirs):
            if a != b:
                raise CollectiveMismatchError(f"DataParallel: rank {rank} has parameter {b[0]} {b[1]} ({b[2]}) "
                                              f"where rank 0 has {a[0]} {a[1]} ({a[2]})")
        raise CollectiveMismatchError(f"DataParallel: rank {rank} has {len(theirs)} parameters, "
                                      f"rank 0 has {len(every[0])}")


def broadcast_parameters(world: World, layer: Layer) -> None:
    """Every parameter and buffer takes rank 0's value."""
    if world.size == 1:
        return
    for name, tensor in list(layer.named_parameters()) + list(layer.named_buffers()):
        tensor.set_value(world.broadcast(tensor._array, 0, what=f"DataParallel broadcast of {name}"))


@contextlib.contextmanager
def _routed_parameters(layers: Layer, params: list[Tensor], step: _ReduceStep, each: bool,
                       holders: list[tuple[Layer, str, Tensor]]) -> Iterator[None]:
    """During one forward pass, the layers read each parameter through its identity nodes
    (`gather`, then, with `each`, its own `ready_i`). `holders`: where the layers hold the
    parameters (`parameter_holders`), checked and found again if the model changed."""
    gathered = record_custom(_GATHER, params, [p._array for p in params], {"step": step})
    routed = {id(p): record_custom(_READY, [g], [g._array], {"step": step, "index": i})[0] if each else g
              for i, (p, g) in enumerate(zip(params, gathered))}
    ready_nodes = [t._node for t in routed.values()] if each else []
    if not all(layer._parameters.get(name) is param for layer, name, param in holders):
        holders[:] = parameter_holders(layers, params)
    for layer, name, param in holders:
        object.__setattr__(layer, name, routed[id(param)])
    try:
        yield ready_nodes
    finally:
        for layer, name, param in holders:
            object.__setattr__(layer, name, param)


def parameter_holders(layers: Layer, params: list[Tensor]) -> list[tuple[Layer, str, Tensor]]:
    """(sublayer, attribute, parameter) wherever `layers` holds one of `params` (found once per
    wrapper, not per forward pass: the walk over the sublayers costs as much as the routing)."""
    wanted = {id(p) for p in params}
    return [(layer, name, param) for layer in layers.sublayers(include_self=True)
            for name, param in layer._parameters.items() if param is not None and id(param) in wanted]


def run_ready_nodes_early(outputs: Any, ready_nodes: list[Any]) -> None:
    """Restamp each `ready_i` node just before its parameter's first reader, so the backward
    runs it as soon as every reader has run (and starts its bucket's all-reduce then).

    The engine runs the nodes that received a gradient newest first (by creation stamp). The
    `ready_i` nodes are recorded before the layer, so left as they are they would all run after
    the whole layer backward, with nothing left to overlap. A stamp between the first reader's
    and the next older node's keeps the order topological: a reader is newer than the
    `ready_i` it reads, and `ready_i` stays newer than `gather`.
    """
    roots = [t._node for t in _tensors(outputs) if t._node is not None]
    if not roots:
        return
    first_reader = dict.fromkeys(ready_nodes, None)
    for node in topological_order(roots):
        for value in node.inputs or ():
            for tensor in (value if type(value) is list else (value,)):
                source = getattr(tensor, "_node", None)
                if source in first_reader and (first_reader[source] is None or node.seq < first_reader[source]):
                    first_reader[source] = node.seq
    step = 1 / (len(ready_nodes) + 1)  # distinct stamps in (reader - 1, reader): a layer's
    for k, (node, reader) in enumerate(first_reader.items()):  # weight and bias may share one
        if reader is not None:
            node.seq = reader - (k + 1) * step


def _tensors(outputs: Any) -> list[Tensor]:
    if isinstance(outputs, Tensor):
        return [outputs]
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if isinstance(outputs, (list, tuple)):
        return [t for item in outputs for t in _tensors(item)]
    return []


def _arrays(grads: list) -> list:
    """The output gradients as arrays (Tensors under create_graph: the reduction is not recorded)."""
    return [g._array if isinstance(g, Tensor) else g for g in grads]


def _gather_grad(g: Any) -> None:
    """`gather`'s backward (recorded first, so run last): the gradients no `ready_i` node took
    (all of them on shared memory) go into their buckets; every parameter gets its average, as a
    deferred gradient (eager_fused.py) when backward() fills `.grad` and no hook must see it."""
    step = g.attr("step")
    step.begin()
    step.fill(_arrays(g.output_grad("Out")))
    if (eager_fused.FUSE_UPDATES and not g.create_graph and g.fills_leaves
            and not any(p._hooks for p in step.params)):
        step.defer()
        return
    averaged = step.finish()
    g.set_input_grad("X", [Tensor(a) for a in averaged] if g.create_graph else averaged)


def _ready_grad(g: Any) -> None:
    """`ready_i`'s backward: parameter i's gradient is complete; into its bucket, and through."""
    step, grads = g.attr("step"), g.output_grad("Out")
    step.begin()
    step.ready(g.attr("index"), _arrays(grads)[0])
    g.set_input_grad("X", grads)


# engine nodes with a grad maker of their own (lighter than PyLayers: no context, no Tensor
# wrapping of every gradient, which the backward pass pays for each parameter)
def _gather_offer(node: Any, index: int) -> np.ndarray | None:
    """Where the backward may write parameter `index`'s gradient: its place in its bucket."""
    return node.attrs["step"].offer(index)


def _ready_offer(node: Any, index: int) -> np.ndarray | None:
    """The same for `ready_i`'s one output: parameter i's place in its (not yet started) bucket."""
    return node.attrs["step"].offer(node.attrs["index"])


_GATHER = CustomOp("data_parallel_gather", _gather_grad, _gather_offer)
_READY = CustomOp("data_parallel_ready", _ready_grad, _ready_offer)


def _references(kept: list, i: int) -> int:
    return sys.getrefcount(kept[i])


# what `_references` counts for an array that only its list holds (measured, not assumed: the
# count differs between interpreters, see optimizer/inplace.py)
_HELD_BY_LIST_ALONE = _references([np.empty(1)], 0)


class _Layout:
    """What one wrapper keeps from step to step: where each parameter's gradient goes (bucket,
    offset in it), each bucket's size and dtype, the buckets themselves (by all-reduce path,
    which may change between steps) and the arrays the averaged gradients were last written to.

    The averaged gradients are written into those arrays again, as PyTorch's
    `gradient_as_bucket_view` keeps them, but only where nothing but this list holds one any
    more (its reference count says so: `clear_grad()` dropped the `.grad` Tensor, nobody kept
    the array or a view of it). Otherwise, or the first time, a new array: a `.grad` someone
    still reads never changes under them.
    """

    def __init__(self, params: list[Tensor], buckets: list[list[int]], key: str) -> None:
        self.buckets, self.key = buckets, key
        self.bucket_of: dict[int, int] = {}
        self.offset: dict[int, int] = {}
        self.sizes: list[tuple[int, np.dtype]] = []
        for b, bucket in enumerate(buckets):
            position = 0
            for i in bucket:
                self.bucket_of[i], self.offset[i] = b, position
                position += prod(params[i].shape)
            self.sizes.append((position, params[bucket[0]]._array.dtype))
        # where each parameter's gradient lies in its bucket, for wait_arrays
        self.pieces = [[(self.offset[i], tuple(params[i].shape)) for i in bucket] for bucket in buckets]
        self.shapes = [(tuple(p.shape), p._array.dtype) for p in params]
        self.flat_by_path: dict[str, list[Any]] = {}
        self.streams_by_path: dict[tuple[str, bool], list[bool]] = {}
        self.chooser = StoreChooser()
        self.rule_cache: dict = {}  # eager_fused.rule_for's verdict for the last optimizer
        self.kept: list[np.ndarray | None] = [None] * len(params)
        # the last reduction left to the step (eager_fused.py) and its deferred gradients (weakly:
        # clear_grad drops them)
        self.deferred_step: _ReduceStep | None = None
        self.outstanding: list[weakref.ref] = []

    def settle(self) -> None:
        """Before the buckets are written again: every deferred gradient still held computed, and
        the last reduction completed even if nobody read it (a rank must not write its row while
        another still sums it; MPI requests are finished)."""
        step, outstanding = self.deferred_step, self.outstanding
        self.deferred_step, self.outstanding = None, []
        for ref in outstanding:
            grad = ref()
            if grad is not None and grad.pending:
                grad._array  # noqa: B018  (reading it computes it)
        if step is not None:
            step.complete()

    def flat(self, world: World) -> list[Any]:
        """The buckets on the world's current all-reduce path (made collectively on first use)."""
        flat = self.flat_by_path.get(world.allreduce_path)
        if flat is None:
            flat = [world.bucket((self.key, b), size, dtype) for b, (size, dtype) in enumerate(self.sizes)]
            self.flat_by_path[world.allreduce_path] = flat
        return flat

    def streamable(self, world: World, flat: list[Any]) -> list[bool]:
        """For each bucket, whether its rows may be written with streaming stores: a two-rank
        shared bucket (the peer read this rank's row two steps before: eager_stores.py), when
        streaming is on."""
        key = (world.allreduce_path, comm_stream.enabled())
        streams = self.streams_by_path.get(key)
        if streams is None:
            streams = [key[1] and bool(getattr(f, "shared", False) and getattr(f, "pair", False)) for f in flat]
            self.streams_by_path[key] = streams
        return streams

    def streams(self, world: World, flat: list[Any]) -> list[bool]:
        """For each bucket, whether this step writes its rows with streaming stores (rather than
        ordinary ones and placement): where they may, and when the probe of the largest one's
        row finds the peer's cache still holding it (eager_stores.py). Only once the rows are
        free to be written (after `settle`)."""
        streamable = self.streamable(world, flat)
        if not any(streamable):
            return streamable
        largest = max((b for b, ok in enumerate(streamable) if ok), key=lambda b: self.sizes[b][0])
        if self.chooser.stream_now(flat[largest].input):
            return streamable
        return [False] * len(flat)

    def targets(self, bucket: list[int]) -> list[np.ndarray | None]:
        """For each parameter of `bucket`, its kept array if free to be written again, else None."""
        kept, out = self.kept, []
        for i in bucket:  # counted before any local name holds the array
            free = kept[i] is not None and _references(kept, i) <= _HELD_BY_LIST_ALONE and kept[i].flags.writeable
            out.append(kept[i] if free else None)
        return out

    def hand_out(self, bucket: list[int], summed: list[np.ndarray], targets: list[np.ndarray | None],
                 scale: float) -> list[np.ndarray]:
        """The sums of `bucket` times `scale` (the average) as arrays of their own (not views of a
        bucket, which serves the next step), in the kept arrays where free; kept for the next
        step. The scale costs no pass of its own: it is the copy out of a shared result, or
        runs on a sum just written (still in cache)."""
        out = []
        for i, array, target in zip(bucket, summed, targets):
            if array is target or (array.base is None and array.flags.writeable):  # a sum of our own
                np.multiply(array, scale, out=array)
            else:  # a view of the bucket
                array = np.multiply(array, scale, out=target)
            self.kept[i] = array
            out.append(array)
        return out


class _ReduceStep:
    """The buckets of one forward pass's backward: filled as gradients get ready, reduced in order.

    The buffers are the wrapper's, kept from step to step (`_Layout.flat`), so several steps
    share them: a model called twice before one backward has two steps, and a second
    backward through one forward (retain_graph) runs its step again. That is safe because
    the engine runs nodes newest first, so one step's nodes (from its `gather` on) all run
    before any node of an older step: steps never fill the buffers at once. What a step
    hands out must outlive the buffers, though (`finish` writes into arrays of their own),
    and a step run again starts afresh (`begin`).
    """

    def __init__(self, world: World, params: list[Tensor], layout: _Layout) -> None:
        self.world, self.params, self.layout, self.buckets = world, params, layout, layout.buckets
        self.bucket_of, self.offset = layout.bucket_of, layout.offset
        self.flat = layout.flat(world)
        self.streams: list[bool] = []  # chosen at begin()
        self.scale = 1.0 / world.size
        self.finished = True  # begin() starts a backward pass when its first gradient arrives

    def begin(self) -> None:
        """Start a backward pass through this step (again, after retain_graph: reduce anew)."""
        if not self.finished:
            return
        self.layout.settle()
        self.streams = self.layout.streams(self.world, self.flat)
        self.finished = False
        self.missing = [len(bucket) for bucket in self.buckets]
        self.filled: set[int] = set()
        self.pending: list[Any] = []
        self.folded: list[int] = []
        self.offered: dict[int, np.ndarray] = {}
        # this rank's gradients, flat, where they were made (still in its cache), for the buckets
        # whose rows are streamed to memory: the sums read them rather than the rank's own row
        self.own: dict[int, np.ndarray] = {}

    def offer(self, i: int) -> np.ndarray | None:
        """Parameter i's place in its bucket (this rank's row), for the op making its gradient to
        write into; once per backward pass (a second writer would overwrite the first), and
        only while the bucket is still being filled and nothing is to be folded in."""
        self.begin()  # a second backward through this step (retain_graph) starts afresh
        b = self.bucket_of[i]
        if (i in self.offered or i in self.filled or b < len(self.pending) or self.params[i].grad is not None
                or self.streams[b]):  # (streamed rows: the producers' stores are ordinary ones)
            return None
        start, (shape, _) = self.offset[i], self.layout.shapes[i]
        place = self.offered[i] = self.flat[b].input[start:start + prod(shape)].reshape(shape)
        return place

    def ready(self, i: int, grad: np.ndarray) -> None:
        """Parameter i's gradient is complete: into its bucket; start the buckets that can go."""
        self._place(i, grad)
        self._start_ready_buckets()
        for pending in self.pending:
            pending.test()  # let MPI move the data of the buckets under way

    def fill(self, grads: list[np.ndarray]) -> None:
        """Every gradient no `ready_i` node took into its bucket (all of them on shared memory), then
        every bucket started: what `ready` does for each, without its per-gradient bookkeeping."""
        filled = self.filled
        for i, grad in enumerate(grads):
            if i not in filled:
                self._place(i, grad)
        self._start_ready_buckets()

    def _place(self, i: int, grad: np.ndarray) -> None:
        """Parameter i's complete gradient into its place in its bucket (unless its op wrote it there)."""
        param = self.params[i]
        if param.grad is not None:  # accumulated under no_sync (or not cleared): reduce the sum
            grad = grad + param.grad._array
            self.folded.append(i)
        b, start = self.bucket_of[i], self.offset[i]
        if grad is not self.offered.get(i):  # else its op wrote it in place (and nothing was added)
            part = self.flat[b].input[start:start + grad.size]  # input: a shared bucket alternates rows
            flat = grad.reshape(-1)
            if self.streams[b]:
                comm_stream.stream_copy(part, flat)
                self.own[i] = flat
            else:
                np.copyto(part, flat)  # the sum is scaled by 1/p as it is handed out
        self.filled.add(i)
        self.missing[b] -= 1

    def _start_ready_buckets(self) -> None:
        while len(self.pending) < len(self.buckets) and self.missing[len(self.pending)] == 0:
            b = len(self.pending)
            self.pending.append(self.flat[b].start(f"DataParallel all-reduce of bucket {b}"))

    def _complete(self) -> None:
        """Zeros join for the parameters that got no gradient: every bucket starts."""
        for i in range(len(self.params)):
            if i not in self.filled:
                shape, dtype = self.layout.shapes[i]
                self.ready(i, np.zeros(shape, dtype))

    def defer(self) -> None:
        """Every bucket started; each parameter's `.grad` the average to come (eager_fused.py): what
        the optimizer's fused step sums and applies in one pass, or anyone reading it computes."""
        self._complete()
        shapes, outstanding = self.layout.shapes, []
        for i, param in enumerate(self.params):  # (not kept here: clear_grad must free them)
            if not param.stop_gradient:
                param.grad = grad = DeferredGrad(self, i, *shapes[i])  # replaces a gradient folded in
                outstanding.append(weakref.ref(grad))
        self.layout.outstanding, self.layout.deferred_step = outstanding, self
        self.finished = True

    def complete(self) -> None:
        """Every bucket's reduction finished (its sum made where it is shared), without handing out."""
        for pending in self.pending:
            if type(pending) is PairReduce:
                pending.wait_rows()
            else:
                pending.wait()
        self.own = {}  # nobody reads this step's sums any more

    def materialize(self, i: int) -> np.ndarray:
        """Parameter i's averaged gradient, an array of its own (a deferred gradient read)."""
        return self._averages(self.bucket_of[i], [i], [(self.offset[i], self.layout.shapes[i][0])])[0]

    def _averages(self, b: int, bucket: list[int], pieces: list[tuple[int, tuple[int, ...]]]) -> list[np.ndarray]:
        """The averages of parameters `bucket` (at `pieces`) of bucket b, arrays of their own, kept
        for the next step (_Layout.hand_out). Streamed rows: this rank's gradient where it was made
        plus the peer's row, times 1/p, in one pass (own + peer: the same bits as row 0 + row 1)."""
        targets = self.layout.targets(bucket)
        if not self.streams[b]:
            summed = self.pending[b].wait_arrays(pieces, into=targets)
            return self.layout.hand_out(bucket, summed, targets, self.scale)
        pending = self.pending[b]
        peer = pending.wait_rows()[1 - pending.bucket.rank]
        out = []
        for i, (first, shape), target in zip(bucket, pieces, targets):
            dtype = self.layout.shapes[i][1]
            if target is None:
                target = np.empty(shape, dtype)
            own = self.own[i]
            add_scaled(own, peer[first:first + own.size], dtype.type(self.scale), target.reshape(-1))
            self.layout.kept[i] = target
            out.append(target)
        return out

    def fused_update(self, optimizer: Optimizer, params: list[Tensor]) -> list[Tensor]:
        """`optimizer`'s step over the buckets whose deferred gradients nobody read, all of them in
        `params`: the sum over ranks and the update in one pass; returns the parameters left."""
        rule = eager_fused.rule_for(optimizer, self.params, self.layout.rule_cache)
        if rule is None:
            return params
        wanted, done = {id(p) for p in params}, set()
        for b, bucket in enumerate(self.buckets):
            members = [self.params[i] for i in bucket]
            if not all(id(p) in wanted and type(p.grad) is DeferredGrad and p.grad.source is self and p.grad.pending
                       for p in members):
                continue
            owns, rows, skip = self._sums(b, bucket)
            eager_fused.update_bucket(rule, members, [self.offset[i] for i in bucket], owns, rows, skip, self.scale)
            done.update(id(p) for p in members)
        return [p for p in params if id(p) not in done] if done else params

    def _sums(self, b: int, bucket: list[int]) -> tuple[list[np.ndarray], np.ndarray, int]:
        """(owns, rows, skip) of bucket b for eager_fused.update_bucket: two ranks on one node, each
        parameter's own gradient (where it was made when the rows are streamed, else in this rank's
        row) and both rows (each rank adds the two itself, the same bits on both); else each
        parameter's piece of the finished sum over ranks and no rows."""
        pending = self.pending[b]
        if type(pending) is PairReduce:
            rows = pending.wait_rows()
            rank = pending.bucket.rank
            if self.streams[b]:
                return [self.own[i] for i in bucket], rows, rank
            whole = rows[rank]
        else:
            whole, rows, rank = pending.wait(), _NO_ROWS, -1
        shapes, offset = self.layout.shapes, self.offset
        return [whole[offset[i]:offset[i] + prod(shapes[i][0])] for i in bucket], rows, rank

    def finish(self) -> list[np.ndarray]:
        """Every parameter's averaged gradient (zeros join for parameters that got none)."""
        self._complete()
        for i in self.folded:
            self.params[i].clear_grad()  # the engine stores the reduced sum in .grad
        grads: list[Any] = [None] * len(self.params)
        layout = self.layout
        for b, (bucket, pieces) in enumerate(zip(self.buckets, layout.pieces)):
            for i, array in zip(bucket, self._averages(b, bucket, pieces)):
                grads[i] = array
        self.own = {}
        self.finished = True
        return grads
