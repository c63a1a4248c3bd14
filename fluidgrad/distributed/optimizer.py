"""Static data parallelism as a program transformation (Fluid's design).

`DistributedOptimizer(opt).minimize(loss)` = `append_backward(loss)`, then, for each bucket
of gradients, one `c_bucket_allreduce` (pack into a buffer kept between steps, one collective,
the gradient variables rewritten in place), then `opt`'s own clipping, decay and update ops.
SGD, Momentum and Adam / AdamW without clipping (L2 decay allowed) get one fused op per bucket
instead (`c_bucket_sgd` / `c_bucket_momentum` / `c_bucket_adam`, shard=False): the sum over
ranks and the update in one pass, every rank updating every parameter (sharding.py).
Clipping therefore sees the averaged gradient: a global norm is the global one. The startup
program ends with a `c_broadcast` from rank 0 of every parameter, so all ranks start equal.
`split_grads=True`: weight gradients computed split across ranks from shared activations
(split_grads.py), no gradient all-reduce for them.
Before anything is appended, the ranks compare what they built (op types, parameter names,
shapes and dtypes) and a difference is an error naming the rank and the first mismatch.

`sharding=True` (Paddle's strategy name; ZeRO stage 1): each rank sums and updates only its
part of each bucket, and the node keeps one copy of the parameters and optimizer state
(sharding.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dispatch import is_tensor
from ..framework import (
    OPTIMIZE,
    Block,
    Operator,
    Program,
    Variable,
    unique_name,
)
from ..framework.program import startup_program_of
from ..ops.comm import CollectiveMismatchError, get_world
from ..optimizer import Optimizer
from .buckets import own_options, plan_buckets
from .eager_sharding import ShardedOptimizer, eager_parameters
from .grad_average import GradientAverager
from .sharding import append_fused_allreduce_update, append_sharded_update, fall_back, sharding_unsupported
from .split_grads import (SplitGrads, append_split_grads, append_split_update, find_split_grads, split_by_default,
                          split_update_op)

ParamsGrads = list[tuple[Variable, Variable]]
MB = 1 << 20


class DistributedOptimizer:
    """Wraps an optimizer: gradients averaged over ranks (bucketed all-reduce) before its updates."""

    def __init__(self, optimizer: Optimizer, bucket_size_mb: float = 25, first_bucket_size_mb: float | None = None,
                 sharding: bool = False, split_grads: bool | None = None) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"DistributedOptimizer wraps a fluidgrad optimizer, got {type(optimizer).__name__}")
        self.inner = optimizer
        self.bucket_bytes = bucket_size_mb * MB
        # the program reduces every bucket after the backward pass (nothing to overlap with), so
        # by default the first bucket is not smaller than the others: fewer, larger collectives
        self.first_bucket_bytes = (first_bucket_size_mb * MB if bucket_size_mb > 0 and first_bucket_size_mb is not None
                                   else None)
        # ZeRO stage 1: each rank sums and updates 1/p of every bucket (sharding.py)
        self.sharding = bool(sharding)
        # weight gradients computed split across ranks from shared activations (split_grads.py);
        # None: FLUIDGRAD_SPLIT_GRADS, else split_grads.SPLIT_BY_DEFAULT
        self.split_grads = split_by_default() if split_grads is None else bool(split_grads)
        # an eager optimizer (given parameters=): step() runs its update sharded (eager_sharding.py)
        self._eager = (ShardedOptimizer(optimizer, bucket_size_mb, first_bucket_size_mb)
                       if self.sharding and eager_parameters(optimizer) is not None else None)
        # an eager optimizer without sharding: gradients not averaged by a DataParallel are at step()
        params = eager_parameters(optimizer) if self._eager is None else None
        self._averager = GradientAverager(optimizer, params, bucket_size_mb) if params is not None else None

    def __getattr__(self, name: str) -> Any:  # lr_var, set_lr, state_dict, ...: the wrapped optimizer's
        return getattr(self.__dict__["inner"], name)

    def step(self) -> None:
        """Eager mode: the wrapped optimizer's step, sharded with sharding=True; gradients that no
        DataParallel averaged are averaged first (grad_average.py)."""
        if self._averager is not None:
            self._averager.average()
        (self._eager or self.inner).step()

    def minimize(self, loss: Variable, startup_program: Program | None = None,
                 parameter_list: Sequence[Any] | None = None, no_grad_set: Any = None,
                 parameters: Sequence[Any] | None = None) -> tuple[list[Operator], ParamsGrads]:
        if self._eager is not None:
            return self._eager.minimize(loss)
        if is_tensor(loss):  # eager, after backward(): the optimizer's step (fused with DataParallel's sum)
            if self._averager is not None:
                self._averager.average()
            return self.inner.minimize(loss)
        if not isinstance(loss, Variable):
            raise TypeError("DistributedOptimizer.minimize builds a Program: loss must be a Variable; "
                            "in eager mode wrap the model in fluidgrad.DataParallel instead")
        startup = startup_program or startup_program_of(loss.block.program)
        params_grads = self.inner.backward(loss, startup, parameter_list or parameters, no_grad_set)
        pairs = [(p, g) for p, g in params_grads if g is not None]
        block = loss.block.program.global_block()
        check_same_program(block, pairs)
        split = self._find_split(block, pairs)
        if self.sharding and pairs:
            reason = sharding_unsupported(self.inner) or own_options(self.inner, [p for p, _ in pairs])
            if reason is None:
                return self._append_sharded(block, startup, pairs, split), params_grads
            fall_back(reason)
        append_parameter_broadcast(startup, [p for p, _ in pairs])
        if split is not None:  # the split gradients averaged by one op, the rest by buckets; then the updates
            append_split_grads(block, split, get_world().size)
            rest = _rest(pairs, split)
            if rest:
                append_gradient_allreduce(block, rest, self.bucket_bytes, self.first_bucket_bytes)
            return self.inner.apply_gradients(params_grads, startup), params_grads
        fused = append_fused_allreduce_update(self.inner, block, startup, pairs, self.bucket_bytes,
                                              self.first_bucket_bytes) \
            if pairs and own_options(self.inner, [p for p, _ in pairs]) is None else None
        if fused is not None:
            return fused, params_grads
        append_gradient_allreduce(block, pairs, self.bucket_bytes, self.first_bucket_bytes)
        return self.inner.apply_gradients(params_grads, startup), params_grads

    def _find_split(self, block: Block, pairs: ParamsGrads) -> SplitGrads | None:
        """The gradients to compute split across ranks (split_grads=True, on one node), or None."""
        world = get_world()
        if not self.split_grads or not pairs or (world.size > 1 and not world.shares_memory()):
            return None
        return find_split_grads(block, pairs)

    def _append_sharded(self, block: Block, startup: Program, pairs: ParamsGrads,
                        split: SplitGrads | None) -> list[Operator]:
        """The sharded update: the split gradients' fused c_split_* op where the optimizer has
        one, the sharded buckets for the rest."""
        op_type = split_update_op(self.inner) if split is not None else None
        if op_type is None:
            return append_sharded_update(self.inner, block, startup, pairs, self.bucket_bytes, self.first_bucket_bytes)
        ops = [append_split_update(op_type, self.inner, block, startup, split, get_world().size)]
        rest = _rest(pairs, split)
        if rest:
            ops += append_sharded_update(self.inner, block, startup, rest, self.bucket_bytes, self.first_bucket_bytes)
        return ops


def _rest(pairs: ParamsGrads, split: SplitGrads) -> ParamsGrads:
    done = {g.name for _, g in split.pairs}
    return [(p, g) for p, g in pairs if g.name not in done]


def append_gradient_allreduce(block: Block, pairs: ParamsGrads, bucket_bytes: float,
                              first_bucket_bytes: float | None = None) -> list[list[Variable]]:
    """Average every gradient over ranks, in place, one `c_bucket_allreduce` per bucket."""
    grads = [g for _, g in pairs]
    buckets = plan_buckets([g.shape for g in grads], [g.dtype for g in grads], bucket_bytes, first_bucket_bytes)
    role = {"op_role": OPTIMIZE}
    for bucket in buckets:
        members = [grads[i] for i in bucket]
        block.append_op("c_bucket_allreduce", {"X": members}, {"Out": members},
                        {"reduce": "avg", "bucket": unique_name("grad_bucket"), "overwrite": True, **role})
    return [[grads[i] for i in bucket] for bucket in buckets]


def append_parameter_broadcast(startup: Program, params: Sequence[Variable]) -> None:
    """End the startup program with a broadcast of every parameter from rank 0."""
    block = startup.global_block()
    for param in params:
        var = block._find_var_recursive(param.name)
        if var is None:
            raise ValueError(f"DistributedOptimizer: parameter {param.name} is not initialised by the startup "
                             f"program given; pass the startup program the model was built with")
        if not any(op.type == "c_broadcast" and op.inputs.get("X") == [param.name] for op in block.ops):
            block.append_op("c_broadcast", {"X": var}, {"Out": var}, {"root": 0})


def program_signature(block: Block, pairs: ParamsGrads) -> tuple[list[str], list[tuple[str, list[int], str]]]:
    ops = [op.type for op in block.ops]
    params = [(p.name, list(p.shape), p.dtype) for p, _ in pairs]
    return ops, params


def check_same_program(block: Block, pairs: ParamsGrads) -> None:
    """Every rank must have built the same program: same ops, same parameters."""
    world = get_world()
    if world.size == 1:
        return
    mine = program_signature(block, pairs)
    signatures = world.all_gather_object(mine, "DistributedOptimizer.minimize (program check)")
    reference = signatures[0]
    for rank, signature in enumerate(signatures):
        if signature != reference:
            raise CollectiveMismatchError(f"DistributedOptimizer: rank {rank} built a different program than "
                                          f"rank 0: {describe_difference(reference, signature)}")


def describe_difference(reference: tuple, other: tuple) -> str:
    ref_ops, ref_params = reference
    ops, params = other
    for i, (a, b) in enumerate(zip(ref_params, params)):
        if a != b:
            return (f"parameter {i} is {b[0]} {b[1]} ({b[2]}) there and {a[0]} {a[1]} ({a[2]}) on rank 0")
    if len(ref_params) != len(params):
        return f"{len(params)} parameters there, {len(ref_params)} on rank 0"
    for i, (a, b) in enumerate(zip(ref_ops, ops)):
        if a != b:
            return f"op {i} is {b} there and {a} on rank 0"
    return f"{len(ops)} ops there, {len(ref_ops)} on rank 0"
