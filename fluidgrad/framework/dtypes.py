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

The dtypes beyond NumPy's own (bfloat16, the float8 and float4 formats, int4 / uint4 / int2 /
uint2) come from the `ml_dtypes` package, which ONNX models use. It is optional: this table names
them, and `require_extension_dtype` imports ml_dtypes (which teaches NumPy their names) the first
time a Variable or Tensor of such a dtype is made, or says which extra to install.
"""
from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from .errors import DTypeError

FLOAT_DTYPES = ("float16", "float32", "float64")
STANDARD_DTYPES = FLOAT_DTYPES + ("int8", "int16", "int32", "int64", "uint8", "bool")
WIDE_UNSIGNED_DTYPES = ("uint16", "uint32", "uint64")
# storage formats: data movement and casts only; an op that computes refuses them (cast first)
STORAGE_DTYPES = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                  "float4_e2m1fn", "int4", "uint4", "int2", "uint2")
STORAGE = frozenset(STORAGE_DTYPES)
EXTENSION_DTYPES = frozenset(("bfloat16",) + STORAGE_DTYPES)  # from ml_dtypes
# complex values: only the ops that say so take them (ops/registry.py's COMPLEX_OPS: fft, real, imag, ...)
COMPLEX_DTYPES = ("complex64", "complex128")
COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}
REAL_OF = {"complex64": "float32", "complex128": "float64"}
ALL_DTYPES = STANDARD_DTYPES + WIDE_UNSIGNED_DTYPES + ("bfloat16",) + STORAGE_DTYPES + COMPLEX_DTYPES
EXTRA = "onnx"  # the optional dependency group that brings ml_dtypes
_extension_loaded = False


def require_extension_dtype(dtype: str) -> None:
    """Import ml_dtypes once, when the first Variable or Tensor of one of its dtypes is made, so that
    NumPy knows the name; without it, a clear error naming the dtype and the extra to install."""
    global _extension_loaded
    if _extension_loaded or dtype not in EXTENSION_DTYPES:
        return
    try:
        import ml_dtypes  # noqa: F401  (registers bfloat16, float8_*, int4, ... with NumPy)
    except ImportError:
        raise DTypeError(f"dtype {dtype} needs the ml_dtypes package: pip install 'fluidgrad[{EXTRA}]' "
                         f"(or pip install ml_dtypes)") from None
    _extension_loaded = True


def is_float(dtype: str) -> bool:
    """A floating point dtype ops compute in: float16/32/64 and bfloat16 (not the storage formats)."""
    return dtype in FLOAT_DTYPES or dtype == "bfloat16"


def carries_gradient(dtype: Any) -> bool:
    """Whether an array of this NumPy dtype can carry a gradient: float and complex, and bfloat16
    (whose NumPy kind under ml_dtypes is 'V', as for the storage formats, which cannot)."""
    kind = dtype.kind
    return kind in "fc" or (kind == "V" and dtype.name == "bfloat16")


def has_gradients(dtype: str) -> bool:
    """Whether a variable of this dtype name is differentiable: float16/32/64, bfloat16, complex
    (not the float8 / float4 storage formats)."""
    return dtype in FLOAT_DTYPES or dtype == "bfloat16" or dtype.startswith("complex")


def is_storage(dtype: str) -> bool:
    """float8, float4, int4, int2 ...: a format to store and cast, not to compute in."""
    return dtype in STORAGE

DEFAULT_FLOAT = "float32"
DEFAULT_INT = "int64"

BOOL, INTEGER, FLOAT, COMPLEX = 0, 1, 2, 3
_KIND_NAMES = {BOOL: "bool", INTEGER: "integer", FLOAT: "floating point", COMPLEX: "complex"}
_DEFAULT_OF_KIND = {BOOL: "bool", INTEGER: DEFAULT_INT, FLOAT: DEFAULT_FLOAT}


def dtype_kind(dtype: str) -> int:
    """BOOL, INTEGER, FLOAT or COMPLEX for a dtype name."""
    if dtype == "bool":
        return BOOL
    if dtype.startswith(("int", "uint")):
        return INTEGER
    if dtype.startswith(("float", "bfloat")):
        return FLOAT
    if dtype in REAL_OF:
        return COMPLEX
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
    """Sums and products: bool and integers accumulate in int64; floats and complex keep their dtype."""
    return DEFAULT_INT if dtype_kind(dtype) < FLOAT else dtype


def true_divide_dtype(dtype: str) -> str:
    """`/` of bool or integer values gives the default float; floats keep their dtype."""
    return dtype if dtype_kind(dtype) >= FLOAT else DEFAULT_FLOAT


def kind_name(dtype: str) -> str:
    return _KIND_NAMES[dtype_kind(dtype)]


# ---------------------------------------------------------------- the default float dtype of new parameters
_default_float = [DEFAULT_FLOAT]


def get_default_dtype() -> str:
    """The float dtype new Layers' parameters and `to_tensor` of Python floats get (paddle.get_default_dtype)."""
    return _default_float[0]


def set_default_dtype(dtype: Any) -> None:
    """Make new Layers' parameters and `to_tensor` of Python floats `dtype` (paddle.set_default_dtype:
    float16, bfloat16, float32 or float64). Type promotion (docs/dtypes.md) is unchanged."""
    name = str(dtype).replace("paddle.", "").replace("torch.", "")
    if name not in ("float16", "bfloat16", "float32", "float64"):
        raise TypeError(f"set_default_dtype: the default dtype must be float16, bfloat16, float32 or float64, "
                        f"got {dtype!r}")
    _default_float[0] = name


# the dtype constants (paddle.float32, torch.float32): the names Tensors and Variables report
DTYPE_CONSTANTS = {name: name for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                           "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
                                           "complex128")}
# torch's other names for them (torch.long, torch.float, torch.cfloat, ...) and its float8 formats
# (STORAGE_DTYPES): the same strings, so `x.to(fluidgrad.long)` is `x.to("int64")`
TORCH_DTYPE_NAMES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                     "short": "int16", "cfloat": "complex64", "cdouble": "complex128",
                     **{name: name for name in STORAGE_DTYPES if name.startswith("float8")}}
