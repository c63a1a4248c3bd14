"""Data-parallel step time (issue 14): the MLP 784-512-512-10 at per-rank batch 64, SGD.

    python benchmarks/bench_dist.py [--rounds 20] [--launches 3] [--block 10]
    python benchmarks/bench_dist.py --phases     # the static step split into its parts
    python benchmarks/bench_dist.py --ops        # CPU time per kind of op, every static contender
    python benchmarks/bench_dist.py --only "bucketed" --only "bucketed, ranks pinned"   # only these
                                                 # (beside "1 rank" and "no all-reduce"; also with --ops, --phases)

Weak scaling, one BLAS thread per rank (`fluidgrad launch` sets it): what a user training one
model sees per step on 1 rank (plain training, no data-parallel wrapper) and on 2 ranks (batch
64 on each), in static mode (DistributedOptimizer) and eager mode (DataParallel).

Every number comes from 2-rank jobs (`--launches` per mode, one mode per job), so the 1-rank
and 2-rank steps are taken in the same processes, holding the same models, under the same
load, minutes of machine drift shared: the contenders take turns in blocks of `--block`
consecutive steps, as a training loop runs one model, `--rounds` times, in an order shuffled
every round; the first two steps of a block are not timed (WARM_STEPS: the first finds its
model evicted by the other contenders', the second a two-rank bucket's second set of rows, evicted
too; a training loop's steady state starts at the third, where each step rewrites memory the
peer read two steps before: with a single untimed step, the second step of each block ran up to
0.6 ms faster than the rest whenever the cores were far apart, a warm-up no training loop has). In the "1 rank" blocks rank 0 trains the plain model alone while rank 1
sleeps in a blocking read of a named pipe (no polling: its core idle, as a 1-rank job leaves the
second core); in every other block both ranks train. Within a block the steps run back to
back, with no barrier between them (a barrier only starts the block), and a step's time is the
job's: from the moment the later rank ended the previous step to the moment the later rank
ended this one (one rank in the "1 rank" blocks).
Contenders (the CONTENDERS table; adding one is one line, None for a mode it has no form in,
and a PAIRS entry compares two step by step): "no all-reduce", each rank training alone (the 2-rank compute, what "vs no all-reduce" divides by); bucketed gradient
all-reduce (the default buckets: up to 25 MB, in eager mode 1 MB first; SGD's sum and update are
one pass per bucket, static: one op, eager: at step(), "bucketed, unfused update" keeps them apart
as before, eager: the average made inside backward) and one
all-reduce per parameter (bucket size 0), each through a shared-memory window (the default when
every rank is on one node) and through MPI's Iallreduce (what runs across nodes).
Why one kind of job for both sides: the earlier version of this script ran separate 1-rank and
2-rank jobs at different moments, held 2 models in the 1-rank process and 10 (5 contenders x 2
modes) in each 2-rank one, and put a barrier before every step. Here both sides hold the same
models under the same load, and the one difference left is the one a user meets: in a "1 rank"
block the second core is idle, in the others the peer computes beside rank 0, sharing the L3
cache and the memory bandwidth (what that costs alone: benchmarks/bench_corun.py).
Each row is the median step over all its steps, with the 25th-75th percentiles and the 10th
(the fast steps: on a shared machine, closer to what an idle one gives). "comm" is rank 0's
time per step inside collectives (starting them, waiting for them, reducing shared buckets; in
eager mode what the backward pass did not hide); "cpu" is rank 0's CPU time per step (the
work, without the time it waited or lost its core). Bucketed and per-parameter take turns in
the same processes: their steps are compared pairwise, in order.
Why the step times are bimodal on this machine (the second table): before each block both ranks
run CrossCoreProbe, which times rewriting 512 KB the peer has just read against writing private
memory. On this 2-vCPU virtual machine the host places the vCPUs near (the ratio about 1-3) or far
(about 10) from each other, for minutes at a time, and far, each 64-byte line written that the
peer holds costs about 25 ns (1 ms per 2.7 MB); every data-parallel step through shared memory
rewrites such memory (its bucket rows, its parameters), so the steps of one contender fall in two
groups. The second table splits every row by that probe. The default two-rank rows are written
with streaming stores (ops/comm_stream.py), which take no ownership of the lines first, on the
steps a probe of the row finds the cores far, else with ordinary stores and placement (the
weight gradients' GEMMs writing into the row): "bucketed, streamed rows" streams at every step
(static; sessions 9 and 10's default), "bucketed, ordinary stores" never.
Session 10's contenders: the split weight gradients' activations copied into the shared window
with streaming stores (the default), placed there by their producers ("activations placed") or
copied with ordinary stores (as in session 9), their parameter rows
streamed; the sharded buckets' peer part streamed; the ranks bound to one core each ("ranks
pinned": os.sched_setaffinity switched per block, so pinned and free blocks alternate in the same
processes). The second table gives rank 0's CPU time per step in each state of the cores too.
Session 12: the sharded buckets' stores ("bucketed, sharded update, streamed": the peer's part of
the row and this rank's part of the parameters streamed at every step; "..., adaptive stores":
streamed on the steps a probe of the peer's part of the row finds the cores far).
Goal: 2-rank step <= 1.1x the 1-rank step (90% weak-scaling efficiency); bucketed < per-parameter.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import print_table  # noqa: E402

import fluidgrad as fg  # noqa: E402
import fluidgrad.distributed as dist  # noqa: E402
from fluidgrad.distributed import eager_fused, sharding  # noqa: E402
from fluidgrad.executor import executor as executor_module  # noqa: E402
from fluidgrad.framework import BACKWARD, OPTIMIZE  # noqa: E402
from fluidgrad.nn import functional as F  # noqa: E402
from fluidgrad.ops import comm_buckets, comm_shards, comm_split, comm_stream, fused_shards  # noqa: E402
from fluidgrad.ops.comm import World, get_world  # noqa: E402
from fluidgrad.ops.registry import get_op_def  # noqa: E402

SIZES, BATCH, LR = (784, 512, 512, 10), 64, 0.01
MODES = ("static", "eager")
ONE_RANK = "1 rank"  # plain training on rank 0 while rank 1 sleeps
DOORBELL = ".doorbell"  # the named pipe rank 1 sleeps on: the output path + this
# untimed steps at the start of a block: the first finds its model evicted by the other contenders';
# the second uses a two-rank bucket's second set of rows (comm_buckets.SharedBucket), evicted too.
# From the third on, a step rewrites memory the peer read two steps before, as every step of a
# training loop does (what that costs: CrossCoreProbe)
WARM_STEPS = 2


def alone(wrapped: Any) -> Any:
    """No data parallelism: the optimizer or model as a 1-rank job has it."""
    return wrapped


def dp_optimizer(bucket_mb: float, **options: Any) -> Callable[[Any], Any]:
    return lambda optimizer: dist.DistributedOptimizer(optimizer, bucket_size_mb=bucket_mb, **options)


class Unfused:
    """A DistributedOptimizer whose minimize() appends the bucketed all-reduce and the optimizer's own
    update ops even where one fused op per bucket could do both (sharding.FUSE_UPDATES off)."""

    def __init__(self, optimizer: Any) -> None:
        self.optimizer = optimizer

    def minimize(self, loss: Any) -> Any:
        sharding.FUSE_UPDATES = False
        try:
            return self.optimizer.minimize(loss)
        finally:
            sharding.FUSE_UPDATES = True


def dp_unfused(bucket_mb: float) -> Callable[[Any], Any]:
    return lambda optimizer: Unfused(dist.DistributedOptimizer(optimizer, bucket_size_mb=bucket_mb, split_grads=False))


def dp_model(bucket_mb: float) -> Callable[[Any], Any]:
    return lambda model: fg.DataParallel(model, comm_buffer_size=bucket_mb)


def dp_model_unfused(bucket_mb: float) -> Callable[[Any], Any]:
    """Eager: DataParallel averaging the gradients inside backward, then the optimizer's own step
    (eager_fused.FUSE_UPDATES off during its steps: the path before the fused update)."""
    wrap = dp_model(bucket_mb)
    wrap.unfused = True
    return wrap


def dp_sharded(bucket_mb: float) -> Callable[[Any], Any]:
    """Eager: DataParallel, and its optimizer sharded (eager_stepper applies `.optimizer`)."""
    wrap = dp_model(bucket_mb)
    wrap.optimizer = dp_optimizer(bucket_mb, sharding=True)
    return wrap


class Contender(NamedTuple):
    """A 2-rank way to train. `static` wraps the SGD optimizer before `minimize`, `eager` wraps
    the model before its optimizer is made; None leaves the contender out of that mode.
    `path`: how gradient buckets are summed, "auto" (an MPI shared-memory window when every rank
    is on one node) or "mpi" (MPI's Iallreduce, what runs across nodes): ops/comm_buckets.py."""
    static: Callable[[Any], Any] | None
    eager: Callable[[Any], Any] | None
    path: str = "auto"
    stream: bool = True  # writes into shared rows with streaming stores (ops/comm_stream.py, the default)
    # split weight gradients: the layers' activations written by their producers into the shared
    # window (placement) or copied there by the op (comm_split.ACTIVATIONS_IN_PLACE; None: its default)
    activations_in_place: bool | None = None
    pinned: bool = False  # each rank bound to one core during its blocks (rank r -> core r), else free to move
    # sharded buckets: the peer's part of the row and this rank's part of the parameters written with
    # ordinary stores, streamed ("stream") or streamed when a probe finds the cores far ("adaptive")
    # (comm_shards.STREAM_PEER_PART)
    stream_sharded: str = "ordinary"
    stream_params: bool = False  # split, sharded: this rank's rows of the parameters streamed (comm_split.STREAM_PARAMS)
    # static default's two-rank rows: "adaptive" (streamed on the steps a probe finds the cores far:
    # the default), or "stream" every step (sessions 9 and 10's default) (comm_stream.ROWS_POLICY)
    rows_policy: str = "adaptive"
    # every step ends at a barrier (no all-reduce): the ranks kept in step as any synchronous
    # data-parallel step keeps them, so each step waits for the slower rank
    in_step: bool = False


# the 2-rank contenders, one line each; bucket size 0 MB = one all-reduce per parameter
NO_SPLIT = {"split_grads": False}  # the all-reduce contenders: weight gradients made whole on every rank
CONTENDERS = {
    "no all-reduce": Contender(alone, alone),  # each rank trains alone: the 2-rank compute
    # the floor of any synchronous step: the same compute, the ranks waiting for each other at every step
    "no all-reduce, a barrier each step": Contender(alone, alone, in_step=True),
    "bucketed": Contender(dp_optimizer(25.0, **NO_SPLIT), dp_model(25.0)),
    # the same, its rows written with ordinary stores (and offered to the gradients' producers: placement)
    "bucketed, ordinary stores": Contender(dp_optimizer(25.0, **NO_SPLIT), dp_model(25.0), stream=False),
    # the same, the rows streamed at every step (static; the default streams only when the cores are far)
    "bucketed, streamed rows": Contender(dp_optimizer(25.0, **NO_SPLIT), None, rows_policy="stream"),
    # the same buckets, the all-reduce and the SGD ops apart (what "bucketed" was before the fused update)
    "bucketed, unfused update": Contender(dp_unfused(25.0), dp_model_unfused(25.0)),
    "per-parameter": Contender(dp_optimizer(0.0, **NO_SPLIT), dp_model(0.0)),
    "bucketed, MPI Iallreduce": Contender(dp_optimizer(25.0, **NO_SPLIT), dp_model(25.0), "mpi"),
    "per-parameter, MPI Iallreduce": Contender(dp_optimizer(0.0, **NO_SPLIT), dp_model(0.0), "mpi"),
    # each rank sums and updates half of the bucket (ZeRO-1 on one node)
    "bucketed, sharded update": Contender(dp_optimizer(25.0, sharding=True, **NO_SPLIT), dp_sharded(25.0)),
    "per-parameter, sharded update": Contender(dp_optimizer(0.0, sharding=True, **NO_SPLIT), dp_sharded(0.0)),
    # the same, the peer's part of the row written with streaming stores (no placement into the row)
    "bucketed, sharded update, streamed": Contender(dp_optimizer(25.0, sharding=True, **NO_SPLIT), None,
                                                    stream_sharded="stream"),
    # the same, streamed only on the steps the probe of the peer's part of the row finds the cores far
    "bucketed, sharded update, adaptive stores": Contender(dp_optimizer(25.0, sharding=True, **NO_SPLIT), None,
                                                           stream_sharded="adaptive"),
    # no gradient all-reduce: each rank computes its rows of the weight gradients over both ranks'
    # activations in shared memory (split_grads=True), then SGD on every rank from the shared averages ...
    "split weight gradients": Contender(dp_optimizer(25.0, split_grads=True), None),
    # ... or each rank's rows of the node's one copy of the parameters updated at once (sharded)
    "split weight gradients, sharded update": Contender(dp_optimizer(25.0, sharding=True, split_grads=True), None),
    # the same two, the activations written into the shared window by their producers (placement) ...
    "split weight gradients, activations placed": Contender(dp_optimizer(25.0, split_grads=True), None,
                                                            activations_in_place=True),
    "split weight gradients, sharded update, activations placed": Contender(
        dp_optimizer(25.0, sharding=True, split_grads=True), None, activations_in_place=True),
    # ... or copied with ordinary stores (session 9)
    "split weight gradients, activations copied, ordinary stores": Contender(
        dp_optimizer(25.0, split_grads=True), None, stream=False, activations_in_place=False),
    "split weight gradients, sharded update, activations copied, ordinary stores": Contender(
        dp_optimizer(25.0, sharding=True, split_grads=True), None, stream=False, activations_in_place=False),
    # the same, this rank's rows of the parameters written with streaming stores
    "split weight gradients, sharded update, parameters streamed": Contender(
        dp_optimizer(25.0, sharding=True, split_grads=True), None, stream_params=True),
    # the ranks bound to one core each (os.sched_setaffinity) during these blocks; every other
    # block runs with the ranks free to move between the cores
    "no all-reduce, ranks pinned": Contender(alone, alone, pinned=True),
    "bucketed, ranks pinned": Contender(dp_optimizer(25.0, **NO_SPLIT), dp_model(25.0), pinned=True),
    "split weight gradients, sharded update, ranks pinned": Contender(
        dp_optimizer(25.0, sharding=True, split_grads=True), None, pinned=True),
}
CPUS = sorted(os.sched_getaffinity(0))  # the cores this job may use
SPLIT_PLACE_DEFAULT = comm_split.ACTIVATIONS_IN_PLACE
SHARDED_STORES_DEFAULT = comm_shards.STREAM_PEER_PART
# compared step by step (they take turns in the same processes): (bucketed, per-parameter)
PATH_NAMES = {"auto": "shared memory", "mpi": "MPI Iallreduce"}
PAIRS = (("bucketed", "per-parameter"), ("bucketed, MPI Iallreduce", "per-parameter, MPI Iallreduce"),
         ("bucketed, sharded update", "per-parameter, sharded update"))


def data(rank: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rank)
    return rng.standard_normal((BATCH, SIZES[0])).astype("float32"), rng.integers(0, 10, (BATCH, 1))


def static_stepper(wrap: Callable[[Any], Any]) -> Callable[[], Any]:
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, SIZES[0]], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = x
        for size in SIZES[1:-1]:
            h = fg.static.nn.fc(h, size, activation="relu")
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, SIZES[-1]), y))
        wrap(fg.optimizer.SGD(LR)).minimize(loss)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)
    x_value, y_value = data(get_world().rank)
    return lambda: exe.run(main, feed={"x": x_value, "y": y_value}, fetch_list=[loss], scope=scope)


