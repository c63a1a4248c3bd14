"""The sharded optimizer update (ZeRO stage 1; Paddle's sharding stage 1, PyTorch's
ZeroRedundancyOptimizer) as a program transformation: `DistributedOptimizer(opt, sharding=True)`.

Each of p ranks sums only its 1/p of each gradient bucket and updates only the parameters and
optimizer state of that 1/p. Per bucket, after `append_backward`:

    {b.grad}      = c_bucket_reducescatter(X=[gradients])   # this rank's part, averaged over ranks
    ... clipping (a global norm: squared sums of the parts, c_allreduce_sum) ...
    {b.param}     = c_bucket_shard(X=[parameters])          # this rank's part of the parameters
    {b.velocity}  = c_bucket_shard(X=[velocities])          # ... and of each optimizer state
    ... weight decay, then the optimizer's own update op on the parts ...
    {velocities}  = c_bucket_allgather(X=b.velocity)        # written into the node's one copy
    {parameters}  = c_bucket_allgather(X=b.param)           # ... and published (a barrier)

The node keeps ONE copy of each bucket's parameters and elementwise optimizer state (an MPI
shared window; one per process across nodes, completed by MPI's all-gather); the scope's
arrays are read-only views of it, so fetches, state dicts, `io.save` on rank 0 and
`str(program)` show complete values. The startup program fills the copies from rank 0
(`c_bucket_broadcast`, instead of one `c_broadcast` per parameter). Scalar optimizer state
(Adam's beta powers) stays on every rank, advanced identically by every rank.

The node copies belong to the program (keys made at minimize(), kept for the life of the
process): its startup run again, in any scope, refills the same copies, so one sharded program
trains one set of parameters per process. The scope's parameters are read-only: assign new
arrays (`scope.assign`, `io.load`, `set_state_dict`), which the next step puts back into the
copy, rather than writing into them.

Clipping by global norm is computed over the parts and summed over ranks (the global norm);
clipping by value and L1/L2 decay are elementwise. Clipping by each parameter's own norm
(`ClipGradByNorm`) and optimizers that override how their update op is appended are not
expressible on parts: `sharding=True` then falls back to the plain bucketed all-reduce, with
a warning.
"""
from __future__ import annotations

import itertools
import warnings
from typing import Any

from ..framework import OPTIMIZE, Block, Operator, Program, Variable, unique_name
from ..framework.emit import constant, emit
from ..nn.clip import ClipGradByGlobalNorm, ClipGradByValue
from ..ops.comm import get_world
from ..optimizer import SGD, Adam, AdamW, Momentum, Optimizer
from ..regularizer import L2Decay
from .buckets import plan_buckets
from .eager_sharding import group_sharded_parallel  # noqa: F401  (Paddle's path: distributed.sharding)

ParamsGrads = list[tuple[Variable, Variable]]
# numbers the node copies a process makes, in the same order on every rank (programs are built
# in the same order, which minimize() checks): a copy holds training state, so two programs
# must never share one, even when both were built under unique_name_guard with the same names
_COPIES = itertools.count()


# SGD, Momentum and Adam without clipping: the bucket's reduce-scatter, update and all-gather as one op
# (c_bucket_sgd / c_bucket_momentum / c_bucket_adam), the sum and the update in one pass (ops/fused_shards.py)
FUSE_UPDATES = True


def fused_update(optimizer: Optimizer) -> str | None:
    """The fused op that can do `optimizer`'s whole sharded update, or None."""
    regularization = optimizer.regularization
    if (not FUSE_UPDATES or optimizer._grad_clip is not None
            or not (regularization is None or type(regularization) is L2Decay)):
        return None
    return {SGD: "c_bucket_sgd", Momentum: "c_bucket_momentum", Adam: "c_bucket_adam",
            AdamW: "c_bucket_adam"}.get(type(optimizer))


def sharding_unsupported(optimizer: Optimizer) -> str | None:
    """Why `optimizer`'s update cannot run on parts of buckets, or None when it can."""
    clip = optimizer._grad_clip
    if clip is not None and not isinstance(clip, (ClipGradByGlobalNorm, ClipGradByValue)):
        return f"{type(clip).__name__} needs each parameter's whole gradient"
    if type(optimizer)._append_update is not Optimizer._append_update:
        return f"{type(optimizer).__name__} appends its own update ops"
    return None


def fall_back(reason: str) -> None:
    warnings.warn(f"DistributedOptimizer(sharding=True): {reason}; using the plain bucketed all-reduce "
                  f"(every rank updates every parameter)", stacklevel=3)


