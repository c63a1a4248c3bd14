"""Where the eager data-parallel step's time goes (issue 14): bench_dist.py's MLP on 2 ranks,
split into phases, CPU time per rank (the work, without the time a rank lost its core).

    python benchmarks/bench_dist_eager.py [--rounds 20] [--block 8] [--launches 1]

Contenders (DataParallel with SGD, two ranks on one node, the shared-memory path), taking turns
in blocks of `--block` steps in the same 2-rank job, in an order shuffled every round (the first
step of a block is not counted): "no all-reduce" (each rank trains alone: what the others add
to), DataParallel bucketed and per-parameter (backward packs the gradients into the bucket rows
and starts the barrier; the SGD step sums the rows and updates in one pass, eager_fused.py),
DataParallel bucketed with the unfused update (the gradients averaged into `.grad` during
backward, then the plain SGD step), and the sharded update (eager_sharding.py: backward without
communication, then each rank sums and updates half of each bucket), bucketed and per-parameter.

Phases (in the order they occur): forward; backward (DataParallel: up to the routing node's
backward, the packing of the gradients into the bucket rows and the start of the barrier, the
wait for the peer's rows and the sum of the rows handed to `.grad` when unfused, the rest); the
optimizer step (fused: up to the update, the wait for the peer's rows, the sum and update in one
pass; sharded: its preparation, the packing of the peer's half, the wait at the barrier, the sum
and update of its own half, the publishing barrier; the rest); clear_grad. Each row: the median
and the 10th percentile over every counted step of rank 0 and rank 1. The CPU time of a wait is the MPI polling loop's.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_dist import LR, SIZES, data, dp_model, dp_model_unfused, dp_sharded  # noqa: E402
from common import print_table  # noqa: E402

import fluidgrad as fg  # noqa: E402
import fluidgrad.distributed as dist  # noqa: E402
from fluidgrad.distributed import data_parallel, eager_fused, eager_stores  # noqa: E402
from fluidgrad.nn import functional as F  # noqa: E402
from fluidgrad.ops import comm_buckets, comm_shards  # noqa: E402
from fluidgrad.ops.comm import get_world  # noqa: E402

def stores(wrap: Callable[[Any], Any], policy: str) -> Callable[[Any], Any]:
    """The same contender, its shared rows written with ordinary stores (and offered to the weight
    gradients' GEMMs) or always streamed (ops/comm_stream.py), instead of the choice the default
    makes each step (distributed/eager_stores.py)."""
    def wrapped(model: Any) -> Any:
        return wrap(model)
    wrapped.policy = policy
    return wrapped


CONTENDERS: dict[str, Callable[[Any], Any]] = {
    "no all-reduce": lambda model: model,
    "DataParallel, bucketed": dp_model(25.0),
    "DataParallel, per-parameter": dp_model(0.0),
    "DataParallel, bucketed, ordinary stores": stores(dp_model(25.0), "ordinary"),
    "DataParallel, bucketed, streamed rows": stores(dp_model(25.0), "stream"),
    "DataParallel, bucketed, unfused update": dp_model_unfused(25.0),
    "sharded update, bucketed": dp_sharded(25.0),
    "sharded update, per-parameter": dp_sharded(0.0),
}
# (mark, name of the phase that ends there), in step order; a step has the marks its path passes
PHASES = [("forward", "forward"), ("gather", "backward up to the routing node"),
          ("packed", "pack into the rows, start the barrier"), ("arrived", "wait for the peer's rows"),
          ("summed", "sum of the rows into .grad"), ("backward", "rest of the backward"),
          ("f_step", "step: up to the fused update"), ("f_arrived", "step: wait for the peer's rows"),
          ("f_updated", "step: sum and update in one pass"),
          ("s_pack", "step: preparation"), ("s_packed", "step: pack the peer's half"),
          ("s_arrived", "step: wait at the barrier"), ("s_updated", "step: sum and update of its half"),
          ("s_published", "step: publish (barrier)"), ("step", "step (SGD) / the rest of it"),
          ("cleared", "clear_grad")]


class Clock:
    """(wall, CPU) marks inside a step, set by wrapping the functions the paths pass through; a
    mark keeps its first time in a step (with several buckets: the first bucket's phases)."""

    def __init__(self) -> None:
        self.marks: dict[str, tuple[float, float]] = {}
        self._wrap(data_parallel._ReduceStep, "ready", before="gather")
        self._wrap(data_parallel._ReduceStep, "fill", before="gather")
        self._wrap(data_parallel._ReduceStep, "finish", before="packed", after="summed")
        self._wrap(data_parallel._ReduceStep, "defer", before="packed")
        self._wrap(data_parallel._ReduceStep, "fused_update", before="f_step")
        self._wrap(data_parallel._ReduceStep, "_sums", after="f_arrived")
        self._wrap(eager_fused, "update_bucket", after="f_updated")
        self._wrap(comm_buckets.PairReduce, "_arrive", before="arrived")
        self._wrap(comm_shards, "pack", before="s_pack", after="s_packed")
        self._wrap(comm_shards, "exchange", after="s_arrived")
        self._wrap(comm_shards.NodeCopy, "gather", before="s_updated", after="s_published")

    def _wrap(self, owner: Any, name: str, before: str | None = None, after: str | None = None) -> None:
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if before:
                self.mark(before)
            out = inner(*args, **kwargs)
            if after:
                self.mark(after)
            return out
        setattr(owner, name, timed)

    def mark(self, name: str) -> None:
        if name not in self.marks:
            self.marks[name] = (time.perf_counter(), time.thread_time())


def stepper(wrap: Callable[[Any], Any], clock: Clock) -> Callable[[], dict]:
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers += [fg.nn.Linear(a, b), fg.nn.ReLU()]
    model = wrap(fg.nn.Sequential(*layers[:-1]))
    opt = getattr(wrap, "optimizer", lambda o: o)(fg.optimizer.SGD(LR, parameters=model.parameters()))
    x_value, y_value = data(get_world().rank)
    x, y = fg.to_tensor(x_value), fg.to_tensor(y_value)
    unfused = getattr(wrap, "unfused", False)
    policy = getattr(wrap, "policy", "adaptive")

    def step() -> dict:
        eager_stores.POLICY = policy
        try:
            return timed_step()
        finally:
            eager_stores.POLICY = "adaptive"

    def timed_step() -> dict:
        eager_fused.FUSE_UPDATES = not unfused
        clock.marks = {}
        clock.mark("start")
        loss = F.cross_entropy(model(x), y)
        clock.mark("forward")
        loss.backward()
        clock.mark("backward")
        opt.step()
        clock.mark("step")
        opt.clear_grad()
        clock.mark("cleared")
        eager_fused.FUSE_UPDATES = True
        return clock.marks
    return step


def worker(out_path: str, rounds: int, block: int) -> None:
    clock = Clock()
    dist.init_parallel_env()
    world = get_world()
    if world.size != 2:
        raise SystemExit(f"bench_dist_eager: the worker needs 2 ranks, got {world.size}")
    steppers = {name: stepper(wrap, clock) for name, wrap in CONTENDERS.items()}
    for step in steppers.values():  # warm up: buckets made, kernels compiled
        for _ in range(3):
            step()
    notes: dict[str, list[dict]] = {name: [] for name in steppers}
    for r in range(rounds):
        order = list(steppers)
        random.Random(r).shuffle(order)
        for name in order:
            world.barrier()
            for k in range(block):
                marks = steppers[name]()
                if k:
                    notes[name].append(marks)
    every = world.all_gather_object(notes, "bench_dist_eager")
    if world.rank == 0:
        Path(out_path).write_text(json.dumps(every))


def phase_samples(every: list[dict]) -> dict[str, dict[str, list[float]]]:
    """Per contender, per phase, the CPU ms of every counted step of every rank; and the whole step."""
    out: dict[str, dict[str, list[float]]] = {}
    for notes in every:
        for name, steps in notes.items():
            phases = out.setdefault(name, {})
            for marks in steps:
                passed = sorted(["start"] + [m for m, _ in PHASES if m in marks], key=lambda m: marks[m][0])
                for a, b in zip(passed, passed[1:]):
                    label = dict(PHASES)[b]
                    phases.setdefault(label, []).append((marks[b][1] - marks[a][1]) * 1e3)
                phases.setdefault("whole step", []).append((marks["cleared"][1] - marks["start"][1]) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=8)
    parser.add_argument("--launches", type=int, default=1)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.rounds, args.block)
    samples: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for launch in range(args.launches):
            out = Path(tmp) / f"{launch}.json"
            subprocess.run([sys.executable, "-m", "fluidgrad", "launch", "-n", "2", __file__, "--rounds",
                            str(args.rounds), "--block", str(args.block), "--worker", str(out)],
                           check=True, cwd=Path(__file__).resolve().parents[1])
            for name, phases in phase_samples(json.loads(out.read_text())).items():
                for label, values in phases.items():
                    samples.setdefault(name, {}).setdefault(label, []).extend(values)
    rows = []
    for name, phases in samples.items():
        for label, values in phases.items():
            rows.append([name, label, f"{np.median(values):.3f}", f"{np.percentile(values, 10):.3f}"])
    print_table(f"eager step in phases, MLP {'-'.join(map(str, SIZES))}, batch 64 per rank, 2 ranks, SGD: CPU ms "
                f"per rank (median and 10th percentile over {args.rounds * (args.block - 1) * args.launches} "
                f"steps x 2 ranks)", ["contender", "phase", "median ms", "p10 ms"], rows)


if __name__ == "__main__":
    main()
