"""Run by tests/test_distributed_eager_fused.py through `fluidgrad launch -n N`: eager DataParallel
training whose optimizer step sums each bucket over ranks and updates it in one pass
(distributed/eager_fused.py), against single-process training on the concatenated batch.

Each case trains 20 steps from every rank's own random initial values next to a plain
single-process copy (eager_sharding.py's optimizers, steps and reference). Rank 0 writes per case
the largest relative differences of the losses (rank-averaged), of the parameters, of the
optimizer state and of the gradients read after each step (by position), the spread of the
parameters across ranks, and how many buckets the fused step updated and how many steps left a
deferred gradient in `.grad` after backward.
"""
from __future__ import annotations

import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.distributed import eager_fused, eager_stores
from fluidgrad.distributed.eager_fused import DeferredGrad

from eager_sharding import make_optimizer, reference_step, resume  # noqa: E402  (this folder)
from equivalence import batches, make_model, rel_diff  # noqa: E402
from sharding import run_cases  # noqa: E402

FUSED = {"buckets": 0}
_update_bucket = eager_fused.update_bucket


def _counted_update_bucket(*args, **kwargs):
    FUSED["buckets"] += 1
    return _update_bucket(*args, **kwargs)


eager_fused.update_bucket = _counted_update_bucket


def wrap(case, model):
    """DataParallel and the optimizer, plain or through DistributedOptimizer (the same step)."""
    dp = fg.DataParallel(model, comm_buffer_size=case.get("bucket_mb", 0.0005),
                         last_comm_buffer_size=case.get("first_mb", 0.0001))
    opt = make_optimizer(case, dp.parameters())
    return dp, dist.DistributedOptimizer(opt) if case.get("api") == "distributed" else opt


def train_step(case, model, opt, x, y):
    """One step on this rank's shard; (loss, whether .grad was deferred after backward)."""
    xs, ys = dist.shard(x), dist.shard(y)
    loss_fn = fg.nn.functional.cross_entropy
    total = 0.0
    if case.get("no_sync"):
        half = len(xs) // 2
        with model.no_sync():
            first = loss_fn(model(fg.to_tensor(xs[:half])), fg.to_tensor(ys[:half]))
            first.backward()
        total += float(first.numpy())
        xs, ys = xs[half:], ys[half:]
    loss = loss_fn(model(fg.to_tensor(xs)), fg.to_tensor(ys))
    loss.backward()
    params = model.parameters()
    deferred = all(type(p.grad) is DeferredGrad and p.grad.pending for p in params)
    if case.get("read"):  # a user's look at the gradients before the step (e.g. their norm) completes them
        float(sum(np.sum(np.square(p.grad.numpy())) for p in params))
    if case.get("minimize"):  # Paddle's dygraph form: minimize(loss) after backward() is step()
        opt.minimize(loss)
    else:
        opt.step()
    if case.get("zero_grad"):
        opt.zero_grad(set_to_none=False)  # zero-filled arrays: the next backward adds into them
    return total + float(loss.numpy()), deferred


def run_case(case, rank, world, out_dir):
    fg.seed(700 + rank)  # different initial values on every rank
    model, reference = make_model(), make_model()
    wrapped, opt = wrap(case, model)
    reference.set_state_dict({k: np.array(v.numpy()) for k, v in model.state_dict().items()})
    ref_opt = make_optimizer(case, reference.parameters())
    eager_fused.FUSE_UPDATES = case.get("fuse", True)
    eager_stores.POLICY = case.get("stores", "adaptive")
    FUSED["buckets"] = 0
    loss_diffs, grad_diffs, deferred_steps = [], [], 0
    params, ref_params = model.parameters(), reference.parameters()
    for step, (x, y) in enumerate(batches(world)):
        if case.get("resume") and step == 10:
            resume(model, opt, out_dir)
        if case.get("discard"):  # a backward whose gradients are dropped unread, no step: changes nothing
            fg.nn.functional.cross_entropy(wrapped(fg.to_tensor(dist.shard(x))), fg.to_tensor(dist.shard(y))).backward()
            opt.clear_grad()
        total, deferred = train_step(case, wrapped, opt, x, y)
        deferred_steps += deferred
        grads = None if case.get("zero_grad") else [p.grad.numpy().copy() for p in params]  # after step()
        if not case.get("zero_grad"):
            opt.clear_grad()
        ref_opt.step = _keeping_grads(ref_opt, ref_params, kept := [])
        ref_total, _ = reference_step(case, world, reference, ref_opt, x, y)
        if grads is not None:
            grad_diffs.append(max(rel_diff(g, r) for g, r in zip(grads, kept)))
        loss_diffs.append(rel_diff(dist.all_reduce(np.array(total, np.float64), "avg"), ref_total))
        if case.get("schedule"):
            opt._learning_rate.step()
            ref_opt._learning_rate.step()
    eager_fused.FUSE_UPDATES = True
    eager_stores.POLICY = "adaptive"
    state, ref_state = ({f"{i}.{slot}": v for i, slots in o.state_dict()["state"].items() for slot, v in slots.items()}
                        for o in (opt, ref_opt))
    return {
        "loss": max(loss_diffs),
        "params": max(rel_diff(p.numpy(), q.numpy()) for p, q in zip(params, ref_params)),
        "state": max([rel_diff(a, b) for a, b in zip(state.values(), ref_state.values())] or [0.0]),
        "n_state": [len(state), len(ref_state)],
        "grads": max(grad_diffs or [0.0]),
        "spread": max(rel_diff(dist.all_gather(p.numpy())[r], p.numpy()) for p in params for r in range(world)),
        "fused_buckets": FUSED["buckets"],
        "buckets": len(wrapped._layout.buckets),
        "deferred_steps": deferred_steps,
    }


