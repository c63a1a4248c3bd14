"""The ops of weight gradients split across ranks (comm_split.py; distributed/split_grads.py
appends them): `c_split_matmul_grad` gives every rank the averaged weight and bias gradients,
each rank having computed only its rows of them over the whole concatenated batch;
`c_split_sgd` / `c_split_momentum` / `c_split_adam` update each rank's rows of the node's one
copy of the parameters (and optimizer state) from them at once (sharding, ZeRO stage 1), with
no gradient buffer.

Slots: X[i] [B_i, in_i] and Y[i] [B_i, out_i] are a weight gradient's operands (the layer's
input and its output's gradient: the gradient is X[i]^T Y[i], summed over ranks); `biases`
lists, for each bias gradient, the Y whose column sums it is. Gradients come out weights first,
then biases (in Out, and in Param for the updates).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import comm_split, comm_stream, fused_shards
from .comm import get_world
from .registry import NO_GRADIENT, register_op



def _world_of(op: str, nranks: int) -> Any:
    world = get_world()
    if nranks != world.size:
        raise ValueError(f"op {op}: built for nranks={nranks}, but this job has {world.size} rank(s)")
    return world


def _scale(reduce: str, dtype: Any, nranks: int) -> Any:
    return np.dtype(dtype).type(1 / nranks) if reduce == "avg" and nranks > 1 else None


def _operands(op: str, xs, ys) -> tuple[list[np.ndarray], list[np.ndarray]]:
    xs = [np.ascontiguousarray(x) for x in xs]
    ys = [np.ascontiguousarray(y) for y in ys]
    for i, (x, y) in enumerate(zip(xs, ys)):
        if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
            raise ValueError(f"op {op}: X[{i}] {list(x.shape)} and Y[{i}] {list(y.shape)} must be 2-D with one "
                             f"number of rows")
    return xs, ys


def _split_matmul_grad_kernel(xs, ys, biases=(), reduce="avg", key="", nranks=1, ring_id=0, placed=None):
    world = _world_of("c_split_matmul_grad", nranks)
    xs, ys = _operands("c_split_matmul_grad", xs, ys)
    grads = comm_split.split_average(world, key, xs, ys, list(biases), _scale(reduce, xs[0].dtype, world.size),
                                     f"op c_split_matmul_grad ({key})", placed)
    return grads


def _offer(with_y: bool):
    """Placement (executor/placement.py, OpDef.offer_reads): the producers of X (and of Y, for
    the sharded updates, which apply the average's 1/p themselves) write them straight into this
    rank's rows of the shared activations, which keep them readable by the backward's other ops
    until the op publishes them; no copy is left."""
    def offer(shapes, dtypes, key="", nranks=1, **attrs):
        if nranks < 2 or not comm_split.ACTIVATIONS_IN_PLACE:
            return None

        def where():
            return comm_split.offered(get_world(), key, with_y)
        return key, where
    return offer


def _check_operands(ctx) -> tuple[list[tuple[int, int]], str]:
    """The weight gradients' shapes [in_i, out_i] and the dtype, checked; the bias gradients set."""
    xs, ys = ctx.shapes("X"), ctx.shapes("Y")
    dtypes = set(ctx.dtypes("X")) | set(ctx.dtypes("Y"))
    if not xs or len(xs) != len(ys):
        raise ctx.shape_error(f"X and Y must pair up one to one (at least one pair), got {len(xs)} X and {len(ys)} Y")
    if len(dtypes) != 1 or not next(iter(dtypes)).startswith("float"):
        raise ctx.dtype_error(f"X and Y must be floating tensors of one dtype, got {sorted(dtypes)}")
    shapes = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        if len(x) != 2 or len(y) != 2 or (x[0] >= 0 and y[0] >= 0 and x[0] != y[0]) or x[1] < 0 or y[1] < 0:
            raise ctx.shape_error(f"{ctx.describe('X', i)} and {ctx.describe('Y', i)} must be 2-D, with one number "
                                  f"of rows and known columns")
        shapes.append((x[1], y[1]))
    if not ctx.attr("key"):
        raise ctx.shape_error("key must name the op's shared buffers, a key no other op uses "
                              "(e.g. fluidgrad.framework.unique_name('split_grads')); got an empty key")
    nranks = ctx.attr("nranks")
    if not isinstance(nranks, int) or nranks < 1:
        raise ctx.shape_error(f"nranks must be a positive number of ranks, got {nranks!r}")
    if ctx.attr("reduce") not in ("sum", "avg"):
        raise ctx.shape_error(f"reduce must be 'sum' or 'avg', got {ctx.attr('reduce')!r}")
    biases = list(ctx.attr("biases"))
    if any(not isinstance(k, int) or not 0 <= k < len(shapes) for k in biases):
        raise ctx.shape_error(f"biases must index the Y (0 to {len(shapes) - 1}), got {biases}")
    return shapes, next(iter(dtypes))


def _split_matmul_grad_infer(ctx) -> None:
    shapes, dtype = _check_operands(ctx)
    biases = list(ctx.attr("biases"))
    if ctx.num_outputs("Out") != len(shapes) + len(biases):
        raise ctx.shape_error(f"{ctx.num_outputs('Out')} outputs Out for {len(shapes)} weight gradients and "
                              f"{len(biases)} bias gradients")
    for i, shape in enumerate([*shapes, *((shapes[k][1],) for k in biases)]):
        ctx.set_output("Out", shape, dtype, index=i)


register_op("c_split_matmul_grad", inputs="X* Y*", outputs="Out*",
            attrs={"biases": [], "reduce": "avg", "key": "", "nranks": 1, "ring_id": 0},
            kernel=_split_matmul_grad_kernel, infer=_split_matmul_grad_infer, grad=NO_GRADIENT,
            offer=_offer(with_y=False), offer_reads=("X",),
            doc="Out[i] = X[i]^T Y[i], then Out[n + j] = the column sums of Y[biases[j]], each summed or averaged over "
                "every rank: on one node every rank publishes its X and Y in shared memory and computes its rows "
                "of every gradient over the whole concatenated batch (no gradient all-reduce); Out are then "
                "read-only views of one shared buffer the op's next run overwrites. Across nodes: local products "
                "and MPI's all-reduce. No gradient: it makes gradients, after the backward pass.")


# ------------------------------------------------------------------ fused with the update (sharded)
def _learning_rate(lr) -> float:
    return float(np.asarray(lr).reshape(-1)[0])


def _split_update(op, xs, ys, biases, reduce, key, copy, nranks, states, update, placed):
    world = _world_of(op, nranks)
    xs, ys = _operands(op, xs, ys)
    copies = [(copy + suffix, [np.asarray(a) for a in arrays]) for suffix, arrays in states]
    return comm_split.split_update(world, key, xs, ys, list(biases), _scale(reduce, xs[0].dtype, world.size),
                                   copies, update, f"op {op} ({key})", placed)


def _split_sgd_kernel(xs, ys, params, learning_rate, biases=(), reduce="avg", key="", copy="", nranks=1, decay=0.0,
                      ring_id=0, placed=None):
    lr = _learning_rate(learning_rate)

    def update(grad, scale, param, stream=False):
        if not (stream and comm_stream.stream_sgd(grad, 1 if scale is None else scale, param, lr, decay)):
            fused_shards.sgd_summed(grad, param, lr, decay, scale)
    (out,) = _split_update("c_split_sgd", xs, ys, biases, reduce, key, copy, nranks, [("", params)], update, placed)
    return out


def _split_momentum_kernel(xs, ys, params, velocities, learning_rate, biases=(), reduce="avg", key="", copy="",
                           nranks=1, decay=0.0, mu=0.9, use_nesterov=False, ring_id=0, placed=None):
    lr = _learning_rate(learning_rate)

    def update(grad, scale, param, velocity, stream=False):
        fused_shards.momentum_summed(grad, param, velocity, lr, mu, decay, use_nesterov, scale)
    out, velocity_out = _split_update("c_split_momentum", xs, ys, biases, reduce, key, copy, nranks,
                                      [("", params), (".velocity", velocities)], update, placed)
    return out, velocity_out


def _split_adam_kernel(xs, ys, params, moment1, moment2, beta1_pow, beta2_pow, learning_rate, biases=(),
                       reduce="avg", key="", copy="", nranks=1, decay=0.0, beta1=0.9, beta2=0.999, epsilon=1e-8,
                       weight_decay=0.0, ring_id=0, placed=None):
    lr = _learning_rate(learning_rate)
    b1_pow, b2_pow = _learning_rate(beta1_pow[0]), _learning_rate(beta2_pow[0])  # equal for every parameter

    def update(grad, scale, param, m1, m2, stream=False):
        fused_shards.adam_summed(grad, param, m1, m2, lr, beta1, beta2, b1_pow, b2_pow, epsilon, decay, weight_decay,
                                 scale)
    out, m1_out, m2_out = _split_update("c_split_adam", xs, ys, biases, reduce, key, copy, nranks,
                                        [("", params), (".moment1", moment1), (".moment2", moment2)], update, placed)
    pows = [[np.asarray(b) * np.asarray(b).dtype.type(beta) for b in bs] for bs, beta in
            ((beta1_pow, beta1), (beta2_pow, beta2))]
    return out, m1_out, m2_out, pows[0], pows[1]


def _split_update_infer(states: tuple[str, ...], powers: bool = False):
    def infer(ctx) -> None:
        shapes, dtype = _check_operands(ctx)
        biases = list(ctx.attr("biases"))
        expected = [tuple(s) for s in shapes] + [(shapes[k][1],) for k in biases]
        if not ctx.attr("copy"):
            raise ctx.shape_error("copy must name the node copy of the parameters (a key no other op uses)")
        if tuple(ctx.shape("LearningRate")) not in ((1,), ()):
            raise ctx.shape_error(f"{ctx.describe('LearningRate')} must hold exactly one element")
        for slot in states:
            found = [tuple(s) for s in ctx.shapes(slot)]
            if found != expected or set(ctx.dtypes(slot)) != {dtype}:
                raise ctx.shape_error(f"{slot} must match the gradients one to one (weights X[i]^T Y[i], then the "
                                      f"biases): expected {[list(s) for s in expected]} ({dtype}), got "
                                      f"{[list(s) for s in found]} ({sorted(set(ctx.dtypes(slot)))})")
            for i, shape in enumerate(expected):
                ctx.set_output(slot + "Out", shape, dtype, index=i)
        if powers:
            for slot in ("Beta1Pow", "Beta2Pow"):
                found = ctx.shapes(slot)
                if len(found) != len(expected) or any(tuple(s) not in ((1,), ()) for s in found):
                    raise ctx.shape_error(f"{slot} must hold one 1-element power per parameter ({len(expected)}), "
                                          f"got {[list(s) for s in found]}")
                for i, (shape, pow_dtype) in enumerate(zip(found, ctx.dtypes(slot))):
                    ctx.set_output(slot + "Out", shape, pow_dtype, index=i)
    return infer


_COMMON = {"biases": [], "reduce": "avg", "key": "", "copy": "", "nranks": 1, "decay": 0.0, "ring_id": 0}
register_op("c_split_sgd", inputs="X* Y* Param* LearningRate", outputs="ParamOut*", attrs=dict(_COMMON),
            kernel=_split_sgd_kernel, infer=_split_update_infer(("Param",)), grad=NO_GRADIENT,
            offer=_offer(with_y=True), offer_reads=("X", "Y"), offer_keeps_state=True,
            doc="Sharded SGD from split weight gradients: as c_split_matmul_grad, each rank computes its rows of the "
                "averaged gradients (Param: the weights X[i]^T Y[i], then the biases) and updates those rows of the "
                "node's one copy of the parameters (`copy`) at once, Param -= LearningRate * (grad + decay * Param), "
                "published by one barrier; ParamOut (= Param) are read-only views of the copy. No gradient (an update).")
register_op("c_split_momentum", inputs="X* Y* Param* Velocity* LearningRate", outputs="ParamOut* VelocityOut*",
            attrs={**_COMMON, "mu": 0.9, "use_nesterov": False},
            kernel=_split_momentum_kernel, infer=_split_update_infer(("Param", "Velocity")), grad=NO_GRADIENT,
            offer=_offer(with_y=True), offer_reads=("X", "Y"), offer_keeps_state=True,
            doc="c_split_sgd with the momentum op's update (v = mu * v + g; Param -= lr * v, or Nesterov), the "
                "velocities kept in the node copy `copy`.velocity. No gradient (an update).")
register_op("c_split_adam", inputs="X* Y* Param* Moment1* Moment2* Beta1Pow* Beta2Pow* LearningRate",
            outputs="ParamOut* Moment1Out* Moment2Out* Beta1PowOut* Beta2PowOut*",
            attrs={**_COMMON, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "weight_decay": 0.0},
            kernel=_split_adam_kernel, infer=_split_update_infer(("Param", "Moment1", "Moment2"), powers=True),
            grad=NO_GRADIENT, offer=_offer(with_y=True), offer_reads=("X", "Y"), offer_keeps_state=True,
            doc="c_split_sgd with the adam op's update (weight_decay: AdamW's decoupled decay), both moments kept in "
                "the node copies `copy`.moment1 and .moment2; the beta powers advance on every rank. No gradient.")
