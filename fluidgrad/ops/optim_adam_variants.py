"""Update ops of Adam's variants: `adam_amsgrad` (Adam / AdamW with amsgrad=True).

As the ops of optim.py: pure kernels of arrays (outputs named as their inputs in a program, the
same kernel called eagerly by the optimizer's step()), no gradient. The formulas are torch.optim's,
step for step, so the two agree to rounding.
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
