"""The one type-promotion rule (PyTorch's), used by shape rules, eager mode and Python scalars.

Pure Python: dtypes are NumPy name strings ("int32", "float32", ...). The table these
functions implement is written out in docs/dtypes.md.

* A tensor meeting a Python scalar: the scalar is *weak*. It changes the result dtype only
  when it is of a higher kind (bool < integer < float) than the tensor, and then the result
  is that kind's default dtype: `int32 tensor + 2` is int32, `int32 tensor + 2.5` is float32,
  `bool tensor + 1` is int64, `float16 tensor * 2.5` stays float16.
* Two tensors of different dtypes are refused (`DTypeError`, "inputs must have one dtype"):
  a silent float32 -> float64 upcast doubles memory and hides a bug; cast explicitly.
* Sums (and products, cumulative sums) of bool and integer tensors accumulate in int64, so
  counting booleans gives a count and summing int32 values does not wrap.
* True division of bool or integer values gives the default float dtype.
"""
from __future__ import annotations

from numbers import Integral, Real
from typing import Any

DEFAULT_FLOAT = "float32"
DEFAULT_INT = "int64"

BOOL, INTEGER, FLOAT = 0, 1, 2
_KIND_NAMES = {BOOL: "bool", INTEGER: "integer", FLOAT: "floating point"}
_DEFAULT_OF_KIND = {BOOL: "bool", INTEGER: DEFAULT_INT, FLOAT: DEFAULT_FLOAT}


def dtype_kind(dtype: str) -> int:
    """BOOL, INTEGER or FLOAT for a dtype name."""
    if dtype == "bool":
        return BOOL
    if dtype.startswith(("int", "uint")):
        return INTEGER
    if dtype.startswith(("float", "bfloat")):
        return FLOAT
    raise TypeError(f"no type promotion for dtype {dtype!r}")


def is_scalar(value: Any) -> bool:
    """A Python (or NumPy) bool, int or float: a weak operand."""
    return isinstance(value, (bool, Real)) or type(value).__name__ in ("bool_", "bool")


def scalar_kind(value: Any) -> int:
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        return BOOL
    if isinstance(value, Integral):
        return INTEGER
    if isinstance(value, Real):
        return FLOAT
    raise TypeError(f"expected a Python bool, int or float, got {type(value).__name__}")


def result_type(tensor_dtype: str, scalar: Any) -> str:
    """The dtype of `tensor op scalar` (and `scalar op tensor`): the scalar is weak."""
    kind = scalar_kind(scalar)
    if kind > dtype_kind(tensor_dtype):
        return _DEFAULT_OF_KIND[kind]
    return tensor_dtype


def accumulate_dtype(dtype: str) -> str:
    """Sums and products: bool and integers accumulate in int64; floats keep their dtype."""
    return DEFAULT_INT if dtype_kind(dtype) != FLOAT else dtype


def true_divide_dtype(dtype: str) -> str:
    """`/` of bool or integer values gives the default float; floats keep their dtype."""
    return dtype if dtype_kind(dtype) == FLOAT else DEFAULT_FLOAT


def kind_name(dtype: str) -> str:
    return _KIND_NAMES[dtype_kind(dtype)]
