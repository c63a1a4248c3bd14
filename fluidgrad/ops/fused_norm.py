"""One-pass layer norm and batch norm loops, compiled by numba (ops/accel.py) when installed.

NumPy needs four to eight passes over memory for a normalisation (mean, centring, variance,
scaling, shifting; more for the gradients) and a temporary for most of them; these loops read
each row (layer norm) or each channel's planes (batch norm) from cache instead. ops/norm.py
calls them from its kernels when `accel.enabled() and accel.takes(...)`; its NumPy code stays
the fallback (float16, no numba, FLUIDGRAD_NUMBA=0) and the reference the tests compare with.

Layer norm's row sums accumulate in the input's dtype (a row is short: the reassociated loop's
16 partial float32 sums are as accurate as NumPy's pairwise ones); its DScale and DBias, sums
over all the rows, in blocks of rows whose sums are added in float64. Batch norm sums N * L values
per channel, too many for 16 float32 lanes on an offset input, so its sums accumulate in
float64. Variances are taken from the centred values (two passes in cache), never as
E[x^2] - E[x]^2, and DScale from the centred x, never as sum(dy x) - mean sum(dy).
"""
from __future__ import annotations

import numpy as np

from . import accel

SUM_BLOCK = 128   # rows whose DScale / DBias terms are summed in x's dtype before a float64 add


# ---------------------------------------------------------------- layer_norm
@accel.jit
def layer_norm_rows(x, scale, bias, epsilon, y, mean, variance):
    """y[i] = (x[i] - mean[i]) / sqrt(variance[i] + epsilon) * scale + bias for each row i."""
    rows, width = x.shape
    one = x.dtype.type(1)
    inv_width = one / x.dtype.type(max(width, 1))
    for i in range(rows):
        total = x.dtype.type(0)
        for j in range(width):
            total += x[i, j]
        m = total * inv_width
        squares = x.dtype.type(0)
        for j in range(width):
            c = x[i, j] - m
            squares += c * c
        v = squares * inv_width
        rstd = one / np.sqrt(v + epsilon)
        for j in range(width):
            y[i, j] = (x[i, j] - m) * rstd * scale[j] + bias[j]
        mean[i] = m
        variance[i] = v


@accel.jit
def layer_norm_grad_rows(x, scale, mean, variance, dy, epsilon, dx, dscale, dbias):
    """dx = rstd (g - mean(g) - x_hat mean(g x_hat)) with g = dy scale, row by row; dscale and
    dbias get sum(dy x_hat) and sum(dy) over the rows: summed in x's dtype over blocks of
    SUM_BLOCK rows, the blocks' sums added in float64 (one float32 sum per column over a
    million rows loses about 1%; float64 adds in the row loop would cost a third more time)."""
    rows, width = x.shape
    one = x.dtype.type(1)
    inv_width = one / x.dtype.type(max(width, 1))
    block_dscale, block_dbias = np.zeros(width, x.dtype), np.zeros(width, x.dtype)
    total_dscale, total_dbias = np.zeros(width, np.float64), np.zeros(width, np.float64)
    for i in range(rows):
        m = mean[i]
        rstd = one / np.sqrt(variance[i] + epsilon)
        g_sum = x.dtype.type(0)
        g_xhat = x.dtype.type(0)
        for j in range(width):
            xhat = (x[i, j] - m) * rstd
            d = dy[i, j]
            g = d * scale[j]
            g_sum += g
            g_xhat += g * xhat
            block_dscale[j] += d * xhat
            block_dbias[j] += d
        a = g_sum * inv_width
        b = g_xhat * inv_width
        for j in range(width):
            xhat = (x[i, j] - m) * rstd
            dx[i, j] = rstd * (dy[i, j] * scale[j] - a - xhat * b)
        if (i + 1) % SUM_BLOCK == 0 or i == rows - 1:
            for j in range(width):
                total_dscale[j] += block_dscale[j]
                total_dbias[j] += block_dbias[j]
                block_dscale[j] = 0
                block_dbias[j] = 0
    for j in range(width):
        dscale[j] = total_dscale[j]
        dbias[j] = total_dbias[j]


def layer_norm(rows: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None, epsilon: float):
    """Y (rows' shape), Mean, Variance of C-contiguous [rows, width] float32/float64 rows."""
    dtype, width = rows.dtype, rows.shape[1]
    scale = np.ones(width, dtype) if scale is None else np.ascontiguousarray(scale.reshape(-1), dtype)
    bias = np.zeros(width, dtype) if bias is None else np.ascontiguousarray(bias.reshape(-1), dtype)
    y = np.empty_like(rows)
    mean, variance = np.empty(rows.shape[0], dtype), np.empty(rows.shape[0], dtype)
    layer_norm_rows(rows, scale, bias, dtype.type(epsilon), y, mean, variance)
    return y, mean, variance