def eager_stepper(wrap: Callable[[Any], Any]) -> Callable[[], Any]:
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers += [fg.nn.Linear(a, b), fg.nn.ReLU()]
    model = wrap(fg.nn.Sequential(*layers[:-1]))
    opt = getattr(wrap, "optimizer", alone)(fg.optimizer.SGD(LR, parameters=model.parameters()))
    x_value, y_value = data(get_world().rank)
    x, y = fg.to_tensor(x_value), fg.to_tensor(y_value)

    unfused = getattr(wrap, "unfused", False)

    def step():
        eager_fused.FUSE_UPDATES = not unfused
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        eager_fused.FUSE_UPDATES = True
    return step


STEPPERS = {"static": static_stepper, "eager": eager_stepper}


def steppers_for(world: World, mode: str, names: Any = None) -> dict[str, Callable[[], Any]]:
    """The "1 rank" model and each contender of `mode` (those in `names`, if given), built on
    every rank, each with its own parameters, each step reducing through its own path."""
    out = {ONE_RANK: on_path(world, Contender(alone, alone), STEPPERS[mode](alone))}  # unpinned, as the rest
    for name, contender in CONTENDERS.items():
        wrap = getattr(contender, mode)
        if wrap is None or (names is not None and name not in names):
            continue
        world.allreduce_path = contender.path  # DataParallel chooses at wrap time whether to overlap
        out[name] = on_path(world, contender, STEPPERS[mode](wrap))
    world.allreduce_path = "auto"
    return out


