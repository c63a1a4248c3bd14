"""Accurate float32 (and float16 / bfloat16, accumulated in float32) sums over any axes.

One BLAS pass (`ones @ x`) or NumPy's sum over a strided axis adds the reduced values one after
another, so the rounding error grows with their count: 2^20 float32 rows of 0.1 come out 0.4-1%
off. PyTorch (cascade sum) and NumPy's pairwise sum over a contiguous axis stay within a few
ulps times log2(n). This module gets the same bound at BLAS speed: every pass adds at most
_BLOCK values in one chain (a BLAS matrix-vector product per block of rows, or NumPy's pairwise
sum along a long contiguous axis), then sums the partial sums the same way, so n values take
ceil(log_BLOCK n) passes and the error stays ~ passes * _BLOCK/16 * eps (the BLAS kernels keep
8-16 accumulators). float64 is not handled here (its callers keep their exact former path).
"""
from __future__ import annotations

import functools
import math

import numpy as np

# rows summed by one BLAS call: its chain of float32 additions stays ~16 long (measured error
# of 256 rows of 0.1: 1e-6, against 4e-3 for 2^20 rows in one pass)
_BLOCK = 256
# rows this short are summed by one BLAS dot product each (error ~ _ROW_BLOCK/16 ulps); longer
# rows in blocks of up to _ROW_BLOCK_MAX values (a divisor of their length: one BLAS call for all)
_ROW_BLOCK = 128
_ROW_BLOCK_MAX = 512
# rows at least this long, or arrays at least this large (out of cache, where BLAS and NumPy run at
# memory speed alike), take NumPy's pairwise sum along the contiguous rows
_LONG_ROW = 1 << 16
_LARGE = 1 << 21


@functools.lru_cache(maxsize=256)
def _ones(n: int) -> np.ndarray:
    ones = np.ones(n, np.float32)
    ones.flags.writeable = False
    return ones


@functools.lru_cache(maxsize=1024)
def _row_block(n: int) -> int | None:
    """The largest block length in [32, _ROW_BLOCK_MAX] dividing n (None when there is none)."""
    for block in range(_ROW_BLOCK_MAX, 31, -1):
        if n % block == 0:
            return block
    return None


def _sum_rows(m: np.ndarray) -> np.ndarray:
    """Sums along axis 1 of a contiguous [a, r] float32 array: [a]. One row, or long rows: NumPy's
    pairwise sum; else one BLAS product over blocks of <= _ROW_BLOCK_MAX values, then the same over
    the block sums (rows whose length has no block divisor take NumPy's sum too)."""
    a, r = m.shape
    while r > _ROW_BLOCK:
        block = None if a == 1 or r >= _LONG_ROW or a * r >= _LARGE else _row_block(r)
        if block is None:
            return np.add.reduce(m, axis=1)
        r //= block
        m = (m.reshape(a * r, block) @ _ones(block)).reshape(a, r)
    return m @ _ones(r)


def _short_sum(t: np.ndarray) -> np.ndarray:
    """Sums over axis 1 (at most _BLOCK long) of an [a, r, b] float32 array: [a, b]."""
    a, r, b = t.shape
    if a == 1:
        return (_ones(r) @ t[0]).reshape(1, b)
    if r * b < 512:   # tiny matrices: one NumPy reduction beats `a` BLAS calls; its chain is r long
        return np.add.reduce(t, axis=1)
    return np.matmul(_ones(r), t)


def _sum_middle(t: np.ndarray) -> np.ndarray:
    """Sums over axis 1 of an [a, r, b] float32 array (rows of b contiguous values): [a, b].
    Blocks of _BLOCK rows each give a partial sum (one BLAS pass per block), the partial sums are
    summed the same way, until one block is left."""
    a, r, b = t.shape
    if b == 1:
        return _sum_rows(t.reshape(a, r)).reshape(a, 1)
    while r > _BLOCK:
        q = r // _BLOCK
        blocks = t[:, :q * _BLOCK].reshape(a, q, _BLOCK, b)     # a view: one axis split in two
        partial = np.matmul(_ones(_BLOCK), blocks)               # [a, q, b], one BLAS call a block
        if r > q * _BLOCK:
            partial[:, 0] += _short_sum(t[:, q * _BLOCK:])
        t, r = partial, q
    return _short_sum(t)


