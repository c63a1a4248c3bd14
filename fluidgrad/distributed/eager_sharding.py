"""The sharded optimizer update in eager mode (ZeRO stage 1): each rank sums and updates only its
part of every gradient bucket, as static mode's `DistributedOptimizer(opt, sharding=True)`.

    model = fluidgrad.DataParallel(net)
    opt = dist.DistributedOptimizer(fluidgrad.optimizer.Adam(1e-3, parameters=model.parameters()),
                                    sharding=True)
    # or PyTorch's  opt = dist.ZeroRedundancyOptimizer(model.parameters(), fluidgrad.optimizer.Adam, lr=1e-3)
    # or Paddle's   model, opt, _ = dist.group_sharded_parallel(net, Adam(1e-3, parameters=...), "os")
    loss.backward()   # no communication: each rank's own gradient in .grad
    opt.step()        # per bucket: reduce-scatter, update of this rank's part, all-gather
    opt.clear_grad()

The DataParallel wrapping the parameters hands the reduction to the optimizer (its backward then
leaves each rank's own gradient in `.grad`, as under `no_sync()`); without one, the optimizer
takes rank 0's parameters when it is made. `step()` is collective and does per bucket what the
static program does, through the same registered ops' kernels (ops/collective.py): SGD,
Momentum and Adam / AdamW without clipping (L2 decay allowed) one fused `c_bucket_sgd` /
`c_bucket_momentum` / `c_bucket_adam` each (the sum of this rank's part and its update in one
pass, written into the node's copy, published by a barrier); otherwise `c_bucket_reducescatter`,
clipping on the parts (a global norm: the parts' squares summed over ranks), decay and the
optimizer's own update kernel on the parts, `c_bucket_shard` / `c_bucket_allgather` for the
parameters and each elementwise state.

The node keeps one copy of each bucket's parameters and elementwise optimizer state (comm_shards.py:
an MPI shared window on one node); after a step each parameter's array and each state array is a
read-only view of it, complete and equal on every rank, so `state_dict()`, a checkpoint written by
rank 0 and `fluidgrad.save` need nothing special. The parameters change in place from step to step
(as PyTorch's); an array given with `set_value` / `set_state_dict` goes back into the copy at the
next step (every rank must load the same values). A parameter without a gradient takes part with
zeros, as under DataParallel. Clipping by each parameter's own norm, or an optimizer with a step of
its own, cannot work on parts: then the gradients are averaged whole (DataParallel's all-reduce)
and the optimizer's own step runs, with a warning.
"""
from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..dispatch import is_tensor
from ..eager import Tensor
from ..eager.tensor import _record_modification
from ..nn import Layer
from ..nn.clip import ClipGradByGlobalNorm, ClipGradByValue
from ..ops.comm import get_world
from ..ops.registry import get_op_def
from ..optimizer import SGD, Adam, AdamW, Momentum, Optimizer
from ..regularizer import L2Decay
from .buckets import own_options, plan_buckets
from .data_parallel import DataParallel, check_same_parameters, wrapper_of

MB = 1 << 20
# numbers the sharded optimizers of this process: their buckets and node copies never mix (made
# in the same order on every rank, as the copies are collective)
_SHARDED = itertools.count()
# SGD, Momentum and Adam without clipping: the fused ops (tests switch it off to run the separate ones)
FUSE_UPDATES = True
_FUSED = {SGD: "c_bucket_sgd", Momentum: "c_bucket_momentum", Adam: "c_bucket_adam", AdamW: "c_bucket_adam"}
# the optimizer state a fused op keeps in node copies, by slot (its copy key's suffix)
_FUSED_STATES = {"c_bucket_sgd": (), "c_bucket_momentum": ("Velocity",), "c_bucket_adam": ("Moment1", "Moment2")}


def eager_parameters(optimizer: Optimizer) -> list[Tensor] | None:
    """The optimizer's trainable eager parameters, or None for a static optimizer."""
    listed = optimizer._parameter_list
    if not listed or not all(isinstance(p, Tensor) for p in listed):
        return None
    return optimizer._eager_parameters()