def on_path(world: World, contender: Contender, step: Callable[[], Any]) -> Callable[[], Any]:
    """`step` run with gradient buckets reduced through the contender's path ("auto" or "mpi"),
    shared rows written with streaming stores or not, activations placed or copied (the plan is
    compiled at the first step, in here)."""
    cores = {CPUS[world.rank % len(CPUS)]} if contender.pinned else set(CPUS)

    def run():
        os.sched_setaffinity(0, cores)
        world.allreduce_path = contender.path
        comm_split.ACTIVATIONS_IN_PLACE = (SPLIT_PLACE_DEFAULT if contender.activations_in_place is None
                                           else contender.activations_in_place)
        comm_shards.STREAM_PEER_PART = contender.stream_sharded
        comm_split.STREAM_PARAMS = contender.stream_params
        comm_stream.ROWS_POLICY = contender.rows_policy
        try:
            with comm_stream.STREAM.use(contender.stream):
                step()
            if contender.in_step:
                world.barrier()
        finally:
            comm_split.ACTIVATIONS_IN_PLACE, comm_shards.STREAM_PEER_PART = SPLIT_PLACE_DEFAULT, SHARDED_STORES_DEFAULT
            comm_split.STREAM_PARAMS, comm_stream.ROWS_POLICY = False, "adaptive"
    return run


class Doorbell:
    """A named pipe from rank 0 to rank 1: in a "1 rank" block rank 1 sleeps in a blocking read
    (no polling: its core idle, as the second core of a machine running a 1-rank job) until
    rank 0 has trained alone and rings."""

    def __init__(self, world: World, path: str):
        self.fd = os.open(path, os.O_WRONLY if world.rank == 0 else os.O_RDONLY)  # waits for the peer

    def ring(self) -> None:
        os.write(self.fd, b"!")

    def sleep(self) -> None:
        if not os.read(self.fd, 1):
            raise SystemExit("bench_dist: rank 0 closed the doorbell (it failed)")


def run_block(world: World, step: Callable[[], Any], block: int, doorbell: Doorbell | None, meter: Any,
              probe: CrossCoreProbe) -> Any:
    """`block` steps back to back after a barrier; (end times, `meter`'s record of each step, the
    cross-core probe's ratio just before the block) on a rank that trained, None on rank 1 in a
    "1 rank" block (given a `doorbell`: it sleeps)."""
    ratio = probe.measure()
    world.barrier()
    if doorbell is not None and world.rank:
        doorbell.sleep()
        return None
    ends, notes = [time.perf_counter()], []
    for _ in range(block):
        meter.start()
        step()
        ends.append(time.perf_counter())
        notes.append(meter.stop())
    if doorbell is not None:
        doorbell.ring()
    return ends, notes, ratio


