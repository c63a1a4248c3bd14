"""The discrete Fourier transforms (NumPy's pocketfft), as Paddle's three ops: `fft_c2c`
(complex to complex), `fft_r2c` (real to complex, `onesided`: the n // 2 + 1 bins a real
signal determines) and `fft_c2r` (such half spectra back to a real signal of `last_dim_size`),
each over `axes`, in the direction `forward` (exp(-2 pi i jk / n)) or backward, scaled by `norm`
("backward": 1 forward and 1/n back, "ortho": 1/sqrt(n) both ways, "forward": 1/n forward).
`fft_resize` crops or zero-pads one axis (the `n` / `s` arguments) and `fft_hermitian_weight`
doubles the bins of a half spectrum that stand for two bins of the full one.

Each gradient is the adjoint transform (PyTorch's fft_*_backward): c2c's is c2c the other way
with the norm swapped; r2c's is the real part of that c2c of the zero-padded half spectrum;
c2r's is r2c the other way, its doubled bins weighted 2. All are these ops again, so they
differentiate again."""
from __future__ import annotations

import numpy as np

from ..framework.dtypes import COMPLEX_OF, REAL_OF
from .complex import complex_only, real_only
from .grad_builder import GradBuilder
from .registry import register_op

SWAPPED_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_ATTRS = {"axes": [-1], "norm": "backward", "forward": True}


def _check_axes(ctx, shape) -> list[int]:
    axes, rank = list(ctx.attr("axes")), len(shape)
    if not axes or len(set(axes)) != len(axes) or any(not 0 <= a < rank for a in axes):
        raise ctx.shape_error(f"axes {axes} must be distinct axes of {ctx.describe('X')}, non-negative")
    if ctx.attr("norm") not in SWAPPED_NORM:
        raise ctx.shape_error(f"norm must be 'backward', 'ortho' or 'forward', got {ctx.attr('norm')!r}")
    return axes


def _c2c_infer(ctx):
    dtype = complex_only(ctx)
    _check_axes(ctx, ctx.shape("X"))
    ctx.set_output("Out", ctx.shape("X"), dtype)


def _c2c_kernel(x, axes, norm, forward):
    transform = np.fft.fftn if forward else np.fft.ifftn
    return transform(x, axes=axes, norm=norm).astype(x.dtype, copy=False)


def _c2c_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("fft_c2c", {"X": g.output_grad("Out")}, axes=g.attr("axes"),
                               norm=SWAPPED_NORM[g.attr("norm")], forward=not g.attr("forward")))


def _r2c_infer(ctx):
    dtype = real_only(ctx)
    shape = list(ctx.shape("X"))
    last = _check_axes(ctx, shape)[-1]
    if ctx.attr("onesided") and shape[last] >= 0:
        shape[last] = shape[last] // 2 + 1
    ctx.set_output("Out", shape, COMPLEX_OF[dtype])


def _r2c_kernel(x, axes, norm, forward, onesided):
    """The forward transform; backward is its conjugate with the swapped norm (x is real)."""
    transform = np.fft.rfftn if onesided else np.fft.fftn
    out = transform(x, axes=axes, norm=norm if forward else SWAPPED_NORM[norm])
    return (out if forward else np.conj(out)).astype(COMPLEX_OF[x.dtype.name], copy=False)


def _r2c_grad(g: GradBuilder) -> None:
    dout, axes = g.output_grad("Out"), g.attr("axes")
    if g.attr("onesided"):
        size = g.shape(g.input_like("X"))[axes[-1]]
        if size < 0:
            raise ValueError(f"op fft_r2c: its gradient needs the size of axis {axes[-1]} of X, unknown "
                             f"(-1) in shape {list(g.shape(g.input_like('X')))}")
        dout = g.op("fft_resize", {"X": dout}, axis=axes[-1], size=size)
    full = g.op("fft_c2c", {"X": dout}, axes=axes, norm=SWAPPED_NORM[g.attr("norm")], forward=not g.attr("forward"))
    g.set_input_grad("X", g.op("real", {"X": full}))