def _keeping_grads(opt, params, kept):
    """The reference optimizer's step, first copying the gradients it applies into `kept`."""
    step = type(opt).step

    def keeping():
        kept[:] = [p.grad.numpy().copy() for p in params]
        step(opt)
    return keeping


CASES = [
    {"name": f"{kind}{'-no_sync' if no_sync else ''}", "kind": kind, "no_sync": no_sync}
    for kind in ("sgd", "momentum", "adam") for no_sync in (False, True)
] + [
    {"name": "sgd-one-bucket", "kind": "sgd", "bucket_mb": 25.0, "first_mb": 25.0},
    {"name": "adam-per-parameter", "kind": "adam", "bucket_mb": 0.0},
    {"name": "momentum-nesterov-l2-schedule", "kind": "momentum", "nesterov": True, "decay": 0.01, "schedule": True},
    {"name": "adamw-distributed", "kind": "adamw", "api": "distributed"},
    # AdamW's parameter groups with decays of their own and apply_decay_param_fun: each parameter's own decay
    {"name": "adamw-groups", "kind": "adamw", "groups": True, "bucket_mb": 25.0},
    {"name": "sgd-distributed-minimize", "kind": "sgd", "api": "distributed", "minimize": True},
    {"name": "sgd-l2-mpi", "kind": "sgd", "decay": 0.01, "path": "mpi"},
    {"name": "adam-mpi", "kind": "adam", "path": "mpi"},
    {"name": "momentum-numpy", "kind": "momentum", "numba": False},
    {"name": "adam-resume", "kind": "adam", "resume": True},
    # zero-filled gradients kept from step to step: the next backward folds them into the buckets
    {"name": "momentum-zero_grad", "kind": "momentum", "zero_grad": True},
    # a reduction nobody read or applied: the next backward completes it before writing the rows
    {"name": "sgd-discard", "kind": "sgd", "discard": True},
    {"name": "adam-discard-mpi", "kind": "adam", "discard": True, "path": "mpi"},
    # the optimizer's own step: gradients read before it, clipping, the fused update switched off
    {"name": "momentum-read", "kind": "momentum", "read": True},
    {"name": "adam-norm", "kind": "adam", "clip": "norm"},
    {"name": "sgd-unfused", "kind": "sgd", "fuse": False},
    # two ranks' rows written with streaming stores (eager_stores.py), or ordinary ones, whatever the probe says:
    # the sums read this rank's own gradients where they were made (fused, read, unfused), folded ones too
    {"name": "sgd-streamed", "kind": "sgd", "stores": "stream"},
    {"name": "adam-no_sync-streamed", "kind": "adam", "no_sync": True, "stores": "stream"},
    {"name": "momentum-read-streamed", "kind": "momentum", "read": True, "stores": "stream"},
    {"name": "sgd-unfused-streamed", "kind": "sgd", "fuse": False, "stores": "stream"},
    {"name": "adam-ordinary", "kind": "adam", "stores": "ordinary"},
]


def main(out_path):
    run_cases(CASES, run_case, out_path, {})


if __name__ == "__main__":
    main(sys.argv[1])
