"""Complex tensors from and to real ones (paddle's and torch's names): `real`, `imag`, `complex`,
`conj`, `as_real`, `as_complex`, `is_complex`. `abs` of a complex tensor is its magnitude.

fluidgrad computes with complex64 / complex128 in the ops that say so (these, the transforms of
`fluidgrad.fft`, and the linear bookkeeping: assign, sum, scale, add, subtract, reshape, ...);
other ops refuse complex inputs, naming the op, rather than give a gradient without the
conjugates complex calculus needs. Elementwise arithmetic on complex values goes through
`real` / `imag` / `complex`."""
from __future__ import annotations

from typing import Any

from .dispatch import apply_op
from .framework.dtypes import COMPLEX_OF, REAL_OF
from .functions import concat, squeeze, unsqueeze
from .functions import slice as _slice

__all__ = ["real", "imag", "complex", "conj", "as_real", "as_complex", "is_complex"]


def is_complex(x: Any) -> bool:
    """Whether x holds complex64 or complex128 values."""
    return str(x.dtype) in REAL_OF


def real(x: Any, name: str | None = None) -> Any:
    """The real part: x itself for a real x."""
    return apply_op("real", {"X": x}) if is_complex(x) else x


def imag(x: Any, name: str | None = None) -> Any:
    """The imaginary part (complex x only, as torch.imag)."""
    return apply_op("imag", {"X": x})


def complex(real: Any, imag: Any, name: str | None = None) -> Any:
    """real + i imag from two float32 (or two float64) tensors, broadcast together."""
    return apply_op("complex", {"X": real, "Y": imag})


def conj(x: Any, name: str | None = None) -> Any:
    """The complex conjugate: x itself for a real x."""
    return apply_op("conj", {"X": x}) if is_complex(x) else x


def as_real(x: Any, name: str | None = None) -> Any:
    """A complex [...] tensor as a real [..., 2] one: (real, imag) in the last axis."""
    return concat([unsqueeze(real(x), -1), unsqueeze(imag(x), -1)], axis=-1)


def as_complex(x: Any, name: str | None = None) -> Any:
    """A real [..., 2] tensor as a complex [...] one: the last axis holds (real, imag)."""
    if len(x.shape) == 0 or x.shape[-1] != 2 or str(x.dtype) not in COMPLEX_OF:
        raise ValueError(f"as_complex: x must be float32 or float64 with a last axis of size 2, got shape "
                         f"{list(x.shape)}, {x.dtype}")
    axis = len(x.shape) - 1
    parts = [squeeze(_slice(x, [axis], [i], [i + 1]), -1) for i in (0, 1)]
    return complex(*parts)
