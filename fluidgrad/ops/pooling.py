"""Max and average pooling over 1, 2 or 3 spatial axes (channel-first).

`pool{n}d` (the Fluid op: `pool2d` is in saved programs) and `max_pool{n}d_with_index`,
which also returns the argmax of each window as a flat index into its input plane (PyTorch's
`return_mask`). The public max-pooling functions use the latter: the backward reads the
saved indices and scatters dOut in one pass (`max_pool_index_grad`, a compiled loop when
numba is installed) instead of searching the windows again. With numba, 2x2 stride-2 windows
(the usual downsampling) take one compiled pass forward too. Its transpose `max_pool_index_select` gathers at the same indices, so both
differentiate again. Windows are strided views of the padded input; a kernel loops over the
(few) window offsets, never over pixels. ceil_mode, dilations, exclusive averages
(count_include_pad=False), global and adaptive (PyTorch's window bounds) pooling are attributes.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import accel
from .cascade_sum import cascade_sum
from .geometry import Windows, adaptive_bounds, adaptive_mean_matrix, along_axes, per_axis
from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import float_only

POOL_ATTRS = {"pooling_type": "max", "ksize": [1, 1], "strides": [1, 1], "paddings": [0, 0],
              "global_pooling": False, "exclusive": True, "data_format": "NCHW", "ceil_mode": False,
              "dilations": [1, 1], "adaptive": False, "padding_algorithm": "EXPLICIT"}
_INDEX_KEYS = [k for k in POOL_ATTRS if k not in ("pooling_type", "exclusive")]
_LAYOUTS = {1: ("NCL", "NCW"), 2: ("NCHW",), 3: ("NCDHW",)}
_MANY_OFFSETS = 16   # above this window size, one copy + argmax beats a pass per offset


class Pooling:
    """How one pooling op reads its input: regular windows, or adaptive / global ones."""

    def __init__(self, spatial, ksize, strides, paddings, global_pooling=False, ceil_mode=False, dilations=1,
                 adaptive=False, padding_algorithm="EXPLICIT") -> None:
        nd = len(spatial)
        self.spatial = [int(s) for s in spatial]
        self.kind = "global" if global_pooling else ("adaptive" if adaptive else "windows")
        if self.kind == "adaptive":
            self.out = per_axis(ksize, nd, "output_size")
            if all(s >= 0 and o > 0 and s % o == 0 for s, o in zip(self.spatial, self.out)):   # regular after all
                kernel = [s // o for s, o in zip(self.spatial, self.out)]
                self.kind, self.windows = "windows", Windows(self.spatial, kernel, kernel, 0)
        elif self.kind == "global":
            self.out = [1] * nd
        else:
            self.windows = Windows(self.spatial, per_axis(ksize, nd, "ksize"), strides, paddings, dilations,
                                   padding_algorithm, ceil_mode)
            self.out = self.windows.out

    def plane_strides(self) -> list[int]:
        return [math.prod(self.spatial[i + 1:]) for i in range(len(self.spatial))]


def _pooling(x_shape, ksize, strides, paddings, global_pooling, ceil_mode, dilations, adaptive,
             padding_algorithm) -> Pooling:
    return _cached_pooling(tuple(x_shape[2:]), _frozen(ksize), _frozen(strides), _frozen(paddings),
                           bool(global_pooling), bool(ceil_mode), _frozen(dilations), bool(adaptive),
                           padding_algorithm)


def _frozen(value):
    return tuple(value) if isinstance(value, (list, tuple)) else value


@functools.lru_cache(maxsize=256)
def _cached_pooling(*args) -> Pooling:
    """Poolings are read-only once built: a training loop's few geometries are built once."""
    return Pooling(*args)


