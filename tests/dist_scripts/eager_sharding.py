"""Run by tests/test_distributed_eager_sharding.py through `fluidgrad launch -n N`: eager training
with a sharded optimizer update (ZeRO stage 1) against single-process training on the
concatenated batch, on every rank.

Each case trains 20 steps from every rank's own random initial values (DataParallel, or the sharded
optimizer itself when no DataParallel wraps the model, must make them rank 0's) next to a plain
single-process copy. Rank 0 writes per case the largest relative differences of the losses
(rank-averaged), of the parameters and of the optimizer state (by position: the two models' names
differ), the spread of the parameters across ranks, whether they are views of a node copy, and
whether DataParallel reduced anything during backward (it must not: the optimizer does).
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.distributed import eager_sharding
from fluidgrad.nn import functional as F

from sharding import run_cases  # noqa: E402  (this folder: the static cases' runner)
from equivalence import PER_RANK, batches, make_model, rel_diff  # this folder: the same model and data

CLIP_NORM = 0.05


def make_optimizer(case, parameters):
    kind = case["kind"]
    grad_clip = {None: None, "norm": fg.nn.ClipGradByGlobalNorm(CLIP_NORM), "value": fg.nn.ClipGradByValue(0.01),
                 "each": fg.nn.ClipGradByNorm(0.02)}[case.get("clip")]
    lr = {"sgd": 0.1, "momentum": 0.05, "adam": 0.01, "adamw": 0.01}[kind]
    if case.get("schedule"):
        lr = fg.optimizer.lr.StepDecay(lr, step_size=5, gamma=0.5)
    decay = case.get("decay")
    if kind == "sgd":
        return fg.optimizer.SGD(lr, parameters=parameters, grad_clip=grad_clip, weight_decay=decay)
    if kind == "momentum":
        return fg.optimizer.Momentum(lr, momentum=0.9, parameters=parameters, grad_clip=grad_clip,
                                     weight_decay=decay, use_nesterov=case.get("nesterov", False))
    if kind == "adamw" and case.get("groups"):
        # parameter groups with decoupled decays of their own, and biases left undecayed by name
        parameters = list(parameters)
        groups = [{"params": parameters[:2], "weight_decay": 0.3}, {"params": parameters[2:4], "weight_decay": 0.0},
                  {"params": parameters[4:]}]
        return fg.optimizer.AdamW(lr, parameters=groups, grad_clip=grad_clip, weight_decay=0.05,
                                  apply_decay_param_fun=lambda name: ".b_" not in name)
    if kind == "adamw":
        return fg.optimizer.AdamW(lr, parameters=parameters, grad_clip=grad_clip, weight_decay=0.05)
    return fg.optimizer.Adam(lr, parameters=parameters, grad_clip=grad_clip, weight_decay=decay)


def wrap(case, model):
    """The model and sharded optimizer through one of the three public forms."""
    bucket_mb = case.get("bucket_mb", 0.0005)  # several buckets of the small model unless given
    api = case.get("api", "distributed")
    if api == "distributed":  # DataParallel + DistributedOptimizer(opt, sharding=True), as static mode
        dp = fg.DataParallel(model)
        return dp, dist.DistributedOptimizer(make_optimizer(case, dp.parameters()), bucket_size_mb=bucket_mb,
                                             sharding=True)
    if api == "paddle":
        return dist.group_sharded_parallel(model, make_optimizer(case, model.parameters()), "os",
                                           bucket_size_mb=bucket_mb)[:2]
    if api == "late":  # DataParallel made after the optimizer: its first backward reduces, then it hands over
        opt = dist.ShardedOptimizer(make_optimizer(case, model.parameters()), bucket_size_mb=bucket_mb)
        return fg.DataParallel(model), opt
    # PyTorch's form, no DataParallel: the optimizer takes rank 0's parameters itself
    kind = {"sgd": fg.optimizer.SGD, "momentum": fg.optimizer.Momentum, "adam": fg.optimizer.Adam}[case["kind"]]
    defaults = {"momentum": {"momentum": 0.9}}.get(case["kind"], {})
    lr = {"sgd": 0.1, "momentum": 0.05, "adam": 0.01}[case["kind"]]
    return model, dist.ZeroRedundancyOptimizer(model.parameters(), kind, bucket_size_mb=bucket_mb, lr=lr, **defaults)


def train_step(case, model, opt, x, y):
    """One step on this rank's shard; with `no_sync`, two micro-batches, the first without communication."""
    xs, ys = dist.shard(x), dist.shard(y)
    if not case.get("no_sync"):
        loss = F.cross_entropy(model(fg.to_tensor(xs)), fg.to_tensor(ys))
        loss.backward()
        total = float(loss.numpy())
    else:
        half = PER_RANK // 2
        with model.no_sync():
            first = F.cross_entropy(model(fg.to_tensor(xs[:half])), fg.to_tensor(ys[:half]))
            first.backward()
        second = F.cross_entropy(model(fg.to_tensor(xs[half:])), fg.to_tensor(ys[half:]))
        second.backward()
        total = float(first.numpy()) + float(second.numpy())
    opt.step()
    opt.clear_grad()
    return total


