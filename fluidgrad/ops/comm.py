"""The process group the collective kernels talk to: MPI's world, or a world of one.

A process started by an MPI launcher (`fluidgrad launch`, `mpiexec`, `srun`: they set
`PMI_RANK` / `OMPI_COMM_WORLD_RANK` / `PMIX_RANK`) joins MPI's world through mpi4py, imported
only then; any other process is a world of one, where every collective is the identity, so
the same script runs with or without a launcher and `import fluidgrad` never needs mpi4py.

No hang: every wait polls its MPI request and, between polls, looks for news of a failed
peer: a message on `FAILURE_TAG` (a rank that raised sends one to every other rank before
aborting, see `report_failure`), or files in `$FLUIDGRAD_LAUNCH_DIR` written by the
launcher (a rank that died) or by a rank that exited while the others still wait for it.
A wait also gives up after `$FLUIDGRAD_COLLECTIVE_TIMEOUT` seconds (default 600). Each
case raises `RankFailedError` naming the failed rank.
"""
from __future__ import annotations

import atexit
import os
import pickle
import sys
import threading
import time
import traceback
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from ..framework.errors import FluidgradError
from .comm_buckets import PrivateBucket, SharedBucket
from .comm_shards import NodeCopy

FAILURE_TAG = 7391
_LAUNCHER_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
_POLL_SECONDS = 0.05
_EXIT_GRACE_SECONDS = 2.0
_WAITING_MARK_SECONDS = 1.0  # a wait this long leaves a note naming the collective (see _who_is_missing)
REDUCE_OPS = ("sum", "max", "min", "avg", "prod")
# how gradient buckets are reduced: "auto" (shared memory when every rank is on one node,
# else MPI's Iallreduce), "shared" (the same), "mpi" (always Iallreduce); see comm_buckets.py
ALLREDUCE_PATHS = ("auto", "shared", "mpi")
_KEPT_BUCKETS = 16  # private buckets of the most recent programs (a dropped one lives on in its views)
# shared-memory buckets of a process, at most (then private ones); each has an MPI window and
# a communicator of its own, and MPI has a few thousand communicators at most
SHARED_BUCKET_BYTES = 2 << 30
SHARED_BUCKETS = 256


class RankFailedError(FluidgradError, RuntimeError):
    """Another rank raised, died or left: this rank cannot finish a collective."""


class CollectiveMismatchError(FluidgradError, ValueError):
    """Ranks disagree about a collective (shapes, dtypes, programs, parameters)."""


def launched() -> bool:
    """Whether an MPI launcher started this process."""
    return any(name in os.environ for name in _LAUNCHER_VARS)


def bind_to_core() -> int | None:
    """Bind this rank to one core when asked (`FLUIDGRAD_BIND=1`; default 0, off): the node's rank
    r (MPICH's `MPI_LOCALRANKID`) goes to the r-th of the cores this process may use, when the
    node's ranks (`MPI_LOCALNRANKS`) are no more than those cores. Returns the core, or None (the
    rank left free to move). Off by default: on this project's 2-core machine binding measured no
    better (docs/distributed.md, "Session 10")."""
    value = os.environ.get("FLUIDGRAD_BIND", "0")
    if value not in ("0", "1"):
        raise ValueError(f"FLUIDGRAD_BIND must be 0 or 1, got {value!r}")
    local, ranks = os.environ.get("MPI_LOCALRANKID"), os.environ.get("MPI_LOCALNRANKS")
    if value == "0" or local is None or ranks is None or not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    if int(ranks) > len(cores):
        return None  # more ranks than cores: binding would only stack them
    core = cores[int(local) % len(cores)]
    os.sched_setaffinity(0, {core})
    return core


def _import_mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError:
        raise ImportError("this process was started by an MPI launcher, but mpi4py is not installed: "
                          "pip install 'fluidgrad[dist]' (mpi4py and the mpich wheel)") from None
    return MPI


