"""Questions about values and dtypes that Paddle 2 and PyTorch scripts ask: is_tensor,
is_floating_point, is_integer, finfo, iinfo."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dispatch import is_tensor as _is_eager_tensor
from ..framework import Variable, normalize_dtype
from ..framework.dtypes import get_default_dtype, is_float, require_extension_dtype

__all__ = ["finfo", "iinfo", "is_floating_point", "is_integer", "is_tensor"]


def is_tensor(x: Any) -> bool:
    """True for a Tensor (and, in a program, a Variable): what paddle.is_tensor / torch.is_tensor say."""
    return isinstance(x, Variable) or _is_eager_tensor(x)


def _dtype_of(caller: str, x: Any) -> str:
    if not is_tensor(x):
        raise TypeError(f"{caller}: expects a Tensor, got {type(x).__name__}")
    return normalize_dtype(x.dtype)


def is_floating_point(x: Any) -> bool:
    """Whether x's dtype is a floating-point one (float16, bfloat16, float32, float64, ...)."""
    return is_float(_dtype_of("is_floating_point", x))


def is_integer(x: Any) -> bool:
    """Whether x's dtype is an integer one (signed or unsigned; bool is not)."""
    return np.dtype(_numpy_dtype(_dtype_of("is_integer", x))).kind in "iu"


def _numpy_dtype(dtype: Any) -> np.dtype:
    name = normalize_dtype(dtype)
    if name == "bfloat16" or name.startswith("float8") or name.startswith(("int4", "uint4", "int2", "uint2")):
        require_extension_dtype(name)      # ml_dtypes teaches NumPy these names
    return np.dtype(name)


@dataclass(frozen=True)
class finfo:  # noqa: N801  (named as paddle.finfo and torch.finfo, which are classes too)
    """The machine limits of a floating-point dtype: bits, eps, max, min, tiny (= smallest_normal),
    resolution, dtype (paddle.finfo(paddle.float32).eps, torch.finfo(torch.float32).max)."""

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str

    def __init__(self, dtype: Any = None) -> None:
        numpy_dtype = _numpy_dtype(dtype if dtype is not None else get_default_dtype())
        if not is_float(numpy_dtype.name):
            raise TypeError(f"finfo: needs a floating-point dtype, got {numpy_dtype.name}; iinfo serves integers")
        info = _machine_limits(numpy_dtype)
        for field, value in (("bits", int(info.bits)), ("eps", float(info.eps)), ("max", float(info.max)),
                             ("min", float(info.min)), ("tiny", float(info.tiny)),
                             ("smallest_normal", float(info.smallest_normal)),
                             ("resolution", 10.0 ** -int(info.precision)), ("dtype", numpy_dtype.name)):
            object.__setattr__(self, field, value)


def _machine_limits(numpy_dtype: np.dtype) -> Any:
    if numpy_dtype.name in ("float16", "float32", "float64"):
        return np.finfo(numpy_dtype)
    import ml_dtypes  # bfloat16 and the float8 formats: numpy's finfo does not know them
    return ml_dtypes.finfo(numpy_dtype)


@dataclass(frozen=True)
class iinfo:  # noqa: N801  (paddle.iinfo, torch.iinfo)
    """The limits of an integer dtype: bits, min, max, dtype."""

    bits: int
    min: int
    max: int
    dtype: str

    def __init__(self, dtype: Any) -> None:
        numpy_dtype = _numpy_dtype(dtype)
        if numpy_dtype.kind not in "iu":
            raise TypeError(f"iinfo: needs an integer dtype, got {numpy_dtype.name}; finfo serves floats")
        info = np.iinfo(numpy_dtype)
        for field, value in (("bits", int(info.bits)), ("min", int(info.min)), ("max", int(info.max)),
                             ("dtype", numpy_dtype.name)):
            object.__setattr__(self, field, value)