class CrossCoreProbe:
    """What it costs right now to rewrite memory the other rank has read, against memory it has not.

    Why: on this 2-vCPU virtual machine the host moves the two vCPUs between placements where a
    store to a cache line the other core holds costs about 1 ns more than a private store and
    placements where it costs about 25 ns more (2.5 GB/s: 1 ms per 2.7 MB rewritten), for minutes
    at a time. Every data-parallel step on shared memory rewrites memory the peer read the step
    before (its row of a bucket, its rows of the parameters), so the steps' times follow that
    state, not the code. Each rank owns a row of PROBE_BYTES in an MPI shared window; `measure()`
    (collective) writes the row and lets the peer read it, then does so `PROBE_REPS` more times, and times the writes
    against writes of a private array of the same size: the ratio of the fastest of each."""

    PROBE_BYTES, PROBE_REPS = 512 << 10, 4

    def __init__(self, world: World) -> None:
        self.world = world
        n = self.PROBE_BYTES // 4
        node = world.node_comm()
        win = world.mpi.Win.Allocate_shared(2 * n * 4 if node.Get_rank() == 0 else 0, 4, comm=node)
        memory, _ = win.Shared_query(0)
        self.rows = np.frombuffer(memory, "float32", count=2 * n).reshape(2, n)
        self.win, self.node = win, node
        self.source = np.full(n, world.rank + 1.0, "float32")
        self.private = np.zeros(n, "float32")
        win.Lock_all(world.mpi.MODE_NOCHECK)

    def measure(self) -> float:
        own, peer = self.rows[self.world.rank], self.rows[1 - self.world.rank]
        shared, private = [], []
        for _ in range(self.PROBE_REPS + 1):  # the first only makes the peer read the row
            start = time.perf_counter()
            np.copyto(self.private, self.source)
            middle = time.perf_counter()
            np.copyto(own, self.source)
            private.append(middle - start)
            shared.append(time.perf_counter() - middle)
            self.win.Sync()
            self.world.barrier()
            self.win.Sync()
            float(peer.sum())  # the peer's row read: its lines now in this core's cache
            self.world.barrier()
        # the fastest of each (a lost core only adds time), the first write left out: the peer had
        # not read the row since the last block
        return min(shared[1:]) / max(min(private[1:]), 1e-9)


FAR = 4.0  # probe ratio from which a block counts as run with the cores "far" apart (about 1 near, 10-20 far)


def job_step_times(ranks: list[Any]) -> list[float]:
    """A block's step times (seconds) as the job sees them: between the later rank's ends of two
    consecutive steps; the first WARM_STEPS steps (they warm the block's model) are left out."""
    ends = np.max([r[0] for r in ranks if r is not None], axis=0)
    return np.diff(ends)[WARM_STEPS:].tolist()


def run_rounds(world: World, steppers: dict[str, Callable[[], Any]], rounds: int, block: int,
               meter: Any, doorbell: Doorbell) -> dict[str, list[list[Any]]]:
    """Contenders take turns in blocks, in an order shuffled each round (the same on every rank);
    per contender, per block, what each rank recorded (gathered on every rank)."""
    for step in steppers.values():  # warm up: plans compiled, buckets made, memory mapped
        for _ in range(3):
            step()
    probe = CrossCoreProbe(world)
    blocks: dict[str, list[Any]] = {name: [] for name in steppers}
    for r in range(rounds):
        order = list(steppers)
        random.Random(r).shuffle(order)
        for name in order:
            blocks[name].append(run_block(world, steppers[name], block, doorbell if name == ONE_RANK else None, meter,
                                           probe))
    every = world.all_gather_object(blocks, "bench_dist blocks")
    return {name: [[rank[name][b] for rank in every] for b in range(rounds)] for name in steppers}


class CostMeter:
    """Rank 0's CPU time and time inside collectives, per step."""

    def __init__(self, world: World):
        self.world = world

    def start(self) -> None:
        self.began = (time.thread_time(), self.world.comm_seconds)

    def stop(self) -> tuple[float, float]:
        return time.thread_time() - self.began[0], self.world.comm_seconds - self.began[1]


def worker(out_path: str, mode: str, rounds: int, block: int, only: list[str] | None = None) -> None:
    """Runs on each of the 2 ranks: every contender of `mode`, taking turns in blocks."""
    dist.init_parallel_env()
    world = get_world()
    if world.size != 2:
        raise SystemExit(f"bench_dist: the worker needs 2 ranks, got {world.size}")
    names = None if not only else {"no all-reduce", *only}
    blocks = run_rounds(world, steppers_for(world, mode, names), rounds, block, CostMeter(world),
                        Doorbell(world, out_path + DOORBELL))
    result: dict[str, Any] = {}
    for name, per_block in blocks.items():
        times, cpu, comm, probed = [], [], [], []
        for ranks in per_block:
            times += job_step_times(ranks)
            notes = ranks[0][1][WARM_STEPS:]
            cpu += [c for c, _ in notes]
            comm += [w for _, w in notes]
            probed += [ranks[0][2]] * len(notes)
        result[f"{mode}|{name}"] = [times, comm, cpu, probed]
    result["allreduce"] = allreduce_times(world)
    if world.rank == 0:
        Path(out_path).write_text(json.dumps(result))