# ---------------------------------------------------------------- max with argmax
@accel.jit
def _max_pool_2x2_compiled(x, out, index):
    """2x2 windows, stride 2, no padding, all inside x: max and flat argmax (ties: the first) in
    one pass, straight-line per window with selects, not branches (6x NumPy's offset passes).
    Returns whether a NaN was read: NaN windows are left to the NumPy path, whose rule (the first
    NaN wins) would cost this loop its speed."""
    n_img, chans, h, w = x.shape
    oh, ow = out.shape[2], out.shape[3]
    xf, of, jf = x.reshape(x.size), out.reshape(out.size), index.reshape(index.size)
    one, two = np.uint64(1), np.uint64(2)
    wu, ow_u = np.uint64(w), np.uint64(ow)
    plane_in, plane_out = np.uint64(h * w), np.uint64(oh * ow)
    nan = False
    for p in range(np.uint64(n_img * chans)):
        for oi in range(np.uint64(oh)):
            top = two * oi * wu
            src, dst = p * plane_in + top, p * plane_out + oi * ow_u
            for oj in range(ow_u):
                q = two * oj
                a, b = xf[src + q], xf[src + q + one]
                c, d = xf[src + wu + q], xf[src + wu + q + one]
                nan |= (a != a) | (b != b) | (c != c) | (d != d)
                best, at = a, top + q
                best, at = (b, top + q + one) if b > best else (best, at)
                best, at = (c, top + wu + q) if c > best else (best, at)
                best, at = (d, top + wu + q + one) if d > best else (best, at)
                of[dst + oj] = best
                jf[dst + oj] = at
    return nan


def _is_2x2_stride_2_inside(geo: Windows) -> bool:
    return (geo.nd == 2 and geo.kernel == [2, 2] and geo.strides == [2, 2] and geo.dilations == [1, 1]
            and geo.pads == [(0, 0), (0, 0)] and all(2 * o <= s for o, s in zip(geo.out, geo.spatial)))