def _c2r_infer(ctx):
    dtype = complex_only(ctx)
    shape = list(ctx.shape("X"))
    last, size = _check_axes(ctx, shape)[-1], ctx.attr("last_dim_size")
    if size < 1 or (shape[last] >= 0 and shape[last] != size // 2 + 1):
        raise ctx.shape_error(f"a real signal of last_dim_size={size} along axis {last} has {size // 2 + 1} "
                              f"bins (size // 2 + 1), got {ctx.describe('X')}")
    shape[last] = size
    ctx.set_output("Out", shape, REAL_OF[dtype])


def _c2r_kernel(x, axes, norm, forward, last_dim_size):
    """The backward transform of a Hermitian half spectrum; forward is that of its conjugate
    with the swapped norm (NumPy's hfft)."""
    if forward:
        x, norm = np.conj(x), SWAPPED_NORM[norm]
    sizes = [x.shape[a] for a in axes[:-1]] + [last_dim_size]
    return np.fft.irfftn(x, s=sizes, axes=axes, norm=norm).astype(REAL_OF[x.dtype.name], copy=False)


def _c2r_grad(g: GradBuilder) -> None:
    axes, size = g.attr("axes"), g.attr("last_dim_size")
    half = g.op("fft_r2c", {"X": g.output_grad("Out")}, axes=axes, norm=SWAPPED_NORM[g.attr("norm")],
                forward=not g.attr("forward"), onesided=True)
    g.set_input_grad("X", g.op("fft_hermitian_weight", {"X": half}, axis=axes[-1], size=size))


def _one_axis(ctx) -> int:
    shape, axis = ctx.shape("X"), ctx.attr("axis")
    if not 0 <= axis < len(shape):
        raise ctx.shape_error(f"axis {axis} must be a non-negative axis of {ctx.describe('X')}")
    if ctx.attr("size") < 1:
        raise ctx.shape_error(f"size must be >= 1, got {ctx.attr('size')}")
    return axis


def _resize_infer(ctx):
    shape = list(ctx.shape("X"))
    shape[_one_axis(ctx)] = ctx.attr("size")
    ctx.set_output("Out", shape, ctx.dtype("X"))


def _resize_kernel(x, axis, size):
    if size <= x.shape[axis]:
        return np.ascontiguousarray(x[(slice(None),) * axis + (slice(0, size),)])
    padding = [(0, 0)] * x.ndim
    padding[axis] = (0, size - x.shape[axis])
    return np.pad(x, padding)


def _resize_grad(g: GradBuilder) -> None:
    axis = g.attr("axis")
    size = g.shape(g.input_like("X"))[axis]
    if size < 0:
        raise ValueError(f"op fft_resize: its gradient needs the size of axis {axis} of X, unknown (-1)")
    g.set_input_grad("X", g.op("fft_resize", {"X": g.output_grad("Out")}, axis=axis, size=size))


def _weight_infer(ctx):
    shape, axis = ctx.shape("X"), _one_axis(ctx)
    if shape[axis] >= 0 and shape[axis] != ctx.attr("size") // 2 + 1:
        raise ctx.shape_error(f"a half spectrum of size={ctx.attr('size')} has {ctx.attr('size') // 2 + 1} bins "
                              f"along axis {axis}, got {ctx.describe('X')}")
    ctx.set_output("Out", shape, ctx.dtype("X"))


def _weight_kernel(x, axis, size):
    """Bins 1 .. size - size // 2 - 1 stand for themselves and their mirror images: times 2."""
    out = x.copy()
    out[(slice(None),) * axis + (slice(1, size - size // 2),)] *= 2
    return out


def _weight_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("fft_hermitian_weight", {"X": g.output_grad("Out")}, axis=g.attr("axis"),
                               size=g.attr("size")))


register_op("fft_c2c", inputs="X", outputs="Out", attrs=dict(_ATTRS), kernel=_c2c_kernel, infer=_c2c_infer,
            grad=_c2c_grad, broadcasts=False, doc="The complex DFT over axes (paddle's fft_c2c).")
register_op("fft_r2c", inputs="X", outputs="Out", attrs={**_ATTRS, "onesided": True}, kernel=_r2c_kernel,
            infer=_r2c_infer, grad=_r2c_grad, broadcasts=False,
            doc="The DFT of a real signal over axes; onesided: the last axis' n // 2 + 1 bins (paddle's fft_r2c).")
register_op("fft_c2r", inputs="X", outputs="Out", attrs={**_ATTRS, "forward": False, "last_dim_size": 1},
            kernel=_c2r_kernel, infer=_c2r_infer, grad=_c2r_grad, broadcasts=False,
            doc="The real signal of Hermitian half spectra over axes (paddle's fft_c2r).")
register_op("fft_resize", inputs="X", outputs="Out", attrs={"axis": 0, "size": 1}, kernel=_resize_kernel,
            infer=_resize_infer, grad=_resize_grad, broadcasts=False,
            doc="X cropped or zero-padded to `size` along `axis` (the n / s of the fft functions).")
register_op("fft_hermitian_weight", inputs="X", outputs="Out", attrs={"axis": 0, "size": 1}, kernel=_weight_kernel,
            infer=_weight_infer, grad=_weight_grad, broadcasts=False,
            doc="A half spectrum with the bins that stand for two full-spectrum bins doubled (c2r's gradient).")
