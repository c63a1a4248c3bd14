"""Update ops of the optimizers with per-coordinate rates: `rmsprop`, `adagrad`, `adamax`,
`adadelta`, `rprop` (the optimizers in fluidgrad/optimizer/adaptive.py).

As the ops of optim.py: pure kernels of arrays (outputs named as their inputs in a program,
the same kernel called eagerly), no gradient. The formulas are torch.optim's, step for step,
so the two agree to rounding; where Paddle places epsilon elsewhere, the docstring says so.
An accumulator an option leaves unused (RMSProp's mean gradient when not centered, its
momentum buffer at momentum 0) is a one-element placeholder, passed through unchanged.
"""
from __future__ import annotations

import numpy as np

from .optim import _check_one_element, _check_same, _scalar
from .registry import NO_GRADIENT, register_op
from .shape_rules import float_only


def rmsprop_kernel(param, grad, mean_square, mean_grad, moment, learning_rate, rho=0.95, epsilon=1e-6,
                   momentum=0.0, centered=False):
    """ms = rho ms + (1 - rho) g^2; root = sqrt(ms - mg^2 if centered (mg = rho mg + (1 - rho) g)
    else ms) + epsilon; with momentum: buf = momentum buf + g / root, p -= lr buf; else p -= lr g / root.
    (torch.optim.RMSprop; Paddle adds epsilon under the root and folds lr into buf.)"""
    dtype = param.dtype.type
    lr, rho_, one = _scalar(learning_rate, param), dtype(rho), dtype(1)
    mean_square = rho_ * mean_square + (one - rho_) * grad * grad
    if centered:
        mean_grad = rho_ * mean_grad + (one - rho_) * grad
        root = np.sqrt(mean_square - mean_grad * mean_grad) + dtype(epsilon)
    else:
        root = np.sqrt(mean_square) + dtype(epsilon)
    step = grad / root
    if momentum:
        moment = dtype(momentum) * moment + step
        step = moment
    return param - lr * step, mean_square, mean_grad, moment


def adagrad_kernel(param, grad, moment, learning_rate, epsilon=1e-6):
    """sum += g^2; p -= lr g / (sqrt(sum) + epsilon) (torch.optim.Adagrad, Paddle's Adagrad)."""
    lr = _scalar(learning_rate, param)
    moment = moment + grad * grad
    return param - lr * grad / (np.sqrt(moment) + param.dtype.type(epsilon)), moment


def adagrad_decay_kernel(param, grad, moment, step, learning_rate, epsilon=1e-6, lr_decay=0.0):
    """Adagrad with torch's `lr_decay`: step t (Step counts the steps before it) runs at
    lr / (1 + (t - 1) lr_decay), computed in float64 as torch does; Step is a scalar accumulator,
    so a static program and an eager step keep the count alike (and a state dict saves it)."""
    rate = float(np.asarray(learning_rate).reshape(-1)[0]) / (1.0 + float(np.asarray(step).reshape(-1)[0]) * lr_decay)
    new_param, moment = adagrad_kernel(param, grad, moment, np.full([1], rate), epsilon)
    return new_param, moment, step + step.dtype.type(1)


def adamax_kernel(param, grad, moment, inf_norm, beta1_pow, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8):
    """m = beta1 m + (1 - beta1) g; u = max(beta2 u, |g| + epsilon); p -= lr / (1 - beta1^t) m / u,
    Beta1Pow holding beta1^t and advanced here (torch.optim.Adamax; Paddle: max(beta2 u + epsilon, |g|))."""
    dtype = param.dtype.type
    lr, b1, b2 = _scalar(learning_rate, param), dtype(beta1), dtype(beta2)
    moment = b1 * moment + (dtype(1) - b1) * grad
    inf_norm = np.maximum(b2 * inf_norm, np.abs(grad) + dtype(epsilon))
    step_size = lr / (dtype(1) - _scalar(beta1_pow, param))
    return param - step_size * moment / inf_norm, moment, inf_norm, beta1_pow * beta1_pow.dtype.type(beta1)


def adadelta_kernel(param, grad, avg_squared_grad, avg_squared_update, learning_rate, rho=0.95, epsilon=1e-6):
    """E[g^2] = rho E[g^2] + (1 - rho) g^2; delta = sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) g;
    E[dx^2] = rho E[dx^2] + (1 - rho) delta^2; p -= lr delta (torch.optim.Adadelta, Paddle's Adadelta)."""
    dtype = param.dtype.type
    lr, rho_, eps, one = _scalar(learning_rate, param), dtype(rho), dtype(epsilon), dtype(1)
    avg_squared_grad = rho_ * avg_squared_grad + (one - rho_) * grad * grad
    delta = np.sqrt(avg_squared_update + eps) / np.sqrt(avg_squared_grad + eps) * grad
    avg_squared_update = rho_ * avg_squared_update + (one - rho_) * delta * delta
    return param - lr * delta, avg_squared_grad, avg_squared_update