def unsupported(optimizer: Optimizer) -> str | None:
    """Why `optimizer`'s eager update cannot run on parts of buckets, or None when it can."""
    clip = optimizer._grad_clip
    if clip is not None and not isinstance(clip, (ClipGradByGlobalNorm, ClipGradByValue)):
        return f"{type(clip).__name__} needs each parameter's whole gradient"
    kind = type(optimizer)
    if kind.step is not Optimizer.step or kind._apply_update is not Optimizer._apply_update:
        return f"{kind.__name__} has an update step of its own"
    if not optimizer.op_type:
        return f"{kind.__name__} names no update op"
    return None


class _Bucket:
    """One bucket: its parameters (indices into the optimizer's), shapes, keys."""

    def __init__(self, key: str, indices: list[int], params: list[Tensor]) -> None:
        self.indices = indices
        self.params = [params[i] for i in indices]
        self.shapes = [tuple(params[i].shape) for i in indices]
        self.dtype = params[indices[0]]._array.dtype
        self.key, self.copy_key = key, f"{key}.copy"


class ShardedOptimizer:
    """Wraps an eager optimizer: `step()` sums each bucket's gradients over ranks and updates only
    this rank's part (see the module docstring); everything else is the wrapped optimizer's."""

    def __init__(self, optimizer: Optimizer, bucket_size_mb: float = 25, first_bucket_size_mb: float | None = None) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ShardedOptimizer wraps a fluidgrad optimizer, got {type(optimizer).__name__}")
        params = eager_parameters(optimizer)
        if params is None:
            raise ValueError(f"ShardedOptimizer: {type(optimizer).__name__} was given no eager parameters "
                             f"(parameters=model.parameters()); a static program shards with "
                             f"DistributedOptimizer(opt, sharding=True).minimize(loss)")
        self.inner, self.params, self.world = optimizer, params, get_world()
        n = next(_SHARDED)
        first = first_bucket_size_mb * MB if first_bucket_size_mb is not None and bucket_size_mb > 0 else None
        plan = plan_buckets([p.shape for p in params], [p._array.dtype.name for p in params], bucket_size_mb * MB, first)
        self.buckets = [_Bucket(f"EagerSharded{n}.{b}", indices, params) for b, indices in enumerate(plan)]
        self.reason = unsupported(optimizer) or own_options(optimizer, params)
        wrapper = wrapper_of(params)
        if wrapper is None and self.world.size > 1:  # nobody made the parameters equal: rank 0's
            check_same_parameters(self.world, [(f"parameter {i}", p) for i, p in enumerate(params)])
            for i, p in enumerate(params):
                p.set_value(self.world.broadcast(p._array, 0, what=f"sharded optimizer broadcast of parameter {i}"))
        if self.reason is not None:
            warnings.warn(f"sharded optimizer: {self.reason}; averaging whole gradients instead (every rank "
                          f"updates every parameter)", stacklevel=3)
        self._attach(wrapper)

    def _attach(self, wrapper: DataParallel | None) -> None:
        """Take the reduction over from the DataParallel wrapping these parameters (unless falling back)."""
        self.wrapper = wrapper
        if wrapper is not None and self.reason is None and self.world.size > 1:
            object.__setattr__(wrapper, "reduced_by", self)

    def __getattr__(self, name: str) -> Any:  # get_lr, set_lr, state_dict, clear_grad, ...: the optimizer's
        return getattr(self.__dict__["inner"], name)

    def minimize(self, loss: Any, *args: Any, **kwargs: Any) -> tuple[list, list]:
        """After `loss.backward()`: `step()` (Paddle's dygraph minimize)."""
        if not is_tensor(loss):
            raise TypeError("ShardedOptimizer.minimize is eager: loss must be a Tensor after backward(); a "
                            "static program shards with DistributedOptimizer(opt, sharding=True)")
        pairs = [(p, p.grad) for p in self.params if p.grad is not None]
        self.step()
        return [], pairs

    def step(self) -> None:
        """Collective: every rank calls it once per step."""
        if self.world.size == 1:
            return self.inner.step()
        if self.wrapper is None:  # a DataParallel made after this optimizer hands its reduction over from now on
            self._attach(wrapper_of(self.params))
        if self.reason is not None:
            if self.wrapper is None:
                self._average_whole_gradients()
            return self.inner.step()
        grads = [_grad_array(p) for p in self.params]
        op_type = self._fused_op()
        if op_type is not None:
            for bucket in self.buckets:
                self._fused_step(op_type, bucket, grads)
        else:
            self._separate_step(grads)

    # ------------------------------------------------------------------ the fused ops
    def _fused_op(self) -> str | None:
        opt = self.inner
        regularization = opt.regularization
        if not FUSE_UPDATES or opt._grad_clip is not None or not (regularization is None or type(regularization) is L2Decay):
            return None
        return _FUSED.get(type(opt))

    def _fused_step(self, op_type: str, bucket: _Bucket, grads: list[np.ndarray]) -> None:
        """One c_bucket_sgd / momentum / adam kernel call: the bucket's sum over ranks, this rank's part
        updated in the node copies, every rank's parameters and state views of them."""
        opt, params = self.inner, bucket.params
        states = [self._state(p) for p in params]
        decay = opt.regularization.coeff if opt.regularization is not None else 0.0
        lr = np.full([1], opt.get_lr(), bucket.dtype)
        inputs = [[grads[i] for i in bucket.indices], [p._array for p in params]]
        slots = _FUSED_STATES[op_type]
        inputs += [[s[slot] for s in states] for slot in slots]
        if op_type == "c_bucket_adam":
            inputs += [[s["Beta1Pow"] for s in states], [s["Beta2Pow"] for s in states]]
            slots += ("Beta1Pow", "Beta2Pow")
        out = get_op_def(op_type).kernel(*inputs, lr, reduce="avg", bucket=bucket.key, copy=bucket.copy_key,
                                         nranks=self.world.size, decay=decay, **opt.update_attrs())
        outs = [out] if op_type == "c_bucket_sgd" else list(out)
        for param, value in zip(params, outs[0]):
            _updated(param, value)
        for slot, values in zip(slots, outs[1:]):
            for state, value in zip(states, values):
                state[slot] = value

    # ------------------------------------------------------------------ the separate ops
    def _separate_step(self, grads: list[np.ndarray]) -> None:
        """c_bucket_reducescatter per bucket, clipping on the parts, then per bucket c_bucket_shard,
        decay and the update kernel on the parts, c_bucket_allgather."""
        nranks = self.world.size
        reduce_scatter = get_op_def("c_bucket_reducescatter").kernel
        parts = [reduce_scatter([grads[i] for i in b.indices], reduce="avg", bucket=b.key, nranks=nranks)
                 for b in self.buckets]
        parts = self._clip(parts)
        kernel, rate = self.inner._bound_kernel(), self.inner.get_lr()
        for bucket, grad_part in zip(self.buckets, parts):
            self._update_parts(bucket, grad_part, kernel, np.full([1], rate, bucket.dtype))

    def _clip(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        clip = self.inner._grad_clip
        if isinstance(clip, ClipGradByValue):
            return clip.clip_arrays(parts)
        if not isinstance(clip, ClipGradByGlobalNorm):
            return parts
        # the global norm: this rank's parts' squares (the padding is zeros), summed over ranks
        local = sum(float(np.sum(np.square(g, dtype=np.float64))) for g in parts)
        total = float(self.world.all_reduce(np.array(local, np.float64), "sum", what="sharded optimizer (global norm)"))
        factor = clip.clip_norm / max(np.sqrt(total), clip.clip_norm)
        return [g * g.dtype.type(factor) for g in parts]

    def _update_parts(self, bucket: _Bucket, grad_part: np.ndarray, kernel: Any, lr: np.ndarray) -> None:
        opt, nranks = self.inner, self.world.size
        shard, gather = get_op_def("c_bucket_shard").kernel, get_op_def("c_bucket_allgather").kernel
        params = bucket.params
        states = [self._state(p) for p in params]
        param_part = shard([p._array for p in params], nranks=nranks)
        if opt.regularization is not None:
            grad_part = opt.regularization.apply_array(param_part, grad_part)
        values = []
        for slot, (_, kind) in opt.accumulators.items():
            # elementwise state: this rank's part; one per parameter (beta powers): equal, the first's
            values.append(shard([s[slot] for s in states], nranks=nranks) if kind == "param" else states[0][slot])
        results = kernel(param_part, grad_part, *values, lr)
        results = results if isinstance(results, tuple) else (results,)
        for (slot, (_, kind)), value in zip(opt.accumulators.items(), results[1:]):
            if kind == "param":
                views = gather(value, bucket=f"{bucket.copy_key}.{slot.lower()}", shapes=bucket.shapes,
                               nranks=nranks, sync=False)
                for state, view in zip(states, views):
                    state[slot] = view
            else:
                for state in states:
                    state[slot] = value
        views = gather(results[0], bucket=bucket.copy_key, shapes=bucket.shapes, nranks=nranks, sync=True)
        for param, view in zip(params, views):
            _updated(param, view)

    # ------------------------------------------------------------------ helpers
    def _state(self, param: Tensor) -> dict[str, np.ndarray]:
        """The parameter's accumulators in the wrapped optimizer (its state_dict reads them), made
        at their initial values on first use."""
        state = self.inner._eager_state.setdefault(id(param), {})
        for slot, (value, kind) in self.inner.accumulators.items():
            if slot not in state:
                state[slot] = np.full(param.shape if kind == "param" else [1], value, param._array.dtype)
        return state

    def _average_whole_gradients(self) -> None:
        """The fallback without a DataParallel doing it: every gradient averaged over ranks."""
        for p in self.params:
            p.grad = Tensor(self.world.all_reduce(_grad_array(p), "avg", what="sharded optimizer (fallback)"))


class ZeroRedundancyOptimizer(ShardedOptimizer):
    """PyTorch's form: `ZeroRedundancyOptimizer(model.parameters(), fluidgrad.optimizer.Adam, lr=1e-3)`
    makes `optimizer_class(params, **defaults)` and shards its update."""

    def __init__(self, params: Iterable[Any], optimizer_class: type = SGD, bucket_size_mb: float = 25,
                 **defaults: Any) -> None:
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(f"ZeroRedundancyOptimizer: optimizer_class must be a fluidgrad optimizer class, "
                            f"got {optimizer_class!r}")
        # by keyword: lr= (PyTorch) or learning_rate= (Paddle) in `defaults`
        super().__init__(optimizer_class(parameters=list(params), **defaults), bucket_size_mb)


def group_sharded_parallel(model: Layer, optimizer: Optimizer, level: str = "os", scaler: Any = None,
                           group: Any = None, bucket_size_mb: float = 25) -> tuple[DataParallel, ShardedOptimizer, Any]:
    """Paddle's form (also `fluidgrad.distributed.sharding.group_sharded_parallel`):
    `model, optimizer, scaler = group_sharded_parallel(model, optimizer, "os")`; the model wrapped in
    DataParallel (unless it is one), the optimizer state sharded (level "os", ZeRO stage 1: the one
    level fluidgrad has) over every rank (`group` None: fluidgrad has one process group)."""
    if group is not None:
        raise ValueError("group_sharded_parallel: fluidgrad shards over every rank; group must be None")
    if level != "os":
        raise ValueError(f"group_sharded_parallel: level {level!r} is not supported; fluidgrad shards the "
                         f"optimizer state and update (level 'os', ZeRO stage 1), not gradients or parameters")
    if not isinstance(model, Layer):
        raise TypeError(f"group_sharded_parallel: model must be a fluidgrad.nn.Layer, got {type(model).__name__}")
    wrapped = model if isinstance(model, DataParallel) else DataParallel(model)
    return wrapped, ShardedOptimizer(optimizer, bucket_size_mb), scaler


def _updated(param: Tensor, value: np.ndarray) -> None:
    """The parameter's new value: the node copy's view it holds since the last step, changed in place
    (recorded as set_value records it: a retained graph that read the old value refuses), or that view."""
    if param._array is value:
        _record_modification(param)
    else:
        param._take_array(value)  # the node copy's view itself, not a copy of it


def _grad_array(param: Tensor) -> np.ndarray:
    """The parameter's gradient (zeros when it got none: every rank takes part in every bucket)."""
    grad = param.grad
    if grad is None:
        return np.zeros(param.shape, param._array.dtype)
    return grad._array if isinstance(grad, Tensor) else np.asarray(grad)