class PhaseClock:
    """Marks (wall, CPU) times inside a static step: where the bucket op starts, packing ends,
    the barrier is passed and the sums are made (wrapping the op's kernel and the two-rank
    shared bucket's methods: the measurement of `--phases`, not the benchmark's steps)."""

    def __init__(self):
        self.marks = {}
        op = get_op_def("c_bucket_allreduce")
        kernel, start, arrive = op.kernel, comm_buckets.SharedBucket.start, comm_buckets.PairReduce._arrive
        self._time_sharded()
        self._time_split()

        def timed_kernel(xs, **attrs):
            self.mark("op")
            out = kernel(xs, **attrs)
            self.mark("summed")
            return out

        def timed_start(bucket, *args, **kwargs):
            self.mark("packed")
            return start(bucket, *args, **kwargs)

        def timed_arrive(request):
            self.mark("barrier")
            return arrive(request)
        op.kernel, comm_buckets.SharedBucket.start, comm_buckets.PairReduce._arrive = (
            timed_kernel, timed_start, timed_arrive)

    def _time_sharded(self):
        """The sharded SGD op (c_bucket_sgd): packed, barrier passed, half summed and updated, published."""
        op = get_op_def("c_bucket_sgd")
        kernel, pack, exchange, gather = (op.kernel, comm_shards.pack, comm_shards.exchange,
                                          comm_shards.NodeCopy.gather)

        def timed_kernel(*args, **attrs):
            self.mark("op")
            out = kernel(*args, **attrs)
            self.mark("summed")
            return out

        def timed_pack(*args, **kwargs):
            pack(*args, **kwargs)
            self.mark("packed")

        def timed_exchange(*args, **kwargs):
            out = exchange(*args, **kwargs)
            self.mark("barrier")
            return out

        def timed_gather(copy, *args, **kwargs):
            self.mark("updated")
            return gather(copy, *args, **kwargs)
        op.kernel, comm_shards.pack, comm_shards.exchange, comm_shards.NodeCopy.gather = (
            timed_kernel, timed_pack, timed_exchange, timed_gather)
        sgd = fused_shards.sgd

        def timed_sgd(*args, **kwargs):  # the default (shard=False): its first piece starts after the barrier
            if "barrier" not in self.marks:
                self.mark("barrier")
                self.mark("replicated")
            return sgd(*args, **kwargs)
        fused_shards.sgd = timed_sgd

    def _time_split(self):
        """The split weight gradients (c_split_matmul_grad, c_split_sgd): activations written into
        shared memory, the barrier passed, this rank's rows computed (and updated), the second
        barrier passed (the averaged rows, or the updated parameters, published)."""
        write, barrier, compute = (comm_split.SharedActivations.write, comm_split.barrier,
                                   comm_split.compute_own_rows)
        for op_type in ("c_split_matmul_grad", "c_split_sgd"):
            op = get_op_def(op_type)
            op.kernel = self._timed_op(op.kernel)

        def timed_write(*args, **kwargs):
            write(*args, **kwargs)
            self.mark("written")

        def timed_barrier(*args, **kwargs):
            name = "passed" if "passed" not in self.marks else "published"
            if name == "published":
                self.mark("updated")
            barrier(*args, **kwargs)
            self.mark(name)

        def timed_compute(*args, **kwargs):
            compute(*args, **kwargs)
            self.mark("computed")
        comm_split.SharedActivations.write, comm_split.barrier, comm_split.compute_own_rows = (
            timed_write, timed_barrier, timed_compute)

    def _timed_op(self, kernel):
        def timed(*args, **attrs):
            self.mark("op")
            out = kernel(*args, **attrs)
            self.mark("split done")
            return out
        return timed

    def mark(self, name):
        self.marks[name] = (time.perf_counter(), time.thread_time())

    def start(self) -> None:  # the meter protocol of run_block
        self.marks = {}
        self.mark("start")

    def stop(self) -> dict[str, tuple[float, float]]:
        self.mark("end")
        return self.marks


PHASE_CONTENDERS = ("no all-reduce", "bucketed", "bucketed, unfused update", "bucketed, sharded update", "split weight gradients",
                    "split weight gradients, sharded update")  # beside "1 rank"


def phase_worker(out_path: str, rounds: int, block: int, only: list[str] | None = None) -> None:
    """Runs on each of the 2 ranks: the static step on 1 rank, on 2 without and with the bucket
    all-reduce (shared memory), in blocks as the benchmark's, split into phases."""
    clock = PhaseClock()  # before the programs are built: their plans bind the kernel
    dist.init_parallel_env()
    world = get_world()
    if world.size != 2:
        raise SystemExit(f"bench_dist: the phase worker needs 2 ranks, got {world.size}")
    names = {"no all-reduce", *only} if only else PHASE_CONTENDERS
    blocks = run_rounds(world, steppers_for(world, "static", names), rounds, block, clock,
                        Doorbell(world, out_path + DOORBELL))
    if world.rank == 0:
        Path(out_path).write_text(json.dumps(phase_samples(blocks)))


def phase_samples(blocks: dict[str, list[list[Any]]]) -> dict[str, list[float]]:
    """Per contender and phase, the samples (ms) over steps: the job's step (wall), each rank's
    CPU time of each part, its wait at the barrier (wall) and the ranks' skew at the op."""
    out: dict[str, list[float]] = {}

    def add(key, seconds):
        out.setdefault(key, []).append(seconds * 1e3)
    for name, per_block in blocks.items():
        for ranks in per_block:
            for seconds in job_step_times(ranks):
                add(f"{name}|step (the job's, wall)", seconds)
            ran = [(rank, r[1][WARM_STEPS:]) for rank, r in enumerate(ranks) if r is not None]
            for k in range(len(ran[0][1])):
                for rank, notes in ran:
                    m = notes[k]
                    add(f"{name}|cpu, rank {rank}: whole step", m["end"][1] - m["start"][1])
                    if "split done" in m:  # split weight gradients: no all-reduce
                        add(f"{name}|cpu, rank {rank}: forward and backward", m["op"][1] - m["start"][1])
                        add(f"{name}|cpu, rank {rank}: write the activations into shared memory",
                            m["written"][1] - m["op"][1])
                        add(f"{name}|wall, rank {rank}: wait at the barrier", m["passed"][0] - m["written"][0])
                        add(f"{name}|cpu, rank {rank}: its rows of the weight gradients (GEMMs, K=128)",
                            m["computed"][1] - m["passed"][1])
                        add(f"{name}|cpu, rank {rank}: update of its rows (sharded)", m["updated"][1] - m["computed"][1])
                        add(f"{name}|wall, rank {rank}: second barrier (rows published)",
                            m["published"][0] - m["updated"][0])
                        add(f"{name}|cpu, rank {rank}: rest of the step (update ops)", m["end"][1] - m["split done"][1])
                    elif "replicated" in m:  # the default: both rows summed and SGD, in one pass, on every rank
                        add(f"{name}|cpu, rank {rank}: forward and backward", m["op"][1] - m["start"][1])
                        add(f"{name}|cpu, rank {rank}: probe, pack into the bucket (biases)", m["packed"][1] - m["op"][1])
                        add(f"{name}|wall, rank {rank}: wait at the barrier", m["barrier"][0] - m["packed"][0])
                        add(f"{name}|cpu, rank {rank}: sum of the two rows and SGD, one pass",
                            m["summed"][1] - m["barrier"][1])
                        add(f"{name}|cpu, rank {rank}: rest of the step", m["end"][1] - m["summed"][1])
                    elif "updated" in m:  # the sharded update: the sum and the SGD of half the bucket, in one pass
                        add(f"{name}|cpu, rank {rank}: forward and backward", m["op"][1] - m["start"][1])
                        add(f"{name}|cpu, rank {rank}: pack the peer's half into the bucket", m["packed"][1] - m["op"][1])
                        add(f"{name}|wall, rank {rank}: wait at the barrier", m["barrier"][0] - m["packed"][0])
                        add(f"{name}|cpu, rank {rank}: sum and update (SGD) of its half", m["updated"][1] - m["barrier"][1])
                        add(f"{name}|wall, rank {rank}: publish (barrier)", m["summed"][0] - m["updated"][0])
                        add(f"{name}|cpu, rank {rank}: rest of the step", m["end"][1] - m["summed"][1])
                    elif "op" in m:
                        add(f"{name}|cpu, rank {rank}: forward and backward", m["op"][1] - m["start"][1])
                        add(f"{name}|cpu, rank {rank}: pack into the bucket", m["packed"][1] - m["op"][1])
                        add(f"{name}|wall, rank {rank}: wait at the barrier", m["barrier"][0] - m["packed"][0])
                        add(f"{name}|cpu, rank {rank}: sum of the two rows", m["summed"][1] - m["barrier"][1])
                        add(f"{name}|cpu, rank {rank}: update (SGD)", m["end"][1] - m["summed"][1])
                if len(ran) == 2 and "op" in ran[0][1][k]:
                    add(f"{name}|skew of the ranks at the op (wall)",
                        abs(ran[0][1][k]["op"][0] - ran[1][1][k]["op"][0]))
    return out


