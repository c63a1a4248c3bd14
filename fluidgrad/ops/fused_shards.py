"""The sum over ranks and the optimizer update of one rank's part of a sharded bucket, in one pass
(numba, ops/accel.py; NumPy fallback), for the ops c_bucket_sgd / c_bucket_momentum / c_bucket_adam.

Why: summed apart, a rank's part of the gradient is written once (own gradient plus the other
ranks' rows, scaled) and read again by the update; fused, each element of the own gradient, of
the other rows and of the parameter (and velocity or moments) is read once and the parameter written
once, straight into the node's copy. Every function takes one piece: `own` (this rank's
gradient, already flat), `rows` (the other ranks' rows of the shared bucket, 2-D, columns
`start:start + n`; rank `skip` is this rank's own row, left out), and the parameter's (and
velocity's) part to update in place. The gradient is (own + the other rows) * `scale`: rows
hold plain gradients and `scale` is 1 / world size for an average, applied here, inside the
pass (for a power-of-two world size the same bits as scaling each row first); `decay` is an L2
coefficient added to the gradient.
"""
from __future__ import annotations

import numpy as np

from . import accel


@accel.jit
def _sgd_loop(own, scale, peer, param, lr, decay):
    for k in range(param.size):
        p = param[k]
        param[k] = p - lr * ((own[k] + peer[k]) * scale + decay * p)


@accel.jit
def _momentum_loop(own, scale, peer, param, velocity, lr, mu, decay, nesterov):
    for k in range(param.size):
        p = param[k]
        g = (own[k] + peer[k]) * scale + decay * p
        v = mu * velocity[k] + g
        velocity[k] = v
        param[k] = p - lr * (g + mu * v if nesterov else v)


def _others(rows: np.ndarray, skip: int, start: int, n: int, dtype) -> np.ndarray:
    """The other ranks' rows summed over columns start:start + n (a view for one other row)."""
    others = [q for q in range(rows.shape[0]) if q != skip]
    if len(others) == 1:
        return rows[others[0], start:start + n]
    total = np.zeros(n, dtype)
    for q in others:
        np.add(total, rows[q, start:start + n], out=total)
    return total


def summed(own: np.ndarray, scale, rows: np.ndarray, skip: int, start: int) -> np.ndarray:
    """(own + the other rows' columns start:start + n, in rank order) * scale (NumPy)."""
    g = np.array(own)
    for q in range(rows.shape[0]):
        if q != skip:
            np.add(g, rows[q, start:start + g.size], out=g)
    if scale != 1:
        np.multiply(g, scale, out=g)
    return g


def _compiled(*arrays: np.ndarray) -> bool:
    return accel.enabled() and accel.takes(*arrays)


def sgd(own, scale, rows, skip, start, param, lr, decay) -> None:
    """param -= lr * ((own + other rows) * scale + decay * param), in place."""
    dtype = param.dtype.type
    if _compiled(own, param, rows):
        peer = _others(rows, skip, start, param.size, param.dtype)
        _sgd_loop(own, dtype(scale), peer, param, dtype(lr), dtype(decay))
        return
    g = summed(own, dtype(scale), rows, skip, start)
    if decay:
        g += dtype(decay) * param
    np.multiply(g, -dtype(lr), out=g)
    np.add(param, g, out=param)


def momentum(own, scale, rows, skip, start, param, velocity, lr, mu, decay, nesterov) -> None:
    """v = mu * v + g; param -= lr * v (Nesterov: lr * (g + mu * v)), g the summed gradient
    plus decay * param; in place (ops/optim.py's momentum, torch.optim.SGD's form)."""
    dtype = param.dtype.type
    if _compiled(own, param, velocity, rows):
        peer = _others(rows, skip, start, param.size, param.dtype)
        _momentum_loop(own, dtype(scale), peer, param, velocity, dtype(lr), dtype(mu), dtype(decay), bool(nesterov))
        return
    g = summed(own, dtype(scale), rows, skip, start)
    if decay:
        g += dtype(decay) * param
    np.multiply(velocity, dtype(mu), out=velocity)
    np.add(velocity, g, out=velocity)
    step = g + dtype(mu) * velocity if nesterov else velocity
    np.subtract(param, dtype(lr) * step, out=param)


@accel.jit
def _adam_loop(own, scale, peer, param, moment1, moment2, lr, beta1, beta2, step_size, inv_correction, epsilon,
               decay, weight_decay):
    one = param.dtype.type(1)
    keep = one - lr * weight_decay
    for k in range(param.size):
        p = param[k]
        g = (own[k] + peer[k]) * scale + decay * p
        m = beta1 * moment1[k] + (one - beta1) * g
        v = beta2 * moment2[k] + (one - beta2) * g * g
        moment1[k] = m
        moment2[k] = v
        param[k] = p * keep - np.divide(step_size * m, np.sqrt(v) * inv_correction + epsilon)