class ShardedBucket:
    """One bucket's variables: its parameters and gradients, the parts of this rank, the node-copy keys."""

    def __init__(self, block: Block, pairs: ParamsGrads, nranks: int) -> None:
        self.params = [p for p, _ in pairs]
        self.grads = [g for _, g in pairs]
        self.key = unique_name("shard_bucket")
        self.copy_key = f"{self.key}#{next(_COPIES)}"  # the node copies: parameters, then optimizer state
        self.nranks = nranks
        self.shapes = [list(p.shape) for p in self.params]
        self.dtype = self.params[0].dtype
        self.grad_part = self.part_var(block, "grad")

    def part_var(self, block: Block, what: str) -> Variable:
        return block.create_var(f"{self.key}.{what}", stop_gradient=True)


def append_sharded_update(optimizer: Optimizer, block: Block, startup: Program, pairs: ParamsGrads,
                          bucket_bytes: float, first_bucket_bytes: float | None = None) -> list[Operator]:
    """Append the sharded reduce, clipping, decay, update and gather ops for `pairs` (see the module
    docstring), and the startup ops filling the node copies; returns the update ops."""
    nranks = get_world().size
    role = {"op_role": OPTIMIZE}
    grads = [g for _, g in pairs]
    plan = plan_buckets([g.shape for g in grads], [g.dtype for g in grads], bucket_bytes, first_bucket_bytes)
    buckets = [ShardedBucket(block, [pairs[i] for i in indices], nranks) for indices in plan]
    fused = fused_update(optimizer)
    if fused is not None:
        lr = optimizer._create_lr_var(block, startup, pairs[0][0].dtype)
        return [_append_fused_update(fused, optimizer, block, startup, b, lr) for b in buckets]
    for b in buckets:
        block.append_op("c_bucket_reducescatter", {"X": b.grads}, {"Out": b.grad_part},
                        {"reduce": "avg", "bucket": b.key, "nranks": nranks, **role})
    parts = _append_clip(optimizer, block, [b.grad_part for b in buckets])
    lr = optimizer._create_lr_var(block, startup, pairs[0][0].dtype)
    update_ops = []
    for b, grad_part in zip(buckets, parts):
        update_ops.append(_append_bucket_update(optimizer, block, startup, b, grad_part, lr))
    return update_ops


def append_fused_allreduce_update(optimizer: Optimizer, block: Block, startup: Program, pairs: ParamsGrads,
                                  bucket_bytes: float, first_bucket_bytes: float | None = None) -> list[Operator] | None:
    """Without sharding: one fused op per bucket (c_bucket_sgd / momentum / adam with shard=False)
    that sums the whole bucket over ranks and updates every parameter of it on every rank, in
    one pass, with no gradient array in between; None when `optimizer` has no fused op (the
    caller then appends the bucketed all-reduce and the optimizer's own update ops)."""
    fused = fused_update(optimizer)
    if fused is None:
        return None
    nranks = get_world().size
    grads = [g for _, g in pairs]
    plan = plan_buckets([g.shape for g in grads], [g.dtype for g in grads], bucket_bytes, first_bucket_bytes)
    buckets = [ShardedBucket(block, [pairs[i] for i in indices], nranks) for indices in plan]
    lr = optimizer._create_lr_var(block, startup, pairs[0][0].dtype)
    return [_append_fused_update(fused, optimizer, block, startup, b, lr, shard=False) for b in buckets]


def _append_fused_update(op_type: str, optimizer: Optimizer, block: Block, startup: Program, b: ShardedBucket,
                         lr: Variable, shard: bool = True) -> Operator:
    """The fused op of one bucket; `shard`: its state in node copies the startup fills (else each
    rank's own arrays, equal on every rank)."""
    decay = optimizer.regularization.coeff if optimizer.regularization is not None else 0.0
    attrs = {"reduce": "avg", "bucket": b.key, "copy": b.copy_key, "nranks": b.nranks, "decay": decay,
             "shard": shard, "op_role": OPTIMIZE}
    inputs: dict[str, Any] = {"X": b.grads, "Param": b.params, "LearningRate": lr}
    outputs: dict[str, Any] = {"ParamOut": b.params}
    fill = _append_startup_fill if shard else (lambda *_: None)
    fill(startup, b.params, b.copy_key)
    if op_type == "c_bucket_momentum":
        velocities = [optimizer._accumulator(block, startup, p, "Velocity") for p in b.params]
        inputs["Velocity"], outputs["VelocityOut"] = velocities, velocities
        attrs.update(optimizer.update_attrs())
        fill(startup, velocities, b.copy_key + ".velocity")
    if op_type == "c_bucket_adam":
        attrs.update(optimizer.update_attrs())
        for slot in ("Moment1", "Moment2", "Beta1Pow", "Beta2Pow"):
            accs = [optimizer._accumulator(block, startup, p, slot) for p in b.params]
            inputs[slot], outputs[slot + "Out"] = accs, accs
            if slot.startswith("Moment"):
                fill(startup, accs, f"{b.copy_key}.{slot.lower()}")
    return block.append_op(op_type, inputs, outputs, attrs)


