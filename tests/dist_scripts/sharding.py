"""Run by tests/test_distributed_sharding.py through `fluidgrad launch -n N`: static data-parallel
training with `DistributedOptimizer(..., sharding=True)` against single-process training on the
concatenated batch, on every rank.

Each case trains 20 steps from every rank's own random initial values (the startup's
c_bucket_broadcast must make them rank 0's), next to a plain single-process copy built with the
same names (unique_name_guard), so parameters and optimizer state dicts compare key by key.
Rank 0 writes per case: the largest relative differences of the losses (rank-averaged), the
parameters and the optimizer state, the spread of the parameters across ranks, whether the
scope's parameters are views of the node's one copy, and the program text. The "resume" case
also saves a checkpoint on rank 0 mid-run (dist.save), loads it back on every rank (the scope's
arrays are then private again: the next step must put them back into the node copy) and
writes a final checkpoint that the test loads in a single process.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.distributed import sharding
from fluidgrad.framework import unique_name_guard
from fluidgrad.nn import functional as F
from fluidgrad.ops import accel, comm_stream
from fluidgrad.ops.comm import get_world
from fluidgrad.ops.comm_shards import Layout, in_place
from fluidgrad.ops.registry import get_op_def

from equivalence import CLASSES, HIDDEN, IN, STEPS, batches, rel_diff  # this script's folder: the same model and data

CLIP_NORM = 0.05


def make_optimizer(kind, clip, decay, schedule, nesterov=False):
    grad_clip = {None: None, "norm": fg.nn.ClipGradByGlobalNorm(CLIP_NORM),
                 "value": fg.nn.ClipGradByValue(0.01)}[clip]
    lr = {"sgd": 0.1, "momentum": 0.05, "adam": 0.01, "adamw": 0.01}[kind]
    if schedule:
        lr = fg.optimizer.lr.StepDecay(lr, step_size=5, gamma=0.5)
    if kind == "sgd":
        return fg.optimizer.SGD(lr, grad_clip=grad_clip, weight_decay=decay)
    if kind == "momentum":
        return fg.optimizer.Momentum(lr, momentum=0.9, grad_clip=grad_clip, weight_decay=decay, use_nesterov=nesterov)
    if kind == "adamw":
        return fg.optimizer.AdamW(lr, grad_clip=grad_clip, weight_decay=0.05)
    return fg.optimizer.Adam(lr, grad_clip=grad_clip, weight_decay=decay)


def build(kind, clip, decay, schedule, bucket_mb, sharded, nesterov=False):
    """The model and optimizer; `sharded` None: a plain single-process program."""
    main, startup = fg.Program(), fg.Program()
    with unique_name_guard(), fg.program_guard(main, startup):
        x = fg.static.data("x", [None, IN], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = fg.static.nn.fc(x, HIDDEN, activation="tanh")
        h = fg.static.nn.fc(h, HIDDEN, activation="tanh")
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, CLASSES), y))
        opt = make_optimizer(kind, clip, decay, schedule, nesterov)
        if sharded is None:
            opt.minimize(loss, startup)
        else:
            opt = dist.DistributedOptimizer(opt, bucket_size_mb=bucket_mb, sharding=sharded)
            opt.minimize(loss, startup)
    return main, startup, loss, opt


def run_case(case, rank, world, out_dir):
    kind, clip, decay, schedule = case["kind"], case.get("clip"), case.get("decay"), case.get("schedule", False)
    fg.seed(100 + rank)  # different initial values on every rank: the startup must make them rank 0's
    nesterov = case.get("nesterov", False)
    sharding.FUSE_UPDATES = case.get("fuse", True)  # SGD and Momentum without clipping: one fused op per bucket
    main, startup, loss, opt = build(kind, clip, decay, schedule, case.get("bucket_mb", 0.0005), True, nesterov)
    sharding.FUSE_UPDATES = True
    ref_main, ref_startup, ref_loss, ref_opt = build(kind, clip, decay, schedule, None, None, nesterov)
    exe, scope, ref_scope = fg.Executor(), fg.Scope(), fg.Scope()
    exe.run(startup, scope=scope)
    exe.run(ref_startup, scope=ref_scope)
    opt.sync_lr(scope)
    ref_opt.sync_lr(ref_scope)
    names = [p.name for p in main.all_parameters()]
    for name in names:
        ref_scope.assign(name, np.array(scope[name]))
    loss_diffs = []
    for step, (x, y) in enumerate(batches(world)):
        if case.get("resume") and step == STEPS // 2:
            path = Path(out_dir) / "mid"
            dist.save(main, path, scope)
            dist.load(main, path, scope=scope)  # private arrays again, until the next step gathers them
        (value,) = exe.run(main, feed={"x": dist.shard(x), "y": dist.shard(y)}, fetch_list=[loss], scope=scope)
        (ref_value,) = exe.run(ref_main, feed={"x": x, "y": y}, fetch_list=[ref_loss], scope=ref_scope)
        loss_diffs.append(rel_diff(dist.all_reduce(np.array(value, np.float64), "avg"), ref_value))
        if schedule:
            opt._learning_rate.step()
            ref_opt._learning_rate.step()
    state, ref_state = opt.state_dict(scope), ref_opt.state_dict(ref_scope)
    state.pop("LR_Scheduler", None)
    ref_state.pop("LR_Scheduler", None)
    if sorted(state) != sorted(ref_state):
        raise AssertionError(f"optimizer state keys differ: {sorted(state)} vs {sorted(ref_state)}")
    spread = max(rel_diff(dist.all_gather(np.array(scope[n]))[r], scope[n]) for n in names for r in range(world))
    if case.get("resume") and rank == 0:
        fg.io.save(main, Path(out_dir) / f"{case['name']}-final", scope)
    dist.barrier()
    address = np.asarray(scope[names[0]]).__array_interface__["data"][0]
    copies = [c for c in get_world().node_copies() if c.span[0] <= address < c.span[1]]
    plans = main.__dict__.get("_exec_cache", (None, {}))[1].values()
    return {
        "placed_grads": max((len(plan.placed) for plan in plans), default=0),  # written straight into the row
        "copy": "shared" if copies and copies[0].shared else "private" if copies else "none",
        "loss": max(loss_diffs),
        "params": max(rel_diff(scope[n], ref_scope[n]) for n in names),
        "state": max([rel_diff(state[k], ref_state[k]) for k in state] or [0.0]),
        "n_params": len(names), "n_state": len(state), "spread": spread,
        "views": all(not np.asarray(scope[n]).flags.writeable and np.asarray(scope[n]).base is not None
                     for n in names),
        "lr": float(np.asarray(scope[opt.lr_var.name]).reshape(-1)[0]),
        "program": str(main),
        "final": {n: np.asarray(scope[n]).tolist() for n in names} if case.get("resume") else None,
    }


CASES = [
    {"name": f"{kind}-{clip or 'noclip'}", "kind": kind, "clip": clip}
    for kind in ("sgd", "momentum", "adam") for clip in (None, "norm")
] + [
    {"name": "adam-norm-one-bucket", "kind": "adam", "clip": "norm", "bucket_mb": 25.0},
    {"name": "momentum-l2-schedule", "kind": "momentum", "decay": 0.01, "schedule": True},
    {"name": "adamw-value", "kind": "adamw", "clip": "value"},
    {"name": "adam-norm-mpi", "kind": "adam", "clip": "norm", "path": "mpi"},
    {"name": "sgd-resume", "kind": "sgd", "resume": True},
    {"name": "sgd-l2-mpi", "kind": "sgd", "decay": 0.01, "path": "mpi"},
    {"name": "momentum-noclip-unfused", "kind": "momentum", "fuse": False},
    {"name": "adam-noclip-unfused", "kind": "adam", "fuse": False},
    {"name": "adamw-l2-noclip", "kind": "adamw"},
    {"name": "adam-l2-numpy", "kind": "adam", "decay": 0.01, "numba": False},
    {"name": "momentum-nesterov-l2", "kind": "momentum", "nesterov": True, "decay": 0.01, "bucket_mb": 25.0},
    {"name": "momentum-nesterov-l2-numpy", "kind": "momentum", "nesterov": True, "decay": 0.01, "numba": False},
]


def check_placed(rank, world):
    with comm_stream.STREAM.use(False):  # shared rows are offered only when written with ordinary stores
        return _check_placed(rank, world)


def _check_placed(rank, world):
    """The kernels' placement hook: gradients written into this rank's row beforehand, where (and
    as) the op's offer says, as placement's producers do, give the same results as gradients
    copied in by the kernel; and the fused SGD without sharding (every rank updating everything)
    gives what the sharded one gives. Returns the largest difference."""
    rng = np.random.default_rng(7 + rank)
    shapes = [(5, 3), (7,), (2, 2)]
    grads = [rng.standard_normal(s).astype("float32") for s in shapes]
    layout = Layout(shapes, world)
    reducescatter = get_op_def("c_bucket_reducescatter").kernel
    expected = reducescatter(grads, bucket="placed-check", nranks=world)  # makes the bucket: it can offer

    def place(bucket):
        _, offer = get_op_def("c_bucket_reducescatter").offer(shapes, ["float32"] * len(shapes), bucket=bucket,
                                                               nranks=world)
        row = get_world().bucket(("shard", bucket, tuple(layout.shapes)), layout.padded, np.dtype("float32")).input
        placed = offer()
        for g, destination in zip(grads, placed):
            if destination.scale is None:
                np.copyto(destination.array, g)
            else:
                np.multiply(g, destination.scale, out=destination.array)
        arrays = [d.array for d in placed]
        if not all(in_place(row, arrays, layout, placed)):
            raise AssertionError("the placed gradients are not recognised in the row")
        return arrays, placed
    arrays, placed = place("placed-check")
    got = reducescatter(arrays, bucket="placed-check", nranks=world, placed=placed)
    diffs = [rel_diff(got, expected)]
    sgd = get_op_def("c_bucket_sgd").kernel
    params = [rng.standard_normal(s).astype("float32") for s in shapes]
    params = dist.broadcast(np.concatenate([p.reshape(-1) for p in params]), 0)
    params = [params[o:o + n].reshape(s) for o, n, s in zip(layout.offsets, layout.sizes, shapes)]
    lr = np.array([0.1], "float32")
    plain = [np.array(v) for v in sgd(grads, params, lr, bucket="placed-check", copy="placed-copy-a", nranks=world)]
    arrays, placed = place("placed-check")
    fused = sgd(arrays, params, lr, bucket="placed-check", copy="placed-copy-b", nranks=world, placed=placed)
    diffs += [rel_diff(a, b) for a, b in zip(fused, plain)]
    replicated = sgd(grads, [p.copy() for p in params], lr, bucket="replicated-check", nranks=world, shard=False)
    sgd(grads, [p.copy() for p in params], lr, bucket="replicated-placed", nranks=world, shard=False)  # makes the row
    arrays, placed = place("replicated-placed")
    replicated_placed = sgd(arrays, [p.copy() for p in params], lr, bucket="replicated-placed", nranks=world,
                            shard=False, placed=placed)
    diffs += [rel_diff(a, b) for a, b in zip(replicated, plain)]
    if any(a.tobytes() != b.tobytes() for a, b in zip(replicated, replicated_placed)):
        diffs.append(1.0)  # placement never changes a bit
    return max(diffs)


def run_cases(cases, run_case, out_path, whole_run_checks):
    """Every case (or those named in argv[2]) on its all-reduce path and numba switch; rank 0
    writes the results, with each whole-run check's result when every case ran."""
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    results = {"world": world, "shared": get_world().shares_memory(), "cases": {}}
    for case in cases:
        if only and case["name"] not in only:
            continue
        get_world().allreduce_path = case.get("path", "auto")
        with accel.use_numba(case.get("numba", True)):  # False: the fused updates' NumPy fallback
            results["cases"][case["name"]] = run_case(case, rank, world, Path(out_path).parent)
    get_world().allreduce_path = "auto"
    if not only:
        results.update({name: check(rank, world) for name, check in whole_run_checks.items()})
    if rank == 0:
        Path(out_path).write_text(json.dumps(results))


def main(out_path):
    run_cases(CASES, run_case, out_path, {"placed": check_placed})


if __name__ == "__main__":
    main(sys.argv[1])