# ------------------------------------------------------------------ --ops: CPU time per kind of op
class OpClock:
    """Rank's CPU time per op of a static step, by op kind: each plan compiled from now on is
    recompiled with a `thread_time` pair around every op's line (about 1 us per op), so the
    plain program's updates, which the executor runs inside the backward pass, are counted
    apart from the forward and backward ops they sit between. "outside ops" is the plan's own
    lines (loads, frees, stores) and the benchmark's."""

    LINE = re.compile(r"^    (?P<stmt>[^#].*?)(?P<comment>  # op (?P<n>\d+): .*)$")

    def __init__(self):
        self.spent: dict[str, float] = {}
        compile_block = executor_module.compile_block

        def timed_compile(block, *args, **kwargs):
            plan = compile_block(block, *args, **kwargs)
            namespace = plan.fn.__globals__
            namespace["_thread_time"], namespace["_spent"] = time.thread_time, self.spent
            lines = []
            for line in plan.source.split("\n"):
                m = self.LINE.match(line)
                if m and not m["stmt"].rstrip().endswith(":"):
                    kind = self.kind(block.ops[int(m["n"])])
                    line = (f"    _t = _thread_time(); {m['stmt']}; _spent[{kind!r}] = _spent.get({kind!r}, 0.0) "
                            f"+ _thread_time() - _t{m['comment']}")
                lines.append(line)
            exec(compile("\n".join(lines), "<bench_dist --ops plan>", "exec"), namespace)
            plan.fn = namespace["run"]
            return plan
        executor_module.compile_block = timed_compile

    @staticmethod
    def kind(op) -> str:
        if op.type.startswith("c_split_"):
            return "split weight gradients (GEMMs, comm, update)"
        if op.role == OPTIMIZE or op.type.startswith("c_"):
            return "update and communication"
        if op.type == "matmul":
            if op.role != BACKWARD:
                return "forward GEMMs"
            return "backward GEMMs, weight gradients" if op.attr("transpose_x") else "backward GEMMs, input gradients"
        return "other backward ops" if op.role == BACKWARD else "other forward ops"

    def start(self) -> None:  # the meter protocol of run_block
        self.spent.clear()
        self.began = time.thread_time()

    def stop(self) -> dict[str, float]:
        out = dict(self.spent)
        out["whole step"] = time.thread_time() - self.began
        out["outside ops"] = out["whole step"] - sum(self.spent.values())
        return out


OP_KINDS = ("forward GEMMs", "other forward ops", "backward GEMMs, input gradients",
            "backward GEMMs, weight gradients", "other backward ops", "split weight gradients (GEMMs, comm, update)",
            "update and communication", "outside ops",
            "whole step")


def every_step(world: World, step: Callable[[], Any], how: str) -> Callable[[], Any]:
    """`step` then, each step, a barrier ("barrier": the ranks leave it together, as after a
    collective) or 0.2 ms of waiting that gives the core away (sched_yield, as a collective's wait
    does), with no peer involved ("yield")."""
    def run():
        step()
        if how == "barrier":
            world.barrier()
        else:
            end = time.perf_counter() + 0.0002
            while time.perf_counter() < end:
                os.sched_yield()
    return run


OPS_CONTENDERS = ("no all-reduce", "bucketed", "bucketed, ordinary stores", "bucketed, unfused update",
                  "bucketed, sharded update", "split weight gradients", "split weight gradients, sharded update")  # beside "1 rank" and two diagnostics
OPS_DIAGNOSTICS = {"no all-reduce, a barrier each step": "barrier", "no all-reduce, 0.2 ms yielding each step": "yield"}


def ops_worker(out_path: str, rounds: int, block: int, only: list[str] | None = None) -> None:
    """Runs on each of the 2 ranks: the static contenders and the diagnostics, CPU time per op kind."""
    clock = OpClock()  # before the programs are compiled
    dist.init_parallel_env()
    world = get_world()
    steppers = steppers_for(world, "static", {"no all-reduce", *only} if only else OPS_CONTENDERS)
    for name, how in ({} if only else OPS_DIAGNOSTICS).items():
        steppers[name] = every_step(world, STEPPERS["static"](alone), how)
    blocks = run_rounds(world, steppers, rounds, block, clock, Doorbell(world, out_path + DOORBELL))
    samples: dict[str, list[float]] = {}
    for name, per_block in blocks.items():
        for ranks in per_block:
            for rank, r in enumerate(ranks):
                for notes in ([] if r is None else r[1][WARM_STEPS:]):
                    for kind in OP_KINDS:
                        samples.setdefault(f"{name}|{rank}|{kind}", []).append(notes.get(kind, 0.0) * 1e3)
    if world.rank == 0:
        Path(out_path).write_text(json.dumps(samples))


def ops(args: argparse.Namespace) -> None:
    """`--ops`: rank 0's and rank 1's CPU time per op kind, every static contender (median, p10)."""
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for launch in range(args.launches):
            for key, samples in launch_worker(args, "--ops-worker", Path(tmp) / f"{launch}.json",
                                              *only_flags(args)).items():
                results.setdefault(key, []).extend(samples)
    names = list(dict.fromkeys(key.split("|")[0] for key in results))
    for rank in (0, 1):
        rows = []
        for kind in OP_KINDS:
            row = [kind]
            for name in names:
                samples = results.get(f"{name}|{rank}|{kind}")
                row.append("-" if not samples else "{:.3f} / {:.3f}".format(*percentiles(samples, 50, 10)))
            rows.append(row)
        print_table(f"static step, rank {rank}: CPU ms per step by op kind, median / 10th percentile of "
                    f"{steps_per_row(args)} steps", ["op kind", *names], rows)


