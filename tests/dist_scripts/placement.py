"""Run by tests/test_placement_dist.py through `fluidgrad launch -n N`: data-parallel training
with placement (gradients written by their producers straight into the bucket's row, see
fluidgrad/executor/placement.py) against the same training without it, on every rank.

Each case trains two copies of one MLP from the same parameters on this rank's batches, one
compiled with placement and one without, and compares every fetched value and every parameter
bit for bit after each step; a wrapper around c_bucket_allreduce's kernel counts the inputs it
found already in place. Rank 0 writes every rank's findings.
"""
from __future__ import annotations

import json
import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.distributed import sharding
from fluidgrad.executor import placement
from fluidgrad.nn import functional as F
from fluidgrad.ops import comm_stream
from fluidgrad.ops.comm import get_world
from fluidgrad.ops.registry import get_op_def

STEPS, BATCH, SIZES = 5, 8, (12, 32, 24, 5)
placed_counts: list[int] = []


def spy_on_the_bucket_kernel():
    """Count the inputs each c_bucket_allreduce call finds in place (before any plan binds the kernel)."""
    op_def = get_op_def("c_bucket_allreduce")
    kernel = op_def.kernel

    def counting(xs, placed=None, **attrs):
        if placed is not None:
            placed_counts.append(sum(1 for x, d in zip(xs, placed) if d is not None and x is d[0]))
        return kernel(xs, placed=placed, **attrs)
    op_def.kernel = counting


def build(kind, bucket_mb):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, SIZES[0]], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = x
        for size in SIZES[1:-1]:
            h = fg.static.nn.fc(h, size, activation="relu")
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, SIZES[-1]), y))
        if kind == "sgd":
            opt = fg.optimizer.SGD(0.1)
        else:
            opt = fg.optimizer.Adam(0.01, grad_clip=fg.nn.ClipGradByGlobalNorm(0.05))
        _, params_grads = dist.DistributedOptimizer(opt, bucket_size_mb=bucket_mb).minimize(loss, startup)
    scope = fg.Scope()
    fg.Executor().run(startup, scope=scope)
    return main, scope, loss, [p.name for p, _ in params_grads], [g.name for _, g in params_grads]


def run_case(kind, path, bucket_mb, fetch_grads):
    world = get_world()
    world.allreduce_path = path
    twins = [build(kind, bucket_mb) for _ in range(2)]
    for p, q in zip(twins[0][3], twins[1][3]):
        twins[1][1][q] = np.array(twins[0][1][p])
    exe = fg.Executor()
    rng = np.random.default_rng(100 + world.rank)
    problems, first = [], len(placed_counts)
    for step in range(STEPS):
        feed = {"x": rng.standard_normal((BATCH, SIZES[0])).astype("float32"),
                "y": rng.integers(0, SIZES[-1], (BATCH, 1))}
        outputs = []
        for enabled, (main, scope, loss, _, grads) in zip((True, False), twins):
            placement.ENABLED = enabled   # read when the plan is compiled (the first run)
            outputs.append(exe.run(main, feed=feed, fetch_list=[loss] + (grads if fetch_grads else []), scope=scope))
            placement.ENABLED = True
        if any(a.tobytes() != b.tobytes() for a, b in zip(*outputs)):
            problems.append(f"step {step}: a fetched value differs")
    for p, q in zip(twins[0][3], twins[1][3]):
        if np.asarray(twins[0][1][p]).tobytes() != np.asarray(twins[1][1][q]).tobytes():
            problems.append(f"parameter {p} differs after {STEPS} steps")
    n_buckets = sum(op.type == "c_bucket_allreduce" for op in twins[0][0].global_block().ops)
    return {"problems": problems, "placed": placed_counts[first:], "n_grads": len(twins[0][4]), "n_buckets": n_buckets}


def main(out_path):
    dist.init_parallel_env()
    sharding.FUSE_UPDATES = False  # SGD as c_bucket_allreduce + sgd ops: the bucket this script spies on
    comm_stream.STREAM.on = False  # streaming stores into shared rows (the default) offer them to no producer
    spy_on_the_bucket_kernel()
    world = get_world()
    cases = {"sgd-shared": ("sgd", "auto", 25.0, False), "adam-clip-shared": ("adam", "auto", 25.0, True),
             "sgd-shared-buckets": ("sgd", "auto", 0.002, False), "sgd-mpi": ("sgd", "mpi", 25.0, False)}
    found = {name: run_case(*args) for name, args in cases.items()}
    every = world.all_gather_object(found, "placement results")
    if world.rank == 0:
        with open(out_path, "w") as f:
            json.dump({"size": world.size, "ranks": every}, f)


if __name__ == "__main__":
    main(sys.argv[1])
