"""Bucketed against one all-reduce per parameter (issue 14), on a model with many parameters.

    python benchmarks/bench_dist_buckets.py [--rounds 20] [--block 8] [--launches 2] [--depth 16] [--width 128]

Why: bench_dist.py's MLP 784-512-512-10 has 6 parameters, so one bucket and six collectives do
nearly the same work and bucketing's advantage cannot show. Here a deep narrow MLP, each block
Linear(width, width) -> LayerNorm -> ReLU (`--depth` blocks: 4 parameters each, 66 for the default),
batch 64 per rank, SGD, on 2 ranks (one BLAS thread each): about 1 MB of gradients in 66 tensors,
most of them small (biases, norm scales and shifts).

Contenders, in both modes (static: DistributedOptimizer; eager: DataParallel) and on both
all-reduce paths (an MPI shared-memory window, the default on one node, and MPI's Iallreduce, what
runs across nodes): the default buckets (25 MB) against one all-reduce per parameter (bucket size
0), plus each rank training alone ("no all-reduce", what both add to). As in bench_dist.py they take
turns in the same 2-rank job, in blocks of `--block` steps back to back after a barrier (the first
two untimed), in an order shuffled every round; a step's time is the job's (from the later rank's
end of the previous step to the later rank's end of this one); "cpu" is rank 0's CPU time per step.
Bucketed and per-parameter steps of one mode and path are then paired in order (the k-th timed step
of each round): the ratio of their medians and how often the bucketed one was faster.
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

from common import print_table  # noqa: E402

import fluidgrad as fg  # noqa: E402
import fluidgrad.distributed as dist  # noqa: E402
from fluidgrad.nn import functional as F  # noqa: E402
from fluidgrad.ops.comm import World, get_world  # noqa: E402

BATCH, CLASSES, LR = 64, 10, 0.01
WARM_STEPS = 2  # untimed at the start of a block (bench_dist.py: the model evicted, the second set of rows)
MODES = ("static", "eager")
PATHS = {"shared memory": "auto", "MPI Iallreduce": "mpi"}
KINDS = {"bucketed": 25.0, "per-parameter": 0.0}


def data(rank: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rank)
    return rng.standard_normal((BATCH, width)).astype("float32"), rng.integers(0, CLASSES, (BATCH, 1))


def static_stepper(depth: int, width: int, bucket_mb: float | None) -> Callable[[], Any]:
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, width], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = x
        for _ in range(depth):
            h = fg.nn.functional.relu(fg.static.nn.layer_norm(fg.static.nn.fc(h, width)))
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, CLASSES), y))
        opt = fg.optimizer.SGD(LR)
        if bucket_mb is not None:
            opt = dist.DistributedOptimizer(opt, bucket_size_mb=bucket_mb, split_grads=False)
        opt.minimize(loss)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)
    x_value, y_value = data(get_world().rank, width)
    return lambda: exe.run(main, feed={"x": x_value, "y": y_value}, fetch_list=[loss], scope=scope)


def eager_stepper(depth: int, width: int, bucket_mb: float | None) -> Callable[[], Any]:
    layers: list[Any] = []
    for _ in range(depth):
        layers += [fg.nn.Linear(width, width), fg.nn.LayerNorm(width), fg.nn.ReLU()]
    model = fg.nn.Sequential(*layers, fg.nn.Linear(width, CLASSES))
    if bucket_mb is not None:
        model = fg.DataParallel(model, comm_buffer_size=bucket_mb)
    opt = fg.optimizer.SGD(LR, parameters=model.parameters())
    x_value, y_value = data(get_world().rank, width)
    x, y = fg.to_tensor(x_value), fg.to_tensor(y_value)

    def step() -> None:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
    return step


def contenders(world: World, mode: str, depth: int, width: int) -> dict[str, Callable[[], Any]]:
    """Every contender of `mode`, each with its own model, each step on its own all-reduce path."""
    make = {"static": static_stepper, "eager": eager_stepper}[mode]
    out = {"no all-reduce": make(depth, width, None)}
    for path_name, path in PATHS.items():
        for kind, bucket_mb in KINDS.items():
            world.allreduce_path = path  # DataParallel chooses at wrap time whether to overlap
            out[f"{kind}, {path_name}"] = on_path(world, path, make(depth, width, bucket_mb))
    world.allreduce_path = "auto"
    return out


def on_path(world: World, path: str, step: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> None:
        world.allreduce_path = path
        step()
    return run


def worker(out_path: str, mode: str, rounds: int, block: int, depth: int, width: int) -> None:
    dist.init_parallel_env()
    world = get_world()
    if world.size != 2:
        raise SystemExit(f"bench_dist_buckets: the worker needs 2 ranks, got {world.size}")
    steps = contenders(world, mode, depth, width)
    for step in steps.values():  # warm up: buckets made, plans compiled
        for _ in range(3):
            step()
    ends: dict[str, list[list[float]]] = {name: [] for name in steps}
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    for r in range(rounds):
        order = list(steps)
        random.Random(r).shuffle(order)
        for name in order:
            world.barrier()
            times = []
            for k in range(block):
                c = time.thread_time()
                steps[name]()
                times.append(time.perf_counter())
                if k >= WARM_STEPS:
                    cpu[name].append((time.thread_time() - c) * 1e3)
            ends[name].append(times)
    every = world.all_gather_object((ends, cpu), "bench_dist_buckets")
    if world.rank == 0:
        Path(out_path).write_text(json.dumps({"ends": [e for e, _ in every], "cpu": every[0][1]}))


def job_steps(ends: list[dict[str, list[list[float]]]], name: str) -> list[list[float]]:
    """Per block, the job's step times in ms (the later rank's end to the later rank's end)."""
    out = []
    for blocks in zip(*(rank_ends[name] for rank_ends in ends)):
        later = np.max(np.array(blocks), axis=0)
        out.append(list(np.diff(later)[WARM_STEPS - 1:] * 1e3))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=8)
    parser.add_argument("--launches", type=int, default=2, help="2-rank jobs per mode, modes alternating")
    parser.add_argument("--depth", type=int, default=16)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.mode, args.rounds, args.block, args.depth, args.width)
    blocks: dict[tuple[str, str], list[list[float]]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for launch in range(args.launches):
            for mode in MODES:
                out = Path(tmp) / f"{mode}{launch}.json"
                subprocess.run([sys.executable, "-m", "fluidgrad", "launch", "-n", "2", __file__, "--worker", str(out),
                                "--mode", mode, "--rounds", str(args.rounds), "--block", str(args.block),
                                "--depth", str(args.depth), "--width", str(args.width)],
                               check=True, cwd=Path(__file__).resolve().parents[1])
                found = json.loads(out.read_text())
                for name in found["cpu"]:
                    blocks.setdefault((mode, name), []).extend(job_steps(found["ends"], name))
                    cpu.setdefault((mode, name), []).extend(found["cpu"][name])
    n_params = 4 * args.depth + 2
    size = args.depth * (args.width * args.width + 3 * args.width) + args.width * CLASSES + CLASSES
    rows = []
    for (mode, name), steps in blocks.items():
        flat = [s for block in steps for s in block]
        base = np.median([s for b in blocks[(mode, "no all-reduce")] for s in b])
        rows.append([mode, name, f"{np.median(flat):.2f}", f"{np.percentile(flat, 10):.2f}",
                     f"{np.median(cpu[(mode, name)]):.2f}", f"{np.median(flat) / base:.2f}x"])
    print_table(f"deep narrow MLP, {args.depth} x (Linear {args.width} -> LayerNorm -> ReLU) -> Linear {CLASSES}: "
                f"{n_params} parameters, {size * 4:,} bytes of gradients; batch {BATCH} per rank, SGD, 2 ranks "
                f"({args.launches} jobs per mode, medians)",
                ["mode", "contender", "step ms", "p10 ms", "cpu ms", "vs no all-reduce"], rows)
    pairs = []
    for mode in MODES:
        for path_name in PATHS:
            bucketed = blocks[(mode, f"bucketed, {path_name}")]
            each = blocks[(mode, f"per-parameter, {path_name}")]
            a = np.array([s for block in bucketed for s in block])
            b = np.array([s for block in each for s in block])
            n = min(len(a), len(b))
            cpu_ratio = np.median(cpu[(mode, f"per-parameter, {path_name}")]) / np.median(cpu[(mode, f"bucketed, {path_name}")])
            pairs.append([mode, path_name, f"{np.median(a):.2f}", f"{np.median(b):.2f}",
                          f"{np.median(b) / np.median(a):.2f}x", f"{cpu_ratio:.2f}x", f"{np.mean(a[:n] < b[:n]):.0%}"])
    print_table("bucketed vs one all-reduce per parameter (steps paired in order)",
                ["mode", "all-reduce path", "bucketed ms", "per-parameter ms", "per-parameter / bucketed",
                 "same, cpu", "steps where bucketed is faster"], pairs)


if __name__ == "__main__":
    main()