class World:
    """Rank, size and the blocking / non-blocking collectives on NumPy arrays."""

    def __init__(self) -> None:
        self.mpi = _import_mpi() if launched() else None
        self.comm = self.mpi.COMM_WORLD if self.mpi is not None else None
        self.rank = self.comm.Get_rank() if self.comm is not None else 0
        self.size = self.comm.Get_size() if self.comm is not None else 1
        self.core = bind_to_core() if self.comm is not None else None  # the core this rank is bound to, if any
        launch_dir = os.environ.get("FLUIDGRAD_LAUNCH_DIR")
        # the launcher's folder (on its machine only: ranks on other nodes do without it)
        self.launch_dir = Path(launch_dir) if launch_dir and self.comm is not None and os.path.isdir(launch_dir) else None
        self.timeout = float(os.environ.get("FLUIDGRAD_COLLECTIVE_TIMEOUT", "600"))
        # time spent in collectives: starting them, waiting for them, reducing shared buckets
        # (the benchmarks read it)
        self.comm_seconds = 0.0
        self.allreduce_path = os.environ.get("FLUIDGRAD_ALLREDUCE", "auto")
        if self.allreduce_path not in ALLREDUCE_PATHS:
            raise ValueError(f"FLUIDGRAD_ALLREDUCE must be one of {list(ALLREDUCE_PATHS)}, "
                             f"got {self.allreduce_path!r}")
        self._node: Any = None
        self._buckets: OrderedDict[tuple, PrivateBucket] = OrderedDict()
        self._shared_buckets: dict[tuple, SharedBucket] = {}
        self._shared_bytes = 0
        self._node_copies: dict[tuple, NodeCopy] = {}
        self.exit_status: Any = None  # what this rank passed to sys.exit (its exit mark says it)
        if self.launch_dir is not None:
            (self.launch_dir / f"rank{self.rank}.pid").write_text(str(os.getpid()))

    # ------------------------------------------------------------------ waiting without hanging
    def wait(self, request: Any, what: str, peers: Any = None) -> None:
        """Complete `request`, raising RankFailedError if a peer fails meanwhile. `peers`: the
        global ranks the request waits for (a process group's, a point-to-point partner;
        default every rank): only their leaving normally stops the wait (any failure does)."""
        start = time.perf_counter()
        marked = False
        try:
            if request.Test():
                return
            deadline, next_check, left_at = start + self.timeout, start + _POLL_SECONDS, None
            while not request.Test():
                now = time.perf_counter()
                if now >= next_check:
                    left = self.check_peers(what, peers)
                    left_at = left_at or (now if left else None)
                    if left and now - left_at > _EXIT_GRACE_SECONDS:  # its last messages had time to land
                        raise RankFailedError(left)
                    next_check = now + _POLL_SECONDS
                    if not marked and now - start > min(_WAITING_MARK_SECONDS, self.timeout / 4):
                        marked = self._mark_waiting(what)
                    if now >= deadline:
                        message = (f"rank {self.rank}: {what} did not complete within {self.timeout:g} s "
                                   f"(FLUIDGRAD_COLLECTIVE_TIMEOUT): {self._who_is_missing(peers)}")
                        if self.launch_dir is not None:  # the cause of the abort that follows, for the launcher
                            (self.launch_dir / f"rank{self.rank}.timedout").write_text(message)
                        raise RankFailedError(message)
                os.sched_yield()
            if marked:  # (a rank that gives up keeps its note: the others may time out too)
                (self.launch_dir / f"rank{self.rank}.waiting").unlink(missing_ok=True)
        except self.mpi.Exception as exc:
            self.check_peers(what)
            raise RankFailedError(f"rank {self.rank}: MPI failed in {what}: {exc}") from exc
        finally:
            self.comm_seconds += time.perf_counter() - start

    def _mark_waiting(self, what: str) -> bool:
        """A long wait leaves a note, so that a rank timing out can name the ranks not waiting."""
        if self.launch_dir is None:
            return False
        (self.launch_dir / f"rank{self.rank}.waiting").write_text(what)
        return True

    def _who_is_missing(self, peers: Any = None) -> str:
        if self.launch_dir is None:
            return "some rank is not taking part"
        notes = []
        for rank in range(self.size) if peers is None else peers:
            note = self.launch_dir / f"rank{rank}.waiting"
            if rank != self.rank:
                try:
                    notes.append(f"rank {rank} waits in {note.read_text()}")
                except OSError:
                    notes.append(f"rank {rank} is in no collective (still computing, or stuck)")
        return "; ".join(notes)

    def check_peers(self, what: str, peers: Any = None) -> str | None:
        """Raise RankFailedError if some rank reported a failure; say so if one of `peers`
        (default: every rank) left normally."""
        if self.comm.Iprobe(source=self.mpi.ANY_SOURCE, tag=FAILURE_TAG):
            status = self.mpi.Status()
            report = self.comm.recv(source=self.mpi.ANY_SOURCE, tag=FAILURE_TAG, status=status)
            raise RankFailedError(f"rank {report['rank']} failed ({report['message']}); "
                                  f"rank {self.rank} stops in {what}")
        if self.launch_dir is None:
            return None
        failed = self.launch_dir / "failed"
        if failed.exists():
            raise RankFailedError(f"{failed.read_text().strip()}; rank {self.rank} stops in {what}")
        for rank in range(self.size) if peers is None else peers:
            mark = self.launch_dir / f"rank{rank}.exit"
            if rank != self.rank and mark.exists():
                code, _, message = (mark.read_text().strip() or "0").partition(" ")
                how = "exited" if code == "0" else f"exited with status {code}" + (f" ({message})" if message else "")
                return f"rank {rank} {how} while rank {self.rank} waits for it in {what}"
        return None

    # ------------------------------------------------------------------ collectives on arrays
    def mpi_op(self, op: str) -> Any:
        return {"sum": self.mpi.SUM, "avg": self.mpi.SUM, "max": self.mpi.MAX, "min": self.mpi.MIN,
                "prod": self.mpi.PROD}[op]

    def start_all_reduce(self, array: np.ndarray, op: str = "sum") -> Pending:
        """Begin reducing `array` (contiguous) in place across ranks; `.wait()` finishes it."""
        _check_op(op)
        if self.size == 1:
            return Pending(self, None, array, op, "all_reduce")
        if not array.flags.c_contiguous:
            raise ValueError("all_reduce needs a contiguous array")
        start = time.perf_counter()
        request = self.comm.Iallreduce(self.mpi.IN_PLACE, array, op=self.mpi_op(op))  # may do much of the work
        self.comm_seconds += time.perf_counter() - start
        return Pending(self, request, array, op, "all_reduce")

    def all_reduce(self, array: np.ndarray, op: str = "sum", what: str = "all_reduce") -> np.ndarray:
        """A new array: `array` reduced over ranks ("avg" divides the sum by the world size);
        shapes and dtypes are checked first (MPI would sum mismatched buffers silently)."""
        out = np.array(array, order="C")  # a copy; np.ascontiguousarray would make 0-D 1-D
        if self.size > 1:
            self.check_same_layout(out, what, kind=f"all_reduce (op {op})")
        return self.start_all_reduce(out, op).wait()

    def broadcast(self, array: np.ndarray, src: int = 0, what: str = "broadcast") -> np.ndarray:
        """A new array holding rank `src`'s `array`; shapes and dtypes are checked first."""
        self._check_rank(src, "broadcast")
        out = np.array(array, order="C")
        if self.size == 1:
            return out
        self.check_same_layout(out, what, src, kind=f"broadcast (from rank {self.global_rank(src)})")
        self.wait(self.comm.Ibcast(out, root=src), what)
        return out

    def all_gather(self, array: np.ndarray, what: str = "all_gather") -> np.ndarray:
        """Every rank's `array` stacked along a new first axis, in rank order."""
        array = np.asarray(array, order="C")
        if self.size == 1:
            return array[None].copy()
        self.check_same_layout(array, what, kind="all_gather")
        out = np.empty((self.size,) + array.shape, array.dtype)
        self.wait(self.comm.Iallgather(array, out), what)
        return out

    def reduce_scatter(self, array: np.ndarray, op: str = "sum", what: str = "reduce_scatter") -> np.ndarray:
        """`array`'s first axis split into world-size equal parts; rank r gets part r reduced over ranks."""
        _check_op(op)
        array = np.asarray(array, order="C")
        if array.ndim == 0 or array.shape[0] % self.size:
            raise ValueError(f"{what}: the first axis of shape {list(array.shape)} must divide into "
                             f"{self.size} equal parts (one per rank)")
        part = (array.shape[0] // self.size,) + array.shape[1:]
        if self.size == 1:
            return array.copy()
        self.check_same_layout(array, what, kind=f"reduce_scatter (op {op})")
        out = np.empty(part, array.dtype)
        self.wait(self.comm.Ireduce_scatter_block(array, out, op=self.mpi_op(op)), what)
        return out / out.dtype.type(self.size) if op == "avg" else out

    def gather(self, array: np.ndarray, root: int, what: str = "gather") -> np.ndarray | None:
        """Every rank's `array` stacked along a new first axis, in rank order, on rank `root`;
        None on the others."""
        array = np.ascontiguousarray(array)
        if self.size == 1:
            return array[None].copy()
        self.check_same_layout(array, what, root, kind=f"gather (to rank {self.global_rank(root)})")
        out = np.empty((self.size,) + array.shape, array.dtype) if self.rank == root else None
        self.wait(self.comm.Igather(array, out, root=root), what)
        return out

    def all_to_all(self, array: np.ndarray, what: str = "all_to_all") -> np.ndarray:
        """`array`'s first axis split into world-size equal parts, part r sent to rank r; returns
        the parts every rank sent here, in rank order (the shape of `array`)."""
        array = np.ascontiguousarray(array)
        if array.ndim == 0 or array.shape[0] % self.size:
            raise ValueError(f"{what}: the first axis of shape {list(array.shape)} must divide into "
                             f"{self.size} equal parts (one per rank)")
        if self.size == 1:
            return array.copy()
        self.check_same_layout(array, what, kind="all_to_all")
        out = np.empty_like(array)
        self.wait(self.comm.Ialltoall(array, out), what)
        return out

    def all_to_all_v(self, array: np.ndarray, send_rows: list[int], recv_rows: list[int] | None,
                     what: str = "all_to_all") -> np.ndarray:
        """`array`'s first axis cut into `send_rows[r]` rows for each rank r; returns the rows every
        rank sent here, in rank order. `recv_rows` (or None: whatever is sent) is checked against
        what the others send, and the other axes and dtype against theirs."""
        array = np.ascontiguousarray(array)
        send = np.asarray(send_rows, np.int64)
        if array.ndim == 0 or len(send) != self.size or (send < 0).any() or send.sum() != array.shape[0]:
            raise ValueError(f"{what}: the input's split sizes {send.tolist()} must be {self.size} counts (one per "
                             f"rank) adding up to its first axis, {list(array.shape)[:1]}")
        if self.size == 1:
            got = send.copy()
        else:
            self.check_same_layout(array[:0], what, kind="all_to_all (split sizes)")
            got = np.empty(self.size, np.int64)
            self.wait(self.comm.Ialltoall(send, got), what)
        if recv_rows is not None and list(got) != [int(r) for r in recv_rows]:
            raise CollectiveMismatchError(f"{what}: rank {self.global_rank(self.rank)} expects "
                                          f"{[int(r) for r in recv_rows]} rows from the ranks, they send "
                                          f"{got.tolist()}")
        row = array[:1].nbytes if array.shape[0] else int(np.prod(array.shape[1:], dtype=np.int64)) * array.itemsize
        out = np.empty((int(got.sum()),) + array.shape[1:], array.dtype)
        if self.size == 1:
            out[...] = array
            return out
        def spec(buffer: np.ndarray, counts: np.ndarray) -> list[Any]:  # byte counts and offsets, per rank
            offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]) * row
            return [buffer.reshape(-1).view(np.uint8), (counts * row, offsets), self.mpi.BYTE]
        self.wait(self.comm.Ialltoallv(spec(array, send), spec(out, got)), what)
        return out

    def barrier(self) -> None:
        if self.size > 1:
            self.wait(self.comm.Ibarrier(), "barrier")

    # ------------------------------------------------------------------ gradient buckets
    def node_comm(self) -> Any:
        """The ranks that share this node's memory (MPI's COMM_TYPE_SHARED), made on first use."""
        if self._node is None:
            self.barrier()  # Split_type blocks: first make sure every rank is here
            self._node = self.comm.Split_type(self.mpi.COMM_TYPE_SHARED, key=self.rank)
        return self._node

    def shares_memory(self) -> bool:
        """Whether buckets are reduced through shared memory (see comm_buckets.py)."""
        if self.size == 1 or self.allreduce_path == "mpi":
            return False
        return self.node_comm().Get_size() == self.size

    def bucket(self, key: Any, size: int, dtype: Any) -> PrivateBucket | SharedBucket:
        """A flat buffer of `size` elements kept from step to step under `key`: the same keys
        in the same order on every rank (making a shared bucket is collective). Shared buckets
        live as long as the process (their memory is mapped by every rank, so one can only be
        dropped by all at once; views of it may still be in use), up to `SHARED_BUCKETS` and
        `SHARED_BUCKET_BYTES` in all; beyond that buckets are private, and the least recently
        used private ones are dropped."""
        dtype = np.dtype(dtype)
        full_key = (key, size, dtype.str)
        if size > 0 and self.shares_memory():
            bucket = self._shared_buckets.get(full_key)
            nbytes = (self.size + 1) * size * dtype.itemsize
            if (bucket is None and self._shared_bytes + nbytes <= SHARED_BUCKET_BYTES
                    and len(self._shared_buckets) < SHARED_BUCKETS):
                bucket = self._shared_buckets[full_key] = SharedBucket(self, size, dtype)
                self._shared_bytes += nbytes
            if bucket is not None:
                return bucket
        bucket = self._buckets.pop(full_key, None) or PrivateBucket(self, size, dtype)
        self._buckets[full_key] = bucket
        while len(self._buckets) > _KEPT_BUCKETS:
            self._buckets.popitem(last=False)
        return bucket

    def kept_bucket(self, key: Any, size: int, dtype: Any) -> PrivateBucket | SharedBucket | None:
        """The bucket `bucket(key, size, dtype)` would return, if it exists already, else None.
        Asks no other rank (nothing collective), so a rank may look at any time: placement
        (ops/placement.py) offers its row to the ops producing the bucket's tensors."""
        full_key = (key, size, np.dtype(dtype).str)
        shared = self._shared_buckets.get(full_key)
        if shared is not None and self.allreduce_path != "mpi":
            return shared
        return self._buckets.get(full_key)

    def node_copy(self, key: str, size: int, dtype: Any) -> NodeCopy:
        """The node's one copy of a sharded bucket's state under `key` (comm_shards.py), made on
        first use (collectively: the same keys in the same order on every rank) and kept for the
        life of the process, like the shared buckets: the scope's parameters are views of it."""
        dtype = np.dtype(dtype)
        full_key = (key, size, dtype.str)
        copy = self._node_copies.get(full_key)
        if copy is None:
            copy = self._node_copies[full_key] = NodeCopy(self, size, dtype, self.shares_memory())
        return copy

    def node_copies(self) -> list[NodeCopy]:
        return list(self._node_copies.values())

    def all_gather_object(self, value: Any, what: str) -> list[Any]:
        """Every rank's picklable `value`, in rank order (small: fingerprints, shapes)."""
        if self.size == 1:
            return [value]
        payload = np.frombuffer(pickle.dumps(value), np.uint8)
        sizes = np.empty(self.size, np.int64)
        self.wait(self.comm.Iallgather(np.array([payload.size], np.int64), sizes), what)
        buffer = np.empty(int(sizes.sum()), np.uint8)
        self.wait(self.comm.Iallgatherv(payload, [buffer, sizes]), what)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        return [pickle.loads(buffer[offsets[i]:offsets[i + 1]].tobytes()) for i in range(self.size)]

    def check_same_layout(self, array: np.ndarray, what: str, src: int | None = None, kind: str = "") -> None:
        """Every rank must call the same collective (`kind`: which one, with its op or root) on an
        array of one shape and dtype; else a clear error on every rank, not a hang or a wrong sum.
        One tiny all-reduce (the max of [checksum, -checksum] of the layout: under MPICH on a
        loaded machine it costs a fifteenth of a one-number all-gather); the layouts themselves
        are gathered only to explain a mismatch (every rank sees it, so every rank does that)."""
        layout = (tuple(int(d) for d in array.shape), array.dtype.name, kind)
        checksum = zlib.crc32(repr(layout).encode())
        bounds = np.array([checksum, -checksum], np.int64)
        self.wait(self.comm.Iallreduce(self.mpi.IN_PLACE, bounds, op=self.mpi.MAX), what)
        if bounds[0] == -bounds[1]:  # the largest checksum is also the smallest: all agree
            return
        layouts = self.all_gather_object(layout, what)
        reference = layouts[0 if src is None else src]
        for rank, layout in enumerate(layouts):
            if layout[2] != reference[2]:
                raise CollectiveMismatchError(
                    f"{what}: rank {self.global_rank(rank)} calls {layout[2]}, rank "
                    f"{self.global_rank(layouts.index(reference))} calls "
                    f"{reference[2]}; every rank must call the same collectives in the same order")
            if layout != reference:
                raise CollectiveMismatchError(
                    f"{what}: rank {self.global_rank(rank)} passes shape {list(layout[0])} ({layout[1]}), rank "
                    f"{self.global_rank(layouts.index(reference))} passes shape {list(reference[0])} ({reference[1]}); "
                    f"every rank must pass the same shape and dtype")

    def global_rank(self, rank: int) -> int:
        """The job's rank of this communicator's `rank` (the same here; a process group's differs)."""
        return rank

    def _check_rank(self, rank: int, what: str) -> None:
        if not 0 <= rank < self.size:
            raise ValueError(f"{what}: rank {rank} is outside the world of {self.size} rank(s)")

    # ------------------------------------------------------------------ failure
    def report_failure(self, message: str) -> None:
        """Tell every other rank that this one failed (then the caller aborts)."""
        if self.launch_dir is not None:
            (self.launch_dir / f"rank{self.rank}.failed").write_text(message)
        if self.comm is None:
            return
        report = {"rank": self.rank, "message": message}
        requests = [self.comm.isend(report, dest=r, tag=FAILURE_TAG) for r in range(self.size) if r != self.rank]
        deadline = time.perf_counter() + 1.0
        while requests and time.perf_counter() < deadline:
            requests = [r for r in requests if not r.Test()]
            time.sleep(0.01)
        time.sleep(0.5)  # the others poll every _POLL_SECONDS: let them print their own error

    def mark_exit(self) -> None:
        """A rank leaving through Python's exit says so, and with which status (`sys.exit(3)`:
        "3"; `sys.exit("message")`: "1 message"), so that peers still waiting for it stop and
        the launcher names it."""
        if self.launch_dir is not None:
            status = self.exit_status
            if status is None or isinstance(status, int):
                text = str(int(status or 0))
            else:  # Python prints the message and exits with 1
                text = ("1 " + str(status).splitlines()[0][:200]) if str(status).strip() else "1"
            (self.launch_dir / f"rank{self.rank}.exit.tmp").write_text(text)
            os.replace(self.launch_dir / f"rank{self.rank}.exit.tmp", self.launch_dir / f"rank{self.rank}.exit")