def only_flags(args: argparse.Namespace) -> list[str]:
    return [flag for name in args.only or () for flag in ("--only", name)]


def launch_worker(args: argparse.Namespace, flag: str, out: Path, *extra: str) -> Any:
    """Start a 2-rank job running this script with `flag`; what its rank 0 wrote."""
    os.mkfifo(str(out) + DOORBELL)
    subprocess.run([sys.executable, "-m", "fluidgrad", "launch", "-n", "2", __file__, "--rounds", str(args.rounds),
                    "--block", str(args.block), flag, str(out), *extra],
                   check=True, cwd=Path(__file__).resolve().parents[1])
    return json.loads(out.read_text())


def phases(args: argparse.Namespace) -> None:
    """`--phases`: the static step split into its parts, 1 rank against 2 (shared bucket)."""
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for launch in range(args.launches):
            for key, samples in launch_worker(args, "--phase-worker", Path(tmp) / f"{launch}.json",
                                              *only_flags(args)).items():
                results.setdefault(key, []).extend(samples)
    rows = []
    for key, samples in results.items():
        name, what = key.split("|")
        median, fast = percentiles(samples, 50, 10)
        rows.append([name if name == ONE_RANK else f"2 ranks, {name}", what, f"{median:.3f}", f"{fast:.3f}"])
    print_table(f"static step in parts, MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, two-rank shared "
                f"bucket (median and 10th percentile of {steps_per_row(args)} steps)",
                ["ranks", "part", "median ms", "p10 ms"], rows)


def allreduce_times(world: World, repeat: int = 30) -> dict[str, float]:
    """Median seconds of one blocking MPI all-reduce (Iallreduce, then wait) of 8 bytes and of
    the whole MLP gradient: the latency (alpha) and bandwidth (beta) terms of the cost model
    in docs/distributed.md; and of the whole gradient through a shared-memory bucket, its
    packing included."""
    n_grad = sum(a * b + b for a, b in zip(SIZES[:-1], SIZES[1:]))
    gradient = np.ones(n_grad, "float32")
    world.allreduce_path = "auto"
    bucket = world.bucket("bench_dist", n_grad, "float32")

    def shared():
        np.copyto(bucket.input, gradient)
        bucket.start().wait()

    def mpi(array):
        return lambda: world.start_all_reduce(array, "sum").wait()
    contenders = {str(n * 4): mpi(np.ones(n, "float32")) for n in (2, n_grad)}
    if bucket.shared:
        contenders["shared"] = shared
    medians = {}
    for name, run in contenders.items():
        samples = []
        for _ in range(repeat):
            world.barrier()
            start = time.perf_counter()
            run()
            samples.append(time.perf_counter() - start)
        medians[name] = float(np.median(samples))
    return medians


def percentiles(samples: Any, *qs: float) -> list[float]:
    return [float(q) for q in np.percentile(samples, qs)]


