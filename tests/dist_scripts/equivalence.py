"""Run by tests/test_distributed.py through `fluidgrad launch -n N`: data-parallel training
against single-process training on the concatenated batch, on every rank.

For each mode (static, eager), optimizer (SGD, Momentum, Adam) and clipping (none, global
norm small enough to act), 20 steps: every rank trains on its shard of a global batch with
DistributedOptimizer / DataParallel, starting from its own random initial parameters (the
broadcast from rank 0 must make them equal), and also trains a plain single-process copy
(from rank 0's initial values) on the whole global batch. Rank 0 writes, per case, the largest
relative difference of the losses (rank-averaged) and of every parameter after the last step.
"""
from __future__ import annotations

import json
import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.nn import functional as F
from fluidgrad.ops.comm import get_world

STEPS, PER_RANK, IN, HIDDEN, CLASSES = 20, 4, 6, 16, 3
CLIP_NORM = 0.05


def make_optimizer(kind, clip, parameters=None):
    grad_clip = fg.nn.ClipGradByGlobalNorm(CLIP_NORM) if clip else None
    if kind == "sgd":
        return fg.optimizer.SGD(0.1, parameters=parameters, grad_clip=grad_clip)
    if kind == "momentum":
        return fg.optimizer.Momentum(0.05, momentum=0.9, parameters=parameters, grad_clip=grad_clip)
    return fg.optimizer.Adam(0.01, parameters=parameters, grad_clip=grad_clip)


def batches(world):
    rng = np.random.default_rng(1234)
    for _ in range(STEPS):
        x = rng.standard_normal((PER_RANK * world, IN)).astype("float32")
        y = rng.integers(0, CLASSES, (PER_RANK * world, 1)).astype("int64")
        yield x, y


def rel_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


# ------------------------------------------------------------------ static
def build_static(kind, clip, distributed):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, IN], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = fg.static.nn.fc(x, HIDDEN, activation="tanh")
        h = fg.static.nn.fc(h, HIDDEN, activation="tanh")
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, CLASSES), y))
        opt = make_optimizer(kind, clip)
        (dist.DistributedOptimizer(opt, bucket_size_mb=0.0005) if distributed else opt).minimize(loss, startup)
    return main, startup, loss


def run_static(kind, clip, rank, world):
    fg.seed(100 + rank)  # different initial values on every rank: the broadcast must fix that
    main, startup, loss = build_static(kind, clip, True)
    ref_main, ref_startup, ref_loss = build_static(kind, clip, False)
    exe, scope, ref_scope = fg.Executor(), fg.Scope(), fg.Scope()
    exe.run(startup, scope=scope)
    exe.run(ref_startup, scope=ref_scope)
    params, ref_params = main.all_parameters(), ref_main.all_parameters()
    for p, q in zip(params, ref_params):
        ref_scope.assign(q.name, np.array(scope[p.name]))
    loss_diffs, clipped = [], False
    ref_grads = [f"{q.name}@GRAD" for q in ref_params]
    for x, y in batches(world):
        (value,) = exe.run(main, feed={"x": dist.shard(x), "y": dist.shard(y)}, fetch_list=[loss], scope=scope)
        ref_value, *grads = exe.run(ref_main, feed={"x": x, "y": y}, fetch_list=[ref_loss] + ref_grads,
                                    scope=ref_scope)
        clipped = clipped or np.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads)) > CLIP_NORM
        loss_diffs.append(rel_diff(dist.all_reduce(np.array(value, np.float64), "avg"), ref_value))
    param_diffs = [rel_diff(scope[p.name], ref_scope[q.name]) for p, q in zip(params, ref_params)]
    spread = max(rel_diff(dist.all_gather(np.array(scope[p.name]))[r], scope[p.name])
                 for p in params for r in range(world))
    return loss_diffs, param_diffs, spread, str(main), clipped


# ------------------------------------------------------------------ eager
def make_model():
    return fg.nn.Sequential(fg.nn.Linear(IN, HIDDEN), fg.nn.Tanh(), fg.nn.Linear(HIDDEN, HIDDEN), fg.nn.Tanh(),
                            fg.nn.Linear(HIDDEN, CLASSES))


