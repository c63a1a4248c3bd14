"""Collective ops (fluidgrad/ops/collective.py) in a world of one, where communication is the
identity (so kernels, shape rules, gradients and eager-vs-static are checked here), and the
bucket packing ops. tests/test_distributed.py checks the communicating ops and their gradients
on 2 and 3 ranks through the launcher."""
from __future__ import annotations

import torch as T

from fluidgrad.testing import OpCase

from .common import rand

CASES = [
    OpCase("c_allreduce_sum", {"X": rand(2, 3)}, torch_fn=lambda X: X),
    OpCase("c_allreduce_avg", {"X": rand(3)}, torch_fn=lambda X: X),
    OpCase("c_allreduce_max", {"X": rand(3)}, torch_fn=lambda X: X, grad=False),
    OpCase("c_allreduce_min", {"X": rand(2, 2)}, torch_fn=lambda X: X, grad=False),
    OpCase("c_broadcast", {"X": rand(2, 2)}, {"root": 0}, torch_fn=lambda X: X),
    OpCase("c_reduce_sum", {"X": rand(2, 2)}, {"root": 0}, torch_fn=lambda X: X),
    OpCase("c_allgather", {"X": rand(2, 3)}, {"nranks": 1}, torch_fn=lambda X: X),
    OpCase("c_reducescatter", {"X": rand(4, 2)}, {"nranks": 1}, torch_fn=lambda X: X),
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
    OpCase("coalesce", {"X": [rand(2, 3), rand(4), rand(1, 2, 2)]},
           torch_fn=lambda X: T.cat([x.reshape(-1) for x in X])),
    OpCase("coalesce", {"X": [rand(3)]}, id="coalesce-one", torch_fn=lambda X: X[0].reshape(-1)),
    OpCase("uncoalesce", {"X": rand(12)}, {"shapes": [[2, 3], [4], [2, 1]]}, n_out=3,
           torch_fn=lambda X: [X[:6].reshape(2, 3), X[6:10], X[10:].reshape(2, 1)]),
    OpCase("uncoalesce", {"X": rand(5)}, {"shapes": [[2], [], [2]]}, n_out=3, use_outputs=(0, 1),
           id="uncoalesce-unused-output", torch_fn=lambda X: [X[:2], X[2].reshape(())]),
]
