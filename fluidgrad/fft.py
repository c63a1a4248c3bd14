"""fluidgrad.fft: the discrete Fourier transforms with the names and arguments of paddle.fft and
torch.fft (`axis` / `axes` or torch's `dim`, `n` / `s`, `norm` = "backward", "ortho" or
"forward"), differentiable in both modes, on the ops of ops/fft.py.

Real inputs give complex64 / complex128 outputs (float32 / float64 in); integers are taken as
the default float. `rfft*` keep the n // 2 + 1 bins a real signal determines, `irfft*` take
them back, `hfft` / `ihfft` are the transforms of Hermitian signals."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .complex_math import complex as _complex
from .complex_math import is_complex
from .dispatch import apply_op
from .eager import to_tensor
from .framework.dtypes import get_default_dtype
from .functions import cast, zeros_like
from .ops.fft import SWAPPED_NORM
from .tensor.manipulation import roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


# ---------------------------------------------------------------- arguments
def _norm(caller: str, norm: str | None) -> str:
    norm = "backward" if norm is None else norm
    if norm not in SWAPPED_NORM:
        raise ValueError(f"{caller}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return norm


def _axes(caller: str, x: Any, s: Sequence[int] | None, axes: Sequence[int] | None) -> list[int]:
    """The transformed axes, non-negative: `axes`, else the last len(s), else all."""
    rank = len(x.shape)
    if axes is None:
        axes = range(rank - len(s), rank) if s is not None else range(rank)
    axes = [int(a) for a in ([axes] if isinstance(axes, int) else axes)]
    if any(not -rank <= a < rank for a in axes) or rank == 0:
        raise ValueError(f"{caller}: axes {axes} out of range for x of shape {list(x.shape)}")
    axes = [a % rank for a in axes]
    if len(set(axes)) != len(axes) or not axes:
        raise ValueError(f"{caller}: axes {axes} must be distinct and not empty")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{caller}: s {list(s)} must give one size per axis {axes}")
    return axes


def _resized(caller: str, x: Any, axes: Sequence[int], sizes: Sequence[int | None]) -> Any:
    """x cropped or zero-padded to `sizes` along `axes` (None: as it is)."""
    for axis, size in zip(axes, sizes):
        if size is None or int(size) == x.shape[axis]:
            continue
        if int(size) < 1:
            raise ValueError(f"{caller}: the signal size must be >= 1, got {size} for axis {axis}")
        x = apply_op("fft_resize", {"X": x}, {"axis": axis, "size": int(size)})
    return x


def _floating(caller: str, x: Any) -> Any:
    """A real x as float32 / float64 (integers and bool as the default float); complex refused."""
    dtype = str(x.dtype)
    if is_complex(x):
        raise TypeError(f"{caller}: expects a real input, got {dtype} (shape {list(x.shape)})")
    if dtype in ("float32", "float64"):
        return x
    if dtype.startswith(("float", "bfloat")):
        raise TypeError(f"{caller}: computes in float32 or float64, got {dtype}: cast x first")
    return cast(x, get_default_dtype())


def _complex_input(caller: str, x: Any) -> Any:
    return x if is_complex(x) else (lambda r: _complex(r, zeros_like(r)))(_floating(caller, x))


def _pick(caller: str, dim: Any, axis: Any, default: Any) -> Any:
    if dim is not None and axis is not None and axis != default:
        raise TypeError(f"{caller}: give axis (paddle) or dim (torch), not both")
    return dim if dim is not None else (default if axis is None else axis)


# ---------------------------------------------------------------- n-dimensional transforms
def _c2c(caller: str, x: Any, s: Any, axes: Any, norm: Any, forward: bool) -> Any:
    axes, norm = _axes(caller, x, s, axes), _norm(caller, norm)
    x = _resized(caller, x, axes, s or [None] * len(axes))
    attrs = {"axes": axes, "norm": norm, "forward": forward}
    if is_complex(x):
        return apply_op("fft_c2c", {"X": x}, attrs)
    return apply_op("fft_r2c", {"X": _floating(caller, x)}, {**attrs, "onesided": False})


def fftn(x: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = "backward",
         name: str | None = None, *, dim: Sequence[int] | None = None) -> Any:
    """The DFT over `axes` (all by default), x cropped / zero-padded to `s` first."""
    return _c2c("fftn", x, s, _pick("fftn", dim, axes, None), norm, True)


def ifftn(x: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = "backward",
          name: str | None = None, *, dim: Sequence[int] | None = None) -> Any:
    """The inverse DFT over `axes` (all by default)."""
    return _c2c("ifftn", x, s, _pick("ifftn", dim, axes, None), norm, False)


def _r2c(caller: str, x: Any, s: Any, axes: Any, norm: Any, forward: bool) -> Any:
    x = _floating(caller, x)
    axes, norm = _axes(caller, x, s, axes), _norm(caller, norm)
    x = _resized(caller, x, axes, s or [None] * len(axes))
    return apply_op("fft_r2c", {"X": x}, {"axes": axes, "norm": norm, "forward": forward, "onesided": True})


def rfftn(x: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = "backward",
          name: str | None = None, *, dim: Sequence[int] | None = None) -> Any:
    """The DFT of a real x over `axes`, the last of them halved to n // 2 + 1 bins."""
    return _r2c("rfftn", x, s, _pick("rfftn", dim, axes, None), norm, True)


def ihfftn(x: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = "backward",
           name: str | None = None, *, dim: Sequence[int] | None = None) -> Any:
    """The inverse DFT of a real x, as the half spectrum of a Hermitian signal."""
    return _r2c("ihfftn", x, s, _pick("ihfftn", dim, axes, None), norm, False)


