"""Collective ops (fluidgrad/ops/collective.py) in a world of one, where communication is the
identity (so kernels, shape rules, gradients and eager-vs-static are checked here), and the
bucket packing ops. tests/test_distributed.py checks the communicating ops and their gradients
on 2 and 3 ranks through the launcher."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import pos, rand

T_POW1, T_POW2 = np.array([0.9 ** 3]), np.array([0.999 ** 3])  # the beta powers of step 3
# the split cases draw from a generator of their own: the shared stream (common._RNG) feeds the tables
# after this one, whose inputs (e.g. top_k's tie-free integers) were chosen for the values it gives
_OWN = np.random.default_rng(14)


def _rand(*shape):
    return _OWN.uniform(-1.0, 1.0, size=shape)


def _pos(*shape):
    return _OWN.uniform(0.5, 2.0, size=shape)


def _adam_reference(X, Param, Moment1, Moment2, beta1_pow, beta2_pow, lr, decay, weight_decay,
                    beta1=0.9, beta2=0.999, eps=1e-8):
    """ops/optim.py's adam on g + decay * p (L2), with AdamW's decoupled decay, per tensor."""
    params, m1s, m2s = [], [], []
    for x, p, m1, m2 in zip(X, Param, Moment1, Moment2):
        g = x + decay * p
        m = beta1 * m1 + (1 - beta1) * g
        v = beta2 * m2 + (1 - beta2) * g * g
        step = lr / (1 - beta1_pow) * m / (T.sqrt(v) / T.sqrt(1 - beta2_pow) + eps)
        params.append(p * (1 - lr * weight_decay) - step)
        m1s.append(m)
        m2s.append(v)
    pows = [[beta1_pow * beta1] * len(X), [beta2_pow * beta2] * len(X)]
    return params + m1s + m2s + pows[0] + pows[1]

CASES = [
    OpCase("c_allreduce_sum", {"X": rand(2, 3)}, torch_fn=lambda X: X),
    OpCase("c_allreduce_avg", {"X": rand(3)}, torch_fn=lambda X: X),
    OpCase("c_allreduce_max", {"X": rand(3)}, torch_fn=lambda X: X, grad=False),
    OpCase("c_allreduce_min", {"X": rand(2, 2)}, torch_fn=lambda X: X, grad=False),
    # (fixed values: a draw here would shift the shared stream that the later tables were chosen for)
    OpCase("c_allreduce_prod", {"X": np.array([[0.5, -1.5], [2.0, 0.25]])}, torch_fn=lambda X: X, grad=False),
    OpCase("c_broadcast", {"X": rand(2, 2)}, {"root": 0}, torch_fn=lambda X: X),
    OpCase("c_reduce_sum", {"X": rand(2, 2)}, {"root": 0}, torch_fn=lambda X: X),
    OpCase("c_allgather", {"X": rand(2, 3)}, {"nranks": 1}, torch_fn=lambda X: X),
    OpCase("c_reducescatter", {"X": rand(4, 2)}, {"nranks": 1}, torch_fn=lambda X: X),
    OpCase("c_alltoall", {"X": np.array([[0.3, -1.2], [0.7, 0.5], [-0.4, 1.1]])}, torch_fn=lambda X: X),
    OpCase("c_bucket_allreduce", {"X": [rand(2, 3), rand(4)]}, {"reduce": "avg", "bucket": "case"}, n_out=2,
           torch_fn=lambda X: list(X)),
    # sharded buckets in a world of one: the one rank's part is the whole bucket, flattened
    OpCase("c_bucket_reducescatter", {"X": [rand(2, 3), rand(4)]}, {"reduce": "avg", "bucket": "case"},
           torch_fn=lambda X: T.cat([x.reshape(-1) for x in X])),
    OpCase("c_bucket_shard", {"X": [rand(3), rand(2, 2)]}, torch_fn=lambda X: T.cat([x.reshape(-1) for x in X])),
    OpCase("c_bucket_allgather", {"X": rand(10)}, {"bucket": "case", "shapes": [[2, 3], [4]]}, n_out=2,
           torch_fn=lambda X: [X[:6].reshape(2, 3), X[6:]]),
    OpCase("c_bucket_broadcast", {"X": [rand(2, 3), rand(4)]}, {"bucket": "case"}, n_out=2,
           torch_fn=lambda X: list(X)),
    OpCase("c_bucket_sgd", {"X": [rand(2, 3), rand(4)], "Param": [rand(2, 3), rand(4)], "LearningRate": rand(1)},
           {"bucket": "case", "copy": "case-param", "decay": 0.1}, n_out=2,
           torch_fn=lambda X, Param, LearningRate: [p - LearningRate * (x + 0.1 * p) for x, p in zip(X, Param)]),
    OpCase("c_bucket_momentum", {"X": [rand(3), rand(2, 2)], "Param": [rand(3), rand(2, 2)],
                                 "Velocity": [rand(3), rand(2, 2)], "LearningRate": rand(1)},
           {"bucket": "case", "copy": "case-param", "mu": 0.9}, n_out=2,
           torch_fn=lambda X, Param, Velocity, LearningRate: [
               p - LearningRate * (0.9 * v + x) for x, p, v in zip(X, Param, Velocity)] + [
               0.9 * v + x for x, v in zip(X, Velocity)]),
    OpCase("c_bucket_momentum", {"X": [rand(3)], "Param": [rand(3)], "Velocity": [rand(3)], "LearningRate": rand(1)},
           {"bucket": "case", "copy": "case-param", "mu": 0.5, "use_nesterov": True, "decay": 0.01}, n_out=1,
           id="c_bucket_momentum-nesterov-l2",
           torch_fn=lambda X, Param, Velocity, LearningRate: [
               Param[0] - LearningRate * (X[0] + 0.01 * Param[0] + 0.5 * (0.5 * Velocity[0] + X[0] + 0.01 * Param[0])),
               0.5 * Velocity[0] + X[0] + 0.01 * Param[0]]),
    OpCase("c_bucket_adam", {"X": [rand(3), rand(2, 2)], "Param": [rand(3), rand(2, 2)], "Moment1": [rand(3), rand(2, 2)],
                             "Moment2": [pos(3), pos(2, 2)], "Beta1Pow": [T_POW1, T_POW1], "Beta2Pow": [T_POW2, T_POW2],
                             "LearningRate": rand(1)},
           {"bucket": "case", "copy": "case-param", "decay": 0.01, "weight_decay": 0.1}, n_out=2,
           torch_fn=lambda X, Param, Moment1, Moment2, Beta1Pow, Beta2Pow, LearningRate: _adam_reference(
               X, Param, Moment1, Moment2, Beta1Pow[0], Beta2Pow[0], LearningRate, 0.01, 0.1)),
    # weight gradients split across ranks (ops/comm_split.py) in a world of one: the one rank's rows are all rows
    OpCase("c_split_matmul_grad", {"X": [_rand(4, 3), _rand(4, 2)], "Y": [_rand(4, 5), _rand(4, 3)]},
           {"biases": [1, 0], "key": "case"}, n_out=4,
           torch_fn=lambda X, Y: [X[0].T @ Y[0], X[1].T @ Y[1], Y[1].sum(0), Y[0].sum(0)]),
    OpCase("c_split_sgd", {"X": [_rand(3, 2)], "Y": [_rand(3, 4)], "Param": [_rand(2, 4), _rand(4)], "LearningRate": _rand(1)},
           {"biases": [0], "key": "case", "copy": "case-param", "decay": 0.1}, n_out=2,
           torch_fn=lambda X, Y, Param, LearningRate: [
               p - LearningRate * (g + 0.1 * p) for g, p in zip((X[0].T @ Y[0], Y[0].sum(0)), Param)]),
    OpCase("c_split_momentum", {"X": [_rand(3, 2)], "Y": [_rand(3, 4)], "Param": [_rand(2, 4)],
                                "Velocity": [_rand(2, 4)], "LearningRate": _rand(1)},
           {"key": "case", "copy": "case-param", "mu": 0.5, "use_nesterov": True, "decay": 0.01}, n_out=1,
           torch_fn=lambda X, Y, Param, Velocity, LearningRate: [
               Param[0] - LearningRate * (X[0].T @ Y[0] + 0.01 * Param[0] + 0.5 * (
                   0.5 * Velocity[0] + X[0].T @ Y[0] + 0.01 * Param[0])),
               0.5 * Velocity[0] + X[0].T @ Y[0] + 0.01 * Param[0]]),
    OpCase("c_split_adam", {"X": [_rand(3, 2)], "Y": [_rand(3, 4)], "Param": [_rand(2, 4), _rand(4)],
                            "Moment1": [_rand(2, 4), _rand(4)], "Moment2": [_pos(2, 4), _pos(4)],
                            "Beta1Pow": [T_POW1, T_POW1], "Beta2Pow": [T_POW2, T_POW2], "LearningRate": _rand(1)},
           {"biases": [0], "key": "case", "copy": "case-param", "decay": 0.01, "weight_decay": 0.1}, n_out=2,
           torch_fn=lambda X, Y, Param, Moment1, Moment2, Beta1Pow, Beta2Pow, LearningRate: _adam_reference(
               [X[0].T @ Y[0], Y[0].sum(0)], Param, Moment1, Moment2, Beta1Pow[0], Beta2Pow[0], LearningRate, 0.01,
               0.1)),
    OpCase("coalesce", {"X": [rand(2, 3), rand(4), rand(1, 2, 2)]},
           torch_fn=lambda X: T.cat([x.reshape(-1) for x in X])),
    OpCase("coalesce", {"X": [rand(3)]}, id="coalesce-one", torch_fn=lambda X: X[0].reshape(-1)),
    OpCase("uncoalesce", {"X": rand(12)}, {"shapes": [[2, 3], [4], [2, 1]]}, n_out=3,
           torch_fn=lambda X: [X[:6].reshape(2, 3), X[6:10], X[10:].reshape(2, 1)]),
    OpCase("uncoalesce", {"X": rand(5)}, {"shapes": [[2], [], [2]]}, n_out=3, use_outputs=(0, 1),
           id="uncoalesce-unused-output", torch_fn=lambda X: [X[:2], X[2].reshape(())]),
]