def _window_max(x: np.ndarray, geo: Windows, plane: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Max and flat argmax (into each input plane) of regular windows; ties go to the first real
    element (a window of -inf ties with its -inf padding: the index must not point there)."""
    best, index, base, offsets = _padded_window_max(x, geo, plane)
    if list(geo.padded) != list(geo.spatial) and (best == -np.inf).any():
        index = np.where(best == -np.inf, base + _first_real_offset(geo, offsets), index)
    return best, index


def _first_real_offset(geo: Windows, offsets: list[int]) -> np.ndarray:
    """Per output position [1, 1, *out], the first kernel offset (flat, in the plane) that reads
    the input, not its padding (PyTorch's argmax of an all -inf window)."""
    real = geo.pad(np.ones((1, 1) + tuple(geo.spatial), dtype=bool), False)
    first = np.full((1, 1) + tuple(geo.out), offsets[-1], dtype=np.int64)
    for offset, off in zip(list(geo.offsets())[::-1], offsets[::-1]):
        np.putmask(first, real[geo.offset_slice(offset)], off)
    return first


def _padded_window_max(x: np.ndarray, geo: Windows, plane: list[int]):
    """_window_max over the -inf padded input: (max, index, base, offsets); ties to the first."""
    xp = geo.pad(x, -np.inf)
    base = 0
    for i, (o, st, (lo, _)) in enumerate(zip(geo.out, geo.strides, geo.pads)):
        starts = (np.arange(o) * st - lo) * plane[i]
        base = np.add.outer(base, starts) if i else starts
    base = np.asarray(base, dtype=np.int64)
    offsets = [sum(k * d * p for k, d, p in zip(off, geo.dilations, plane)) for off in geo.offsets()]
    if len(offsets) > _MANY_OFFSETS:
        win = geo.view(xp)
        nd = geo.nd
        order = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
        flat = win.transpose(order).reshape(x.shape[:2] + tuple(geo.out) + (-1,))
        local = flat.argmax(axis=-1)
        best = np.take_along_axis(flat, local[..., None], axis=-1)[..., 0]
        return best, base + np.asarray(offsets, dtype=np.int64)[local], base, offsets
    views = [xp[geo.offset_slice(offset)] for offset in geo.offsets()]
    best = views[0].copy()
    for view in views[1:]:
        np.maximum(best, view, out=best)
    if np.isnan(best).any():   # NaN windows: the index must point at the NaN (rare: the slower search)
        return _first_max_search(views, base, offsets) + (base, offsets)
    # the first offset holding the maximum, found from the last offset back (ties: the first);
    # putmask with a scalar is 3x faster than copyto(where=) with a broadcast source
    index = np.full(best.shape, offsets[-1], dtype=np.int64)
    for view, off in zip(views[-2::-1], offsets[-2::-1]):
        np.putmask(index, view == best, off)
    index += base
    return best, index, base, offsets


def _first_max_search(views, base, offsets) -> tuple[np.ndarray, np.ndarray]:
    best = views[0].copy()
    index = np.empty(best.shape, dtype=np.int64)
    index[...] = base + offsets[0]
    for view, off in zip(views[1:], offsets[1:]):
        better = (view > best) | (np.isnan(view) & ~np.isnan(best))
        np.copyto(best, view, where=better)
        np.copyto(index, base + off, where=better)
    return best, index


def _adaptive_max(x: np.ndarray, pool: Pooling) -> tuple[np.ndarray, np.ndarray]:
    """Irregular windows: one reduction per output position (outputs are small)."""
    n, c = x.shape[:2]
    bounds = [adaptive_bounds(s, o) for s, o in zip(pool.spatial, pool.out)]
    out = np.empty((n, c) + tuple(pool.out), dtype=x.dtype)
    index = np.empty(out.shape, dtype=np.int64)
    for pos in np.ndindex(*pool.out):
        region = tuple(slice(b[0][i], b[1][i]) for b, i in zip(bounds, pos))
        block = x[(slice(None), slice(None)) + region]
        local = block.reshape(n, c, -1).argmax(axis=-1)
        flat = block.reshape(n, c, -1)
        out[(slice(None), slice(None)) + pos] = np.take_along_axis(flat, local[:, :, None], 2)[..., 0]
        coords = np.unravel_index(local, block.shape[2:])
        index[(slice(None), slice(None)) + pos] = np.ravel_multi_index(
            tuple(co + r.start for co, r in zip(coords, region)), pool.spatial)
    return out, index


def max_with_index(x: np.ndarray, pool: Pooling) -> tuple[np.ndarray, np.ndarray]:
    if pool.kind == "global":
        flat = x.reshape(x.shape[:2] + (-1,))
        index = flat.argmax(axis=-1)[..., None]
        shape = x.shape[:2] + (1,) * (x.ndim - 2)
        return np.take_along_axis(flat, index, -1).reshape(shape), index.reshape(shape)
    if pool.kind == "adaptive":
        return _adaptive_max(x, pool)
    if _is_2x2_stride_2_inside(pool.windows) and accel.enabled() and accel.takes(x):
        out = np.empty(x.shape[:2] + tuple(pool.out), dtype=x.dtype)
        index = np.empty(out.shape, dtype=np.int64)
        if not _max_pool_2x2_compiled(np.ascontiguousarray(x), out, index):
            return out, index
    return _window_max(x, pool.windows, pool.plane_strides())


def max_pool_with_index_kernel(x, ksize=(1, 1), strides=(1, 1), paddings=(0, 0), global_pooling=False,
                               data_format="NCHW", ceil_mode=False, dilations=(1, 1), adaptive=False,
                               padding_algorithm="EXPLICIT"):
    pool = _pooling(x.shape, ksize, strides, paddings, global_pooling, ceil_mode, dilations, adaptive,
                    padding_algorithm)
    return max_with_index(x, pool)


@functools.lru_cache(maxsize=8)
def _plane_starts(planes: int, per_plane: int, plane: int) -> np.ndarray:
    """Each output's plane offset, flat and read-only: a flat add (2.5x faster than adding a
    broadcast column) turns the saved plane indices into indices of the whole input."""
    starts = np.repeat(np.arange(planes, dtype=np.int64) * plane, per_plane)
    starts.flags.writeable = False
    return starts


@accel.jit
def _index_scatter_compiled(mask, dout, planes, plane, dx):
    """dx[p * plane + mask[i]] += dout[i] over the outputs i of each plane p: one pass. Returns
    False at the first index outside its plane (numba does not check bounds). Unsigned indices:
    numba's wraparound of signed ones costs 2x here."""
    per_plane, size = np.uint64(mask.size // max(planes, 1)), np.uint64(plane)
    for p in range(np.uint64(planes)):
        start, into = p * per_plane, p * size
        for i in range(start, start + per_plane):
            at = np.uint64(mask[i])        # a negative index wraps to a huge one
            if at >= size:
                return False
            dx[into + at] += dout[i]
    return True


def max_pool_index_grad_kernel(mask, dout, x, overlapping=True):
    """dOut added at the saved argmax of each window (X gives only the shape). Compiled: one
    pass adding into zeros (measured 1.6-1.9x faster than the NumPy scatter on the benchmark's
    shapes; a compiled forward was not faster than NumPy's passes per window offset). NumPy:
    disjoint windows have distinct argmaxes, one scatter assignment; overlapping ones may share
    a maximum, one bincount sums them."""
    n, c = x.shape[:2]
    plane = math.prod(x.shape[2:])
    if accel.enabled() and accel.takes(dout) and mask.dtype.kind == "i" and mask.size == dout.size:
        dx = np.zeros(n * c * plane, dtype=dout.dtype)
        if not _index_scatter_compiled(np.ascontiguousarray(mask).reshape(-1),
                                       np.ascontiguousarray(dout).reshape(-1), n * c, plane, dx):
            raise ValueError(f"max_pool_index_grad: Mask {list(mask.shape)} holds an index outside the input "
                             f"plane of {plane} elements (X {list(x.shape)})")
        return dx.reshape(x.shape)
    flat = np.add(mask.reshape(-1), _plane_starts(n * c, mask.size // max(n * c, 1), plane))
    if overlapping:
        dx = np.bincount(flat.ravel(), weights=dout.ravel(), minlength=n * c * plane)
        return dx.astype(dout.dtype, copy=False).reshape(x.shape)
    dx = np.zeros(n * c * plane, dtype=dout.dtype)
    dx[flat.ravel()] = dout.ravel()
    return dx.reshape(x.shape)


def windows_overlap(ksize, strides, dilations, global_pooling: bool, adaptive: bool, nd: int) -> bool:
    """Whether two windows can share an element (then their maxima may coincide)."""
    if global_pooling:
        return False
    if adaptive:
        return True
    return any(s < d * (k - 1) + 1 for k, s, d in zip(per_axis(ksize, nd, "ksize"), per_axis(strides, nd, "strides"),
                                                      per_axis(dilations, nd, "dilations")))


def max_pool_index_select_kernel(mask, y):
    """Y read at the saved argmax of each window: max_pool_index_grad's transpose."""
    n, c = y.shape[:2]
    picked = np.take_along_axis(y.reshape(n, c, -1), mask.reshape(n, c, -1), axis=2)
    return picked.reshape(mask.shape)


# ---------------------------------------------------------------- averages
def _counts(geo: Windows, exclusive: bool, dtype) -> np.ndarray:
    """How many elements each window averages: real ones (exclusive), or those inside the padding."""
    per_axis_counts = []
    for size, k, (lo, hi), st, d, o in zip(geo.spatial, geo.kernel, geo.pads, geo.strides, geo.dilations, geo.out):
        positions = (np.arange(o) * st - lo)[:, None] + np.arange(k) * d
        low, high = (0, size) if exclusive else (-lo, size + hi)
        per_axis_counts.append(((positions >= low) & (positions < high)).sum(axis=1))
    total = per_axis_counts[0]
    for counts in per_axis_counts[1:]:
        total = np.multiply.outer(total, counts)
    return np.maximum(total, 1).astype(dtype)


def _tiles(geo: Windows) -> tuple[int, ...] | None:
    """For windows that tile the input exactly (stride = kernel, no padding or dilation: the
    regular case of adaptive pooling) with more than _MANY_OFFSETS elements each, the input's
    shape split into [N, C, o1, k1, o2, k2, ...]; else None. A pass per window offset adds one
    offset after another: a 224x224 window (adaptive_avg_pool2d(x, 1)) took 50176 passes, and its
    float32 sum drifted by ~1e-4 (one chain of 50176 additions)."""
    if (geo.kernel_size <= _MANY_OFFSETS or geo.strides != geo.kernel or any(d != 1 for d in geo.dilations)
            or any(p != (0, 0) for p in geo.pads) or [o * k for o, k in zip(geo.out, geo.kernel)] != geo.spatial):
        return None
    return tuple(v for o, k in zip(geo.out, geo.kernel) for v in (o, k))


def _tiled_mean(x: np.ndarray, tiles: tuple[int, ...]) -> np.ndarray:
    """The mean of each tile: one sum over the kernel axes of a reshaped view (float32 through
    cascade_sum: an error like PyTorch's, ~log2 of the window size; float16 / bfloat16 summed
    and divided in float32)."""
    split = x.reshape(x.shape[:2] + tiles)
    axes = tuple(range(3, split.ndim, 2))
    total = cascade_sum(split, axes, in_float32=True)
    if total is None:
        total = split.sum(axis=axes)
    total /= total.dtype.type(math.prod(tiles[1::2]))
    return total.astype(x.dtype, copy=False)


def _tiled_mean_grad(dout: np.ndarray, x_shape, tiles: tuple[int, ...]) -> np.ndarray:
    """dOut / window size spread over each tile: one broadcasting copy."""
    share = dout / dout.dtype.type(math.prod(tiles[1::2]))
    spread = share.reshape(share.shape[:2] + tuple(v for o in tiles[::2] for v in (o, 1)))
    return np.ascontiguousarray(np.broadcast_to(spread, tuple(x_shape[:2]) + tiles)).reshape(x_shape)


def _adaptive_matrices(pool: Pooling) -> list[np.ndarray]:
    return [adaptive_mean_matrix(s, o) for s, o in zip(pool.spatial, pool.out)]


def avg_pool(x: np.ndarray, pool: Pooling, exclusive: bool) -> np.ndarray:
    if pool.kind == "global":
        axes = tuple(range(2, x.ndim))
        return x.mean(axis=axes, keepdims=True, dtype=x.dtype)
    if pool.kind == "adaptive":
        return along_axes(x, _adaptive_matrices(pool))
    geo = pool.windows
    tiles = _tiles(geo)
    if tiles is not None:
        return _tiled_mean(x, tiles)
    xp = geo.pad(x)
    total = None
    for offset in geo.offsets():
        view = xp[geo.offset_slice(offset)]
        total = view.copy() if total is None else np.add(total, view, out=total)
    total /= _counts(geo, exclusive, x.dtype)
    return total


def avg_pool_grad(dout: np.ndarray, x_shape, pool: Pooling, exclusive: bool) -> np.ndarray:
    if pool.kind == "global":
        return np.broadcast_to(dout / dout.dtype.type(math.prod(x_shape[2:])), x_shape).copy()
    if pool.kind == "adaptive":
        return along_axes(dout, [m.T for m in _adaptive_matrices(pool)])
    geo = pool.windows
    tiles = _tiles(geo)
    if tiles is not None:
        return _tiled_mean_grad(dout, x_shape, tiles)
    dxp = np.zeros(tuple(x_shape[:2]) + tuple(geo.padded), dtype=dout.dtype)
    share = dout / _counts(geo, exclusive, dout.dtype)
    for offset in geo.offsets():
        dxp[geo.offset_slice(offset)] += share
    return geo.crop(dxp)


def pool_kernel(x, pooling_type="max", ksize=(1, 1), strides=(1, 1), paddings=(0, 0), global_pooling=False,
                exclusive=True, data_format="NCHW", ceil_mode=False, dilations=(1, 1), adaptive=False,
                padding_algorithm="EXPLICIT"):
    pool = _pooling(x.shape, ksize, strides, paddings, global_pooling, ceil_mode, dilations, adaptive,
                    padding_algorithm)
    if pooling_type == "max":
        return max_with_index(x, pool)[0]
    return avg_pool(x, pool, exclusive)


def pool_grad_kernel(x, dout, pooling_type="max", ksize=(1, 1), strides=(1, 1), paddings=(0, 0),
                     global_pooling=False, exclusive=True, data_format="NCHW", ceil_mode=False, dilations=(1, 1),
                     adaptive=False, padding_algorithm="EXPLICIT"):
    """dX of pool (X locates the maxima): to each window's first maximum, or spread evenly."""
    pool = _pooling(x.shape, ksize, strides, paddings, global_pooling, ceil_mode, dilations, adaptive,
                    padding_algorithm)
    if pooling_type == "max":
        overlapping = pool.kind == "adaptive" or (pool.kind == "windows" and windows_overlap(
            pool.windows.kernel, pool.windows.strides, pool.windows.dilations, False, False, len(pool.spatial)))
        return max_pool_index_grad_kernel(max_with_index(x, pool)[1], dout, x, overlapping)
    return avg_pool_grad(dout, x.shape, pool, exclusive)


def max_pool_select_kernel(x, y, ksize=(1, 1), strides=(1, 1), paddings=(0, 0), global_pooling=False,
                           data_format="NCHW", ceil_mode=False, dilations=(1, 1), adaptive=False,
                           padding_algorithm="EXPLICIT"):
    """Y (shaped like X) read at each max-pool window's argmax of X: the transpose of pool_grad."""
    pool = _pooling(x.shape, ksize, strides, paddings, global_pooling, ceil_mode, dilations, adaptive,
                    padding_algorithm)
    return max_pool_index_select_kernel(max_with_index(x, pool)[1], y)


# ---------------------------------------------------------------- shape rules
def _pool_geometry(ctx, nd: int, slot: str = "X") -> tuple[list[int], Pooling]:
    float_only(ctx, slot)
    x = list(ctx.shape(slot))
    if len(x) != nd + 2:
        raise ctx.shape_error(f"expects a {nd + 2}-D channel-first input, got {ctx.describe(slot)}")
    if ctx.attr("data_format") not in _LAYOUTS[nd]:
        raise ctx.shape_error(f"only data_format {_LAYOUTS[nd][0]!r} is supported, got {ctx.attr('data_format')!r}")
    if "pooling_type" in ctx.attrs and ctx.attr("pooling_type") not in ("max", "avg"):
        raise ctx.shape_error(f"pooling_type must be 'max' or 'avg', got {ctx.attr('pooling_type')!r}")
    global_or_adaptive = ctx.attr("global_pooling") or ctx.attr("adaptive")
    try:
        if not global_or_adaptive and (min(per_axis(ctx.attr("strides"), nd, "strides")) < 1 or
                                       min(per_axis(ctx.attr("ksize"), nd, "ksize")) < 1 or
                                       min(per_axis(ctx.attr("dilations"), nd, "dilations")) < 1):
            raise ValueError(f"ksize {ctx.attr('ksize')}, strides {ctx.attr('strides')} and dilations "
                             f"{ctx.attr('dilations')} must be >= 1")
        pool = Pooling(x[2:], ctx.attr("ksize"), ctx.attr("strides"), ctx.attr("paddings"),
                       ctx.attr("global_pooling"), ctx.attr("ceil_mode"), ctx.attr("dilations"),
                       ctx.attr("adaptive"), ctx.attr("padding_algorithm"))
    except ValueError as err:
        raise ctx.shape_error(str(err)) from None
    if pool.kind == "windows" and not ctx.attr("adaptive"):
        geo = pool.windows
        reach = [d * (k - 1) + 1 for k, d in zip(geo.kernel, geo.dilations)]
        if any(lo >= r or hi >= r for (lo, hi), r in zip(geo.pads, reach)):
            raise ctx.shape_error(f"paddings {ctx.attr('paddings')} must be smaller than the window {reach}")
        if any(s >= 0 and o < 1 for s, o in zip(x[2:], pool.out)):
            raise ctx.shape_error(f"window {geo.kernel} does not fit into {ctx.describe(slot)}")
    if pool.kind == "adaptive" and any(o < 1 for o in pool.out):
        raise ctx.shape_error(f"adaptive output size {ctx.attr('ksize')} must be positive")
    return x, pool


def _pool_infer(nd: int):
    def infer(ctx):
        x, pool = _pool_geometry(ctx, nd)
        ctx.set_output("Out", x[:2] + pool.out, ctx.dtype("X"))
    return infer


def _pool_grad_infer(nd: int):
    def infer(ctx):
        x, pool = _pool_geometry(ctx, nd)
        if list(ctx.shape("DOut"))[2:] != pool.out and all(o >= 0 for o in pool.out):
            raise ctx.shape_error(f"{ctx.describe('DOut')} must have the pooled shape {x[:2] + pool.out}")
        ctx.set_output("Out", x, ctx.dtype("DOut"))
    return infer


def _select_infer(nd: int):
    def infer(ctx):
        x, pool = _pool_geometry(ctx, nd)
        if list(ctx.shape("Y")) != x:
            raise ctx.shape_error(f"{ctx.describe('Y')} must have the shape of {ctx.describe('X')}")
        ctx.set_output("Out", x[:2] + pool.out, ctx.dtype("Y"))
    return infer


def _with_index_infer(nd: int):
    def infer(ctx):
        x, pool = _pool_geometry(ctx, nd)
        ctx.set_output("Out", x[:2] + pool.out, ctx.dtype("X"))
        ctx.set_output("Mask", x[:2] + pool.out, "int64")
    return infer


def _index_grad_infer(ctx):
    float_only(ctx, "DOut", "X")
    if not ctx.dtype("Mask").startswith("int"):
        raise ctx.dtype_error(f"{ctx.describe('Mask')} must hold integer indices")
    if list(ctx.shape("Mask")) != list(ctx.shape("DOut")):
        raise ctx.shape_error(f"{ctx.describe('Mask')} and {ctx.describe('DOut')} must have one shape")
    if list(ctx.shape("X"))[:2] != list(ctx.shape("DOut"))[:2]:
        raise ctx.shape_error(f"{ctx.describe('X')} and {ctx.describe('DOut')} must share N and C")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("DOut"))


def _index_select_infer(ctx):
    float_only(ctx, "Y")
    if not ctx.dtype("Mask").startswith("int"):
        raise ctx.dtype_error(f"{ctx.describe('Mask')} must hold integer indices")
    if list(ctx.shape("Y"))[:2] != list(ctx.shape("Mask"))[:2]:
        raise ctx.shape_error(f"{ctx.describe('Y')} and {ctx.describe('Mask')} must share N and C")
    ctx.set_output("Out", ctx.shape("Mask"), ctx.dtype("Y"))


# ---------------------------------------------------------------- gradients
def _attrs(g, keys) -> dict:
    return {k: _attr(g, k, POOL_ATTRS[k]) for k in keys}


def _attr(g, name: str, default):
    """An attribute of the forward op; programs saved before it existed lack it."""
    try:
        return g.attr(name)
    except KeyError:
        return default


def _pool_grad(nd: int):
    def grad(g: GradBuilder) -> None:
        g.set_input_grad("X", g.op(f"pool{nd}d_grad", {"X": g.input("X"), "DOut": g.output_grad("Out")},
                                   **_attrs(g, POOL_ATTRS)))
    return grad


def _pool_grad_grad(nd: int):
    """pool_grad is linear in DOut; its transpose is avg pooling, or a gather at the argmax."""
    def grad(g: GradBuilder) -> None:
        cot = g.output_grad("Out")
        if g.attr("pooling_type") == "avg":
            dd = g.op(f"pool{nd}d", {"X": cot}, **_attrs(g, POOL_ATTRS))
        else:
            _, mask = g.op(f"max_pool{nd}d_with_index", {"X": g.input("X")}, **_attrs(g, _INDEX_KEYS))
            dd = g.op("max_pool_index_select", {"Mask": mask, "Y": cot})
        g.set_input_grad("DOut", dd)
    return grad


def _with_index_grad(nd: int):
    def grad(g: GradBuilder) -> None:
        overlapping = windows_overlap(_attr(g, "ksize", [1] * nd), _attr(g, "strides", [1] * nd),
                                      _attr(g, "dilations", [1] * nd), _attr(g, "global_pooling", False),
                                      _attr(g, "adaptive", False), nd)
        g.set_input_grad("X", g.op("max_pool_index_grad", {"Mask": g.output("Mask"), "DOut": g.output_grad("Out"),
                                                           "X": g.input_like("X")}, overlapping=overlapping))
    return grad


def _index_grad_grad(g: GradBuilder) -> None:
    g.set_input_grad("DOut", g.op("max_pool_index_select", {"Mask": g.input("Mask"), "Y": g.output_grad("Out")}))


def _index_select_grad(g: GradBuilder) -> None:
    g.set_input_grad("Y", g.op("max_pool_index_grad", {"Mask": g.input("Mask"), "DOut": g.output_grad("Out"),
                                                       "X": g.input_like("Y")}))


def _select_grad(g: GradBuilder) -> None:
    g.set_input_grad("Y", g.op("pool2d_grad", {"X": g.input("X"), "DOut": g.output_grad("Out")},
                               pooling_type="max", **_attrs(g, _INDEX_KEYS)))


def _register(nd: int) -> None:
    attrs = {k: (v[:1] * nd if isinstance(v, list) and k != "paddings" else v) for k, v in POOL_ATTRS.items()}
    attrs["paddings"] = [0] * nd
    attrs["data_format"] = _LAYOUTS[nd][0]
    register_op(f"pool{nd}d", inputs="X", outputs="Out", attrs=dict(attrs), kernel=pool_kernel,
                infer=_pool_infer(nd), grad=_pool_grad(nd),
                doc=f"{nd}-D max or average pooling (channel-first); `exclusive` averages only real elements; "
                    f"ceil_mode, dilations, global_pooling, adaptive (ksize is then the output size).")
    register_op(f"pool{nd}d_grad", inputs="X DOut", outputs="Out", attrs=dict(attrs), kernel=pool_grad_kernel,
                infer=_pool_grad_infer(nd), grad=_pool_grad_grad(nd),
                doc=f"The gradient of pool{nd}d with respect to X (X locates the maxima).")
    index_attrs = {k: attrs[k] for k in _INDEX_KEYS}
    register_op(f"max_pool{nd}d_with_index", inputs="X", outputs="Out Mask", attrs=index_attrs,
                kernel=max_pool_with_index_kernel, infer=_with_index_infer(nd), grad=_with_index_grad(nd),
                doc=f"{nd}-D max pooling that also returns each window's argmax as a flat index into its "
                    f"input plane (PyTorch's return_mask); the backward scatters at these indices.")


for _nd in (1, 2, 3):
    _register(_nd)

register_op("max_pool_index_grad", inputs="Mask DOut X", outputs="Out", attrs={"overlapping": True},
            kernel=max_pool_index_grad_kernel, infer=_index_grad_infer, grad=_index_grad_grad,
            doc="DOut added into an X-shaped zero array at the plane indices Mask (max pooling's backward); "
                "overlapping=False promises distinct indices (disjoint windows): a plain scatter.")
register_op("max_pool_index_select", inputs="Mask Y", outputs="Out", kernel=max_pool_index_select_kernel,
            infer=_index_select_infer, grad=_index_select_grad,
            doc="Y read at the plane indices Mask: the transpose of max_pool_index_grad.")
register_op("max_pool2d_select", inputs="X Y", outputs="Out", attrs={k: POOL_ATTRS[k] for k in _INDEX_KEYS},
            kernel=max_pool_select_kernel, infer=_select_infer(2), grad=_select_grad,
            doc="Y read at the argmax of each max-pool window of X (kept for saved programs: pool2d_grad's "
                "transpose).")
