"""PyTorch's forms of arithmetic and indexing Tensor methods: `x.add(y, alpha=2)` /
`x.sub(y, alpha=)` (the update of hand-written SGD and EMA loops), `x.round(decimals=2)`,
`x.index_add(dim, index, source)`, `x.masked_select(mask)` with a mask that broadcasts, the matrix transposes `x.mT` / `x.mH` / `x.H`, and the dtype questions
`x.is_floating_point()` / `x.is_complex()`.

Paddle's calls of the same names keep working (Paddle's `index_add(index, axis, value)` is told
from torch's by its first argument: an int is torch's dim). Each method maps onto public
functions, so it serves Tensors and Variables and differentiates through their ops."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import functions
from ..complex_math import conj
from ..complex_math import is_complex as _is_complex
from ..framework import normalize_dtype
from ..framework.dtypes import is_float
from . import composed, everyday, manipulation, math


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def _is_value(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, np.ndarray)


def _scaled(x: Any, other: Any, alpha: Any, what: str) -> Any:
    """alpha * other, refusing a fractional alpha for an integer x as torch does (it would be
    truncated into x's dtype)."""
    if alpha == 1:
        return other
    if not is_float(normalize_dtype(x.dtype)) and not _is_complex(x) and not float(alpha).is_integer():
        raise TypeError(f"{what}: alpha={alpha} is fractional but x is {_describe(x)}; for integer tensors alpha "
                        f"must be an integer (as in PyTorch)")
    return functions.multiply(other, alpha) if _is_value(other) else other * alpha


def add(x: Any, y: Any, name: str | None = None, *, alpha: Any = 1) -> Any:
    """x + alpha * y (torch's x.add(y, alpha=a); Paddle's x.add(y) is alpha 1)."""
    return functions.add(x, _scaled(x, y, alpha, "add"))


def subtract(x: Any, y: Any, name: str | None = None, *, alpha: Any = 1) -> Any:
    """x - alpha * y (torch's x.sub(y, alpha=a) / x.subtract(y, alpha=a))."""
    return functions.subtract(x, _scaled(x, y, alpha, "sub"))


def round(x: Any, decimals: int = 0, name: str | None = None) -> Any:
    """x rounded half to even to `decimals` places (negative: to tens, hundreds, ...), computed
    as torch's: round(x * 10**d) / 10**d, or round(x / 10**-d) * 10**-d for negative d. The
    gradient is zero."""
    if not _is_int(decimals):
        raise TypeError(f"round: decimals must be an integer, got {decimals!r}")
    if decimals == 0:
        return math.round(x)
    if not is_float(normalize_dtype(x.dtype)):
        raise TypeError(f"round: decimals={decimals} needs a floating-point tensor, got {_describe(x)}")
    factor = 10.0 ** builtins.abs(int(decimals))
    if decimals > 0:
        return functions.divide(math.round(functions.multiply(x, factor)), factor)
    return functions.multiply(math.round(functions.divide(x, factor)), factor)


def index_add(x: Any, *args: Any, **kwargs: Any) -> Any:
    """torch's x.index_add(dim, index, source, alpha=1) (an int first, or dim=), or Paddle's
    x.index_add(index, axis, value): x with source's slices added at `index` along dim."""
    if "dim" in kwargs or (args and _is_int(args[0])):
        return _torch_index_add(x, *args, **kwargs)
    return everyday.index_add(x, *args, **kwargs)


def _torch_index_add(x: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
    if not _is_value(index) or not _is_value(source):
        raise TypeError("index_add: PyTorch's order is index_add(dim, index, source) with index a 1-D integer "
                        "tensor and source a tensor; Paddle's is index_add(index, axis, value)")
    return everyday.index_add(x, index, int(dim), _scaled(x, source, alpha, "index_add"))


def masked_select(x: Any, mask: Any, name: str | None = None) -> Any:
    """The elements of x where mask holds, as a 1-D tensor in row-major order; x and mask
    broadcast against each other (as torch's)."""
    if tuple(mask.shape) != tuple(x.shape):
        try:
            x, mask = manipulation.broadcast_tensors([x, mask])
        except ValueError:
            raise ValueError(f"masked_select: mask {_describe(mask)} does not broadcast with x "
                             f"{_describe(x)}") from None
    return composed.masked_select(x, mask)


def _last_two_swapped(x: Any, what: str) -> Any:
    rank = len(x.shape)
    if rank < 2:
        raise ValueError(f"{what} is the transpose of a matrix or a batch of matrices, but x is {_describe(x)}")
    return functions.transpose(x, [*range(rank - 2), rank - 1, rank - 2])


def matrix_transpose(x: Any) -> Any:
    """x.mT: the last two axes swapped (each matrix of a batch transposed)."""
    return _last_two_swapped(x, "x.mT")


def matrix_adjoint(x: Any) -> Any:
    """x.mH: the conjugate of x.mT (x.mT for real x)."""
    return conj(_last_two_swapped(x, "x.mH"))


def conjugate_transpose(x: Any) -> Any:
    """x.H: the conjugate transpose of a matrix (2-D only, as torch's)."""
    if len(x.shape) != 2:
        raise ValueError(f"x.H is the conjugate transpose of a matrix (2-D), but x is {_describe(x)}; use x.mH "
                         f"for a batch of matrices")
    return conj(functions.transpose(x, [1, 0]))


def is_floating_point(x: Any) -> bool:
    """Whether x's dtype is a floating-point one."""
    return is_float(normalize_dtype(x.dtype))


def is_complex(x: Any) -> bool:
    """Whether x's dtype is complex64 or complex128."""
    return _is_complex(x)


# method name -> function (the tensor first); names Paddle also has take Paddle's call too
METHODS = {
    "add": add, "sub": subtract, "subtract": subtract, "round": round, "index_add": index_add,
    "masked_select": masked_select, "is_floating_point": is_floating_point,
    "is_complex": is_complex, "adjoint": matrix_adjoint,
}
PROPERTIES = {"mT": matrix_transpose, "mH": matrix_adjoint, "H": conjugate_transpose}

# the Paddle function each torch form falls back to
add.__wrapped__ = functions.add  # type: ignore[attr-defined]
subtract.__wrapped__ = functions.subtract  # type: ignore[attr-defined]
round.__wrapped__ = math.round  # type: ignore[attr-defined]
index_add.__wrapped__ = everyday.index_add  # type: ignore[attr-defined]
