"""Reading an ONNX model as untrusted input.

A model file may be crafted. So: the bytes must parse as a ModelProto with a graph;
opsets must lie in the range fluidgrad converts; external data is read only from regular
files inside the model's own folder (no `..`, no absolute paths, no symlinks leading out,
as ONNX's loader does since its path-traversal advisories); and every tensor's declared
size is checked against the bytes actually present before anything is allocated.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper, version_converter

from . import dtypes
from .errors import OnnxImportError, UnsafeModelError

MIN_OPSET = 7
DEFAULT_DOMAINS = ("", "ai.onnx")


def max_opset() -> int:
    """The newest default-domain opset the installed onnx package defines."""
    return onnx.defs.onnx_opset_version()


def load_model(model_or_path: "onnx.ModelProto | str | os.PathLike") -> onnx.ModelProto:
    """A checked ModelProto with every external tensor read into memory (a copy: the
    caller's proto is never changed)."""
    if isinstance(model_or_path, onnx.ModelProto):
        model, base_dir = onnx.ModelProto(), None
        model.CopyFrom(model_or_path)
        where = "the model"
    elif isinstance(model_or_path, (str, os.PathLike)):
        path = Path(model_or_path)
        model, base_dir, where = _parse_file(path), path.absolute().parent.resolve(), str(path)
    else:
        raise TypeError(f"import_model expects an onnx.ModelProto or a path, got {type(model_or_path).__name__}")
    model = upgrade_opset(model, where)
    check_opsets(model, where)
    for tensor, what in _all_tensors(model):
        if tensor.data_location == TensorProto.EXTERNAL:
            _read_external(tensor, what, base_dir)
        check_tensor_size(tensor, what)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise OnnxImportError(f"{where} is not a valid ONNX model: {str(exc).splitlines()[0]}") from None
    return model


def _parse_file(path: Path) -> onnx.ModelProto:
    if not path.is_file():
        raise OnnxImportError(f"{path}: no such model file")
    data = path.read_bytes()
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise OnnxImportError(f"{path} is not an ONNX model, or it is truncated (protobuf: {exc})") from None
    if not model.HasField("graph") or model.ir_version <= 0 or not model.opset_import:
        raise OnnxImportError(f"{path} is not an ONNX model, or it is truncated: "
                              f"it has no graph, IR version or opset")
    return model


def default_opset(model: onnx.ModelProto) -> int:
    """The model's default-domain opset (the newest when it uses only other domains)."""
    for entry in model.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            return entry.version
    return max_opset()


def upgrade_opset(model: onnx.ModelProto, where: str) -> onnx.ModelProto:
    """A model older than MIN_OPSET brought up to it by onnx.version_converter (which knows
    each op's changes between versions); a clear error where the converter cannot."""
    if default_opset(model) >= MIN_OPSET:
        return model
    try:
        return version_converter.convert_version(model, MIN_OPSET)
    except Exception as exc:  # noqa: BLE001  (the converter raises bare RuntimeErrors)
        raise OnnxImportError(f"{where} uses opset {default_opset(model)}; fluidgrad imports opsets {MIN_OPSET} "
                              f"to {max_opset()}, and onnx.version_converter could not bring it up to "
                              f"{MIN_OPSET}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def check_opsets(model: onnx.ModelProto, where: str) -> None:
    version = default_opset(model)
    if version > max_opset():
        raise OnnxImportError(f"{where} uses opset {version}, newer than the newest fluidgrad supports "
                              f"({max_opset()}, from onnx {onnx.__version__})")
    if version < MIN_OPSET:
        raise OnnxImportError(f"{where} uses opset {version}; fluidgrad imports opsets {MIN_OPSET} to "
                              f"{max_opset()} (convert it with onnx.version_converter first)")


def _all_tensors(model: onnx.ModelProto) -> Iterator[tuple[TensorProto, str]]:
    """Every tensor of the model: initializers and tensor attributes, in every subgraph."""
    def in_graph(graph: onnx.GraphProto) -> Iterator[tuple[TensorProto, str]]:
        for tensor in graph.initializer:
            yield tensor, f"initializer {tensor.name!r}"
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t, f"attribute {attr.name} of node {node.name or node.op_type!r}"
                for tensor in attr.tensors:
                    yield tensor, f"attribute {attr.name} of node {node.name or node.op_type!r}"
                if attr.type == onnx.AttributeProto.GRAPH:
                    yield from in_graph(attr.g)
                for sub in attr.graphs:
                    yield from in_graph(sub)
    yield from in_graph(model.graph)
    for function in model.functions:
        for node in function.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t, f"attribute {attr.name} of function {function.name!r}"


def _declared_bytes(tensor: TensorProto, what: str) -> int:
    if any(d < 0 for d in tensor.dims):
        raise UnsafeModelError(f"{what}: negative dimension in shape {list(tensor.dims)}")
    dtype = dtypes.to_fluidgrad(tensor.data_type, what)
    return int(np.prod(tensor.dims, dtype=np.int64) if tensor.dims else 1) * np.dtype(dtype).itemsize


def _safe_location(base_dir: Path | None, location: str, what: str) -> Path:
    if base_dir is None:
        raise UnsafeModelError(f"{what}: external data {location!r} but the model was given as a proto, "
                               f"not a file; load it from its folder")
    if not location or os.path.isabs(location) or location.startswith(("/", "\\")) or ":" in location:
        raise UnsafeModelError(f"{what}: external data location {location!r} is absolute; only files in "
                               f"the model's folder are read")
    if ".." in Path(location.replace("\\", "/")).parts:
        raise UnsafeModelError(f"{what}: external data location {location!r} leaves the model's folder")
    target = (base_dir / location).resolve()
    if base_dir != target and base_dir not in target.parents:
        raise UnsafeModelError(f"{what}: external data location {location!r} resolves to {target}, "
                               f"outside the model's folder {base_dir} (a symlink out?)")
    if not target.is_file():
        raise UnsafeModelError(f"{what}: external data file {location!r} is missing or not a regular file")
    return target


def _read_external(tensor: TensorProto, what: str, base_dir: Path | None) -> None:
    info = {entry.key: entry.value for entry in tensor.external_data}
    target = _safe_location(base_dir, info.get("location", ""), what)
    expected = _declared_bytes(tensor, what)
    try:
        offset, length = int(info.get("offset", 0)), int(info.get("length", expected))
    except ValueError:
        raise UnsafeModelError(f"{what}: external data offset/length are not integers: {info}") from None
    if offset < 0 or length != expected:
        raise UnsafeModelError(f"{what}: external data declares {length} bytes at offset {offset}, but shape "
                               f"{list(tensor.dims)} needs {expected}")
    size = target.stat().st_size
    if offset + expected > size:
        raise UnsafeModelError(f"{what}: external data needs bytes {offset}..{offset + expected} of "
                               f"{info['location']!r}, which holds only {size}")
    with open(target, "rb") as f:
        f.seek(offset)
        tensor.raw_data = f.read(expected)
    del tensor.external_data[:]
    tensor.data_location = TensorProto.DEFAULT


_TYPED_FIELDS = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data")


def check_tensor_size(tensor: TensorProto, what: str) -> None:
    """The data present must match the declared shape (before NumPy allocates anything)."""
    if not dtypes.is_supported(tensor.data_type):
        return  # refused with a clear error when (and if) the tensor is converted
    expected = _declared_bytes(tensor, what)
    itemsize = np.dtype(dtypes.to_fluidgrad(tensor.data_type, what)).itemsize
    if tensor.HasField("raw_data"):
        present = len(tensor.raw_data)
        if present != expected:
            raise UnsafeModelError(f"{what}: shape {list(tensor.dims)} needs {expected} bytes, the file holds "
                                   f"{present}")
        return
    count = sum(len(getattr(tensor, f)) for f in _TYPED_FIELDS)
    if count != expected // itemsize:
        raise UnsafeModelError(f"{what}: shape {list(tensor.dims)} needs {expected // itemsize} values, "
                               f"the file holds {count}")


def tensor_to_array(tensor: TensorProto, what: str) -> np.ndarray:
    """A checked NumPy copy of a tensor."""
    dtype = dtypes.to_fluidgrad(tensor.data_type, what)
    check_tensor_size(tensor, what)
    return np.array(numpy_helper.to_array(tensor), dtype=dtype)
