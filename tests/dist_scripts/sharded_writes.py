"""Run by tests/test_distributed_sharded_writes.py through `fluidgrad launch -n 2`: a user's writes
into the parameters and optimizer state of a sharded optimizer (ZeRO stage 1: they are read-only
views of the node's one copy) between steps, in eager and static mode, next to the same writes in
single-process training on the concatenated batch. Rank 0 writes, per case, the largest relative
difference of the parameters after the last step, their spread across ranks, and the errors met.
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist

STEPS, WRITE_AT, PER_RANK, IN, OUT = 6, 3, 4, 5, 3
EAGER_WRITES = ["set_value", "setitem_no_grad", "assign", "layer_set_state_dict", "optimizer_set_state_dict"]
STATIC_WRITES = ["scope_assign", "assign_op", "optimizer_set_state_dict"]


def batch(step, world):
    rng = np.random.default_rng(step)
    return rng.standard_normal((PER_RANK * world, IN)).astype("float32"), \
        rng.standard_normal((PER_RANK * world, OUT)).astype("float32")


def rel_diff(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))


def spread(values):
    gathered = dist.all_gather(np.ascontiguousarray(values))
    return max(float(np.max(np.abs(np.asarray(g) - gathered[0]))) for g in gathered)


# ---------------------------------------------------------------- eager
def eager_write(kind, model, optimizer, saved):
    weight = model.weight
    new = np.linspace(-1, 1, weight.size, dtype="float32").reshape(weight.shape)
    if kind == "set_value":
        weight.set_value(new)
    elif kind == "setitem_no_grad":
        with fg.no_grad():
            weight[0] = 0.5
    elif kind == "assign":
        fg.assign(fg.to_tensor(new), weight)
    elif kind == "layer_set_state_dict":
        model.set_state_dict(saved["model"])
    else:
        optimizer.set_state_dict(saved["optimizer"])


def eager_train(kind, sharded, rank, world):
    fg.seed(7)
    model = fg.nn.Linear(IN, OUT)
    if sharded:
        net = fg.DataParallel(model)
        optimizer = dist.DistributedOptimizer(fg.optimizer.Momentum(0.05, parameters=net.parameters()),
                                              bucket_size_mb=0.0001, sharding=True)
    else:
        net, optimizer = model, fg.optimizer.Momentum(0.05, parameters=model.parameters())
    saved, read_only = {}, None
    for step in range(STEPS):
        x, y = batch(step, world)
        if sharded:
            x, y = x[rank * PER_RANK:(rank + 1) * PER_RANK], y[rank * PER_RANK:(rank + 1) * PER_RANK]
        loss = fg.mean((net(fg.to_tensor(x)) - fg.to_tensor(y)) ** 2)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        if step == 0:
            saved = {"model": {k: np.array(v.numpy()) for k, v in model.state_dict().items()},
                     "optimizer": copy.deepcopy({k: np.array(v) if isinstance(v, np.ndarray) else v
                                                 for k, v in optimizer.state_dict().items()})}
        if step == WRITE_AT:
            read_only = not model.weight._array.flags.writeable  # (what the writes meet)
            eager_write(kind, model, optimizer, saved)
    return [np.array(p.numpy()) for p in model.parameters()], read_only


# ---------------------------------------------------------------- static
def static_build(sharded):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, IN], "float32")
        y = fg.static.data("y", [None, OUT], "float32")
        out = fg.static.nn.fc(x, OUT, weight_attr=fg.ParamAttr(name="w"), bias_attr=fg.ParamAttr(name="b"))
        loss = fg.mean((out - y) ** 2)
        optimizer = fg.optimizer.Momentum(0.05)
        if sharded:
            optimizer = dist.DistributedOptimizer(optimizer, bucket_size_mb=0.0001, sharding=True)
        optimizer.minimize(loss)
    writer = fg.Program()
    with fg.program_guard(writer, fg.Program()):
        w = writer.global_block().create_parameter("w", (IN, OUT), "float32")
        fg.assign(fg.full([IN, OUT], 0.25, "float32"), w)
    return main, startup, writer, optimizer


def static_train(kind, sharded, rank, world):
    main, startup, writer, optimizer = static_build(sharded)
    exe, scope = fg.Executor(), fg.Scope()
    fg.seed(7)
    exe.run(startup, scope=scope)
    saved, read_only = None, None
    for step in range(STEPS):
        x, y = batch(step, world)
        if sharded:
            x, y = x[rank * PER_RANK:(rank + 1) * PER_RANK], y[rank * PER_RANK:(rank + 1) * PER_RANK]
        exe.run(main, feed={"x": x, "y": y}, scope=scope)
        if step == 0:
            saved = {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in optimizer.state_dict(scope).items()}
        if step == WRITE_AT:
            read_only = not scope["w"].flags.writeable
            if kind == "scope_assign":
                scope["w"] = np.linspace(-1, 1, IN * OUT, dtype="float32").reshape(IN, OUT)
            elif kind == "assign_op":
                exe.run(writer, scope=scope)
            else:
                optimizer.set_state_dict(saved, scope)
    return [np.array(scope["w"]), np.array(scope["b"])], read_only


def read_only_collective(rank, world):
    """dist.broadcast into a parameter's read-only view: a clear error on every rank, before any
    rank communicates (so no rank is left waiting)."""
    main, startup, _, _ = static_build(True)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)
    try:
        dist.broadcast(scope["w"], src=0)
    except ValueError as exc:
        return str(exc)
    return "no error"


def main(out_path):
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    for mode, kinds, train in (("eager", EAGER_WRITES, eager_train), ("static", STATIC_WRITES, static_train)):
        for kind in kinds:
            sharded, read_only = train(kind, True, rank, world)
            plain, _ = train(kind, False, rank, world)
            results[f"{mode}:{kind}"] = {
                "diff": max(rel_diff(s, p) for s, p in zip(sharded, plain)),
                "spread": max(spread(s) for s in sharded),
                "read_only": read_only,
            }
    results["read_only_collective"] = read_only_collective(rank, world)
    dist.barrier()
    if rank == 0:
        Path(out_path).write_text(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1])
