"""Op cases of fluidgrad/ops/matrix.py: inverse and determinant of well-conditioned matrices."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import rand


def _conditioned(*shape):
    """Random matrices plus a multiple of the identity: far from singular."""
    return rand(*shape) + 2.0 * np.eye(shape[-1])


CASES = [
    OpCase("inverse", {"X": _conditioned(3, 3)}, torch_fn=lambda X: T.linalg.inv(X)),
    OpCase("inverse", {"X": _conditioned(2, 4, 4)}, id="inverse-batched", torch_fn=lambda X: T.linalg.inv(X)),
    OpCase("determinant", {"X": _conditioned(3, 3)}, torch_fn=lambda X: T.linalg.det(X)),
    OpCase("determinant", {"X": _conditioned(2, 3, 2, 2)}, id="determinant-batched", torch_fn=lambda X: T.linalg.det(X)),
]
