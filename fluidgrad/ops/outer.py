"""The outer product of two vectors, the matmul of a batch-1 weight gradient (K = 1).

Why: OpenBLAS's K=1 GEMM is 10-20x slower than an outer loop, and NumPy's outer loops
(`einsum("i,j->ij")`, broadcast multiply) run a strided, scalar inner loop: 784x512 float32
took 70-140 µs here, PyTorch's `mm` 64 µs. One compiled loop writing each row as a vector
times a scalar takes about 25 µs (numba, the `fast` extra); einsum stays as the fallback (no
numba, FLUIDGRAD_NUMBA=0, other dtypes).
"""
from __future__ import annotations

import numpy as np

from . import accel


@accel.jit
def _outer_into(x, y, out):
    for i in range(x.shape[0]):
        xi = x[i]
        for j in range(y.shape[0]):
            out[i, j] = xi * y[j]


def outer(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x[i] * y[j] as an (len(x), len(y)) array, for 1-D `x` and `y` of one dtype."""
    if accel.enabled() and accel.takes(x, y):
        out = np.empty((x.shape[0], y.shape[0]), x.dtype)
        _outer_into(x, y, out)
        return out
    return np.einsum("i,j->ij", x, y)