def layer_norm_grad(rows, scale, mean, variance, drows, epsilon: float):
    """DX (rows' shape), DScale, DBias (flat, [width]) of C-contiguous [rows, width] arrays."""
    dtype, width = rows.dtype, rows.shape[1]
    scale = np.ones(width, dtype) if scale is None else np.ascontiguousarray(scale.reshape(-1), dtype)
    dx = np.empty_like(rows)
    dscale, dbias = np.empty(width, dtype), np.empty(width, dtype)
    layer_norm_grad_rows(rows, scale, np.ascontiguousarray(mean, dtype), np.ascontiguousarray(variance, dtype),
                         drows, dtype.type(epsilon), dx, dscale, dbias)
    return dx, dscale, dbias


# ---------------------------------------------------------------- batch_norm
# x is viewed as [N, C, L] (L: the positions); one channel's planes (N * L values) are read
# from cache by every pass over that channel, so memory sees x once and y once.
@accel.jit
def batch_norm_stats(x, mean, variance):
    """Per-channel mean and (biased) variance of [N, C, L] x, the variance from centred values."""
    n, channels, length = x.shape
    inv_count = 1.0 / max(n * length, 1)
    for c in range(channels):
        total = 0.0   # float64: N * L float32 values of an offset input lose digits in float32
        for i in range(n):
            for j in range(length):
                total += x[i, c, j]
        m = x.dtype.type(total * inv_count)
        squares = 0.0
        for i in range(n):
            for j in range(length):
                d = x[i, c, j] - m
                squares += d * d
        mean[c] = m
        variance[c] = squares * inv_count


@accel.jit
def batch_norm_apply(x, mean, factor, bias, y):
    """y = (x - mean[c]) * factor[c] + bias[c] over [N, C, L] (factor = scale * inv_std)."""
    n, channels, length = x.shape
    for i in range(n):
        for c in range(channels):
            m, f, b = mean[c], factor[c], bias[c]
            for j in range(length):
                y[i, c, j] = (x[i, c, j] - m) * f + b


@accel.jit
def batch_norm_grad_channels(x, scale, mean, inv_std, dy, dx, dscale, dbias):
    """dx = a dy + b (x - mean) + e per channel (batch statistics), with dbias = sum(dy) and
    dscale = sum(dy (x - mean)) inv_std taken in the same pass over the channel (float64 sums;
    centred x, as PyTorch: sum(dy x) - mean sum(dy) cancels on an offset input)."""
    n, channels, length = x.shape
    inv_count = 1.0 / max(n * length, 1)
    for c in range(channels):
        r, m = inv_std[c], mean[c]
        dy_sum = 0.0
        dy_xc = 0.0
        for i in range(n):
            for j in range(length):
                d = dy[i, c, j]
                dy_sum += d
                dy_xc += d * (x[i, c, j] - m)
        ds = dy_xc * r
        dscale[c] = ds
        dbias[c] = dy_sum
        a = scale[c] * r
        b = x.dtype.type(-a * r * ds * inv_count)
        e = x.dtype.type(-a * inv_count * dy_sum)
        for i in range(n):
            for j in range(length):
                dx[i, c, j] = a * dy[i, c, j] + b * (x[i, c, j] - m) + e


def compiled(*arrays: np.ndarray | None) -> bool:
    """Whether the compiled loops should run: numba on, the given arrays one float dtype, the
    first not empty (empty inputs keep NumPy's answers, NaN statistics included)."""
    present = [a for a in arrays if a is not None]
    return present[0].size > 0 and accel.enabled() and accel.takes(*present)


def _planes(x: np.ndarray) -> np.ndarray:
    """[N, C, ...] as a C-contiguous [N, C, L] array (a view when x is contiguous)."""
    return np.ascontiguousarray(x).reshape(x.shape[0], x.shape[1], -1)


def _vector(v: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.ascontiguousarray(v.reshape(-1), dtype)


def batch_norm_stats_of(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The batch mean and biased variance per channel of [N, C, ...] x."""
    mean, variance = np.empty(x.shape[1], x.dtype), np.empty(x.shape[1], x.dtype)
    batch_norm_stats(_planes(x), mean, variance)
    return mean, variance


def batch_norm_output(x: np.ndarray, mean: np.ndarray, factor: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """(x - mean) * factor + bias along axis 1 of [N, C, ...] x, in one pass."""
    y = np.empty(x.shape, x.dtype)
    batch_norm_apply(_planes(x), _vector(mean, x.dtype), _vector(factor, x.dtype), _vector(bias, x.dtype),
                     y.reshape(_planes(x).shape))
    return y


def batch_norm_grad(x, scale, saved_mean, saved_inv_std, dy):
    """DX, DScale, DBias of batch_norm with batch statistics, one pass of reductions and one of
    output per channel."""
    planes = _planes(x)
    dx = np.empty(x.shape, x.dtype)
    dscale, dbias = np.empty(x.shape[1], x.dtype), np.empty(x.shape[1], x.dtype)
    batch_norm_grad_channels(planes, _vector(scale, x.dtype), _vector(saved_mean, x.dtype),
                             _vector(saved_inv_std, x.dtype), _planes(dy), dx.reshape(planes.shape), dscale, dbias)
    return dx, dscale, dbias