def steps_per_row(args: argparse.Namespace) -> int:
    return args.rounds * (args.block - WARM_STEPS) * args.launches


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="turns of every contender per job")
    parser.add_argument("--launches", type=int, default=3, help="2-rank jobs per mode, modes alternating")
    parser.add_argument("--block", type=int, default=10,
                        help=f"consecutive steps of one contender (the first {WARM_STEPS} not timed)")
    parser.add_argument("--phases", action="store_true",
                        help="split the static step into its parts (compute, pack, barrier, sum, update)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--ops", action="store_true",
                        help="CPU time per kind of op (forward and backward GEMMs, other ops, update and communication)")
    parser.add_argument("--only", action="append", choices=list(CONTENDERS), metavar="CONTENDER",
                        help="run only this contender (repeatable; '1 rank' and 'no all-reduce' always run)")
    parser.add_argument("--phase-worker", help=argparse.SUPPRESS)
    parser.add_argument("--ops-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.block <= WARM_STEPS:
        parser.error(f"--block must be more than {WARM_STEPS} (the first {WARM_STEPS} steps of a block are not timed)")
    if args.worker:
        return worker(args.worker, args.mode, args.rounds, args.block, args.only)
    if args.phase_worker:
        return phase_worker(args.phase_worker, args.rounds, args.block, args.only)
    if args.ops_worker:
        return ops_worker(args.ops_worker, args.rounds, args.block, args.only)
    if args.phases:
        return phases(args)
    if args.ops:
        return ops(args)
    results: dict[str, list[list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for launch in range(args.launches):
            for mode in MODES:
                if args.only and all(getattr(CONTENDERS[name], mode) is None for name in args.only):
                    continue
                found = launch_worker(args, "--worker", Path(tmp) / f"{mode}-{launch}.json", "--mode", mode,
                                      *only_flags(args))
                for size, seconds in found.pop("allreduce", {}).items():
                    results.setdefault(f"allreduce|{size}", [[], [], [], []])[0].append(seconds)
                for key, samples in found.items():
                    entry = results.setdefault(key, [[], [], [], []])
                    for kept, new in zip(entry, samples):
                        kept += new
    rows, versus = [], []
    for mode in MODES:
        if f"{mode}|{ONE_RANK}" not in results:
            continue
        base, base_fast = percentiles(results[f"{mode}|{ONE_RANK}"][0], 50, 10)
        alone_step = float(np.median(results[f"{mode}|no all-reduce"][0]))
        for name in (ONE_RANK, *CONTENDERS):
            if f"{mode}|{name}" not in results:
                continue
            t, c, work, _ = results[f"{mode}|{name}"]
            step, fast, low, high = percentiles(t, 50, 10, 25, 75)
            label = name if name == ONE_RANK else f"2 ranks, {name}"
            rows.append([mode, label, f"{step * 1e3:.2f}", f"{low * 1e3:.2f}-{high * 1e3:.2f}", f"{fast * 1e3:.2f}",
                         f"{float(np.median(c)) * 1e3:.2f}", f"{float(np.median(work)) * 1e3:.2f}",
                         f"{step / base:.2f}x", f"{fast / base_fast:.2f}x", f"{step / alone_step:.2f}x"])
        for bucketed_name, per_param_name in PAIRS:
            if f"{mode}|{bucketed_name}" not in results or f"{mode}|{per_param_name}" not in results:
                continue
            bucketed = np.array(results[f"{mode}|{bucketed_name}"][0])
            per_param = np.array(results[f"{mode}|{per_param_name}"][0])
            ratio = per_param / bucketed  # the two take turns in the same processes: paired in order
            path = PATH_NAMES.get(CONTENDERS[bucketed_name].path, CONTENDERS[bucketed_name].path)
            versus.append([mode, path + (", sharded update" if "sharded" in bucketed_name else ""),
                           f"{np.median(bucketed) * 1e3:.2f}", f"{np.median(per_param) * 1e3:.2f}",
                           f"{np.median(ratio):.2f}x", f"{np.mean(ratio > 1):.0%}"])
    fits = []
    sizes = sorted(int(k.split("|")[1]) for k in results if k.startswith("allreduce|") and k[-1].isdigit())
    if len(sizes) == 2:
        small, large = (float(np.median(results[f"allreduce|{n}"][0])) for n in sizes)
        alpha = small / 2  # ring on p ranks: 2 (p - 1) messages; p = 2
        beta = (large - small) / (2 * 0.5 * (sizes[1] - sizes[0]))
        fits = [[f"{n} bytes", f"{float(np.median(results[f'allreduce|{n}'][0])) * 1e3:.3f}"] for n in sizes]
        fits.append(["fit: alpha (s/message), beta (s/byte)", f"{alpha:.2e}, {beta:.2e}"])
        if "allreduce|shared" in results:
            fits.append([f"{sizes[1]} bytes through a shared-memory bucket (packing included)",
                         f"{float(np.median(results['allreduce|shared'][0])) * 1e3:.3f}"])
    print_table(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, SGD, 1 BLAS thread per rank; 1 rank and "
                f"2 ranks in the same 2-rank jobs, in blocks of {args.block} steps (median of {steps_per_row(args)} steps)",
                ["mode", "ranks / all-reduce", "step ms", "p25-p75 ms", "p10 ms", "comm ms", "cpu ms", "vs 1 rank",
                 "vs 1 rank (p10)", "vs no all-reduce"], rows)
    print_states(results)
    print_table("bucketed vs one all-reduce per parameter (2 ranks, taking turns in blocks; steps paired in order)",
                ["mode", "all-reduce path", "bucketed ms", "per-parameter ms", "per-parameter / bucketed",
                 "steps where bucketed is faster"], versus)
    if fits:
        print_table("one blocking MPI all-reduce on 2 ranks (median)", ["message", "ms"], fits)
        compute = float(np.median(results[f"static|{ONE_RANK}"][0]))
        print_cost_model(compute, {"this machine, MPI Iallreduce (measured)": (alpha, beta), **NETWORKS})


def print_states(results: dict[str, list[list[float]]]) -> None:
    """The main table's medians again, split by the cross-core probe taken before each block
    (CrossCoreProbe): blocks run while a store to memory the peer has read cost little ("near")
    and while it cost FAR times a private store or more ("far")."""
    rows, counts = [], {}
    for mode in MODES:
        base: dict[bool, float] = {}
        for name in (ONE_RANK, *CONTENDERS):
            if f"{mode}|{name}" not in results:
                continue
            times, _, work, probed = (np.array(x) for x in results[f"{mode}|{name}"])
            row = [mode, name if name == ONE_RANK else f"2 ranks, {name}"]
            for far in (False, True):
                chosen = times[(probed >= FAR) == far]
                counts[far] = counts.get(far, 0) + len(chosen)
                if not len(chosen):
                    row += ["-", "-", "-", "0"]
                    continue
                step = float(np.median(chosen))
                cpu = float(np.median(work[(probed >= FAR) == far]))
                base.setdefault(far, step)
                row += [f"{step * 1e3:.2f}", f"{step / base[far]:.2f}x" if far in base else "-", f"{cpu * 1e3:.2f}",
                        str(len(chosen))]
            rows.append(row)
    probes = np.concatenate([np.array(v[3]) for k, v in results.items() if not k.startswith("allreduce|")])
    share = counts.get(True, 0) / max(1, counts.get(True, 0) + counts.get(False, 0))
    print_table(f"the same steps by the state of the cores, probed before each block: rewriting {CrossCoreProbe.PROBE_BYTES >> 10} KB "
                f"the peer read costs {np.percentile(probes, 10):.1f}x-{np.percentile(probes, 90):.1f}x a private "
                f"write (10th-90th percentile), far (>= {FAR:g}x) in {share:.0%} of the steps",
                ["mode", "ranks / all-reduce", "near: step ms", "near: vs 1 rank", "near: cpu ms", "near: steps",
                 "far: step ms", "far: vs 1 rank", "far: cpu ms", "far: steps"], rows)


# assumed links for the projection: (alpha seconds per message, beta seconds per byte)
NETWORKS = {"10 Gb Ethernet, TCP (assumed)": (30e-6, 0.8e-9), "100 Gb InfiniBand (assumed)": (3e-6, 0.08e-9)}
RANKS = (8, 16, 32, 64, 128, 256)


def ring_allreduce_seconds(p, n_bytes, alpha, beta, buckets):
    """Ring all-reduce: each bucket is 2 (p - 1) steps (reduce-scatter, then all-gather), each
    step one message of n / p bytes: latency 2 (p - 1) alpha per bucket, bandwidth 2 (p - 1) / p n beta."""
    return buckets * 2 * (p - 1) * alpha + 2 * (p - 1) / p * n_bytes * beta


def print_cost_model(compute, networks):
    """Expected weak-scaling step time = 1-rank step + all-reduce (no overlap: an upper bound)."""
    n_bytes = 4 * sum(a * b + b for a, b in zip(SIZES[:-1], SIZES[1:]))
    rows = []
    for name, (alpha, beta) in networks.items():
        for p in RANKS:
            bucketed = ring_allreduce_seconds(p, n_bytes, alpha, beta, 1)  # one bucket: 2.7 MB < 25 MB
            per_param = ring_allreduce_seconds(p, n_bytes, alpha, beta, 2 * (len(SIZES) - 1))
            rows.append([name, p, f"{bucketed * 1e3:.2f}", f"{(compute + bucketed) * 1e3:.1f}",
                         f"{compute / (compute + bucketed):.0%}", f"{(compute + per_param) * 1e3:.1f}"])
    print_table(f"expected step time, ring all-reduce of {n_bytes} bytes, 1-rank step {compute * 1e3:.1f} ms",
                ["link", "ranks", "all-reduce ms", "step ms (bucketed)", "efficiency", "step ms (per-parameter)"],
                rows)


if __name__ == "__main__":
    main()
