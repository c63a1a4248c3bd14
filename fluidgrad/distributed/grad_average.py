"""Eager gradients averaged over ranks without DataParallel: what `DistributedOptimizer(opt)` does
for an eager optimizer (as Horovod's DistributedOptimizer does), so that a script that never wraps
its model in `fluidgrad.DataParallel` still trains as one process on the concatenated batch.

When the optimizer is wrapped, the ranks check that they hold the same parameters and take rank
0's values (as DataParallel does at wrap time). At each `step()` (or eager `minimize`), before the
wrapped optimizer's update, every parameter that no live DataParallel averages (those are averaged
during backward()) gets its gradient averaged over ranks: first the ranks agree which parameters
have a gradient (one with a gradient on no rank keeps none, and is not updated, as in one process;
one with a gradient on some rank only takes part with zeros elsewhere, as under DataParallel),
then one all-reduce per bucket of gradients of one dtype. Clipping by global norm then sees the
averaged gradients: the norm is the global one.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..eager import Tensor
from ..ops.comm import get_world
from ..optimizer import Optimizer
from .buckets import plan_buckets
from .data_parallel import averaged_in_backward, check_same_parameters

MB = 1 << 20


class GradientAverager:
    """Averages the gradients of an eager optimizer's parameters over ranks (see the module docstring)."""

    def __init__(self, optimizer: Optimizer, params: list[Tensor], bucket_size_mb: float = 25) -> None:
        self.name = f"DistributedOptimizer({type(optimizer).__name__})"
        self.params, self.world = params, get_world()
        self.bucket_bytes = bucket_size_mb * MB
        if self.world.size > 1:
            averaged = averaged_in_backward()
            own = [(i, p) for i, p in enumerate(self.params) if id(p) not in averaged]
            check_same_parameters(self.world, [(f"parameter {i}", p) for i, p in own])
            for _, p in own:
                p.set_value(self.world.broadcast(p._array, 0, what=f"{self.name}: broadcast of the parameters"))

    def _not_averaged_in_backward(self) -> list[Tensor]:
        averaged = averaged_in_backward()
        return [p for p in self.params if id(p) not in averaged]

    def average(self) -> None:
        """Collective: every rank calls it once per step, before the update."""
        if self.world.size == 1:
            return
        params = self._not_averaged_in_backward()
        if not params:
            return
        has_grad = np.array([p.grad is not None for p in params], np.int32)
        has_grad = self.world.all_reduce(has_grad, "max", what=f"{self.name}: which parameters have gradients")
        params = [p for p, has in zip(params, has_grad) if has]
        grads = [_grad_array(p) for p in params]
        buckets = plan_buckets([g.shape for g in grads], [g.dtype.name for g in grads], self.bucket_bytes)
        for bucket in buckets:
            flat = np.concatenate([grads[i].reshape(-1) for i in bucket])
            flat = self.world.all_reduce(flat, "avg", what=f"{self.name}: gradient all-reduce")
            start = 0
            for i in bucket:
                size = prod(grads[i].shape)
                params[i].grad = Tensor(flat[start:start + size].reshape(grads[i].shape))
                start += size


def _grad_array(param: Tensor) -> np.ndarray:
    """The parameter's gradient (zeros when it got none on this rank: every rank takes part)."""
    grad = param.grad
    if grad is None:
        return np.zeros(param.shape, param._array.dtype)
    return np.asarray(grad._array if isinstance(grad, Tensor) else grad)
