"""ONNX element types <-> fluidgrad dtype names (NumPy's)."""
from __future__ import annotations

from onnx import TensorProto

import onnx

from .errors import OnnxImportError, UnsupportedOnnxOpError

_TO_FLUIDGRAD = {
    TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64", TensorProto.FLOAT16: "float16",
    TensorProto.INT8: "int8", TensorProto.INT16: "int16", TensorProto.INT32: "int32",
    TensorProto.INT64: "int64", TensorProto.UINT8: "uint8", TensorProto.BOOL: "bool",
    TensorProto.UINT16: "uint16", TensorProto.UINT32: "uint32", TensorProto.UINT64: "uint64",
    # through ml_dtypes (the `onnx` extra), under the names NumPy then knows them by
    TensorProto.BFLOAT16: "bfloat16", TensorProto.FLOAT8E4M3FN: "float8_e4m3fn",
    TensorProto.FLOAT8E4M3FNUZ: "float8_e4m3fnuz", TensorProto.FLOAT8E5M2: "float8_e5m2",
    TensorProto.FLOAT8E5M2FNUZ: "float8_e5m2fnuz", TensorProto.UINT4: "uint4", TensorProto.INT4: "int4",
}
for _name, _dtype in (("FLOAT4E2M1", "float4_e2m1fn"), ("FLOAT8E8M0", "float8_e8m0fnu"), ("UINT2", "uint2"),
                      ("INT2", "int2")):
    if hasattr(TensorProto, _name):  # newer onnx releases
        _TO_FLUIDGRAD[getattr(TensorProto, _name)] = _dtype
_TO_ONNX = {name: code for code, name in _TO_FLUIDGRAD.items()}


def onnx_type_name(elem_type: int) -> str:
    try:
        return TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"type code {elem_type}"


def is_supported(elem_type: int) -> bool:
    return elem_type in _TO_FLUIDGRAD


def to_fluidgrad(elem_type: int, what: str) -> str:
    """The fluidgrad dtype of an ONNX element type; `what` names the value for the error."""
    try:
        return _TO_FLUIDGRAD[elem_type]
    except KeyError:
        raise OnnxImportError(f"{what}: ONNX element type {onnx_type_name(elem_type)} has no fluidgrad dtype "
                              f"(fluidgrad has {', '.join(_TO_ONNX)})") from None


def to_onnx(dtype: str) -> int:
    try:
        return _TO_ONNX[dtype]
    except KeyError:
        raise ValueError(f"fluidgrad dtype {dtype!r} has no ONNX element type") from None


def value_info_type(value_info: onnx.ValueInfoProto, what: str) -> tuple[str, list[int]]:
    kind = value_info.type.WhichOneof("value")
    if kind != "tensor_type":
        raise UnsupportedOnnxOpError(f"{what}: ONNX type {kind} is not supported (only tensors)")
    tensor_type = value_info.type.tensor_type
    dtype = to_fluidgrad(tensor_type.elem_type, what)
    if not tensor_type.HasField("shape"):
        raise UnsupportedOnnxOpError(f"{what}: the model does not declare its rank; fluidgrad needs it")
    shape = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim]
    return dtype, shape
