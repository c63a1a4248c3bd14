"""Sharded buckets (ZeRO stage 1): each of p ranks sums and updates only 1/p of a bucket.

A bucket's tensors, flattened one after the other and padded with zeros to a multiple of p
elements (`Layout`), split into p equal parts: rank r owns part r. Per step:

* `reduce_scatter`: rank r gets part r of the gradients summed (or averaged) over ranks.
  On one node each rank copies the parts the others own into its row of a shared window
  (MPI-3, as `SharedBucket`), an MPI barrier, then rank r adds its own gradient's part r (read
  where it lies, never copied) to part r of the other rows: per rank a copy of (p-1)/p of
  the gradient and one pass over 1/p of it, against a copy of all of it and a pass over all of
  it for the plain all-reduce. Across nodes: MPI's `Ireduce_scatter_block`.
* The update ops run on part r only (parameters and optimizer state of part r); or, fused
  (`update_in_place`, for c_bucket_sgd / momentum / adam), the sum of part r and its update are
  one pass written straight into the node copies, published by one barrier.
* `NodeCopy.gather`: the node keeps ONE copy of the bucket's parameters and of each optimizer
  state (an MPI shared window); rank r writes its part, and after a barrier every rank reads
  the whole: the scope's parameters are read-only views of that copy, so fetching, saving or
  printing them shows complete values, the same on every rank. Across nodes each process keeps
  a copy of its own, completed by MPI's `Iallgather`.
"""
from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from . import comm_stream

# two ranks on one node: what the peer reads of a sharded step, the peer's part of this rank's row
# and this rank's part of the parameters' node copy, written with streaming stores (comm_stream.py;
# the gradients then left where their producers made them, no placement) or ordinary ones:
# "ordinary", "stream" (every step), or "adaptive" (streamed on the steps a probe of the peer's part
# of the row finds the peer's cache holding it: comm_stream.StoreChooser, as the replicated rows).
# FLUIDGRAD_STREAM_SHARDED=0|1|adaptive; read at each step's offer, pack and update
STREAM_PEER_PART = {"0": "ordinary", "1": "stream"}.get(*[os.environ.get("FLUIDGRAD_STREAM_SHARDED", "0")] * 2)
STREAM_CHUNK = 1 << 14  # elements: a streamed update's new values computed into an L2-sized scratch first


