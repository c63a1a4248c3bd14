"""Parameter update ops: `sgd`, `momentum`, `adam`.

Each kernel is a pure function of arrays (never writing its inputs), so the static
optimizer appends it as an op whose outputs carry the same names as its inputs
(ParamOut = Param, Moment1Out = Moment1, ...), and eager mode calls the very same
kernel through `update_kernel(op_type)`. None of these ops has a gradient.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import fused_optim
from .registry import NO_GRADIENT, get_op_def, register_op
from .shape_rules import float_only


def _scalar(value: np.ndarray, like: np.ndarray) -> Any:
    """A 1-element array (the learning rate, beta powers) as a scalar of `like`'s dtype,
    so a float64 rate never promotes a float32 parameter."""
    return like.dtype.type(np.asarray(value).reshape(-1)[0])


def sgd_kernel(param, grad, learning_rate):
    step = np.multiply(grad, -_scalar(learning_rate, param))  # one new array, filled in two passes
    step += param
    return step


def momentum_kernel(param, grad, velocity, learning_rate, mu=0.9, use_nesterov=False):
    """v = mu * v + g; p -= lr * v, or with Nesterov p -= lr * (g + mu * v) (as torch.optim.SGD)."""
    lr, mu = _scalar(learning_rate, param), param.dtype.type(mu)
    velocity_out = mu * velocity + grad
    step = grad + mu * velocity_out if use_nesterov else velocity_out
    return param - lr * step, velocity_out


def adam_kernel(param, grad, moment1, moment2, beta1_pow, beta2_pow, learning_rate, beta1=0.9, beta2=0.999,
                epsilon=1e-8, weight_decay=0.0):
    """Adam with bias correction; `weight_decay` > 0 is AdamW's decoupled decay p *= 1 - lr * wd.

    Beta1Pow holds beta1**t for the current step t (it starts at beta1) and is advanced here.
    """
    fused = fused_optim.adam(param, grad, moment1, moment2, beta1_pow, beta2_pow, learning_rate, beta1, beta2,
                             epsilon, weight_decay)   # one compiled pass (numba), when it takes these arrays
    if fused is not None:
        return fused
    dtype = param.dtype.type
    lr, b1, b2 = _scalar(learning_rate, param), dtype(beta1), dtype(beta2)
    b1_pow, b2_pow = _scalar(beta1_pow, param), _scalar(beta2_pow, param)
    if weight_decay:
        param = param * (dtype(1) - lr * dtype(weight_decay))
    m = b1 * moment1 + (dtype(1) - b1) * grad
    v = b2 * moment2 + (dtype(1) - b2) * grad * grad
    step_size = lr / (dtype(1) - b1_pow)
    denom = np.sqrt(v) / np.sqrt(dtype(1) - b2_pow) + dtype(epsilon)
    param_out = param - step_size * m / denom
    return param_out, m, v, beta1_pow * beta1_pow.dtype.type(beta1), beta2_pow * beta2_pow.dtype.type(beta2)


def _check_same(ctx, a: str, b: str) -> None:
    if tuple(ctx.shape(a)) != tuple(ctx.shape(b)):
        raise ctx.shape_error(f"{ctx.describe(a)} and {ctx.describe(b)} must have one shape")
    if ctx.dtype(a) != ctx.dtype(b):
        raise ctx.dtype_error(f"{ctx.describe(a)} and {ctx.describe(b)} must have one dtype")


def _check_one_element(ctx, slot: str) -> None:
    shape = ctx.shape(slot)
    if any(d != 1 for d in shape):
        raise ctx.shape_error(f"{ctx.describe(slot)} must hold exactly one element")


def _infer(accumulators: tuple[str, ...], scalars: tuple[str, ...] = ()):
    def infer(ctx) -> None:
        float_only(ctx, "Param", "Grad", "LearningRate")
        _check_same(ctx, "Param", "Grad")
        _check_one_element(ctx, "LearningRate")
        ctx.set_output("ParamOut", ctx.shape("Param"), ctx.dtype("Param"))
        for slot in accumulators:
            _check_same(ctx, "Param", slot)
            ctx.set_output(slot + "Out", ctx.shape(slot), ctx.dtype(slot))
        for slot in scalars:
            _check_one_element(ctx, slot)
            ctx.set_output(slot + "Out", ctx.shape(slot), ctx.dtype(slot))
    return infer


register_op("sgd", inputs="Param Grad LearningRate", outputs="ParamOut", kernel=sgd_kernel,
            infer=_infer(()), grad=NO_GRADIENT, doc="ParamOut = Param - LearningRate * Grad.")
register_op("momentum", inputs="Param Grad Velocity LearningRate", outputs="ParamOut VelocityOut",
            attrs={"mu": 0.9, "use_nesterov": False}, kernel=momentum_kernel, infer=_infer(("Velocity",)),
            grad=NO_GRADIENT, doc="Heavy-ball or Nesterov momentum, torch.optim.SGD's formulation.")
register_op("adam", inputs="Param Grad Moment1 Moment2 Beta1Pow Beta2Pow LearningRate",
            outputs="ParamOut Moment1Out Moment2Out Beta1PowOut Beta2PowOut",
            attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "weight_decay": 0.0}, kernel=adam_kernel,
            infer=_infer(("Moment1", "Moment2"), ("Beta1Pow", "Beta2Pow")), grad=NO_GRADIENT,
            doc="Adam (AdamW when weight_decay > 0: decoupled decay before the step).")


def update_kernel(op_type: str, **attrs: Any) -> Callable[..., Any]:
    """The kernel of an update op with its attributes bound: what eager mode calls."""
    op_def = get_op_def(op_type)
    unknown = set(attrs) - set(op_def.attrs)
    if unknown:
        raise TypeError(f"op {op_type} has no attributes {sorted(unknown)}; it has {sorted(op_def.attrs)}")
    bound = {**op_def.attrs, **attrs}
    return lambda *arrays: op_def.kernel(*arrays, **bound)
