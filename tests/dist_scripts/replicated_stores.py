"""Run by tests/test_distributed.py through `fluidgrad launch -n 2`: the static default update
(c_bucket_sgd / c_bucket_momentum with shard=False) whose two-rank rows are written with
streaming stores or with ordinary ones (the gradients' producers writing into the row), chosen
per step (comm_stream.StoreChooser), gives the same bits whatever the choices, and what one
process gives on the concatenated batch.

Per optimizer, the same model trained from rank 0's initial values under each store policy:
"stream", "ordinary", "adaptive" (the probe's choice) and "switching" (stream and ordinary
alternating step by step, so placement comes and goes between the steps of one plan). Rank 0
writes, per optimizer, whether the policies' parameters are the same bits, their largest
relative difference from the single-process copy, and per policy the steps that streamed and
that found gradients placed in the row.
"""
from __future__ import annotations

import json
import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.nn import functional as F
from fluidgrad.ops import comm_shards, comm_stream
from fluidgrad.ops.comm import get_world

STEPS, PER_RANK, IN, HIDDEN, CLASSES = 8, 8, 40, 32, 5
POLICIES = ("stream", "ordinary", "adaptive", "switching")
seen: list[tuple[bool, bool]] = []  # per pack of a replicated bucket: (streamed, any gradient placed)
_pack = comm_shards.pack


def spying_pack(into, arrays, layout, skip=None, present=None, stream=False):
    if skip is None:  # the replicated update's pack (the sharded one skips this rank's part)
        seen.append((stream, bool(present) and any(present)))
    return _pack(into, arrays, layout, skip=skip, present=present, stream=stream)


comm_shards.pack = spying_pack


def build(kind, distributed, seed):
    main, startup = fg.Program(), fg.Program()
    main.random_seed = startup.random_seed = seed
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, IN], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = fg.static.nn.fc(x, HIDDEN, activation="relu")
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, CLASSES), y))
        opt = fg.optimizer.SGD(0.1) if kind == "sgd" else fg.optimizer.Momentum(0.05, momentum=0.9)
        (dist.DistributedOptimizer(opt) if distributed else opt).minimize(loss, startup)
    return main, startup, loss


def train(kind, policy, world):
    main, startup, loss = build(kind, True, seed=world.rank + 1)  # each rank's own initial values
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)  # ends with the broadcast from rank 0
    params = [p.name for p in main.global_block().all_parameters()]
    initial = [np.asarray(scope[p]).copy() for p in params]
    rng = np.random.default_rng(99)
    del seen[:]
    for step in range(STEPS):
        x = rng.standard_normal((PER_RANK * world.size, IN)).astype("float32")
        y = rng.integers(0, CLASSES, (PER_RANK * world.size, 1)).astype("int64")
        comm_stream.ROWS_POLICY = ("stream" if step % 2 else "ordinary") if policy == "switching" else policy
        exe.run(main, feed={"x": dist.shard(x), "y": dist.shard(y)}, fetch_list=[loss], scope=scope)
    comm_stream.ROWS_POLICY = "adaptive"
    return [np.asarray(scope[p]).copy() for p in params], list(seen), initial


def reference(kind, initial, world):
    """One process on the concatenated batch, from `initial` (the parameters by position)."""
    main, startup, loss = build(kind, False, seed=1)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)
    names = [p.name for p in main.global_block().all_parameters()]
    for name, value in zip(names, initial):
        scope[name] = value.copy()
    rng = np.random.default_rng(99)
    for _ in range(STEPS):
        x = rng.standard_normal((PER_RANK * world.size, IN)).astype("float32")
        y = rng.integers(0, CLASSES, (PER_RANK * world.size, 1)).astype("int64")
        exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
    return [np.asarray(scope[name]) for name in names]


def main(out_path):
    dist.init_parallel_env()
    world = get_world()
    found = {}
    for kind in ("sgd", "momentum"):
        results = {policy: train(kind, policy, world) for policy in POLICIES}
        first, _, initial = results[POLICIES[0]]
        same = all(len(results[policy][0]) == len(first) and all(
            a.tobytes() == b.tobytes() for a, b in zip(results[policy][0], first)) for policy in POLICIES)
        expected = reference(kind, initial, world)
        worst = max(float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)) for a, b in zip(first, expected))
        found[kind] = {"same_bits": same, "vs_one_process": worst, "n_params": len(first),
                       "packs": {policy: {"streamed": sum(s for s, _ in results[policy][1]),
                                          "placed": sum(p for _, p in results[policy][1]),
                                          "steps": len(results[policy][1])} for policy in POLICIES}}
    every = world.all_gather_object(found, "replicated stores results")
    if world.rank == 0:
        with open(out_path, "w") as f:
            json.dump({"size": world.size, "ranks": every}, f)


if __name__ == "__main__":
    main(sys.argv[1])
