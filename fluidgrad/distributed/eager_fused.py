"""The default eager data-parallel update in one pass: a bucket's sum over ranks and the
optimizer's update of its parameters together, as static mode's fused ops (c_bucket_sgd /
c_bucket_momentum / c_bucket_adam with shard=False) do, through the same per-piece functions
(ops/fused_shards.py), so the same arithmetic.

    model = fluidgrad.DataParallel(net)
    opt = fluidgrad.optimizer.SGD(0.1, parameters=model.parameters())   # or Momentum, Adam, AdamW;
    # or dist.DistributedOptimizer(opt): the same
    loss.backward()   # every gradient in its bucket's row, the barrier started; .grad deferred
    opt.step()        # per bucket: the rows summed and the parameters updated in one pass
    opt.clear_grad()

Why: summed apart, the average is written into `.grad` (the rows read, the gradient written) and
read again by the update (the gradient and the parameter read, the parameter written); fused,
the rows and the parameter are read once and the parameter written once, and no gradient array
is made.

Semantics do not change. After `backward()` each parameter's `.grad` is a `DeferredGrad`: the
average over ranks, computed from the bucket's rows the moment anything reads it (its `data`, a
`numpy()`, an arithmetic op, clipping), into the arrays the plain path would use. The
optimizer's `step()` asks the gradient first (`fused_step`): each bucket whose gradients nobody
read, all of them this optimizer's, is summed and updated in one pass; any other goes through the
ordinary step, which reads (so completes) its gradients. The rows stay valid until this rank
starts its next reduction of the bucket (its peer cannot pass that barrier before), and that
start first completes every deferred gradient still held (`_Layout.settle`), so a `.grad` kept
across steps still reads its own step's average, and `.grad` after `step()` reads the gradient
the step used. Reading a gradient is local (it waits on the barrier every rank started in
backward): one rank may read while the others do not.

The fused step serves SGD, Momentum (Nesterov too), Adam and AdamW (exactly these classes, no
subclass with a step of its own) with L2 or no decay, no clipping, one learning rate and decay
for every parameter (distributed/buckets.py: own_options; AdamW's decoupled decay may differ from
parameter to parameter, by group or apply_decay_param_fun: each gets its own); anything else reads the gradients and
takes the optimizer's own step. `backward(create_graph=True)`, `grad(...)` and parameters with
hooks keep the reduction inside backward (the engine hands the averages out), and so does
`FUSE_UPDATES = False`.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..eager import Tensor
from ..eager.tensor import _record_modification
from ..ops import accel, fused_shards
from ..optimizer import SGD, Adam, AdamW, Momentum, Optimizer
from ..regularizer import L2Decay
from .buckets import own_options

# off: DataParallel averages the gradients inside backward and the optimizer steps apart (the
# path before the fused update; benchmarks and tests compare the two)
FUSE_UPDATES = True
_DATA = Tensor.__dict__["_array"]  # the slot under DeferredGrad's `_array` property


class DeferredGrad(Tensor):
    """A parameter's gradient averaged over ranks, computed on first read from the bucket's rows
    (`source.materialize(index)`), unless the optimizer's fused step used the rows first."""

    __slots__ = ("source", "index", "pending", "_shape", "_dtype")

    def __init__(self, source: Any, index: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
        Tensor.__init__(self, None)
        self.source, self.index, self._shape, self._dtype = source, index, shape, dtype
        self.pending = True

    @property
    def _array(self) -> np.ndarray:  # type: ignore[override]
        if self.pending:
            self.pending = False
            _DATA.__set__(self, self.source.materialize(self.index))
        return _DATA.__get__(self)

    @_array.setter
    def _array(self, value: np.ndarray) -> None:
        self.pending = False
        _DATA.__set__(self, value)

    # what is known without the sum
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> str:
        return self._dtype.name

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def fused_step(self, optimizer: Optimizer, params: list[Tensor]) -> list[Tensor]:
        """Called by `optimizer.step()` on its first parameter's gradient: the buckets it can,
        summed and updated in one pass; returns the parameters left to the ordinary step."""
        return self.source.fused_update(optimizer, params)


class Rule:
    """One optimizer's fused update of a piece, with its state slots (elementwise, then scalar)."""

    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer, self.kind = optimizer, type(optimizer)
        self.lr = optimizer.get_lr()
        self.decay = optimizer.regularization.coeff if optimizer.regularization is not None else 0.0
        self.attrs = optimizer.update_attrs()
        self.slots = [slot for slot, (_, kind) in optimizer.accumulators.items() if kind == "param"]
        # AdamW: each parameter's own decoupled decay (its group's; 0 where apply_decay_param_fun says no)
        self.decoupled = getattr(optimizer, "_decay_of", None)

    def state(self, param: Tensor) -> dict[str, np.ndarray]:
        """The parameter's accumulators (what the optimizer's step and state_dict use), made at
        their initial values on first use; elementwise ones writable in place."""
        state = self.optimizer._eager_state.setdefault(id(param), {})
        for slot, (value, kind) in self.optimizer.accumulators.items():
            array = state.get(slot)
            if array is None:
                state[slot] = np.full(param.shape if kind == "param" else [1], value, param._array.dtype)
            elif kind == "param" and not _writable(array):
                state[slot] = np.array(array, order="C")
        return state

    def weight_decay(self, param: Tensor) -> float:
        """The decoupled (AdamW) decay of this parameter."""
        return self.decoupled(param) if self.decoupled is not None else self.attrs.get("weight_decay", 0.0)

    def update(self, own: np.ndarray, scale: float, rows: np.ndarray, skip: int, start: int, param: np.ndarray,
               state: dict[str, np.ndarray], weight_decay: float = 0.0) -> None:
        """param (flat) and its state updated in place by the gradient (own + other rows) * scale
        (`weight_decay`: AdamW's decoupled decay of this parameter)."""
        kind, attrs = self.kind, self.attrs
        if kind is SGD:
            fused_shards.sgd(own, scale, rows, skip, start, param, self.lr, self.decay)
        elif kind is Momentum:
            fused_shards.momentum(own, scale, rows, skip, start, param, state["Velocity"].reshape(-1), self.lr,
                                  attrs["mu"], self.decay, attrs["use_nesterov"])
        else:
            b1, b2 = state["Beta1Pow"], state["Beta2Pow"]
            fused_shards.adam(own, scale, rows, skip, start, param, state["Moment1"].reshape(-1),
                              state["Moment2"].reshape(-1), self.lr, attrs["beta1"], attrs["beta2"],
                              float(b1.reshape(-1)[0]), float(b2.reshape(-1)[0]), attrs["epsilon"], self.decay,
                              weight_decay)
            state["Beta1Pow"] = b1 * b1.dtype.type(attrs["beta1"])
            state["Beta2Pow"] = b2 * b2.dtype.type(attrs["beta2"])


def rule_for(optimizer: Optimizer, params: list[Tensor], cache: dict | None = None) -> Rule | None:
    """The fused update of `optimizer` for `params`, or None when it has none (see the module
    docstring). `cache` (the wrapper's): the per-parameter check's verdict, kept while nothing it
    reads changed (it costs a few us per parameter, every step)."""
    regularization = optimizer.regularization
    if (not FUSE_UPDATES or type(optimizer) not in (SGD, Momentum, Adam, AdamW) or optimizer._grad_clip is not None
            or not (regularization is None or type(regularization) is L2Decay)):
        return None
    key = (id(optimizer), regularization, optimizer._groups_version, tuple(optimizer._settings().values()),
           getattr(optimizer, "_apply_decay_param_fun", None), getattr(optimizer, "weight_decay", None),
           tuple(map(id, params)), tuple(getattr(p, "_param_attr", None) for p in params))
    if cache is not None and cache.get("key") == key:
        fits = cache["fits"]
    else:
        fits = own_options(optimizer, params, decoupled_decay_ok=True) is None
        if cache is not None:
            cache["key"], cache["fits"] = key, fits
    return Rule(optimizer) if fits else None


def update_bucket(rule: Rule, params: list[Tensor], offsets: list[int], owns: list[np.ndarray], rows: np.ndarray,
                  skip: int, scale: float) -> None:
    """Each parameter of a bucket updated from its piece of the sum: (its own flat gradient `owns[k]`
    + the rows but `skip`, at its offset) * scale (`owns[k]` is its piece of the sum itself when
    there are no rows)."""
    direct = _direct_update(rule, rows, skip, scale)
    dtype = rows.dtype
    for param, start, own in zip(params, offsets, owns):
        in_place = _references(param) <= _ALONE and _writable(param._array)  # counted before a local holds it
        # else someone holds the array (a view, numpy()): they keep the old values, the update a copy
        value = param._array if in_place else np.array(param._array, order="C")
        state = rule.state(param)
        if direct is not None and value.dtype == dtype and own.dtype == dtype and own.flags.c_contiguous:
            direct(own, start, value.reshape(-1), state, param)
        else:
            rule.update(own, scale, rows, skip, start, value.reshape(-1), state, rule.weight_decay(param))
        if in_place:
            _record_modification(param)  # a retained graph that read the old value refuses, as after set_value
        else:
            param._take_array(value)


def _direct_update(rule: Rule, rows: np.ndarray, skip: int, scale: float) -> Any:
    """Two ranks' rows and the compiled loops: `update(own, start, param, state, tensor)` calling
    ops/fused_shards.py's loop for one piece with the scalars typed once per bucket, the peer's
    row sliced directly (what fused_shards.sgd / momentum / adam do per call, checks included,
    costs more than the loop itself on a bias or a norm's scale: a model with many small
    parameters pays it for each); None otherwise (the per-piece functions then)."""
    if rows.shape[0] != 2 or skip not in (0, 1) or not (accel.enabled() and accel.takes(rows)):
        return None
    t, kind, attrs, peer = rows.dtype.type, rule.kind, rule.attrs, rows[1 - skip]
    lr, decay, scale = t(rule.lr), t(rule.decay), t(scale)
    if kind is SGD:
        def update(own, start, param, state, tensor):
            fused_shards._sgd_loop(own, scale, peer[start:start + param.size], param, lr, decay)
    elif kind is Momentum:
        mu, nesterov = t(attrs["mu"]), bool(attrs["use_nesterov"])

        def update(own, start, param, state, tensor):
            fused_shards._momentum_loop(own, scale, peer[start:start + param.size], param,
                                        state["Velocity"].reshape(-1), lr, mu, decay, nesterov)
    else:
        one, beta1, beta2, epsilon = t(1), t(attrs["beta1"]), t(attrs["beta2"]), t(attrs["epsilon"])

        def update(own, start, param, state, tensor):
            b1, b2 = state["Beta1Pow"], state["Beta2Pow"]
            step_size = lr / (one - t(b1.reshape(-1)[0]))
            inv_correction = one / np.sqrt(one - t(b2.reshape(-1)[0]))
            fused_shards._adam_loop(own, scale, peer[start:start + param.size], param, state["Moment1"].reshape(-1),
                                    state["Moment2"].reshape(-1), lr, beta1, beta2, step_size, inv_correction, epsilon,
                                    decay, t(rule.weight_decay(tensor)))
            state["Beta1Pow"] = b1 * b1.dtype.type(attrs["beta1"])
            state["Beta2Pow"] = b2 * b2.dtype.type(attrs["beta2"])
    return update


def _writable(array: np.ndarray) -> bool:
    return array.base is None and array.flags.writeable and array.flags.c_contiguous


def _references(tensor: Tensor) -> int:
    return sys.getrefcount(tensor._array)


# what `_references` counts for an array only its Tensor holds (measured: it differs between interpreters)
_ALONE = _references(Tensor(np.zeros(1)))