def reference_step(case, world, model, opt, x, y):
    """The same step in one process on the whole batch (with `no_sync`: the same two halves of it);
    (loss, whether the gradient's global norm exceeded CLIP_NORM)."""
    if not case.get("no_sync"):
        loss = F.cross_entropy(model(fg.to_tensor(x)), fg.to_tensor(y))
        loss.backward()
        total = float(loss.numpy())
    else:
        half = PER_RANK // 2
        total = 0.0
        for part in (slice(None, half), slice(half, None)):
            xh, yh = (np.concatenate([dist.shard(a, r, world)[part] for r in range(world)]) for a in (x, y))
            loss = F.cross_entropy(model(fg.to_tensor(xh)), fg.to_tensor(yh))
            loss.backward()
            total += float(loss.numpy())
    norm = np.sqrt(sum(float(np.sum(np.square(p.grad.numpy(), dtype=np.float64))) for p in model.parameters()))
    opt.step()
    opt.clear_grad()
    return total, norm > CLIP_NORM


def resume(model, opt, out_dir):
    """A checkpoint written by rank 0 and loaded back on every rank: private arrays again, which the
    next step must put back into the node copies (the reference trains on: the values are the same)."""
    path = Path(out_dir)
    dist.save_state_dict(model.state_dict(), path / "model.safetensors")
    dist.save_state_dict(opt.state_dict(), path / "opt.safetensors")
    model.set_state_dict(dist.load_state_dict(path / "model.safetensors"))
    opt.set_state_dict(dist.load_state_dict(path / "opt.safetensors"))


def run_case(case, rank, world, out_dir):
    fg.seed(500 + rank)  # different initial values on every rank
    model = make_model()
    reference = make_model()
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        wrapped, opt = wrap(case, model)
    reference.set_state_dict({k: np.array(v.numpy()) for k, v in model.state_dict().items()})
    ref_opt = make_optimizer(case, reference.parameters())
    eager_sharding.FUSE_UPDATES = case.get("fuse", True)
    loss_diffs, reduced_in_backward, clipped = [], [], False
    for step, (x, y) in enumerate(batches(world)):
        if case.get("resume") and step == 10:
            resume(model, opt, out_dir)
        total = train_step(case, wrapped, opt, x, y)
        reduced_in_backward.append(getattr(wrapped, "last_step", None) is not None)
        if hasattr(wrapped, "last_step"):
            object.__setattr__(wrapped, "last_step", None)
        ref_total, above = reference_step(case, world, reference, ref_opt, x, y)
        clipped = clipped or above
        loss_diffs.append(rel_diff(dist.all_reduce(np.array(total, np.float64), "avg"), ref_total))
        if case.get("schedule"):
            opt._learning_rate.step()
            ref_opt._learning_rate.step()
    eager_sharding.FUSE_UPDATES = True
    params, ref_params = model.parameters(), reference.parameters()
    state, ref_state = ({f"{i}.{slot}": v for i, slots in o.state_dict()["state"].items() for slot, v in slots.items()}
                        for o in (opt, ref_opt))
    slots = [k.rsplit(".", 1)[1] for k in state]
    if slots != [k.rsplit(".", 1)[1] for k in ref_state]:
        raise AssertionError(f"optimizer state entries differ: {list(state)} vs {list(ref_state)}")
    return {
        "loss": max(loss_diffs),
        "params": max(rel_diff(p.numpy(), q.numpy()) for p, q in zip(params, ref_params)),
        "state": max([rel_diff(a, b) for a, b in zip(state.values(), ref_state.values())] or [0.0]),
        "state_each": {k: rel_diff(a, b) for (k, a), b in zip(state.items(), ref_state.values())},
        "n_params": len(params), "n_state": len(state),
        "spread": max(rel_diff(dist.all_gather(p.numpy())[r], p.numpy()) for p in params for r in range(world)),
        "views": all(not p._array.flags.writeable and p._array.base is not None for p in params),
        "reduced_in_backward": reduced_in_backward,
        "warnings": [str(w.message) for w in warned],
        "clipped": bool(clipped),
        "final": final_checkpoint(model, out_dir, case["name"]) if case.get("resume") else None,
    }