def adam(own, scale, rows, skip, start, param, moment1, moment2, lr, beta1, beta2, beta1_pow, beta2_pow, epsilon,
         decay, weight_decay) -> None:
    """ops/optim.py's adam (bias-corrected; `weight_decay`: AdamW's decoupled decay) on the summed
    gradient plus decay * param, in place; the beta powers are this step's (advanced by the caller)."""
    t = param.dtype.type
    one = t(1)
    step_size = t(lr) / (one - t(beta1_pow))
    inv_correction = one / np.sqrt(one - t(beta2_pow))
    if _compiled(own, param, moment1, moment2, rows):
        peer = _others(rows, skip, start, param.size, param.dtype)
        _adam_loop(own, t(scale), peer, param, moment1, moment2, t(lr), t(beta1), t(beta2), step_size,
                   inv_correction, t(epsilon), t(decay), t(weight_decay))
        return
    g = summed(own, t(scale), rows, skip, start)
    if decay:
        g += t(decay) * param
    if weight_decay:
        param *= one - t(lr) * t(weight_decay)
    np.multiply(moment1, t(beta1), out=moment1)
    moment1 += (one - t(beta1)) * g
    np.multiply(moment2, t(beta2), out=moment2)
    moment2 += (one - t(beta2)) * g * g
    param -= step_size * moment1 / (np.sqrt(moment2) * inv_correction + t(epsilon))


# ------------------------------------------------------------------ a gradient already summed (comm_split.py)
@accel.jit
def _sgd_plain_loop(g, scale, param, lr, decay):
    for k in range(param.size):
        p = param[k]
        param[k] = p - lr * (g[k] * scale + decay * p)


@accel.jit
def _momentum_plain_loop(grad, scale, param, velocity, lr, mu, decay, nesterov):
    for k in range(param.size):
        p = param[k]
        g = grad[k] * scale + decay * p
        v = mu * velocity[k] + g
        velocity[k] = v
        param[k] = p - lr * (g + mu * v if nesterov else v)


@accel.jit
def _adam_plain_loop(grad, scale, param, moment1, moment2, lr, beta1, beta2, step_size, inv_correction, epsilon,
                     decay, weight_decay):
    one = param.dtype.type(1)
    keep = one - lr * weight_decay
    for k in range(param.size):
        p = param[k]
        g = grad[k] * scale + decay * p
        m = beta1 * moment1[k] + (one - beta1) * g
        v = beta2 * moment2[k] + (one - beta2) * g * g
        moment1[k] = m
        moment2[k] = v
        param[k] = p * keep - np.divide(step_size * m, np.sqrt(v) * inv_correction + epsilon)


_NO_ROWS: dict[str, np.ndarray] = {}


def _no_rows(dtype) -> np.ndarray:
    return _NO_ROWS.setdefault(np.dtype(dtype).str, np.empty((0, 0), dtype))


def sgd_summed(grad, param, lr, decay, scale=None) -> None:
    """sgd above for a gradient that is the sum already, times `scale` (None: 1; flat pieces,
    updated in place)."""
    t = param.dtype.type
    scale = 1 if scale is None else scale
    if _compiled(grad, param):
        _sgd_plain_loop(grad, t(scale), param, t(lr), t(decay))
        return
    sgd(grad, scale, _no_rows(param.dtype), -1, 0, param, lr, decay)


def momentum_summed(grad, param, velocity, lr, mu, decay, nesterov, scale=None) -> None:
    """momentum above for a gradient that is the sum already, times `scale` (None: 1)."""
    t = param.dtype.type
    scale = 1 if scale is None else scale
    if _compiled(grad, param, velocity):
        _momentum_plain_loop(grad, t(scale), param, velocity, t(lr), t(mu), t(decay), bool(nesterov))
        return
    momentum(grad, scale, _no_rows(param.dtype), -1, 0, param, velocity, lr, mu, decay, nesterov)


def adam_summed(grad, param, moment1, moment2, lr, beta1, beta2, beta1_pow, beta2_pow, epsilon, decay,
                weight_decay, scale=None) -> None:
    """adam above for a gradient that is the sum already, times `scale` (None: 1)."""
    t = param.dtype.type
    one = t(1)
    scale = 1 if scale is None else scale
    if _compiled(grad, param, moment1, moment2):
        _adam_plain_loop(grad, t(scale), param, moment1, moment2, t(lr), t(beta1), t(beta2), t(lr) / (one - t(beta1_pow)),
                         one / np.sqrt(one - t(beta2_pow)), t(epsilon), t(decay), t(weight_decay))
        return
    adam(grad, scale, _no_rows(param.dtype), -1, 0, param, moment1, moment2, lr, beta1, beta2, beta1_pow, beta2_pow,
         epsilon, decay, weight_decay)
