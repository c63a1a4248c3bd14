"""Run by tests/test_distributed_api.py through `fluidgrad launch -n N`: an eager model trained with
`DistributedOptimizer(optimizer)` and no DataParallel, against single-process training on the
concatenated batch, on every rank.

For SGD, Momentum and Adam, with and without clipping by global norm (small enough to act), 12
steps (alternately `step()` and eager `minimize(loss)`): every rank starts from its own random
parameters (wrapping the optimizer must give every rank rank 0's) and trains on its shard of
the global batch; a plain copy trains on the whole batch from rank 0's initial values. The model
has a layer that is never called: its parameters get no gradient and must stay as they were.
Rank 0 writes, per case, the largest relative difference of the parameters and of the losses,
and the spread of the parameters across ranks.
"""
from __future__ import annotations

import json
import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.nn import functional as F

STEPS, PER_RANK, IN, HIDDEN, CLASSES = 12, 4, 6, 8, 3
CLIP_NORM = 0.05


class Net(fg.nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = fg.nn.Sequential(fg.nn.Linear(IN, HIDDEN), fg.nn.Tanh(), fg.nn.Linear(HIDDEN, CLASSES))
        self.unused = fg.nn.Linear(IN, 2)  # never called: no gradient on any rank

    def forward(self, x):
        return self.body(x)


def make_optimizer(kind, clip, parameters):
    grad_clip = fg.nn.ClipGradByGlobalNorm(CLIP_NORM) if clip else None
    if kind == "sgd":
        return fg.optimizer.SGD(0.1, parameters=parameters, grad_clip=grad_clip)
    if kind == "momentum":
        return fg.optimizer.Momentum(0.05, momentum=0.9, parameters=parameters, grad_clip=grad_clip)
    return fg.optimizer.Adam(0.01, parameters=parameters, grad_clip=grad_clip)


def rel_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def run(kind, clip, rank, world):
    fg.seed(500 + rank)  # different initial values on every rank
    model = Net()
    initial = {name: dist.broadcast(p.numpy().copy(), 0) for name, p in model.named_parameters()}  # rank 0's
    opt = dist.DistributedOptimizer(make_optimizer(kind, clip, model.parameters()))
    reference = Net()
    reference.set_state_dict({name: fg.to_tensor(value) for name, value in initial.items()})
    ref_opt = make_optimizer(kind, clip, reference.parameters())
    rng = np.random.default_rng(77)
    loss_diffs, clipped = [], False
    for step in range(STEPS):
        x = rng.standard_normal((PER_RANK * world, IN)).astype("float32")
        y = rng.integers(0, CLASSES, (PER_RANK * world, 1)).astype("int64")
        loss = F.cross_entropy(model(fg.to_tensor(dist.shard(x))), fg.to_tensor(dist.shard(y)))
        loss.backward()
        if step % 2:
            opt.minimize(loss)
        else:
            opt.step()
        opt.clear_grad()
        ref_loss = F.cross_entropy(reference(fg.to_tensor(x)), fg.to_tensor(y))
        ref_loss.backward()
        norm = np.sqrt(sum(float(np.sum(np.square(p.grad.numpy(), dtype=np.float64)))
                           for p in reference.parameters() if p.grad is not None))
        clipped = clipped or norm > CLIP_NORM
        ref_opt.step()
        ref_opt.clear_grad()
        loss_diffs.append(rel_diff(dist.all_reduce(np.array(loss.numpy(), np.float64), "avg"), ref_loss.numpy()))
    params = dict(model.named_parameters())
    param_diffs = [rel_diff(params[name], q.numpy()) for name, q in reference.named_parameters()]
    unused_moved = max(rel_diff(params[name], initial[name]) for name in params if name.startswith("unused"))
    spread = max(rel_diff(dist.all_gather(p.numpy())[r], p.numpy()) for p in params.values() for r in range(world))
    return {"loss": max(loss_diffs), "params": max(param_diffs), "n_params": len(param_diffs),
            "unused_moved": unused_moved, "spread": spread, "clipped": bool(clipped)}


def main(out_path):
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    cases = {f"{kind}-{'clip' if clip else 'noclip'}": run(kind, clip, rank, world)
             for kind in ("sgd", "momentum", "adam") for clip in (False, True)}
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"world": world, "cases": cases}, f)


if __name__ == "__main__":
    main(sys.argv[1])
