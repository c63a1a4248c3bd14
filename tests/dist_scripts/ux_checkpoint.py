"""Run by tests/test_distributed_launch_ux.py: checkpoints written by rank 0 only, loadable
by a job of any size, in static mode (plain or sharded update) and eager mode.

    ux_checkpoint.py save DIR    train a few steps on this job's ranks, then save both checkpoints
    ux_checkpoint.py load DIR    load them, then take one more step; rank 0 writes what it saw

The global batch has 12 rows (a whole number of rows per rank for 1, 2, 3 or 4 ranks), so one
step from the same checkpoint gives the same parameters at every world size.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.distributed import checkpoint
from fluidgrad.framework import unique_name_guard
from fluidgrad.ops.comm import get_world

ROWS, IN, HIDDEN, OUT = 12, 5, 7, 2


def batch(step):
    rng = np.random.default_rng(step)
    return rng.standard_normal((ROWS, IN)).astype("float32"), rng.standard_normal((ROWS, OUT)).astype("float32")


def build_static(sharding):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), unique_name_guard():
        x = fg.static.data("x", [None, IN], "float32")
        y = fg.static.data("y", [None, OUT], "float32")
        loss = fg.mean(fg.square(fg.static.nn.fc(fg.static.nn.fc(x, HIDDEN, activation="tanh"), OUT) - y))
        dist.DistributedOptimizer(fg.optimizer.Adam(0.05), sharding=sharding).minimize(loss, startup)
    return main, startup, loss


def static_step(exe, main, loss, scope, step):
    x, y = batch(step)
    exe.run(main, feed={"x": dist.shard(x), "y": dist.shard(y)}, fetch_list=[loss], scope=scope)


def static_values(main, scope):
    return {v.name: np.array(scope[v.name]) for v in main.list_vars() if v.persistable and v.name in scope}


def build_eager():
    fg.seed(get_world().rank)  # different on every rank: DataParallel takes rank 0's
    with unique_name_guard():
        model = fg.DataParallel(fg.nn.Sequential(fg.nn.Linear(IN, HIDDEN), fg.nn.Tanh(), fg.nn.Linear(HIDDEN, OUT)))
        opt = fg.optimizer.Adam(0.05, parameters=model.parameters())
    return model, opt


def eager_step(model, opt, step):
    x, y = batch(step)
    fg.mean(fg.square(model(fg.to_tensor(dist.shard(x))) - fg.to_tensor(dist.shard(y)))).backward()
    opt.step()
    opt.clear_grad()


def eager_values(model, opt):
    values = {f"model/{k}": v for k, v in model.state_dict().items()}
    values.update({f"opt/{i}.{slot}": v for i, slots in opt.state_dict()["state"].items() for slot, v in slots.items()})
    return {k: np.array(v.numpy() if hasattr(v, "numpy") else v) for k, v in values.items()}


def count_writes():
    """Wrap the checkpoint module's writers: how many files this rank wrote."""
    counts = {"writes": 0}
    for name in ("save_program", "save_state"):
        original = getattr(checkpoint, name)

        def counting(*args, _original=original, **kwargs):
            counts["writes"] += 1
            return _original(*args, **kwargs)
        setattr(checkpoint, name, counting)
    return counts


def save(folder):
    counts = count_writes()
    main, startup, loss = build_static(sharding=True)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)
    for step in range(3):
        static_step(exe, main, loss, scope, step)
    dist.save(main, folder / "static", scope=scope)
    model, opt = build_eager()
    for step in range(3):
        eager_step(model, opt, step)
    dist.save_state_dict({"model": model.state_dict(), "opt": opt.state_dict()}, folder / "eager.safetensors")
    report = {"writes": get_world().all_gather_object(counts["writes"], "write counts"),
              "files": sorted(p.name for p in folder.iterdir())}
    return report


def load(folder):
    report = {}
    for sharding in (False, True):
        main, startup, loss = build_static(sharding)
        exe, scope = fg.Executor(), fg.Scope()
        exe.run(startup, scope=scope)
        dist.load(main, folder / "static", exe, scope=scope)
        loaded = static_values(main, scope)
        static_step(exe, main, loss, scope, 3)
        report[f"static-sharding={sharding}"] = (loaded, static_values(main, scope))
    model, opt = build_eager()
    state = dist.load_state_dict(folder / "eager.safetensors")
    model.set_state_dict(state["model"])
    opt.set_state_dict(state["opt"])
    loaded = eager_values(model, opt)
    eager_step(model, opt, 3)
    report["eager"] = (loaded, eager_values(model, opt))
    spread = {}
    for case, (_, after) in report.items():  # every rank must hold the same values
        every = get_world().all_gather_object(after, "values")
        spread[case] = max(float(np.max(np.abs(e[k] - after[k]))) for e in every for k in after)
    return {case: {"loaded": {k: v.tolist() for k, v in loaded.items()},
                   "after": {k: v.tolist() for k, v in after.items()}, "spread": spread[case]}
            for case, (loaded, after) in report.items()}


def main(mode, folder):
    dist.init_parallel_env()
    folder = Path(folder)
    report = save(folder) if mode == "save" else load(folder)
    if get_world().rank == 0:
        (folder / f"{mode}-{get_world().size}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