def _c2r(caller: str, x: Any, s: Any, axes: Any, norm: Any, forward: bool) -> Any:
    x = _complex_input(caller, x)
    axes, norm = _axes(caller, x, s, axes), _norm(caller, norm)
    size = int(s[-1]) if s is not None else 2 * (x.shape[axes[-1]] - 1)
    if size < 1:
        raise ValueError(f"{caller}: the output size along axis {axes[-1]} must be >= 1, got {size} "
                         f"(x of shape {list(x.shape)})")
    sizes = list(s[:-1]) if s is not None else [None] * (len(axes) - 1)
    x = _resized(caller, x, axes, sizes + [size // 2 + 1])
    return apply_op("fft_c2r", {"X": x}, {"axes": axes, "norm": norm, "forward": forward, "last_dim_size": size})


def irfftn(x: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = "backward",
           name: str | None = None, *, dim: Sequence[int] | None = None) -> Any:
    """The real signal whose rfftn is x; its last axis has s[-1] (default 2 (m - 1)) samples."""
    return _c2r("irfftn", x, s, _pick("irfftn", dim, axes, None), norm, False)


def hfftn(x: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = "backward",
          name: str | None = None, *, dim: Sequence[int] | None = None) -> Any:
    """The (real) DFT of a Hermitian signal given by its half x."""
    return _c2r("hfftn", x, s, _pick("hfftn", dim, axes, None), norm, True)


# ---------------------------------------------------------------- one and two axes
def _one(n: int | None) -> list[int] | None:
    return None if n is None else [int(n)]


def fft(x: Any, n: int | None = None, axis: int = -1, norm: str | None = "backward", name: str | None = None,
        *, dim: int | None = None) -> Any:
    """The DFT along one axis, x cropped / zero-padded to n samples first."""
    return _c2c("fft", x, _one(n), [_pick("fft", dim, axis, -1)], norm, True)


def ifft(x: Any, n: int | None = None, axis: int = -1, norm: str | None = "backward", name: str | None = None,
         *, dim: int | None = None) -> Any:
    """The inverse DFT along one axis."""
    return _c2c("ifft", x, _one(n), [_pick("ifft", dim, axis, -1)], norm, False)


def rfft(x: Any, n: int | None = None, axis: int = -1, norm: str | None = "backward", name: str | None = None,
         *, dim: int | None = None) -> Any:
    """The n // 2 + 1 bins of the DFT of a real signal along one axis."""
    return _r2c("rfft", x, _one(n), [_pick("rfft", dim, axis, -1)], norm, True)


def irfft(x: Any, n: int | None = None, axis: int = -1, norm: str | None = "backward", name: str | None = None,
          *, dim: int | None = None) -> Any:
    """The real signal of n samples (default 2 (m - 1)) whose rfft is x."""
    return _c2r("irfft", x, _one(n), [_pick("irfft", dim, axis, -1)], norm, False)


def hfft(x: Any, n: int | None = None, axis: int = -1, norm: str | None = "backward", name: str | None = None,
         *, dim: int | None = None) -> Any:
    """The real DFT of n samples of a Hermitian signal given by its first half x."""
    return _c2r("hfft", x, _one(n), [_pick("hfft", dim, axis, -1)], norm, True)


def ihfft(x: Any, n: int | None = None, axis: int = -1, norm: str | None = "backward", name: str | None = None,
          *, dim: int | None = None) -> Any:
    """The half spectrum of the inverse DFT of a real signal (the inverse of hfft)."""
    return _r2c("ihfft", x, _one(n), [_pick("ihfft", dim, axis, -1)], norm, False)


def _two(caller: str, transform: Any) -> Any:
    def two_axes(x: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
                 norm: str | None = "backward", name: str | None = None, *, dim: Sequence[int] | None = None) -> Any:
        axes = _pick(caller, None if dim is None else tuple(dim), tuple(axes), (-2, -1))
        if len(axes) != 2:
            raise ValueError(f"{caller}: transforms two axes, got {list(axes)}")
        return transform(x, s, axes, norm)
    two_axes.__name__ = two_axes.__qualname__ = caller
    two_axes.__doc__ = f"{transform.__name__} over two axes (the last two by default)."
    return two_axes


fft2, ifft2, rfft2, irfft2, hfft2, ihfft2 = (_two(f"{t.__name__[:-1]}2", t)
                                             for t in (fftn, ifftn, rfftn, irfftn, hfftn, ihfftn))


# ---------------------------------------------------------------- frequencies and shifts
def fftfreq(n: int, d: float = 1.0, dtype: Any = None, name: str | None = None) -> Any:
    """The sample frequencies of an n-point DFT with sample spacing d: [0, 1, ..., -1] / (d n)."""
    return to_tensor(np.fft.fftfreq(int(n), float(d)).astype(dtype or get_default_dtype()))


def rfftfreq(n: int, d: float = 1.0, dtype: Any = None, name: str | None = None) -> Any:
    """The n // 2 + 1 non-negative sample frequencies of rfft."""
    return to_tensor(np.fft.rfftfreq(int(n), float(d)).astype(dtype or get_default_dtype()))


def _shift(x: Any, axes: Any, sign: int) -> Any:
    rank = len(x.shape)
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in ([axes] if isinstance(axes, int) else axes)]
    return roll(x, [sign * (x.shape[a] // 2) for a in axes], axes)


def fftshift(x: Any, axes: Any = None, name: str | None = None, *, dim: Any = None) -> Any:
    """The zero-frequency bin moved to the middle (rolled by n // 2 along axes, all by default)."""
    return _shift(x, _pick("fftshift", dim, axes, None), 1)


def ifftshift(x: Any, axes: Any = None, name: str | None = None, *, dim: Any = None) -> Any:
    """The inverse of fftshift (rolled by -(n // 2))."""
    return _shift(x, _pick("ifftshift", dim, axes, None), -1)
