"""Op cases of fluidgrad/ops/matrix.py: inverse, determinant, solve, cholesky, log_abs_det and pinv of
well-conditioned matrices (symmetric positive-definite for cholesky; full rank for pinv)."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import rand


def _conditioned(*shape):
    """Random matrices plus a multiple of the identity: far from singular."""
    return rand(*shape) + 2.0 * np.eye(shape[-1])


def _spd(*shape):
    """Symmetric positive-definite matrices."""
    a = rand(*shape)
    return a @ np.swapaxes(a, -1, -2) + 2.0 * np.eye(shape[-1])


CASES = [
    OpCase("inverse", {"X": _conditioned(3, 3)}, torch_fn=lambda X: T.linalg.inv(X)),
    OpCase("inverse", {"X": _conditioned(2, 4, 4)}, id="inverse-batched", torch_fn=lambda X: T.linalg.inv(X)),
    OpCase("determinant", {"X": _conditioned(3, 3)}, torch_fn=lambda X: T.linalg.det(X)),
    OpCase("determinant", {"X": _conditioned(2, 3, 2, 2)}, id="determinant-batched", torch_fn=lambda X: T.linalg.det(X)),
    OpCase("solve", {"X": _conditioned(3, 3), "Y": rand(3, 2)}, torch_fn=lambda X, Y: T.linalg.solve(X, Y)),
    OpCase("solve", {"X": _conditioned(2, 3, 3), "Y": rand(2, 3, 1)}, id="solve-batched",
           torch_fn=lambda X, Y: T.linalg.solve(X, Y)),
    OpCase("cholesky", {"X": _spd(3, 3)}, torch_fn=lambda X: T.linalg.cholesky((X + X.mT) / 2)),
    OpCase("cholesky", {"X": _spd(2, 4, 4)}, id="cholesky-batched",
           torch_fn=lambda X: T.linalg.cholesky((X + X.mT) / 2)),
    OpCase("log_abs_det", {"X": _conditioned(3, 3) - 4.0 * np.eye(3)}, torch_fn=lambda X: T.linalg.slogdet(X)[1]),
    OpCase("log_abs_det", {"X": _conditioned(2, 3, 3)}, id="log_abs_det-batched",
           torch_fn=lambda X: T.linalg.slogdet(X)[1]),
    OpCase("pinv", {"X": _conditioned(3, 3)}, torch_fn=lambda X: T.linalg.pinv(X)),
    OpCase("pinv", {"X": rand(4, 2) + np.eye(4, 2)}, id="pinv-tall", torch_fn=lambda X: T.linalg.pinv(X)),
    OpCase("pinv", {"X": rand(2, 2, 3) + np.eye(2, 3)}, id="pinv-wide-batched", torch_fn=lambda X: T.linalg.pinv(X)),
]
