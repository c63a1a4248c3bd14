"""Winograd F(2x2, 3x3): 3x3 stride-1 convolutions with 2.25x fewer multiplies than im2col + GEMM.

Why: im2col + one GEMM already spends nearly all its time inside BLAS, so only fewer flops make
it faster. Each 2x2 output tile is A^T [(G g G^T) . (B^T d B)] A, d its 4x4 input tile; over
the tiles of all images the elementwise product is 16 GEMMs [O, C] x [C, tiles] (one batched
matmul): 16 multiplies per 2x2 outputs per channel pair where direct convolution needs 36.
F(2, 3) keeps float32 as close to the direct sum as im2col: max error / max |y| 2-3e-7 against
float64 at 16-64 channels (im2col 5.6e-7, PyTorch 3.5e-7), where F(4x4, 3x3), 4x fewer
multiplies, measured 3.6-6.4e-6: a digit lost, so it is not used.

The transforms are adds only, but NumPy needs a strided pass per term: measured, a NumPy-only
version was 1.6-2.4x PyTorch on the benchmark's shapes (im2col: 1.7-2.5x) and 5-13x on small
planes, so this path runs only compiled (numba, `accel`): each transform is one loop that
writes the layout the GEMM reads. Without numba, conv.py keeps im2col.

The three conv ops use it: the forward; the input gradient, which for stride 1 is the forward
convolution of dOut with the flipped, channel-swapped filter; the filter gradient, the adjoint:
dU = dM V^T per tile entry (dM = A dY A^T), then dW = G^T dU G. Images go through in blocks so
that the transformed tiles stay in cache between the transform and the GEMM. A block's GEMMs are
too small for BLAS to thread, so when BLAS may use several threads the blocks are drawn by as
many threads (threads.py), each with its own buffers (and, for dW, its own dU sum).
"""
from __future__ import annotations

import functools

import numpy as np

from . import accel, threads
from .cascade_sum import PairwiseSum

# F(2x2, 3x3): output = A^T [(G g G^T) * (B^T d B)] A
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
_BLOCK_BYTES = 1 << 20   # transformed input + product per block of images: the L2 cache (1 MiB a core on
                         # this EPYC; 1 MiB blocks measured 5-10% faster than 512 KiB at 32-64 channels)
_MIN_CHANNELS = 8
_PLANE_PAD = 24          # elements between the 16 tile planes (not a multiple of a cache page)
_SPLIT_MACS = 1 << 25    # Winograd-domain multiply-adds from which the images are split over threads
                         # (measured: below, the hand-over ate the gain; 32x32x16x16 -> 64 is 2 ** 26)
_BLAS_THREADS_FROM = 1 << 18   # M * N * K above which OpenBLAS threads a GEMM (4 x SMP_THRESHOLD_MIN)


def applies(kernel, strides, dilations, pads, groups: int) -> bool:
    """Whether Winograd F(2x2, 3x3) computes this geometry: 2-D, 3x3, stride 1, dilation 1, no
    groups, paddings >= 0."""
    return (list(kernel) == [3, 3] and list(strides) == [1, 1] and list(dilations) == [1, 1]
            and groups == 1 and min(min(p) for p in pads) >= 0)


def pays(channels: int) -> bool:
    """Whether Winograd beats im2col for a convolution with this many input channels. Measured
    (batch 8-64, 4x4 to 32x32 planes, 1-32 output channels): from 8 input channels it is 1.1-3x
    faster in all three ops; at 4 even; at 1-3 slower (the demo's 1 -> 16 layer: 2-5x slower,
    where im2col's GEMM has K = 9 and the stride-1 col2im is a few contiguous additions)."""
    return channels >= _MIN_CHANNELS


@functools.cache
def _kron_g(dtype) -> np.ndarray:
    """[16, 9]: row 4a + b holds G[a, i] G[b, j] at column 3i + j (both transforms in one GEMM)."""
    g = np.kron(_G, _G).astype(dtype)
    g.flags.writeable = False
    return g