def rprop_kernel(param, grad, prev, step_size, step, learning_rate, eta_negative=0.5, eta_positive=1.2,
                 step_size_min=1e-5, step_size_max=50.0):
    """Resilient backpropagation (torch.optim.Rprop, Paddle's Rprop): each coordinate moves by its
    own step size against the sign of its gradient; the size grows by eta_positive while the sign
    holds, shrinks by eta_negative when it flips (and that step is skipped: the gradient is taken
    as 0), clipped to [step_size_min, step_size_max]. The rate is only the initial step size
    (read at the first update: Step counts them)."""
    dtype = param.dtype.type
    if float(np.asarray(step).reshape(-1)[0]) == 0:
        step_size = np.full_like(param, _scalar(learning_rate, param))
    sign = np.sign(grad * prev)
    factor = np.where(sign > 0, dtype(eta_positive), np.where(sign < 0, dtype(eta_negative), dtype(1)))
    step_size = np.clip(step_size * factor, dtype(step_size_min), dtype(step_size_max))
    grad = np.where(sign < 0, dtype(0), grad)
    return param - np.sign(grad) * step_size, grad, step_size, step + step.dtype.type(1)


def _infer(elementwise: tuple[str, ...], scalars: tuple[str, ...] = (), placeholders=lambda ctx: ()):
    """Param, Grad and the elementwise accumulators share one shape and dtype; LearningRate, the
    scalar accumulators and the placeholders `placeholders(ctx)` names hold one element."""
    def infer(ctx) -> None:
        float_only(ctx, "Param", "Grad", "LearningRate")
        _check_same(ctx, "Param", "Grad")
        _check_one_element(ctx, "LearningRate")
        ctx.set_output("ParamOut", ctx.shape("Param"), ctx.dtype("Param"))
        unused = set(placeholders(ctx))
        for slot in elementwise + scalars:
            if slot in scalars or slot in unused:
                _check_one_element(ctx, slot)
            else:
                _check_same(ctx, "Param", slot)
            ctx.set_output(slot + "Out", ctx.shape(slot), ctx.dtype(slot))
    return infer


def _rmsprop_placeholders(ctx) -> tuple[str, ...]:
    return (() if ctx.attr("centered") else ("MeanGrad",)) + (() if ctx.attr("momentum") else ("Moment",))


register_op("rmsprop", inputs="Param Grad MeanSquare MeanGrad Moment LearningRate",
            outputs="ParamOut MeanSquareOut MeanGradOut MomentOut",
            attrs={"rho": 0.95, "epsilon": 1e-6, "momentum": 0.0, "centered": False}, kernel=rmsprop_kernel,
            infer=_infer(("MeanSquare", "MeanGrad", "Moment"), placeholders=_rmsprop_placeholders),
            grad=NO_GRADIENT, doc="RMSProp (centered, with momentum), torch.optim.RMSprop's formulation.")
register_op("adagrad", inputs="Param Grad Moment LearningRate", outputs="ParamOut MomentOut",
            attrs={"epsilon": 1e-6}, kernel=adagrad_kernel, infer=_infer(("Moment",)), grad=NO_GRADIENT,
            doc="Adagrad: the rate divided by the root of the summed squared gradients.")
register_op("adagrad_decay", inputs="Param Grad Moment Step LearningRate", outputs="ParamOut MomentOut StepOut",
            attrs={"epsilon": 1e-6, "lr_decay": 0.0}, kernel=adagrad_decay_kernel, infer=_infer(("Moment",), ("Step",)),
            grad=NO_GRADIENT, doc="Adagrad with torch's lr_decay: the rate divided by 1 + (steps taken) lr_decay.")
register_op("adamax", inputs="Param Grad Moment InfNorm Beta1Pow LearningRate",
            outputs="ParamOut MomentOut InfNormOut Beta1PowOut",
            attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}, kernel=adamax_kernel,
            infer=_infer(("Moment", "InfNorm"), ("Beta1Pow",)), grad=NO_GRADIENT,
            doc="Adamax: Adam with the infinity norm of past gradients in place of the second moment.")
register_op("adadelta", inputs="Param Grad AvgSquaredGrad AvgSquaredUpdate LearningRate",
            outputs="ParamOut AvgSquaredGradOut AvgSquaredUpdateOut",
            attrs={"rho": 0.95, "epsilon": 1e-6}, kernel=adadelta_kernel,
            infer=_infer(("AvgSquaredGrad", "AvgSquaredUpdate")), grad=NO_GRADIENT,
            doc="Adadelta: steps scaled by the ratio of the running roots of past updates and gradients.")
register_op("rprop", inputs="Param Grad Prev StepSize Step LearningRate", outputs="ParamOut PrevOut StepSizeOut StepOut",
            attrs={"eta_negative": 0.5, "eta_positive": 1.2, "step_size_min": 1e-5, "step_size_max": 50.0},
            kernel=rprop_kernel, infer=_infer(("Prev", "StepSize"), ("Step",)), grad=NO_GRADIENT,
            doc="Rprop: per-coordinate step sizes adapted by the sign changes of the gradient.")