def run_eager(kind, clip, rank, world):
    fg.seed(200 + rank)
    model = make_model()
    dp = fg.DataParallel(model, comm_buffer_size=0.0005, last_comm_buffer_size=0.0001)
    reference = make_model()
    reference.set_state_dict(model.state_dict())
    opt, ref_opt = make_optimizer(kind, clip, dp.parameters()), make_optimizer(kind, clip, reference.parameters())
    loss_diffs, clipped = [], False
    for x, y in batches(world):
        loss = F.cross_entropy(dp(fg.to_tensor(dist.shard(x))), fg.to_tensor(dist.shard(y)))
        loss.backward()
        opt.step()
        opt.clear_grad()
        ref_loss = F.cross_entropy(reference(fg.to_tensor(x)), fg.to_tensor(y))
        ref_loss.backward()
        norm = np.sqrt(sum(float(np.sum(np.square(p.grad.numpy(), dtype=np.float64))) for p in reference.parameters()))
        clipped = clipped or norm > CLIP_NORM
        ref_opt.step()
        ref_opt.clear_grad()
        loss_diffs.append(rel_diff(dist.all_reduce(np.array(loss.numpy(), np.float64), "avg"), ref_loss.numpy()))
    param_diffs = [rel_diff(p.numpy(), q.numpy()) for p, q in zip(model.parameters(), reference.parameters())]
    spread = max(rel_diff(dist.all_gather(p.numpy())[r], p.numpy()) for p in model.parameters() for r in range(world))
    return loss_diffs, param_diffs, spread, "", clipped


def run_no_sync(kind, clip, rank, world):
    """Gradient accumulation: two micro-batches per step, the first under no_sync(); the
    reference accumulates the same two halves of the global batch (each the concatenation
    of every rank's half)."""
    fg.seed(300 + rank)
    model = make_model()
    dp = fg.DataParallel(model, comm_buffer_size=0.0005, last_comm_buffer_size=0.0001)
    reference = make_model()
    reference.set_state_dict(model.state_dict())
    opt, ref_opt = make_optimizer(kind, clip, dp.parameters()), make_optimizer(kind, clip, reference.parameters())
    half = PER_RANK // 2
    loss_diffs = []
    for x, y in batches(world):
        xs, ys = dist.shard(x), dist.shard(y)
        before = dp.last_step
        with dp.no_sync():
            first = F.cross_entropy(dp(fg.to_tensor(xs[:half])), fg.to_tensor(ys[:half]))
            first.backward()
        if dp.last_step is not before:
            raise AssertionError("no_sync(): the forward pass set up gradient communication")
        second = F.cross_entropy(dp(fg.to_tensor(xs[half:])), fg.to_tensor(ys[half:]))
        second.backward()
        opt.step()
        opt.clear_grad()
        halves = [np.concatenate([dist.shard(a, r, world)[part] for r in range(world)]) for a in (x, y)
                  for part in (slice(None, half), slice(half, None))]
        ref_total = 0.0
        for xh, yh in ((halves[0], halves[2]), (halves[1], halves[3])):
            ref_loss = F.cross_entropy(reference(fg.to_tensor(xh)), fg.to_tensor(yh))
            ref_loss.backward()
            ref_total += float(ref_loss.numpy())
        ref_opt.step()
        ref_opt.clear_grad()
        total = float(first.numpy()) + float(second.numpy())
        loss_diffs.append(rel_diff(dist.all_reduce(np.array(total, np.float64), "avg"), ref_total))
    param_diffs = [rel_diff(p.numpy(), q.numpy()) for p, q in zip(model.parameters(), reference.parameters())]
    spread = max(rel_diff(dist.all_gather(p.numpy())[r], p.numpy()) for p in model.parameters() for r in range(world))
    return loss_diffs, param_diffs, spread, "", False


def main(out_path):
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {"world": world, "cases": {}}
    for mode, run in (("static", run_static), ("eager", run_eager)):
        for kind in ("sgd", "momentum", "adam"):
            for clip in (False, True):
                loss_diffs, param_diffs, spread, program, clipped = run(kind, clip, rank, world)
                results["cases"][f"{mode}-{kind}-{'clip' if clip else 'noclip'}"] = {
                    "loss": max(loss_diffs), "params": max(param_diffs), "n_params": len(param_diffs),
                    "spread": spread, "program": program, "clipped": bool(clipped)}
    get_world().allreduce_path = "mpi"  # buckets through MPI's Iallreduce (across nodes), not shared memory
    for mode, run in (("static", run_static), ("eager", run_eager)):
        loss_diffs, param_diffs, spread, program, clipped = run("adam", True, rank, world)
        results["cases"][f"{mode}-adam-clip-mpi"] = {
            "loss": max(loss_diffs), "params": max(param_diffs), "n_params": len(param_diffs),
            "spread": spread, "program": program, "clipped": bool(clipped)}
    get_world().allreduce_path = "auto"
    loss_diffs, param_diffs, spread, _, _ = run_no_sync("momentum", False, rank, world)
    results["cases"]["eager-momentum-no_sync"] = {"loss": max(loss_diffs), "params": max(param_diffs),
                                                  "n_params": len(param_diffs), "spread": spread, "program": "",
                                                  "clipped": False}
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1])