@functools.lru_cache(maxsize=1024)
def _plan(shape: tuple, axes: tuple) -> tuple:
    """The [a, r, b] passes summing `shape` over `axes` (each pass sums axis 1, last reduced run
    first), from the axes merged into runs of adjacent reduced / kept axes (size-1 axes dropped),
    and the kept shape."""
    runs: list[list] = []
    for i, d in enumerate(shape):
        if d != 1:
            if runs and runs[-1][1] == (i in axes):
                runs[-1][0] *= d
            else:
                runs.append([d, i in axes])
    passes = []
    while any(reduced for _, reduced in runs):
        j = max(i for i, (_, reduced) in enumerate(runs) if reduced)
        before, after = math.prod(d for d, _ in runs[:j]), math.prod(d for d, _ in runs[j + 1:])
        passes.append((before, runs[j][0], after))
        runs = runs[:j - 1] + [[runs[j - 1][0] * after, False]] if j and j + 1 < len(runs) else \
            runs[:j] + runs[j + 1:]
    return tuple(passes), tuple(d for i, d in enumerate(shape) if i not in axes)


_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)


def cascade_sum(x: np.ndarray, axes: tuple, in_float32: bool = False) -> np.ndarray | None:
    """The sum of a float32 / float16 / bfloat16 array over `axes` (a tuple of axis indices),
    shaped as the kept axes, in x's dtype (`in_float32`: the float32 accumulator, for a mean to
    divide before rounding), with an error like PyTorch's; None for other dtypes (float64,
    integers, bool) and for empty arrays, which keep their callers' former path."""
    dtype = x.dtype
    if (dtype != _F32 and dtype != _F16 and (dtype.kind != "V" or dtype.name != "bfloat16")) or x.size == 0:
        return None
    t = np.ascontiguousarray(x, dtype=_F32)    # float16 / bfloat16 accumulate in float32
    passes, kept = _plan(x.shape, axes)
    if not passes:     # only size-1 axes reduced: a copy, never a view of x
        t = t.copy() if t is x else t
    for pass_shape in passes:
        t = _sum_middle(t.reshape(pass_shape))
    out = t.reshape(kept)
    if dtype == _F32 or in_float32:
        return out
    with np.errstate(over="ignore"):   # a float16 total past 65504 is inf, as NumPy's and PyTorch's
        return out.astype(dtype)


def cascade_vecmat(w: np.ndarray, m: np.ndarray) -> np.ndarray | None:
    """w @ m (a weighted sum of m's rows, e.g. a layer norm's scale gradient over the batch) for
    float32 [r] and C-contiguous [r, b]: one BLAS product per block of _BLOCK rows, the block
    results then summed by cascade_sum; None for other dtypes or layouts (then plain w @ m)."""
    if w.dtype != _F32 or m.dtype != _F32 or m.ndim != 2 or not m.flags.c_contiguous:
        return None
    r, b = m.shape
    if r <= _BLOCK:
        return w @ m
    q = r // _BLOCK
    partial = np.matmul(w[:q * _BLOCK].reshape(q, 1, _BLOCK), m[:q * _BLOCK].reshape(q, _BLOCK, b)).reshape(q, b)
    if r > q * _BLOCK:
        partial[0] += w[q * _BLOCK:] @ m[q * _BLOCK:]
    return cascade_sum(partial, (0,))


class PairwiseSum:
    """A sum of arrays handed in one at a time (a kernel's blocks of images), added as a balanced
    binary tree: level i holds the sum of 2^i arrays, and a new array carries upwards like a
    binary counter. n arrays take n - 1 additions, as a running total does, but each element's
    rounding error grows as log2(n) rather than n, in at most log2(n) buffers of one array each."""

    def __init__(self) -> None:
        self._levels: list[np.ndarray | None] = []

    def add(self, a: np.ndarray) -> None:
        """Add `a` (read now, never kept: the caller may reuse its buffer)."""
        carry = None
        for i, held in enumerate(self._levels):
            if held is None:
                self._levels[i] = a.copy() if carry is None else carry
                return
            carry = np.add(held, a if carry is None else carry, out=held)
            self._levels[i] = None
        self._levels.append(a.copy() if carry is None else carry)

    def total(self) -> np.ndarray | None:
        """The sum so far (smallest partial sums first), None when nothing was added."""
        parts = [p for p in self._levels if p is not None]
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = np.add(out, p, out=out)
        return out