class Pending:
    """An all-reduce under way (non-blocking); `wait()` returns the reduced array."""

    def __init__(self, world: World, request: Any, array: np.ndarray, op: str, what: str) -> None:
        self.world, self.request, self.array, self.op, self.what = world, request, array, op, what

    def test(self) -> bool:
        """Let MPI progress; whether the reduction is done."""
        return self.request is None or bool(self.request.Test())

    def wait(self) -> np.ndarray:
        if self.request is not None:
            self.world.wait(self.request, self.what)
            self.request = None
            if self.op == "avg":
                self.array /= self.array.dtype.type(self.world.size)
        return self.array


def _check_op(op: str) -> None:
    if op not in REDUCE_OPS:
        raise ValueError(f"all_reduce: op must be one of {list(REDUCE_OPS)}, got {op!r}")


_WORLD: World | None = None


def get_world() -> World:
    """The process group, joined on first use (and failure handling installed)."""
    global _WORLD
    if _WORLD is None:
        _WORLD = World()
        if _WORLD.comm is not None:
            _install_failure_handling(_WORLD)
    return _WORLD


def current_world() -> World | None:
    """The process group if this process has joined it already (nothing is joined here)."""
    return _WORLD


def _install_failure_handling(world: World) -> None:
    """An uncaught exception on one rank reports it to the others, then aborts the job.
    Output is line-buffered, so that lines of different ranks do not mix and appear live."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True, write_through=False)

    def excepthook(kind: type, value: BaseException, tb: Any) -> None:
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(f"[rank {world.rank}] " + text.replace("\n", f"\n[rank {world.rank}] ").rstrip() + "\n")
        sys.stderr.flush()
        if not isinstance(value, RankFailedError):
            world.report_failure(f"{kind.__name__}: {value}".splitlines()[0][:300])
        else:  # a consequence of another rank's failure: say so to the launcher, do not report
            if world.launch_dir is not None:
                (world.launch_dir / f"rank{world.rank}.stopped").write_text(str(value))
            time.sleep(0.2)
        world.comm.Abort(1)

    sys.excepthook = excepthook
    exit_now = sys.exit

    def exit_noting_status(status: Any = None) -> None:
        """sys.exit, noting the status for the exit mark (an atexit handler cannot read it); in
        another thread it only ends that thread, so the process's status is not that one."""
        if threading.current_thread() is threading.main_thread():
            world.exit_status = status
        exit_now(status)

    sys.exit = exit_noting_status
    atexit.register(world.mark_exit)
