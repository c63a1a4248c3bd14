"""gather's gradient (a scatter-add of rows) as one compiled loop (numba, ops/accel.py).

Why: an embedding lookup gathers the same few rows many times (the char GPT: 512 lookups into
27 rows), so ops/tensor.py's NumPy kernel takes np.add.at, an element-by-element loop at
Python-object speed: 7x PyTorch's embedding backward. The loop here adds each gathered row
into its place once, in order.
"""
from __future__ import annotations

import math

import numpy as np

from . import accel


@accel.jit
def _scatter_add_rows(dout, index, out):
    """out[p, index[i], q] += dout[p, i, q]; returns -1, or the position of an index out of range
    (then nothing is trusted: the caller takes the NumPy path, which raises)."""
    rows = out.shape[1]
    for i in range(index.size):
        r = index[i]
        if r < 0 or r >= rows:
            return i
    for p in range(dout.shape[0]):
        for i in range(index.size):
            r = index[i]
            for q in range(dout.shape[2]):
                out[p, r, q] += dout[p, i, q]
    return -1


def gather_grad(dout: np.ndarray, flat_index: np.ndarray, target_shape: tuple, axis: int) -> np.ndarray | None:
    """The gradient of gather along `axis` (flat_index: the indices, negatives already wrapped),
    or None when the loop does not take these arrays."""
    if not (accel.enabled() and accel.takes(dout) and flat_index.dtype.kind in "iu"):
        return None
    pre = math.prod(target_shape[:axis])
    post = math.prod(target_shape[axis + 1:])
    out = np.zeros(target_shape, dtype=dout.dtype)
    d = dout.reshape(pre, flat_index.size, post)
    if _scatter_add_rows(d, flat_index, out.reshape(pre, target_shape[axis], post)) != -1:
        return None
    return out
