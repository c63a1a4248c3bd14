"""The Adam update in one compiled pass (numba, ops/accel.py), for ops/optim.py's adam kernel.

Why: NumPy's Adam is about ten ufunc passes, each a temporary, and four Python-level scalar
conversions; at the small parameters of the example models (8 to 4096 elements) the per-call
cost dominates, and PyTorch's fused Adam kernel is five times faster. Here each element is read
once, the scalars (learning rate, beta powers) are read inside the loop, and the three result
arrays are new (the kernel stays a pure function of its inputs, as ops/optim.py requires).
"""
from __future__ import annotations

import numpy as np

from . import accel


@accel.jit
def _adam_loop(param, grad, moment1, moment2, beta1_pow, beta2_pow, learning_rate, beta1, beta2, epsilon,
               weight_decay):
    """The five outputs, new arrays; the scalars are taken in the parameter's dtype, as the NumPy
    kernel takes them. ravel is a view of a C-contiguous input (a copy otherwise)."""
    n = param.size
    p, g, m1, m2 = param.ravel(), grad.ravel(), moment1.ravel(), moment2.ravel()
    p_out, m1_out, m2_out = np.empty(n, param.dtype), np.empty(n, param.dtype), np.empty(n, param.dtype)
    t = param.dtype.type
    one = t(1)
    lr, b1, b2 = t(learning_rate.ravel()[0]), t(beta1), t(beta2)
    step_size = lr / (one - t(beta1_pow.ravel()[0]))
    inv_correction = one / np.sqrt(one - t(beta2_pow.ravel()[0]))
    eps, decay = t(epsilon), one - lr * t(weight_decay)
    for k in range(n):
        gk = g[k]
        m = b1 * m1[k] + (one - b1) * gk
        v = b2 * m2[k] + (one - b2) * gk * gk
        m1_out[k] = m
        m2_out[k] = v
        p_out[k] = p[k] * decay - np.divide(step_size * m, np.sqrt(v) * inv_correction + eps)
    b1_pow_out = beta1_pow * beta1_pow.dtype.type(beta1)
    b2_pow_out = beta2_pow * beta2_pow.dtype.type(beta2)
    shape = param.shape
    return p_out.reshape(shape), m1_out.reshape(shape), m2_out.reshape(shape), b1_pow_out, b2_pow_out


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def adam(param, grad, moment1, moment2, beta1_pow, beta2_pow, learning_rate, beta1, beta2, epsilon,
         weight_decay):
    """Adam's five outputs (ops/optim.py's adam kernel), or None when the loop does not take these
    arrays: numba off or missing, or not one float dtype (the checks are written out: at a
    bias vector's size, this call's overhead is the cost)."""
    dtype = param.dtype
    if (dtype not in _FLOATS or param.ndim == 0 or grad.dtype != dtype or moment1.dtype != dtype or moment2.dtype != dtype
            or beta1_pow.dtype not in _FLOATS or beta2_pow.dtype != beta1_pow.dtype
            or learning_rate.dtype not in _FLOATS or not accel.enabled()):
        return None
    return _adam_loop(param, grad, moment1, moment2, beta1_pow, beta2_pow, learning_rate, float(beta1),
                      float(beta2), float(epsilon), float(weight_decay))
