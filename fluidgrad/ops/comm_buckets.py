"""Flat gradient buckets and their all-reduce: through MPI's `Iallreduce`, or through memory
every rank on the node maps (an MPI-3 shared window).

A bucket is packed by the caller into `bucket.input`; `bucket.start(what, scale)` begins the
sum over ranks and returns a request: `wait()` gives the summed flat array, `wait_arrays(pieces)`
the summed tensors at `pieces` (offset, shape), times `scale` when given (an average's 1/p,
applied in the pass that sums, so the rows hold plain gradients and nobody makes a pass just to
scale them), `test()` advances it.

Why two paths. MPICH's intra-node all-reduce of a large buffer is CPU work on every rank
(single-copy reads of the peer's memory through the kernel, then the reduction, in two
rounds): about 0.17 us per KB here, 0.46 ms for the 2.7 MB gradient of the benchmark's MLP,
and it cannot hide behind computation when each rank has one core. When every rank lives on
one node, `SharedBucket` instead asks MPI for a shared window (`MPI_Win_allocate_shared`):
each rank packs its gradient straight into its own row, and after an MPI barrier reads the
other rows in user space (see `SharedBucket` for the two layouts). MPI still provides the
memory, the synchronisation and the failure handling; across nodes, or with
`FLUIDGRAD_ALLREDUCE=mpi`, buckets go through `Iallreduce`.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from . import accel, comm_stream

# where each tensor of a bucket lies in the flat buffer: (first element, shape)
Pieces = Sequence[tuple[int, tuple[int, ...]]]


@accel.jit
def _add_scaled_loop(a, b, scale, out):
    for k in range(out.size):
        out[k] = (a[k] + b[k]) * scale


def add_scaled(a: np.ndarray, b: np.ndarray, scale: Any, out: np.ndarray | None = None) -> np.ndarray:
    """(a + b) * scale (scale None: a + b), 1-D, into `out` (new if None): one pass when compiled."""
    if out is None:
        out = np.empty_like(a)
    if scale is None:
        return np.add(a, b, out=out)
    if accel.enabled() and accel.takes(a, b, out):
        _add_scaled_loop(a, b, out.dtype.type(scale), out)
        return out
    np.add(a, b, out=out)
    return np.multiply(out, scale, out=out)


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def split(flat: np.ndarray, pieces: Pieces, copy: bool) -> list[np.ndarray]:
    """The tensors at `pieces` of `flat`: copies the caller owns, or read-only views (a buffer
    kept from step to step: nobody may write into it, and a view must be read before the next
    reduction of the bucket)."""
    out = []
    for first, shape in pieces:
        view = flat[first:first + prod(shape)].reshape(shape)
        if copy:
            view = view.copy()
        else:
            view.flags.writeable = False
        out.append(view)
    return out


class PrivateBucket:
    """A buffer of this process, reduced in place by MPI's `Iallreduce`."""

    shared = False

    def __init__(self, world: Any, size: int, dtype: np.dtype) -> None:
        self.world = world
        self.input = self.result = np.empty(size, dtype)
        self.input_address = _address(self.input)

    def start(self, what: str = "bucket all_reduce", scale: Any = None) -> PrivateReduce:
        return PrivateReduce(self.world.start_all_reduce(self.input, "sum"), scale)


class PrivateReduce:
    def __init__(self, pending: Any, scale: Any = None) -> None:
        self.pending, self.scale, self.result = pending, scale, None

    def test(self) -> bool:
        return self.pending.test()

    def wait(self) -> np.ndarray:
        """The sum over ranks (times the scale), in the bucket's buffer."""
        if self.result is None:
            self.result = self.pending.wait()
            if self.scale is not None:
                np.multiply(self.result, self.scale, out=self.result)
        return self.result

    def wait_arrays(self, pieces: Pieces, copy: bool = False, into: Any = None) -> list[np.ndarray]:
        """The summed tensors: read-only views of the bucket (`copy`: copies); `into` is unused."""
        return split(self.wait(), pieces, copy)


