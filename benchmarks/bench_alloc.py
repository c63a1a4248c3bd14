"""Why does co-running cost an eager step more than a static one? (issue 14's floor)

    python benchmarks/bench_alloc.py [--rounds 30] [--steps 20]

bench_dist's "no all-reduce" row: two ranks that never communicate, each training the MLP
784-512-512-10 at batch 64 on its own core, take 1.13x the 1-rank step in eager mode and 1.04x
in static mode (idle machine). This script tests the usual suspects one by one, on the same
model (bench_dist's steppers, one BLAS thread):

1. Memory and interpreter events per step, one process: minor page faults (`ru_minflt`: a
   fresh mmapped array faults in page by page, and the kernel zeroes each page, memory
   traffic that a peer core would feel), system CPU time, Python's cyclic GC collections, and
   the peak of NumPy bytes traced while a step runs. Eager and static alike show none of the
   first three in steady state: glibc's dynamic mmap threshold rises past the largest array
   freed (the 1.6 MB weight gradient) after the first steps, so every array after them comes
   from the heap and no page is faulted in again; the eager graph frees itself by reference
   counting, so the GC never runs.
2. The step's parts, CPU time, alone and beside a peer: rank 0 runs a block of steps while
   rank 1 either sleeps (a blocking read) or runs the same step continuously, the two taking
   turns in shuffled order; per part the median and 10th percentile, and their ratios. CPU time
   (not wall) so that a loaded machine, which preempts both ranks, still says whether the peer
   slowed the work itself. "small": the same model at sizes 16-16-16-10 and batch 4, where the
   framework's Python work is nearly the whole step; its ratio is how much a peer slows the
   interpreter's part of a step (after the big step's arrays have pushed the interpreter's
   code and objects out of the 1 MB L2, it refetches them from the shared L3). "NumPy": the
   step in plain NumPy, its SGD update after the backward pass (eager's order) or inside it
   right after each weight's gradient (static's order).
"""
from __future__ import annotations

import argparse
import gc
import multiprocessing
import random
import resource
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_dist  # noqa: E402
from bench_dist import STEPPERS, alone  # noqa: E402
from common import print_table  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.nn import functional as F  # noqa: E402

PARTS = ("forward", "backward", "optimizer step", "whole step")


def eager_parts(sizes: tuple[int, ...], batch: int) -> Callable[[], tuple[float, ...]]:
    """bench_dist's eager step, returning the CPU seconds of its parts (see PARTS)."""
    layers: list[Any] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [fg.nn.Linear(a, b), fg.nn.ReLU()]
    model = fg.nn.Sequential(*layers[:-1])
    opt = fg.optimizer.SGD(bench_dist.LR, parameters=model.parameters())
    rng = np.random.default_rng(0)
    x = fg.to_tensor(rng.standard_normal((batch, sizes[0])).astype("float32"))
    y = fg.to_tensor(rng.integers(0, sizes[-1], (batch, 1)))
    clock = time.thread_time

    def step() -> tuple[float, ...]:
        t0 = clock()
        loss = F.cross_entropy(model(x), y)
        t1 = clock()
        loss.backward()
        t2 = clock()
        opt.step()
        opt.clear_grad()
        t3 = clock()
        return t1 - t0, t2 - t1, t3 - t2, t3 - t0
    return step


def static_whole(sizes: tuple[int, ...], batch: int) -> Callable[[], tuple[float, ...]]:
    """bench_dist's static step (one Executor run): only its whole CPU time is known."""
    saved = bench_dist.SIZES, bench_dist.BATCH
    bench_dist.SIZES, bench_dist.BATCH = sizes, batch
    try:
        run = STEPPERS["static"](alone)
    finally:
        bench_dist.SIZES, bench_dist.BATCH = saved
    clock = time.thread_time

    def step() -> tuple[float, ...]:
        t0 = clock()
        run()
        t = clock() - t0
        return np.nan, np.nan, np.nan, t
    return step


def numpy_step(update_inside: bool) -> Callable[[], tuple[float, ...]]:
    """The same MLP step written in plain NumPy (no framework), its SGD update either after the
    backward pass (as eager's `opt.step()` runs it: every gradient and weight read again from the
    shared L3) or inside it, right after each weight's gradient, while it is still in cache
    (as static mode's plan runs it: the optimizer ops move up to their gradients)."""
    rng = np.random.default_rng(0)
    sizes = bench_dist.SIZES
    weights = [rng.standard_normal((a, b), dtype=np.float32) * 0.05 for a, b in zip(sizes[:-1], sizes[1:])]
    biases = [np.zeros(b, np.float32) for b in sizes[1:]]
    x = rng.standard_normal((bench_dist.BATCH, sizes[0]), dtype=np.float32)
    rows, labels = np.arange(bench_dist.BATCH), rng.integers(0, sizes[-1], bench_dist.BATCH)
    rate = np.float32(-bench_dist.LR)
    clock = time.thread_time

    def update(i: int, dw: np.ndarray, db: np.ndarray) -> None:
        weights[i] += dw * rate
        biases[i] += db * rate

    def step() -> tuple[float, ...]:
        t0 = clock()
        acts, h = [x], x
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = np.add(h @ w, b)
            if i < len(weights) - 1:
                h = np.maximum(h, 0)
                acts.append(h)
        p = np.exp(h - h.max(1, keepdims=True))
        d = p / p.sum(1, keepdims=True)
        d[rows, labels] -= 1
        d /= len(rows)
        later = []
        for i in reversed(range(len(weights))):
            dw, db = acts[i].T @ d, d.sum(0)
            if i:
                d = (d @ weights[i].T) * (acts[i] > 0)
            if update_inside:
                update(i, dw, db)
            else:
                later.append((i, dw, db))
        for args in later:
            update(*args)
        return np.nan, np.nan, np.nan, clock() - t0
    return step