def final_checkpoint(model, out_dir, name):
    """The trained parameters written by rank 0 (for the test to load in one process), and their values."""
    path = Path(out_dir) / f"{name}-final.safetensors"
    dist.save_state_dict(model.state_dict(), path)
    return {"path": str(path), "values": {k: v.numpy().tolist() for k, v in model.state_dict().items()}}


CASES = [
    {"name": f"{kind}-{clip or 'noclip'}", "kind": kind, "clip": clip}
    for kind in ("sgd", "momentum", "adam") for clip in (None, "norm")
] + [
    {"name": "adam-norm-one-bucket", "kind": "adam", "clip": "norm", "bucket_mb": 25.0},
    {"name": "momentum-nesterov-l2-schedule", "kind": "momentum", "nesterov": True, "decay": 0.01, "schedule": True},
    {"name": "adamw-value", "kind": "adamw", "clip": "value"},
    {"name": "adam-norm-mpi", "kind": "adam", "clip": "norm", "path": "mpi"},
    {"name": "sgd-l2-mpi", "kind": "sgd", "decay": 0.01, "path": "mpi"},
    {"name": "momentum-unfused", "kind": "momentum", "fuse": False},
    {"name": "adam-l2-numpy", "kind": "adam", "decay": 0.01, "numba": False},
    {"name": "momentum-no_sync", "kind": "momentum", "no_sync": True},
    {"name": "adam-resume", "kind": "adam", "resume": True},
    {"name": "momentum-zero", "kind": "momentum", "api": "torch"},
    {"name": "adam-paddle-one-bucket", "kind": "adam", "api": "paddle", "bucket_mb": 25.0},
    {"name": "sgd-each-norm-fallback", "kind": "sgd", "clip": "each"},
    # AdamW parameter groups with decays of their own: the sharded kernels apply one decay, so the plain all-reduce
    {"name": "adamw-groups-fallback", "kind": "adamw", "groups": True},
    {"name": "momentum-late-dp", "kind": "momentum", "api": "late"},
]


def retained_graph_after_a_step():
    """A graph recorded before a sharded step read parameters the step then changed in place (the
    second step's parameters are views of the node copy): a second backward through it must refuse,
    as after an in-place SGD step. Returns the error, or None."""
    fg.seed(9)
    dp = fg.DataParallel(make_model())
    opt = dist.DistributedOptimizer(fg.optimizer.SGD(0.1, parameters=dp.parameters()), sharding=True)
    x = fg.to_tensor(np.ones((2, 6), "float32"))
    for _ in range(2):
        loss = dp(x).sum()
        loss.backward(retain_graph=True)
        opt.step()
        opt.clear_grad()
    try:
        loss.backward()
    except RuntimeError as error:
        return str(error)
    return None


def main(out_path):
    run_cases(CASES, run_case, out_path, {"retained": lambda rank, world: retained_graph_after_a_step()})


if __name__ == "__main__":
    main(sys.argv[1])