class SharedBucket:
    """`input` is this rank's row of a window every rank on the node maps.

    Two ranks (`pair`): two sets of rows, used in turn, `[set 0: row 0 | row 1 | set 1: row 0
    | row 1]`. After one barrier each rank adds the two rows of the set itself (row 0 + row 1,
    the same operation on both ranks, so the same bits) into new arrays of its own, which the
    caller keeps (the updates then write into them, as into a gradient of one process). No
    second barrier: a rank writes a set again only two reductions later, after a barrier the
    peer reached once done reading it.

    More ranks: `[row 0 | ... | row p-1 | result]`; after a barrier rank r sums slice r of the
    rows (in rank order, so the result does not depend on who computes it) into the shared
    result, which every rank reads after a second barrier: per rank a read of `n` elements and a
    write of `n / p` rather than reads of `(p - 1) n`.

    Creating one is collective (every rank, in the same order); MPI frees it at exit.
    """

    shared = True

    def __init__(self, world: Any, size: int, dtype: np.dtype) -> None:
        mpi = world.mpi
        world.barrier()  # every rank is here (or a failure was reported): what follows cannot hang
        # a communicator of its own: the barriers of buckets under way at once, advanced by
        # test() as each rank finds them ready, would otherwise pair up across buckets
        node = world.node_comm().Dup()
        self.world, self.node = world, node
        p, r = node.Get_size(), node.Get_rank()
        self.pair, self.rank = p == 2, r
        sets = 2 if self.pair else 1
        count = sets * p * size + (0 if self.pair else size)
        self.win = mpi.Win.Allocate_shared(count * dtype.itemsize if r == 0 else 0, dtype.itemsize, comm=node)
        memory, _ = self.win.Shared_query(0)
        flat = np.frombuffer(memory, dtype, count=count)
        self.sets = flat[:sets * p * size].reshape(sets, p, size)
        self.rows = self.sets[0]
        self.result = None if self.pair else flat[p * size:]
        self.slice = slice(r * size // p, (r + 1) * size // p)
        self.turn = 0  # the set of rows the next reduction uses
        self.reductions = 0  # started so far (the turn changes with each)
        self.stores = comm_stream.StoreChooser()
        self._streamed: tuple[int, bool] | None = None  # (reduction, its choice), made once per reduction
        self._input_addresses = [_address(rows[r]) for rows in self.sets]
        self.win.Lock_all(mpi.MODE_NOCHECK)  # a passive epoch, for Win.Sync (a memory barrier)

    @property
    def input(self) -> np.ndarray:
        """This rank's row for the next reduction (pack into it, then `start`)."""
        return self.sets[self.turn, self.rank]

    @property
    def input_address(self) -> int:
        """Where `input` starts in memory (placement compares it with the destinations it offered)."""
        return self._input_addresses[self.turn]

    def start(self, what: str = "bucket all_reduce", scale: Any = None) -> PairReduce | SharedReduce:
        rows = self.next_rows()
        return PairReduce(self, rows, what, scale) if self.pair else SharedReduce(self, what, scale)

    def next_rows(self) -> np.ndarray:
        """The rows of the reduction starting now (the next one uses the other set)."""
        rows = self.sets[self.turn]
        self.turn = (self.turn + 1) % len(self.sets)
        self.reductions += 1
        return rows

    def streams_rows(self, at: int = 0) -> bool:
        """Whether the coming reduction's row is written with streaming stores (two ranks; chosen
        once per reduction by probing the row from element `at`, where the peer reads it:
        comm_stream.StoreChooser). Asked before anything is written into the row (a placement
        offer, or the pack): the probe overwrites what it probes."""
        if not self.pair:
            return False
        if self._streamed is None or self._streamed[0] != self.reductions:
            self._streamed = (self.reductions, self.stores.stream_now(self.input[at:]))
        return self._streamed[1]

    def reduce_own_slice(self, scale: Any = None) -> None:
        """result[s] = (row 0[s] + row 1[s] + ...) * scale for this rank's slice s, in rank order."""
        s, rows = self.slice, self.rows
        out = self.result[s]
        if len(rows) == 1:
            np.copyto(out, rows[0, s])
        else:
            np.add(rows[0, s], rows[1, s], out=out)
            for row in rows[2:]:
                np.add(out, row[s], out=out)
        if scale is not None:
            np.multiply(out, scale, out=out)


class PairReduce:
    """Two ranks: one barrier, then each rank adds the two rows into arrays of its own."""

    def __init__(self, bucket: SharedBucket, rows: np.ndarray, what: str, scale: Any = None) -> None:
        self.bucket, self.rows, self.what, self.scale, self.arrived = bucket, rows, what, scale, False
        bucket.win.Sync()  # this rank's row is written ...
        self.request = bucket.node.Ibarrier()  # ... and every rank says so

    def test(self) -> bool:
        """Let the barrier progress; whether every row is in."""
        if not self.arrived and self.request.Test():
            self._arrive()
        return self.arrived

    def _arrive(self) -> None:
        self.bucket.win.Sync()
        self.arrived, self.request = True, None

    def _wait_rows(self) -> None:
        if not self.arrived:
            self.bucket.world.wait(self.request, self.what)
            self._arrive()

    def wait_rows(self) -> np.ndarray:
        """Both rows, once every rank's is in: for a caller adding them itself (eager_fused.py)."""
        self._wait_rows()
        return self.rows

    def wait(self) -> np.ndarray:
        """The sum over ranks (times the scale), a new array."""
        self._wait_rows()
        start = time.perf_counter()
        total = add_scaled(self.rows[0], self.rows[1], self.scale)
        self.bucket.world.comm_seconds += time.perf_counter() - start
        return total

    def wait_arrays(self, pieces: Pieces, copy: bool = False,
                    into: Sequence[np.ndarray | None] | None = None) -> list[np.ndarray]:
        """The summed tensors at `pieces` (times the scale): new arrays the caller owns, or written
        into the arrays of `into` that are not None (of the pieces' shapes and dtype)."""
        self._wait_rows()
        start, (row0, row1) = time.perf_counter(), self.rows
        out = []
        for k, (first, shape) in enumerate(pieces):
            end = first + prod(shape)
            target = into[k] if into is not None else None
            if target is None:
                target = np.empty(shape, row0.dtype)
            if target.flags.c_contiguous:
                add_scaled(row0[first:end], row1[first:end], self.scale, target.reshape(-1))
            else:
                np.add(row0[first:end].reshape(shape), row1[first:end].reshape(shape), out=target)
                if self.scale is not None:
                    np.multiply(target, self.scale, out=target)
            out.append(target)
        self.bucket.world.comm_seconds += time.perf_counter() - start
        return out


class SharedReduce:
    """The two barriers of a shared-memory all-reduce, advanced by `test()`, finished by `wait()`."""

    def __init__(self, bucket: SharedBucket, what: str, scale: Any = None) -> None:
        self.bucket, self.what, self.scale, self.stage = bucket, what, scale, 0
        bucket.win.Sync()  # this rank's row is written ...
        self.request = bucket.node.Ibarrier()  # ... and every rank says so

    def _reduce(self) -> None:
        start, win = time.perf_counter(), self.bucket.win
        win.Sync()
        self.bucket.reduce_own_slice(self.scale)
        win.Sync()
        self.request, self.stage = self.bucket.node.Ibarrier(), 1
        self.bucket.world.comm_seconds += time.perf_counter() - start

    def _done(self) -> None:
        self.bucket.win.Sync()
        self.request, self.stage = None, 2

    def test(self) -> bool:
        """Let the barriers progress (and reduce this rank's slice once every row is in)."""
        if self.stage == 0 and self.request.Test():
            self._reduce()
        if self.stage == 1 and self.request.Test():
            self._done()
        return self.stage == 2

    def wait(self) -> np.ndarray:
        """The sum over ranks (the shared result: read it, never write it)."""
        if self.stage == 0:
            self.bucket.world.wait(self.request, self.what)
            self._reduce()
        if self.stage == 1:
            self.bucket.world.wait(self.request, self.what)
            self._done()
        return self.bucket.result

    def wait_arrays(self, pieces: Pieces, copy: bool = False, into: Any = None) -> list[np.ndarray]:
        """The summed tensors: read-only views of the shared result (`copy`: copies); `into` is unused."""
        return split(self.wait(), pieces, copy)