def _append_clip(optimizer: Optimizer, block: Block, parts: list[Variable]) -> list[Variable]:
    clip = optimizer._grad_clip
    if clip is None:
        return parts
    if isinstance(clip, ClipGradByValue):
        return [g for _, g in clip.append_clip_ops(block, [(g, g) for g in parts])]
    # the global norm: squared sums of this rank's parts, summed over ranks
    squares = [emit(block, "reduce_sum", {"X": emit(block, "square", {"X": g})},
                    {"axis": None, "keepdim": False, "reduce_all": True}) for g in parts]
    local = squares[0] if len(squares) == 1 else emit(block, "sum", {"X": squares})
    total = emit(block, "c_allreduce_sum", {"X": local})
    bound = constant(block, clip.clip_norm, total.dtype)
    factor = emit(block, "elementwise_div", {"X": bound, "Y": emit(block, "elementwise_max", {
        "X": emit(block, "sqrt", {"X": total}), "Y": bound})})
    return [emit(block, "elementwise_mul", {"X": g, "Y": factor}, out_name=f"{g.name}@CLIP") for g in parts]


def _append_bucket_update(optimizer: Optimizer, block: Block, startup: Program, b: ShardedBucket,
                          grad_part: Variable, lr: Variable) -> Operator:
    role = {"op_role": OPTIMIZE}
    nranks = b.nranks
    param_part = b.part_var(block, "param")
    block.append_op("c_bucket_shard", {"X": b.params}, {"Out": param_part}, {"nranks": nranks, **role})
    grad_part = optimizer._append_decay(block, param_part, grad_part)
    inputs: dict[str, Any] = {"Param": param_part, "Grad": grad_part, "LearningRate": lr}
    outputs: dict[str, Any] = {"ParamOut": param_part}
    gathers: list[tuple[Variable, list[Variable], str]] = []
    followers: list[list[Variable]] = []
    for slot, (_, kind) in optimizer.accumulators.items():
        accs = [optimizer._accumulator(block, startup, p, slot) for p in b.params]
        if kind == "param":
            part = b.part_var(block, slot.lower())
            block.append_op("c_bucket_shard", {"X": accs}, {"Out": part}, {"nranks": nranks, **role})
            inputs[slot], outputs[slot + "Out"] = part, part
            gathers.append((part, accs, f"{b.copy_key}.{slot.lower()}"))
        else:  # one per parameter, equal on every rank (beta powers): the first one's drives the bucket
            inputs[slot], outputs[slot + "Out"] = accs[0], accs[0]
            followers.append(accs)
    update = block.append_op(optimizer.op_type, inputs, outputs, {**optimizer.update_attrs(), **role})
    for part, accs, key in gathers:
        block.append_op("c_bucket_allgather", {"X": part}, {"Out": accs},
                        {"bucket": key, "shapes": b.shapes, "nranks": nranks, "sync": False, **role})
    for accs in followers:
        for acc in accs[1:]:
            block.append_op("assign", {"X": accs[0]}, {"Out": acc}, role)
    block.append_op("c_bucket_allgather", {"X": param_part}, {"Out": b.params},
                    {"bucket": b.copy_key, "shapes": b.shapes, "nranks": nranks, "sync": True, **role})
    _append_startup_fill(startup, b.params, b.copy_key)
    for _, accs, key in gathers:
        _append_startup_fill(startup, accs, key)
    return update


def _append_startup_fill(startup: Program, variables: list[Variable], key: str) -> None:
    """Startup: rank 0's values into the node's copy under `key` (the scope then holds its views)."""
    block = startup.global_block()
    found = []
    for var in variables:
        init = block._find_var_recursive(var.name)
        if init is None:
            raise ValueError(f"DistributedOptimizer: {var.name} is not initialised by the startup program given; "
                             f"pass the startup program the model was built with")
        found.append(init)
    block.append_op("c_bucket_broadcast", {"X": found}, {"Out": found}, {"bucket": key, "root": 0})
