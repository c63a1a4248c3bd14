"""Run by tests/test_distributed_split_grads.py through `fluidgrad launch -n N`: static data-parallel
training with `DistributedOptimizer(..., split_grads=True)` (weight gradients computed split
across ranks from shared activations), with and without sharding, against single-process
training on the concatenated batch, on every rank.

Each case trains 20 steps from every rank's own random initial values (the startup must make
them rank 0's) next to a plain single-process copy built with the same names. Rank 0 writes per
case: the largest relative differences of the losses (rank-averaged), of the parameters and of
the optimizer state, the spread of the parameters across ranks and the program text. Cases:
"vary" changes the global batch from step to step (the shared rows grow, and some steps leave
places empty); "uneven" gives the ranks different row counts and compares with the bucketed
all-reduce of the same shards (both average the ranks' gradients, which is not the gradient of
the whole batch when the shards differ in size); "mixed" adds a parameter whose gradient is not a
product (its own bucket in the same program); "runtime-mpi" runs a program built for shared
memory with MPI's all-reduce.
"""
from __future__ import annotations

import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.framework import unique_name_guard
from fluidgrad.nn import functional as F
from fluidgrad.ops.comm import get_world

from equivalence import CLASSES, HIDDEN, IN, STEPS, rel_diff  # this script's folder: the same model and data
from sharding import make_optimizer, run_cases


def build(case, distributed):
    """The model and optimizer; `distributed` None: a plain single-process program, else the
    DistributedOptimizer's options."""
    main, startup = fg.Program(), fg.Program()
    with unique_name_guard(), fg.program_guard(main, startup):
        x = fg.static.data("x", [None, IN], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = fg.static.nn.fc(x, HIDDEN, activation="tanh")
        if case.get("mixed"):  # a gradient that is no product of the batch: reduce_as of X * dY
            gain = fg.static.create_parameter([HIDDEN], "float32", name="gain",
                                              default_initializer=fg.initializer.Constant(1.0))
            h = h * gain
        h = fg.static.nn.fc(h, HIDDEN, activation="tanh")
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, CLASSES), y))
        opt = make_optimizer(case["kind"], case.get("clip"), case.get("decay"), case.get("schedule", False),
                             case.get("nesterov", False))
        if distributed is not None:
            opt = dist.DistributedOptimizer(opt, bucket_size_mb=0.0005, **distributed)
        opt.minimize(loss, startup)
    return main, startup, loss, opt


def batches(case, rank, world):
    """Per step: this rank's rows and the whole batch (None where the ranks' rows differ)."""
    rng = np.random.default_rng(1234)
    for step in range(STEPS):
        per_rank = [4] * world
        if case.get("vary"):
            per_rank = [[4, 2, 6, 3, 8][step % 5]] * world
        if case.get("uneven"):
            per_rank = [3 + (r + step) % 3 for r in range(world)]
        x = rng.standard_normal((sum(per_rank), IN)).astype("float32")
        y = rng.integers(0, CLASSES, (sum(per_rank), 1)).astype("int64")
        lo = sum(per_rank[:rank])
        mine = slice(lo, lo + per_rank[rank])
        yield (x[mine], y[mine]), (None if case.get("uneven") else (x, y))


def run_case(case, rank, world, out_dir):
    fg.seed(100 + rank)  # different initial values on every rank: the startup must make them rank 0's
    options = {"split_grads": True, "sharding": case.get("sharding", False)}
    main, startup, loss, opt = build(case, options)
    # the reference: one process on the whole batch, or (uneven shards) the bucketed all-reduce
    reference = {"split_grads": False, "sharding": False} if case.get("uneven") else None
    ref_main, ref_startup, ref_loss, ref_opt = build(case, reference)
    exe, scope, ref_scope = fg.Executor(), fg.Scope(), fg.Scope()
    exe.run(startup, scope=scope)
    exe.run(ref_startup, scope=ref_scope)
    opt.sync_lr(scope)
    ref_opt.sync_lr(ref_scope)
    names = [p.name for p in main.all_parameters()]
    for name in names:
        ref_scope.assign(name, np.array(scope[name]))
    if case.get("runtime_path"):
        get_world().allreduce_path = case["runtime_path"]
    loss_diffs = []
    for (x, y), whole in batches(case, rank, world):
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
        if whole is None:
            (ref_value,) = exe.run(ref_main, feed={"x": x, "y": y}, fetch_list=[ref_loss], scope=ref_scope)
            loss_diffs.append(rel_diff(value, ref_value))
        else:
            (ref_value,) = exe.run(ref_main, feed={"x": whole[0], "y": whole[1]}, fetch_list=[ref_loss],
                                   scope=ref_scope)
            loss_diffs.append(rel_diff(dist.all_reduce(np.array(value, np.float64), "avg"), ref_value))
        if case.get("schedule"):
            opt._learning_rate.step()
            ref_opt._learning_rate.step()
    state, ref_state = opt.state_dict(scope), ref_opt.state_dict(ref_scope)
    state.pop("LR_Scheduler", None)
    ref_state.pop("LR_Scheduler", None)
    if sorted(state) != sorted(ref_state):
        raise AssertionError(f"optimizer state keys differ: {sorted(state)} vs {sorted(ref_state)}")
    spread = max(rel_diff(dist.all_gather(np.array(scope[n]))[r], scope[n]) for n in names for r in range(world))
    return {
        "loss": max(loss_diffs),
        "params": max(rel_diff(scope[n], ref_scope[n]) for n in names),
        "state": max([rel_diff(state[k], ref_state[k]) for k in state] or [0.0]),
        "n_params": len(names), "spread": spread,
        "views": all(not np.asarray(scope[n]).flags.writeable for n in names),
        "program": str(main),
    }


CASES = [
    {"name": f"{kind}-{'sharded' if sharded else 'default'}", "kind": kind, "sharding": sharded}
    for kind in ("sgd", "momentum", "adam") for sharded in (False, True)
] + [
    {"name": "adam-norm-default", "kind": "adam", "clip": "norm"},
    {"name": "adamw-value-default", "kind": "adamw", "clip": "value"},
    {"name": "momentum-l2-schedule-default", "kind": "momentum", "decay": 0.01, "schedule": True},
    {"name": "momentum-nesterov-l2-sharded", "kind": "momentum", "nesterov": True, "decay": 0.01, "sharding": True},
    {"name": "adamw-sharded", "kind": "adamw", "sharding": True},
    {"name": "adam-l2-sharded-numpy", "kind": "adam", "decay": 0.01, "sharding": True, "numba": False},
    {"name": "sgd-vary-default", "kind": "sgd", "vary": True},
    {"name": "momentum-vary-sharded", "kind": "momentum", "vary": True, "sharding": True},
    {"name": "sgd-uneven-default", "kind": "sgd", "uneven": True},
    {"name": "adam-uneven-sharded", "kind": "adam", "uneven": True, "sharding": True},
    {"name": "momentum-mixed-default", "kind": "momentum", "mixed": True},
    {"name": "adam-mixed-sharded", "kind": "adam", "mixed": True, "sharding": True},
    {"name": "sgd-runtime-mpi-default", "kind": "sgd", "runtime_path": "mpi"},
]


def main(out_path):
    run_cases(CASES, run_case, out_path, {})


if __name__ == "__main__":
    main(sys.argv[1])
