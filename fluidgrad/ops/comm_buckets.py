"""Flat gradient buckets and their all-reduce: through MPI's `Iallreduce`, or through memory
every rank on the node maps (an MPI-3 shared window).

A bucket is packed by the caller into `bucket.input`; `bucket.start()` begins the sum over
ranks and returns a request whose `wait()` gives the summed array (`test()` advances it).

Why two paths. MPICH's intra-node all-reduce of a large buffer is CPU work on every rank
(single-copy reads of the peer's memory through the kernel, then the reduction, in two
rounds): about 0.17 us per KB here, 0.46 ms for the 2.7 MB gradient of the benchmark's MLP,
and it cannot hide behind computation when each rank has one core. When every rank lives on
one node, `SharedBucket` instead asks MPI for a shared window (`MPI_Win_allocate_shared`):
each rank packs its gradient straight into its own row, and after an MPI barrier sums one
slice of all rows (in rank order, so the result does not depend on who computes it) into
one result every rank reads after a second barrier; about 0.1 ms for the same gradient.
MPI still provides the memory, the synchronisation and the failure handling; across nodes,
or with `FLUIDGRAD_ALLREDUCE=mpi`, buckets go through `Iallreduce`.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np


class PrivateBucket:
    """A buffer of this process, reduced in place by MPI's `Iallreduce`."""

    shared = False

    def __init__(self, world: Any, size: int, dtype: np.dtype) -> None:
        self.world = world
        self.input = self.result = np.empty(size, dtype)

    def start(self, what: str = "bucket all_reduce") -> Any:
        return self.world.start_all_reduce(self.input, "sum")


class SharedBucket:
    """`input` is this rank's row of a window every rank on the node maps; `result` is shared.

    Layout of the window (all of it allocated by the node's rank 0, contiguous):
    `[row 0 | row 1 | ... | row p-1 | result]`, each `size` elements. Rank r sums slice r of
    the rows into the result. Creating one is collective (every rank, in the same order); MPI
    frees it at exit.
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
        self.win = mpi.Win.Allocate_shared((p + 1) * size * dtype.itemsize if r == 0 else 0, dtype.itemsize,
                                           comm=node)
        memory, _ = self.win.Shared_query(0)
        flat = np.frombuffer(memory, dtype, count=(p + 1) * size)
        self.rows = flat[:p * size].reshape(p, size)
        self.input, self.result = self.rows[r], flat[p * size:]
        self.slice = slice(r * size // p, (r + 1) * size // p)
        self.win.Lock_all(mpi.MODE_NOCHECK)  # a passive epoch, for Win.Sync (a memory barrier)

    def start(self, what: str = "bucket all_reduce") -> SharedReduce:
        return SharedReduce(self, what)

    def reduce_own_slice(self) -> None:
        """result[s] = row 0[s] + row 1[s] + ... for this rank's slice s, in rank order."""
        s, rows = self.slice, self.rows
        out = self.result[s]
        if len(rows) == 1:
            np.copyto(out, rows[0, s])
            return
        np.add(rows[0, s], rows[1, s], out=out)
        for row in rows[2:]:
            np.add(out, row[s], out=out)


class SharedReduce:
    """The two barriers of a shared-memory all-reduce, advanced by `test()`, finished by `wait()`."""

    def __init__(self, bucket: SharedBucket, what: str) -> None:
        self.bucket, self.what, self.stage = bucket, what, 0
        bucket.win.Sync()  # this rank's row is written ...
        self.request = bucket.node.Ibarrier()  # ... and every rank says so

    def _reduce(self) -> None:
        start, win = time.perf_counter(), self.bucket.win
        win.Sync()
        self.bucket.reduce_own_slice()
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
