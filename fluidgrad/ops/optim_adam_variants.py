"""Update ops of Adam's variants: `adam_amsgrad` (Adam / AdamW with amsgrad=True), `nadam`, `radam`
(the optimizers in fluidgrad/optimizer/adam_variants.py).

As the ops of optim.py: pure kernels of arrays (outputs named as their inputs in a program, the
same kernel called eagerly by the optimizer's step()), no gradient. The formulas are torch.optim's,
step for step, so the two agree to rounding. NAdam and RAdam count their updates in a one-element
`Step` accumulator (their schedules depend on t), as torch's `state["step"]`.
"""
from __future__ import annotations

import numpy as np

from .optim import _scalar
from .optim_adaptive import _infer
from .registry import NO_GRADIENT, register_op


def adam_amsgrad_kernel(param, grad, moment1, moment2, moment2_max, beta1_pow, beta2_pow, learning_rate, beta1=0.9,
                        beta2=0.999, epsilon=1e-8, weight_decay=0.0):
    """Adam whose denominator is the running maximum of the second moment (AMSGrad): m, v as Adam;
    vmax = max(vmax, v); p -= lr / (1 - beta1^t) m / (sqrt(vmax) / sqrt(1 - beta2^t) + eps).
    `weight_decay` > 0 is AdamW's decoupled decay p *= 1 - lr * wd, as in `adam`."""
    dtype = param.dtype.type
    lr, b1, b2, one = _scalar(learning_rate, param), dtype(beta1), dtype(beta2), dtype(1)
    if weight_decay:
        param = param * (one - lr * dtype(weight_decay))
    m = b1 * moment1 + (one - b1) * grad
    v = b2 * moment2 + (one - b2) * grad * grad
    v_max = np.maximum(moment2_max, v)
    denom = np.sqrt(v_max) / np.sqrt(one - _scalar(beta2_pow, param)) + dtype(epsilon)
    param_out = param - lr / (one - _scalar(beta1_pow, param)) * m / denom
    return param_out, m, v, v_max, beta1_pow * beta1_pow.dtype.type(beta1), beta2_pow * beta2_pow.dtype.type(beta2)


register_op("adam_amsgrad", inputs="Param Grad Moment1 Moment2 Moment2Max Beta1Pow Beta2Pow LearningRate",
            outputs="ParamOut Moment1Out Moment2Out Moment2MaxOut Beta1PowOut Beta2PowOut",
            attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "weight_decay": 0.0}, kernel=adam_amsgrad_kernel,
            infer=_infer(("Moment1", "Moment2", "Moment2Max"), ("Beta1Pow", "Beta2Pow")), grad=NO_GRADIENT,
            doc="Adam with AMSGrad's running maximum of the second moment (AdamW when weight_decay > 0).")


def _lerp(start, end, weight):
    """start + weight (end - start), as torch's lerp_ for weight < 0.5 (how its optimizers
    average the first moment)."""
    return start + weight * (end - start)


def nadam_kernel(param, grad, moment1, moment2, mu_product, step, learning_rate, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, momentum_decay=0.004):
    """Adam with Nesterov momentum and momentum decay (torch.optim.NAdam, Paddle's NAdam):
    mu_t = beta1 (1 - 0.5 * 0.96^(t psi)); p -= lr (1 - mu_t) / (1 - prod mu) g / denom
    + lr mu_{t+1} / (1 - prod mu * mu_{t+1}) m / denom, denom = sqrt(v / (1 - beta2^t)) + eps.
    Step counts the updates (advanced here), MuProduct the product of the mu_t."""
    dtype = param.dtype.type
    lr, t = float(_scalar(learning_rate, param)), float(np.asarray(step).reshape(-1)[0]) + 1.0
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1.0) * momentum_decay))
    # the product in float32 whatever the parameter's dtype, as torch keeps it (its scalar state dtype)
    mu_product = (mu_product.astype(np.float32) * np.float32(mu)).astype(mu_product.dtype)
    product = float(np.asarray(mu_product).reshape(-1)[0])
    m = _lerp(moment1, grad, dtype(1.0 - beta1))
    v = dtype(beta2) * moment2 + dtype(1.0 - beta2) * grad * grad
    denom = np.sqrt(v / dtype(1.0 - beta2 ** t)) + dtype(epsilon)
    param = param + dtype(-lr * (1.0 - mu) / (1.0 - product)) * (grad / denom)
    param = param + dtype(-lr * mu_next / (1.0 - product * mu_next)) * (m / denom)
    return param, m, v, mu_product, step + step.dtype.type(1)


def radam_kernel(param, grad, moment1, moment2, step, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8):
    """Rectified Adam (torch.optim.RAdam, Paddle's RAdam): while the variance of the adaptive
    rate is intractable (rho_t <= 5, the first steps) an SGD-with-momentum step of the
    bias-corrected m; then Adam's step times the rectification r_t."""
    dtype = param.dtype.type
    lr, t = float(_scalar(learning_rate, param)), float(np.asarray(step).reshape(-1)[0]) + 1.0
    m = _lerp(moment1, grad, dtype(1.0 - beta1))
    v = dtype(beta2) * moment2 + dtype(1.0 - beta2) * grad * grad
    correction1, correction2 = 1.0 - beta1 ** t, 1.0 - beta2 ** t
    corrected = m / dtype(correction1)
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * t * beta2 ** t / correction2
    if rho_t > 5.0:
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        adaptive = dtype(correction2 ** 0.5) / (np.sqrt(v) + dtype(epsilon))
        update = corrected * dtype(lr) * adaptive * dtype(rect)
    else:
        update = corrected * dtype(lr)
    return param - update, m, v, step + step.dtype.type(1)


register_op("nadam", inputs="Param Grad Moment1 Moment2 MuProduct Step LearningRate",
            outputs="ParamOut Moment1Out Moment2Out MuProductOut StepOut",
            attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "momentum_decay": 0.004}, kernel=nadam_kernel,
            infer=_infer(("Moment1", "Moment2"), ("MuProduct", "Step")), grad=NO_GRADIENT,
            doc="NAdam: Adam with Nesterov momentum and a decaying momentum schedule.")
register_op("radam", inputs="Param Grad Moment1 Moment2 Step LearningRate",
            outputs="ParamOut Moment1Out Moment2Out StepOut",
            attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}, kernel=radam_kernel,
            infer=_infer(("Moment1", "Moment2"), ("Step",)), grad=NO_GRADIENT,
            doc="RAdam: Adam whose adaptive rate is rectified, plain momentum while its variance is intractable.")