def filter_transform(w: np.ndarray) -> np.ndarray:
    """U = G g G^T for every [O, C] filter, as the [16, O, C] stack the GEMMs take."""
    o, c = w.shape[:2]
    return np.ascontiguousarray((w.reshape(o * c, 9) @ _kron_g(np.dtype(w.dtype)).T).T).reshape(16, o, c)


def filter_grad_transform(du: np.ndarray, dtype) -> np.ndarray:
    """dW = G^T dU G per [O, C] pair: the adjoint of `filter_transform`."""
    o, c = du.shape[1:]
    return (du.reshape(16, o * c).T @ _kron_g(np.dtype(dtype))).reshape(o, c, 3, 3)


def _tiles(out_h: int, out_w: int) -> tuple[int, int]:
    return -(-out_h // 2), -(-out_w // 2)


def _stack(rows: int, tiles: int, dtype, storage: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A [16, rows * tiles + pad] buffer (what the transforms write) and its [16, rows, tiles]
    view (what the GEMMs read), in `storage` (flat, large enough) when given. The pad keeps the
    16 planes from sitting a power of two apart: they would share cache sets, and a transform
    writing all 16 at once thrashes them (measured 3-5x slower)."""
    size = 16 * (rows * tiles + _PLANE_PAD)
    flat = np.empty(size, dtype=dtype) if storage is None else storage[:size]
    buf = flat.reshape(16, rows * tiles + _PLANE_PAD)
    return buf, buf[:, :rows * tiles].reshape(16, rows, tiles)


class _BlockStacks:
    """One thread's two stacks (transformed input, and product or output gradient) for blocks of
    up to `most` tiles: one allocation each, reused block after block (it stays in the cache),
    the views made once per block length (the Python work between compiled calls holds the GIL
    the other threads wait for)."""

    def __init__(self, rows: tuple[int, int], most: int, dtype) -> None:
        self.rows, self.dtype = rows, dtype
        self.rooms = [np.empty(16 * (r * most + _PLANE_PAD), dtype=dtype) for r in rows]
        self.views: dict[int, tuple] = {}

    def __call__(self, tiles: int) -> tuple:
        """(first buffer, its GEMM view, second buffer, its GEMM view) for `tiles` tiles."""
        if tiles not in self.views:
            self.views[tiles] = sum((_stack(r, tiles, self.dtype, room) for r, room in zip(self.rows, self.rooms)), ())
        return self.views[tiles]


def _schedule(n: int, channels: int, outs: int, tiles: int, itemsize: int) -> tuple[int, int]:
    """Images per block and how many threads draw the blocks. One thread when the work is too
    small to pay for the hand-over, or when BLAS threads even one image's GEMMs itself (it
    does from `_BLAS_THREADS_FROM` multiply-adds: two threads' GEMMs each asking for BLAS's
    threads would queue for them); else BLAS's thread count, with blocks small enough that
    BLAS does not, four blocks a thread at least to share them out."""
    step = _block(n, channels, outs, tiles, itemsize)
    per_image = channels * outs * tiles   # multiply-adds of each of one image's 16 GEMMs
    if 16 * per_image * n < _SPLIT_MACS or per_image > _BLAS_THREADS_FROM:
        return step, 1
    workers = threads.blas_threads()
    if workers <= 1:
        return step, 1
    return max(1, min(step, _BLAS_THREADS_FROM // per_image, n // (4 * workers))), workers


def _block(n: int, channels: int, outs: int, tiles: int, itemsize: int) -> int:
    per_image = 16 * (channels + outs) * tiles * itemsize
    return max(1, min(n, _BLOCK_BYTES // max(per_image, 1)))


# ---------------------------------------------------------------- compiled transforms (numba)
# Index arithmetic is unsigned (np.uint64 throughout): numba wraps negative signed indices,
# and that check keeps LLVM from vectorising the inner loops (measured: 2-5x slower).
@accel.jit
def _input_tiles_compiled(x, top, left, th, tw, v):
    """v[16, C*n*th*tw (+ padding)] = B^T d B of every 4x4 tile (stride 2) of x padded by (top,
    left) and zeros below and right as far as the tiles reach. Straight-line code per tile:
    measured 4x faster than row-vectorised loops on the demo's 4x4 planes, as fast on 16x16."""
    n_img, chans, h, w = x.shape
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    hu, wu, th_u, tw_u = np.uint64(h), np.uint64(w), np.uint64(th), np.uint64(tw)
    wp = two * tw_u + two
    plane = np.zeros(np.uint64(2 * th + 2) * wp, dtype=x.dtype)     # one padded input plane
    xf, vf = x.reshape(x.size), v.reshape(v.size)
    ks = np.uint64(v.shape[1])
    corner = np.uint64(top) * wp + np.uint64(left)
    for n in range(n_img):
        for c in range(chans):
            src = np.uint64((n * chans + c) * h * w)
            for i in range(hu):
                dst, at = corner + i * wp, src + i * wu
                for j in range(wu):
                    plane[dst + j] = xf[at + j]
            base = np.uint64((c * n_img + n) * th * tw)
            for ti in range(th_u):
                p0 = two * ti * wp
                p1, p2, p3 = p0 + wp, p0 + two * wp, p0 + three * wp
                for tj in range(tw_u):
                    q0 = two * tj
                    q1, q2, q3 = q0 + one, q0 + two, q0 + three
                    # B^T d: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3 (per column)
                    r00, r01 = plane[p0 + q0] - plane[p2 + q0], plane[p0 + q1] - plane[p2 + q1]
                    r02, r03 = plane[p0 + q2] - plane[p2 + q2], plane[p0 + q3] - plane[p2 + q3]
                    r10, r11 = plane[p1 + q0] + plane[p2 + q0], plane[p1 + q1] + plane[p2 + q1]
                    r12, r13 = plane[p1 + q2] + plane[p2 + q2], plane[p1 + q3] + plane[p2 + q3]
                    r20, r21 = plane[p2 + q0] - plane[p1 + q0], plane[p2 + q1] - plane[p1 + q1]
                    r22, r23 = plane[p2 + q2] - plane[p1 + q2], plane[p2 + q3] - plane[p1 + q3]
                    r30, r31 = plane[p1 + q0] - plane[p3 + q0], plane[p1 + q1] - plane[p3 + q1]
                    r32, r33 = plane[p1 + q2] - plane[p3 + q2], plane[p1 + q3] - plane[p3 + q3]
                    # (B^T d) B: the same on the columns, written where the GEMM reads them
                    at = base + ti * tw_u + tj
                    vf[at], vf[at + ks] = r00 - r02, r01 + r02
                    vf[at + two * ks], vf[at + three * ks] = r02 - r01, r01 - r03
                    at += four * ks
                    vf[at], vf[at + ks] = r10 - r12, r11 + r12
                    vf[at + two * ks], vf[at + three * ks] = r12 - r11, r11 - r13
                    at += four * ks
                    vf[at], vf[at + ks] = r20 - r22, r21 + r22
                    vf[at + two * ks], vf[at + three * ks] = r22 - r21, r21 - r23
                    at += four * ks
                    vf[at], vf[at + ks] = r30 - r32, r31 + r32
                    vf[at + two * ks], vf[at + three * ks] = r32 - r31, r31 - r33


@accel.jit
def _output_tiles_compiled(m, th, tw, bias, has_bias, y):
    """y[n, o] = A^T m A per tile from m[16, O*n*th*tw (+ padding)] (+ bias); odd edges dropped. Two
    passes: A^T m over the whole block (long contiguous loops), then the columns per output row."""
    n_img, outs, oh, ow = y.shape
    size = outs * n_img * th * tw
    mf = m
    s = np.empty((8, size), dtype=m.dtype)
    for j in range(4):
        a0, a1, a2, a3, top, low = mf[j], mf[4 + j], mf[8 + j], mf[12 + j], s[j], s[4 + j]
        for i in range(size):
            top[i] = a0[i] + a1[i] + a2[i]
            low[i] = a1[i] - a2[i] - a3[i]
    yf = y.reshape(y.size)
    one, two = np.uint64(1), np.uint64(2)
    half = np.uint64(ow // 2)
    for a in range(2):
        s0, s1, s2, s3 = s[4 * a], s[4 * a + 1], s[4 * a + 2], s[4 * a + 3]
        for o in range(outs):
            b = bias[o] if has_bias else y.dtype.type(0)
            for n in range(n_img):
                for ti in range(th):
                    r = 2 * ti + a
                    if r >= oh:
                        continue
                    yb = np.uint64(((n * outs + o) * oh + r) * ow)
                    sb = np.uint64((o * n_img + n) * th * tw + ti * tw)
                    for tj in range(half):
                        q = sb + tj
                        yf[yb + two * tj] = s0[q] + s1[q] + s2[q] + b
                        yf[yb + two * tj + one] = s1[q] - s2[q] - s3[q] + b
                    if ow % 2:
                        q = sb + half
                        yf[yb + two * half] = s0[q] + s1[q] + s2[q] + b


@accel.jit
def _output_grad_tiles_compiled(dy, th, tw, dmt):
    """A dY A^T per 2x2 tile of dy (zero past odd edges), the adjoint of the output transform,
    laid out [16, tiles, O] (channel innermost) in dmt[16, n*th*tw*O (+ padding)]: the filter
    gradient's GEMMs (dU^T = V dM^T) then read both operands untransposed, where the [16, O,
    tiles] layout needed OpenBLAS's transposed-operand kernel, measured 1.7x slower (filter
    gradient 32x32x16x16 -> 64: 1.1-1.2x -> 0.8x PyTorch at one thread). Straight-line code per
    tile."""
    n_img, outs, oh, ow = dy.shape
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    th_u, tw_u, oh_u, ow_u, outs_u = np.uint64(th), np.uint64(tw), np.uint64(oh), np.uint64(ow), np.uint64(outs)
    plane = oh_u * ow_u
    df, dmf = dy.reshape(dy.size), dmt.reshape(dmt.size)
    ks = np.uint64(dmt.shape[1])
    zero = dy.dtype.type(0)
    for n in range(np.uint64(n_img)):
        for ti in range(th_u):
            r = two * ti
            below = r + one < oh_u
            for tj in range(tw_u):
                q = two * tj
                right = q + one < ow_u
                p = ((n * th_u + ti) * tw_u + tj) * outs_u
                at = n * outs_u * plane + r * ow_u + q
                for o in range(outs_u):
                    y00 = df[at]
                    y01 = df[at + one] if right else zero
                    y10 = df[at + ow_u] if below else zero
                    y11 = df[at + ow_u + one] if right and below else zero
                    a0, a1, b0, b1 = y00, y01, y00 + y10, y01 + y11
                    c0, c1, d0, d1 = y00 - y10, y01 - y11, -y10, -y11
                    e = p
                    dmf[e], dmf[e + ks], dmf[e + two * ks], dmf[e + three * ks] = a0, a0 + a1, a0 - a1, -a1
                    e += four * ks
                    dmf[e], dmf[e + ks], dmf[e + two * ks], dmf[e + three * ks] = b0, b0 + b1, b0 - b1, -b1
                    e += four * ks
                    dmf[e], dmf[e + ks], dmf[e + two * ks], dmf[e + three * ks] = c0, c0 + c1, c0 - c1, -c1
                    e += four * ks
                    dmf[e], dmf[e + ks], dmf[e + two * ks], dmf[e + three * ks] = d0, d0 + d1, d0 - d1, -d1
                    p += one
                    at += plane


# ---------------------------------------------------------------- the three convolutions
def conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, pads) -> np.ndarray:
    """3x3 stride-1 convolution of x [N, C, H, W] with w [O, C, 3, 3]; pads ((top, bottom),
    (left, right)), each >= 0."""
    (top, bottom), (left, right) = pads
    n, c, h, wd = x.shape
    o = w.shape[0]
    oh, ow = h + top + bottom - 2, wd + left + right - 2
    th, tw = _tiles(oh, ow)
    dtype = np.result_type(x, w)
    x = np.ascontiguousarray(x, dtype=dtype)
    u = filter_transform(w.astype(dtype, copy=False))
    bias_arr = np.zeros(1, dtype) if bias is None else np.ascontiguousarray(bias, dtype=dtype)
    y = np.empty((n, o, oh, ow), dtype=dtype)
    step, workers = _schedule(n, c, o, th * tw, x.itemsize)
    has_bias = bias is not None

    def run(blocks) -> None:
        stacks = _BlockStacks((c, o), step * th * tw, dtype)
        for start, stop in blocks:
            v_buf, v, m_buf, m = stacks((stop - start) * th * tw)
            _input_tiles_compiled(x[start:stop], top, left, th, tw, v_buf)
            np.matmul(u, v, out=m)
            _output_tiles_compiled(m_buf, th, tw, bias_arr, has_bias, y[start:stop])
    threads.run_blocks(run, n, step, workers)
    return y


def filter_grad(dout: np.ndarray, x: np.ndarray, pads) -> np.ndarray:
    """dW [O, C, 3, 3] of `conv2d`: sum over tiles of dM V^T per tile entry, then G^T dU G."""
    (top, _), (left, _) = pads
    n, c = x.shape[:2]
    o, oh, ow = dout.shape[1:]
    th, tw = _tiles(oh, ow)
    dtype = np.result_type(dout, x)
    x, dout = np.ascontiguousarray(x, dtype=dtype), np.ascontiguousarray(dout, dtype=dtype)
    step, workers = _schedule(n, c, o, th * tw, x.itemsize)

    def run(blocks) -> np.ndarray | None:
        du_t, part = PairwiseSum(), np.empty((16, c, o), dtype=dtype)   # blocks summed pairwise: a
        stacks = _BlockStacks((c, o), step * th * tw, dtype)             # block may be one image
        for start, stop in blocks:
            tiles = (stop - start) * th * tw
            v_buf, v, dm_buf, _ = stacks(tiles)
            _input_tiles_compiled(x[start:stop], top, left, th, tw, v_buf)
            _output_grad_tiles_compiled(dout[start:stop], th, tw, dm_buf)
            du_t.add(np.matmul(v, dm_buf[:, :tiles * o].reshape(16, tiles, o), out=part))
        return du_t.total()
    parts = [t for t in threads.run_blocks(run, n, step, workers) if t is not None]
    du_t = functools.reduce(np.add, parts) if parts else np.zeros((16, c, o), dtype=dtype)   # no images: 0
    return filter_grad_transform(np.ascontiguousarray(du_t.transpose(0, 2, 1)), dtype)


def flipped_pads(pads) -> list[tuple[int, int]] | None:
    """The paddings of the input gradient as a convolution of dOut (None when one is < 0)."""
    full = [(2 - lo, 2 - hi) for lo, hi in pads]
    return None if min(min(p) for p in full) < 0 else full


def input_grad(dout: np.ndarray, w: np.ndarray, pads) -> np.ndarray:
    """dX [N, C, H, W]: dOut convolved with the flipped filter [C, O, 3, 3] (paddings 2 - p)."""
    flipped = np.ascontiguousarray(w.swapaxes(0, 1)[:, :, ::-1, ::-1])
    return conv2d(dout, flipped, None, flipped_pads(pads))