class Layout:
    """Where each tensor of a bucket lies in the flat, padded buffer, and the ranks' parts.
    `Layout.of(shapes, nranks)` gives the one kept for those shapes (the kernels' per-step path)."""

    @staticmethod
    @functools.lru_cache(maxsize=256)
    def of(shapes: tuple[tuple[int, ...], ...], nranks: int) -> Layout:
        return Layout(shapes, nranks)

    def __init__(self, shapes: Sequence[Sequence[int]], nranks: int) -> None:
        self.shapes = [tuple(int(d) for d in s) for s in shapes]
        self.key = tuple(self.shapes)
        self.sizes = [prod(s) for s in self.shapes]
        self.offsets = [0]
        for size in self.sizes:
            self.offsets.append(self.offsets[-1] + size)
        self.size = self.offsets[-1]
        self.nranks = nranks
        self.part = -(-self.size // nranks)  # elements per rank
        self.padded = self.part * nranks
        self._ranges: dict[tuple[str, int, int], list[tuple[int, int, int]]] = {}

    def bounds(self, rank: int) -> tuple[int, int]:
        return rank * self.part, (rank + 1) * self.part

    def overlaps(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """(tensor, first, last) flat ranges of the tensors inside [lo, hi), in buffer order."""
        found = self._ranges.get(("in", lo, hi))
        if found is not None:
            return found
        found = self._ranges[("in", lo, hi)] = []
        for i, (start, size) in enumerate(zip(self.offsets, self.sizes)):
            a, b = max(lo, start), min(hi, start + size)
            if a < b:
                found.append((i, a - start, b - start))
        return found

    def outside(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """(tensor, first, last) flat ranges of the tensors outside [lo, hi)."""
        found = self._ranges.get(("out", lo, hi))
        if found is not None:
            return found
        found = self._ranges[("out", lo, hi)] = []
        for i, (start, size) in enumerate(zip(self.offsets, self.sizes)):
            end = start + size
            for a, b in ((start, min(end, lo)), (max(start, hi), end)):
                if a < b:
                    found.append((i, a - start, b - start))
        return found


def flat(array: np.ndarray) -> np.ndarray:
    """A 1-D view of a C-contiguous array (a copy otherwise)."""
    return array.reshape(-1)


def gather_part(arrays: Sequence[np.ndarray], layout: Layout, rank: int, dtype: Any) -> np.ndarray:
    """Part `rank` of the flattened, padded `arrays`, a new array."""
    lo, hi = layout.bounds(rank)
    out = np.empty(layout.part, dtype)
    out[max(layout.size - lo, 0):] = 0  # the padding
    for i, a, b in layout.overlaps(lo, hi):
        start = layout.offsets[i] + a - lo
        np.copyto(out[start:start + b - a], flat(arrays[i])[a:b])
    return out


def pack(into: np.ndarray, arrays: Sequence[np.ndarray], layout: Layout,
         skip: tuple[int, int] | None = None, present: Sequence[bool] | None = None, stream: bool = False) -> None:
    """Write the flattened `arrays` into `into`, leaving out the range `skip` and the arrays
    `present` marks (their producers wrote them there); the padding is zeroed. `stream`: with
    streaming stores (`into` is read by other ranks: ops/comm_stream.py)."""
    ranges = layout.outside(*skip) if skip is not None else [(i, 0, s) for i, s in enumerate(layout.sizes)]
    copy = comm_stream.stream_copy if stream else np.copyto
    for i, a, b in ranges:
        if present is not None and present[i]:
            continue
        start = layout.offsets[i] + a
        copy(into[start:start + b - a], flat(arrays[i])[a:b])
    into[layout.size:layout.padded] = 0


def in_place(row: np.ndarray, arrays: Sequence[np.ndarray], layout: Layout, placed: Any,
             address: int | None = None) -> list[bool] | None:
    """Which `arrays` their producers already wrote at their places in `row` (which starts at
    `address`, if given): each is the destination offered to it (`placed[i].array`,
    executor/placement.py) and lies there."""
    if placed is None:
        return None
    base, itemsize = _address(row) if address is None else address, row.dtype.itemsize
    # the array is the destination offered (a view of the row, of the layout's shape and the row's
    # dtype), and that destination lies at the array's place in this row
    return [destination is not None and getattr(destination, "array", None) is array and array.size == size
            and _destination_address(destination) == base + start * itemsize
            for destination, array, start, size in zip(placed, arrays, layout.offsets, layout.sizes)]


def _destination_address(destination: Any) -> int:
    """Where a destination's array starts (ops/placement.Destination keeps it)."""
    address = getattr(destination, "address", None)
    return _address(destination.array) if address is None else address


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def reduce_scatter(world: Any, key: Any, arrays: Sequence[np.ndarray], layout: Layout, scale: Any,
                   what: str, placed: Any = None) -> np.ndarray:
    """This rank's part of the sum over ranks of the flattened `arrays`, times `scale` (None: 1)."""
    rows, skip, own = exchange(world, key, arrays, layout, what, placed)
    start = time.perf_counter()
    if len(rows):  # one node: this rank's part of its own gradients plus the others' rows
        lo, hi = layout.bounds(world.rank)
        summed = gather_part(arrays, layout, world.rank, arrays[0].dtype) if own is None else np.array(own)
        for other in range(len(rows)):
            if other != skip:
                np.add(summed, rows[other, lo:hi], out=summed)
    else:
        summed = own
    if scale is not None:
        np.multiply(summed, scale, out=summed)
    world.comm_seconds += time.perf_counter() - start
    return summed


class NodeCopy:
    """One copy of a bucket's flat state per node (shared window), or per process (across nodes).

    `flat` is the whole padded buffer (writable here only); `views(layout)` gives read-only
    views of the tensors, what the scope holds. Creating one is collective (every rank, the
    same keys in the same order)."""

    def __init__(self, world: Any, size: int, dtype: Any, shared: bool) -> None:
        dtype = np.dtype(dtype)
        self.world, self.shared, self.dtype, self.size = world, shared, dtype, size
        if shared:
            world.barrier()  # every rank is here (or a failure was reported): what follows cannot hang
            self.node = world.node_comm()
            mpi = world.mpi
            rank0 = self.node.Get_rank() == 0
            self.win = mpi.Win.Allocate_shared(size * dtype.itemsize if rank0 else 0, dtype.itemsize, comm=self.node)
            memory, _ = self.win.Shared_query(0)
            self.flat = np.frombuffer(memory, dtype, count=size)
            self.win.Lock_all(mpi.MODE_NOCHECK)
        else:
            self.flat = np.zeros(size, dtype)
        self._views: dict[tuple, list[np.ndarray]] = {}
        address = self.flat.__array_interface__["data"][0]
        self.span = (address, address + size * dtype.itemsize)

    def views(self, layout: Layout) -> list[np.ndarray]:
        """The tensors of `layout`, read-only views of the copy (made once per layout)."""
        key = layout.key
        found = self._views.get(key)
        if found is None:
            found = []
            for start, shape in zip(layout.offsets, layout.shapes):
                view = self.flat[start:start + prod(shape)].reshape(shape)
                view.flags.writeable = False
                found.append(view)
            self._views[key] = found
        return found

    def holds(self, arrays: Sequence[np.ndarray], layout: Layout) -> bool:
        """Whether `arrays` are this copy's views at `layout`'s places (then no copy is needed)."""
        views = self._views.get(layout.key)
        if views is not None and len(views) == len(arrays) and all(a is v for a, v in zip(arrays, views)):
            return True  # the views it handed out (the usual case, from step to step)
        base, itemsize = self.span[0], self.dtype.itemsize
        for array, start, shape in zip(arrays, layout.offsets, layout.shapes):
            if (not isinstance(array, np.ndarray) or array.dtype != self.dtype or array.shape != shape
                    or array.__array_interface__["data"][0] != base + start * itemsize
                    or not array.flags.c_contiguous):
                return False
        return True

    def part(self, layout: Layout) -> np.ndarray:
        """This rank's part of the copy, read-only."""
        lo, hi = layout.bounds(self.world.rank)
        view = self.flat[lo:hi]
        view.flags.writeable = False
        return view

    def write_part(self, part: np.ndarray, layout: Layout) -> None:
        lo, hi = layout.bounds(self.world.rank)
        target = self.flat[lo:hi]
        if part.__array_interface__["data"][0] != target.__array_interface__["data"][0]:
            np.copyto(target, part.reshape(-1))

    def gather(self, part: np.ndarray | None, layout: Layout, what: str, sync: bool = True) -> list[np.ndarray]:
        """Write this rank's `part` (None: written in place already), complete the copy with the
        other ranks' parts, return the views.

        Shared, `sync=False`: no barrier; a later `gather` with `sync=True` of the same ranks (the
        parameters', after the optimizer state's) publishes this write too."""
        if part is not None:
            self.write_part(part, layout)
        world = self.world
        if self.shared:
            if sync:
                self.win.Sync()
                world.wait(self.node.Ibarrier(), what)
                self.win.Sync()
        elif world.size > 1:
            world.wait(world.comm.Iallgather(world.mpi.IN_PLACE, self.flat), what)
        return self.views(layout)

    def fill_from(self, arrays: Sequence[np.ndarray], layout: Layout, root: int, what: str) -> list[np.ndarray]:
        """Rank `root`'s `arrays` into the copy (a broadcast), then the views on every rank."""
        world = self.world
        if self.shared:
            if world.rank == root:
                pack(self.flat, arrays, layout)
            self.win.Sync()
            world.wait(self.node.Ibarrier(), what)
            self.win.Sync()
        else:
            pack(self.flat, arrays, layout)
            if world.size > 1:
                world.wait(world.comm.Ibcast(self.flat, root=root), what)
        return self.views(layout)


def find_copy(copies: Any, arrays: Sequence[np.ndarray], layout: Layout) -> NodeCopy | None:
    """The copy whose views `arrays` are, if any."""
    if not arrays or not isinstance(arrays[0], np.ndarray):
        return None
    address = arrays[0].__array_interface__["data"][0]
    for copy in copies:
        if copy.span[0] <= address < copy.span[1] and copy.holds(arrays, layout):
            return copy
    return None


def exchange(world: Any, key: Any, arrays: Sequence[np.ndarray], layout: Layout, what: str,
             placed: Any = None) -> tuple[np.ndarray, int, np.ndarray | None]:
    """The first half of a reduce-scatter: `(rows, skip, own)`. On one node: every rank's row of
    the shared bucket holding the parts the others own (this rank's own part is left where it
    lies, `skip` is this rank's row), after the barrier; `own` is this rank's part of its own
    gradients as one flat array when it lies in its row already (every tensor in it placed
    there by its producer), else None (read each tensor's piece where it lies). Across nodes: no
    rows, `own` = this rank's part summed over ranks by MPI (a new array). Rows and sums hold
    plain gradients: an average's 1/p is the caller's, applied once to the sum of its part (no
    pass of its own over the gradients). `placed`: the destinations offered to the arrays'
    producers (placement): those found lying in this rank's row are not packed."""
    dtype = arrays[0].dtype
    bucket = world.bucket(key, layout.padded, dtype)
    present = in_place(bucket.input, arrays, layout, placed, bucket.input_address)
    if not bucket.shared:
        pack(bucket.input, arrays, layout, present=present)
        summed = np.empty(layout.part, dtype)
        world.wait(world.comm.Ireduce_scatter_block(bucket.input, summed, op=world.mpi.SUM), what)
        return np.empty((0, 0), dtype), -1, summed
    lo, hi = layout.bounds(world.rank)
    pack(bucket.input, arrays, layout, skip=(lo, hi), present=present, stream=streams_peer_part(bucket, layout))
    rows = bucket.next_rows()
    bucket.win.Sync()
    world.wait(bucket.node.Ibarrier(), what)
    bucket.win.Sync()
    whole = present is not None and all(present[i] for i, _, _ in layout.overlaps(lo, hi))
    return rows, bucket.rank, rows[bucket.rank, lo:hi] if whole else None


def streams_peer_part(bucket: Any, layout: Layout) -> bool:
    """Whether this reduction writes what the peer reads (its part of this rank's row, this rank's
    part of the parameters) with streaming stores (STREAM_PEER_PART). Asked before anything is
    written into the row (the placement offer, then the pack): "adaptive" probes the row where
    the peer's part starts, the memory the peer read two reductions before."""
    if STREAM_PEER_PART == "ordinary" or not (bucket.shared and bucket.pair and comm_stream.enabled()):
        return False
    if STREAM_PEER_PART == "stream":
        return True
    return bucket.streams_rows(at=layout.bounds(1 - bucket.rank)[0])


def update_in_place(world: Any, key: Any, grads: Sequence[np.ndarray], layout: Layout, scale: Any,
                    states: Sequence[tuple[str, Sequence[np.ndarray]]], update: Any, what: str,
                    placed: Any = None) -> list[list[np.ndarray]]:
    """Sum this rank's part of the gradients over ranks and update its part of each state (the
    parameters first, then e.g. the velocities) in place, in the node's copies (`states`: the copy's
    key and the scope's arrays), then publish them. `update(own, scale, rows, skip, start, *parts)`
    does one piece (fused_shards.py): the gradient is (own + the other rows) * scale. Returns each
    state's tensors (views of its copy)."""
    dtype = grads[0].dtype
    rank = world.rank
    if world.size == 1:  # no copies: the whole bucket is this rank's part, updated in new arrays
        flats = [gather_part(arrays, layout, 0, dtype) for _, arrays in states]
        rows, skip, own = np.empty((0, 0), dtype), -1, gather_part(grads, layout, 0, dtype)
        start, end = 0, layout.size
        update(own[start:end], 1, rows, skip, start, *[f[start:end] for f in flats])
        return [[f[o:o + s].reshape(shape) for o, s, shape in zip(layout.offsets, layout.sizes, layout.shapes)]
                for f in flats]
    stream = streams_peer_part(world.bucket(key, layout.padded, dtype), layout)  # (exchange's choice too)
    rows, skip, own = exchange(world, key, grads, layout, what, placed)
    scale = 1 if scale is None else scale
    copies = [world.node_copy(copy_key, layout.padded, dtype) for copy_key, _ in states]
    for copy, (_, arrays) in zip(copies, states):
        if not copy.holds(arrays, layout):  # the scope got other arrays (a load): this rank's part goes back in
            copy.write_part(gather_part(arrays, layout, rank, dtype), layout)
    start = time.perf_counter()
    lo, hi = layout.bounds(rank)
    if stream:
        update = _streaming_parameters(update)  # the peer reads them at its next forward pass
    if own is not None:  # this rank's part in one piece (padding included: zeros, zero parameters)
        update(own, scale, rows, skip, lo, *[c.flat[lo:hi] for c in copies])
    else:
        for i, a, b in layout.overlaps(lo, hi):
            first = layout.offsets[i] + a
            update(flat(grads[i])[a:b], scale, rows, skip, first, *[c.flat[first:first + b - a] for c in copies])
    world.comm_seconds += time.perf_counter() - start
    views = []
    for k, copy in enumerate(copies):  # the last one publishes them all (one barrier on one node)
        views.append(copy.gather(None, layout, what, sync=k == len(copies) - 1))
    return views


def _streaming_parameters(update: Any) -> Any:
    """`update` with the new parameters (its first state) written into the node copy with streaming
    stores: each STREAM_CHUNK of them copied into a scratch array, updated there (the same
    expression on the same values: the same bits), then streamed into the copy, so no line the
    peer read is taken from its cache first. The other states (velocities, moments) only this
    rank reads: updated in place."""
    def streamed(own, scale, rows, skip, start, param, *states):
        scratch = _scratch(param.dtype)
        for a in range(0, param.size, STREAM_CHUNK):
            b = min(a + STREAM_CHUNK, param.size)
            part = scratch[:b - a]
            np.copyto(part, param[a:b])
            update(own[a:b], scale, rows, skip, start + a, part, *[s[a:b] for s in states])
            comm_stream.stream_copy(param[a:b], part)
    return streamed


@functools.cache
def _scratch(dtype: Any) -> np.ndarray:
    return np.empty(STREAM_CHUNK, dtype)


def update_replicated(world: Any, key: Any, grads: Sequence[np.ndarray], layout: Layout, scale: Any,
                      states: Sequence[Sequence[np.ndarray]], update: Any, what: str,
                      placed: Any = None) -> list[list[np.ndarray]]:
    """Sum the whole bucket of gradients over ranks and update every tensor of each state (lists
    of C-contiguous arrays, the parameters first) in place, on every rank: the data-parallel
    update without sharding, in one pass per tensor (`update` as in `update_in_place`). Two ranks
    on one node: each packs into its row (or its gradients' producers wrote there), one barrier,
    then each computes (its row + the peer's) * scale itself, the same operation on both (so the
    same bits); the two sets of rows used in turn make a second barrier unnecessary (a rank
    writes a set again only after a barrier its peer passed once done reading it). The rows are
    packed with streaming stores when the probe finds the peer's cache holding them
    (comm_stream.StoreChooser: the peer read them two steps before), and the rank's own gradients
    are then read where they were made; else with ordinary stores, the producers writing into
    the row (placement) and the row read back. Otherwise: the bucket's
    all-reduce, then the update from the sum. Returns `states`."""
    dtype = grads[0].dtype
    scale = 1 if scale is None else scale
    empty = np.empty((0, 0), dtype)
    if world.size == 1:
        summed, rows, skip = gather_part(grads, layout, 0, dtype), empty, -1
    else:
        bucket = world.bucket(key, layout.padded, dtype)
        pair = bucket.shared and bucket.pair
        stream = pair and comm_stream.enabled() and bucket.streams_rows()  # (before the row is read)
        present = in_place(bucket.input, grads, layout, placed, bucket.input_address)
        pack(bucket.input, grads, layout, present=present, stream=stream)
        if pair:
            rows, skip = bucket.next_rows(), bucket.rank
            bucket.win.Sync()
            world.wait(bucket.node.Ibarrier(), what)
            bucket.win.Sync()
            summed = rows[skip]
            if stream:  # the row went to memory: this rank's own gradients are still in its cache
                summed = [flat(g) if not (present and present[i]) and g.flags.c_contiguous else summed[first:first + size]
                          for i, (g, first, size) in enumerate(zip(grads, layout.offsets, layout.sizes))]
        else:
            summed, rows, skip = bucket.start(what).wait(), empty, -1
    start = time.perf_counter()
    for i, (first, size) in enumerate(zip(layout.offsets, layout.sizes)):
        own = summed[i] if isinstance(summed, list) else summed[first:first + size]
        update(own, scale, rows, skip, first, *[flat(arrays[i]) for arrays in states])
    world.comm_seconds += time.perf_counter() - start
    return [list(arrays) for arrays in states]