BIG, SMALL = (bench_dist.SIZES, bench_dist.BATCH), ((16, 16, 16, 10), 4)
KINDS: dict[str, Callable[[], Callable[[], tuple[float, ...]]]] = {
    "eager": lambda: eager_parts(*BIG),
    "static": lambda: static_whole(*BIG),
    "eager, small": lambda: eager_parts(*SMALL),
    "static, small": lambda: static_whole(*SMALL),
    "NumPy, update after backward": lambda: numpy_step(False),
    "NumPy, update inside backward": lambda: numpy_step(True),
}


def events(kind: str, steps: int) -> list[str]:
    """Per step in steady state: minor page faults, system CPU ms, GC collections, and the peak
    NumPy/Python bytes traced during one step (what the step holds at its fullest)."""
    step = STEPPERS[kind](alone)
    for _ in range(30):
        step()
    collections = [0]

    def count(phase: str, info: dict) -> None:
        collections[0] += phase == "start"
    gc.callbacks.append(count)
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(steps):
        step()
    after = resource.getrusage(resource.RUSAGE_SELF)
    gc.callbacks.remove(count)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    step()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return [kind, f"{(after.ru_minflt - before.ru_minflt) / steps:.2f}",
            f"{(after.ru_stime - before.ru_stime) / steps * 1e3:.3f}", f"{collections[0] / steps:.3f}",
            f"{peak / 1e6:.2f}"]


def worker(rank: int, conn: Any, running: Any) -> None:
    """Rank 0 times blocks of steps on request; rank 1 steps continuously while `running`
    holds the number of the block it was asked to accompany."""
    steps = {name: make() for name, make in KINDS.items()}
    while True:
        message = conn.recv()
        if message is None:
            return
        name, count = message
        step = steps[name]
        if rank == 1:
            conn.send("started")
            while running.value == count:  # count: the block's number, on rank 1
                step()
            continue
        step()  # not timed: the block's first step finds its model evicted
        conn.send([step() for _ in range(count)])


def corun(rounds: int, steps: int) -> dict[tuple[str, bool], np.ndarray]:
    """Each kind's parts (CPU seconds per step) with rank 1 asleep (False) or stepping (True)."""
    context = multiprocessing.get_context("fork")
    running = context.Value("i", 0, lock=False)
    pipes = [context.Pipe() for _ in range(2)]
    procs = [context.Process(target=worker, args=(r, pipes[r][1], running), daemon=True) for r in range(2)]
    for proc in procs:
        proc.start()
    samples: dict[tuple[str, bool], list] = {(name, peer): [] for name in KINDS for peer in (False, True)}
    block = 0
    try:
        for r in range(rounds):
            order = list(samples)
            random.Random(r).shuffle(order)
            for name, peer in order:
                if peer:
                    block += 1
                    running.value = block
                    pipes[1][0].send((name, block))
                    pipes[1][0].recv()
                pipes[0][0].send((name, steps))
                samples[(name, peer)] += pipes[0][0].recv()
                running.value = 0
    finally:
        for conn, _ in pipes:
            conn.send(None)
        for proc in procs:
            proc.join(timeout=10)
    return {key: np.array(value) for key, value in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="turns of every (kind, peer) pair")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per turn")
    args = parser.parse_args()
    print_table("per step in steady state, one process (300 steps)",
                ["mode", "minor page faults", "system CPU ms", "GC collections", "peak traced MB"],
                [events(kind, 300) for kind in ("static", "eager")])
    samples = corun(args.rounds, args.steps)
    rows = []
    for name in KINDS:
        lone, beside = samples[(name, False)] * 1e3, samples[(name, True)] * 1e3
        for i, part in enumerate(PARTS):
            if np.isnan(lone[:, i]).all():
                continue
            a, b = np.percentile(lone[:, i], [50, 10]), np.percentile(beside[:, i], [50, 10])
            rows.append([name, part, f"{a[0]:.3f}", f"{b[0]:.3f}", f"{b[0] - a[0]:+.3f}", f"{b[0] / a[0]:.3f}x",
                         f"{a[1]:.3f}", f"{b[1]:.3f}", f"{b[1] / a[1]:.3f}x"])
    print_table(f"CPU ms per step, rank 0 alone and beside a peer running the same step (median and 10th "
                f"percentile of {args.rounds * args.steps} steps each, taking turns)",
                ["step", "part", "alone", "beside a peer", "added", "ratio", "alone p10", "beside p10",
                 "ratio p10"], rows)


if __name__ == "__main__":
    main()
