"""`fluidgrad.save(obj, path)` / `fluidgrad.load(path)`: eager state dicts on disk, without pickle.

A state dict (of a Layer, of an optimizer, or nested dicts and lists of those, Tensors, NumPy
arrays and plain values) becomes one safetensors file: every array is a tensor keyed by its
position in the structure, and the structure itself, with the plain values, is JSON in the
file's metadata. (A path is only a readable name: when two differ only in where the dots
fall, `{'a.b': x, 'a': {'b': y}}`, the later gets a `#n` suffix; the structure records each
array's key, so loading never guesses.) Loading gives back the same structure: Tensors as
Tensors (with their `stop_gradient`), arrays as arrays. The file is written atomically (temp file, fsync, rename),
so a crash mid-save leaves the previous checkpoint whole.

Shapes are kept exactly: a 0-D value is stored with shape [] and a [1] one with shape [1]. The
file's `format` metadata says which rule wrote it: "fluidgrad.state/2" (now) keeps 0-D values
0-D; "fluidgrad.state/1" files, written before, stored 0-D values as [1], so in them a [1]
array is either. `load` gives a format-1 file's arrays as stored, in dicts marked
`zero_d_as_shape_1`; `Layer.set_state_dict` and `Optimizer.set_state_dict` then take a [1]
value into a 0-D parameter or accumulator (and nowhere else do they change a shape).
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import safetensors
import safetensors.numpy

from .eager import Tensor, to_tensor
from .framework.device import as_device
from .framework.errors import FluidgradError
from .io import atomic_write, c_ordered

__all__ = ["save", "load", "CheckpointError"]

_FORMAT = "fluidgrad.state/2"
_FORMAT_ZERO_D_AS_1 = "fluidgrad.state/1"   # before 0-D values were kept 0-D: they are [1] in it
_STRUCTURE_KEY = "fluidgrad.structure"


class CheckpointError(FluidgradError, ValueError):
    """A state file that cannot be read, or an object that cannot be saved."""


class TorchLayoutDict(dict):
    """A dict read from a safetensors file PyTorch wrote (format "pt"): its weights are in torch's
    layouts, which `Layer.load_state_dict` converts (see nn/torch_state.py)."""
    torch_layout = True


class Format1Dict(dict):
    """A dict read from a format-1 file: its [1] arrays may be 0-D values saved as [1]."""
    zero_d_as_shape_1 = True


def save(obj: Any, path: str | os.PathLike | BinaryIO) -> None:
    """Save a state dict (nested dicts/lists of Tensors, arrays, numbers, strings, None) to a
    path (atomically) or to a binary file object such as io.BytesIO (as paddle.save / torch.save)."""
    arrays: dict[str, np.ndarray] = {}
    structure = _encode(obj, arrays, "state")
    metadata = {"format": _FORMAT, _STRUCTURE_KEY: json.dumps(structure, sort_keys=True)}
    data = safetensors.numpy.save(arrays, metadata=metadata)
    if hasattr(path, "write"):
        path.write(data)
    else:
        atomic_write(path, data)


def load(path: str | os.PathLike | BinaryIO, return_numpy: bool = False, *, map_location: Any = None,
         weights_only: bool | None = None) -> Any:
    """Read what `save` wrote, from a path or a binary file object: the same structure, Tensors
    as Tensors and arrays as arrays (every Tensor as a NumPy array with `return_numpy=True`, as
    paddle.load's). A plain safetensors file (no fluidgrad metadata: `safetensors.numpy.save_file`,
    PyTorch and Hugging Face checkpoints) gives a dict of its tensors by name, as Tensors.

    torch.load's keywords are taken: `weights_only` (True or False alike: the file holds arrays
    and JSON, and nothing is ever unpickled) and `map_location`, which may only name the CPU:
    "cpu", a CPUPlace, torch.device("cpu"), a dict whose targets are the CPU ({"cuda:0": "cpu"}),
    or a callable `(tensor, "cpu") -> tensor or None`, called on each Tensor loaded (torch's
    `lambda storage, loc: storage`). A CUDA location is a ValueError, as torch's own on a machine
    without CUDA. `load(path, "cpu")` (torch's map_location as the second argument) works too."""
    if not isinstance(return_numpy, (bool, np.bool_)):
        if map_location is not None:
            raise TypeError(f"load: map_location given twice ({return_numpy!r} and {map_location!r})")
        return_numpy, map_location = False, return_numpy
    if weights_only not in (None, True, False):
        raise TypeError(f"load: weights_only must be True, False or None, got {weights_only!r}")
    relocate = _relocation(map_location)
    state = _load(path, bool(return_numpy))
    return state if relocate is None else _relocated(state, relocate)


def _relocation(map_location: Any) -> Any:
    """The callable to run on each loaded Tensor, or None; a location other than the CPU is refused."""
    if map_location is None:
        return None
    if callable(map_location):
        return map_location
    targets = map_location.values() if isinstance(map_location, dict) else [map_location]
    for target in targets:
        as_device(target, f"load(map_location={map_location!r})")
    return None


def _relocated(obj: Any, relocate: Any) -> Any:
    """`obj` with each Tensor replaced by `relocate(tensor, "cpu")` (kept when that returns None)."""
    if isinstance(obj, Tensor):
        moved = relocate(obj, "cpu")
        if moved is None:
            return obj
        if not isinstance(moved, Tensor):
            raise CheckpointError(f"load: map_location returned a {type(moved).__name__} for a Tensor; it must "
                                  f"return a Tensor or None")
        return moved
    if isinstance(obj, dict):
        return type(obj)((key, _relocated(value, relocate)) for key, value in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_relocated(value, relocate) for value in obj)
    return obj


def _load(path: str | os.PathLike | BinaryIO, return_numpy: bool) -> Any:
    where = getattr(path, "name", "a file object") if hasattr(path, "read") else Path(path)
    try:
        metadata, arrays = _read_buffer(path) if hasattr(path, "read") else _read_file(where)
    except CheckpointError:
        raise
    except Exception as exc:  # safetensors' own errors: not safetensors, truncated, bad header
        raise CheckpointError(f"load: {where} is not a readable fluidgrad state file ({exc})"
                              f"{_pickle_hint(where)}") from None
    if _STRUCTURE_KEY not in metadata and not str(metadata.get("format", "")).startswith("fluidgrad"):
        # a plain safetensors file (safetensors' save_file, PyTorch / Hugging Face checkpoints,
        # whose metadata may say {"format": "pt"}): its tensors by name
        plain = {key: array if return_numpy else to_tensor(array) for key, array in arrays.items()}
        return TorchLayoutDict(plain) if metadata.get("format") == "pt" else plain
    if metadata.get("format") not in (_FORMAT, _FORMAT_ZERO_D_AS_1):
        raise CheckpointError(f"load: {where} is a safetensors file but not one written by "
                              f"fluidgrad.save (format {metadata.get('format')!r})")
    dict_type = Format1Dict if metadata["format"] == _FORMAT_ZERO_D_AS_1 else dict
    return _decode(json.loads(metadata[_STRUCTURE_KEY]), arrays, where, dict_type, return_numpy)


def _pickle_hint(where: Any) -> str:
    """Why a torch.save / pickle file does not load, and what to do instead."""
    try:
        with open(where, "rb") as handle:
            head = handle.read(2)
    except (OSError, TypeError):
        return ""
    if head == b"PK" or head[:1] == b"\x80":
        return ("; it looks like a pickle (torch.save writes one), which fluidgrad never unpickles: write the "
                "state dict with safetensors.torch.save_file(model.state_dict(), path) and load that")
    return ""


def _read_file(path: Path) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    if not path.is_file():
        raise CheckpointError(f"load: {path} does not exist or is not a file")
    with safetensors.safe_open(str(path), framework="numpy") as handle:
        return handle.metadata() or {}, {key: handle.get_tensor(key) for key in handle.keys()}


def _read_buffer(stream: BinaryIO) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """The metadata and arrays of safetensors bytes read from a file object. The metadata is the
    header's "__metadata__" entry (the format: an 8-byte little-endian header length, then the
    JSON header), which safetensors' bytes API does not return."""
    data = stream.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    return header.get("__metadata__") or {}, safetensors.numpy.load(data)


def _encode(obj: Any, arrays: dict[str, np.ndarray], where: str) -> Any:
    """The JSON form of `obj`; arrays go into `arrays` under their path in the structure."""
    if isinstance(obj, Tensor):
        key = _unique_key(where, arrays)
        arrays[key], complex_dtype = _storable(c_ordered(obj.numpy()))
        return {"tensor": key, "stop_gradient": bool(obj.stop_gradient), **complex_dtype}
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biufc":
            raise CheckpointError(f"save: {where} is an array of dtype {obj.dtype}; only bool, "
                                  f"integer, float and complex arrays can be saved")
        key = _unique_key(where, arrays)
        arrays[key], complex_dtype = _storable(c_ordered(obj))
        return {"array": key, **complex_dtype}
    if isinstance(obj, np.generic):
        return _encode(obj.item(), arrays, where)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    if isinstance(obj, dict):
        for key in obj:
            if not isinstance(key, _KEY_TYPES):
                raise CheckpointError(f"save: {where} has a key {key!r} of type {type(key).__name__}; "
                                      f"keys must be strings, numbers, booleans or None")
        return {"dict": [[k, _encode(v, arrays, f"{where}.{k}")] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]
        return {"tuple" if isinstance(obj, tuple) else "list": items}
    raise CheckpointError(f"save: {where} is a {type(obj).__name__}; a state dict holds Tensors, "
                          f"arrays, numbers, strings, None, and dicts and lists of those")


# dict keys JSON keeps as they are inside the structure's [key, value] pairs
_KEY_TYPES = (str, int, float, bool, type(None))


def _storable(array: np.ndarray) -> tuple[np.ndarray, dict[str, str]]:
    """A complex array (safetensors has no complex128) as its real and imaginary parts on a
    trailing axis of 2, with the structure entry's note of its dtype; others as they are."""
    if array.dtype.kind != "c":
        return array, {}
    parts = np.ascontiguousarray(array).view(array.real.dtype).reshape(array.shape + (2,))
    return parts, {"complex": array.dtype.name}


def _unique_key(where: str, arrays: dict[str, np.ndarray]) -> str:
    """`where`, or `where#n` when a dotted key and a nested one spell the same path."""
    key, n = where, 0
    while key in arrays:
        n += 1
        key = f"{where}#{n}"
    return key


def _decode(node: Any, arrays: dict[str, np.ndarray], path: Any, dict_type: type = dict,
            return_numpy: bool = False) -> Any:
    if not isinstance(node, dict) or len(node) not in (1, 2, 3):
        raise CheckpointError(f"load: {path} has a damaged structure entry {node!r}")
    if "tensor" in node:
        array = _complex(_array(node["tensor"], arrays, path), node, path)
        if return_numpy:
            return array
        if array.dtype.kind in "fc":
            return to_tensor(array, stop_gradient=node.get("stop_gradient", True))
        tensor = to_tensor(array)   # bfloat16: to_tensor refuses a gradient, a bfloat16 parameter has it
        tensor.stop_gradient = bool(node.get("stop_gradient", True))
        return tensor
    if "array" in node:
        return _complex(_array(node["array"], arrays, path), node, path)
    if "value" in node:
        return node["value"]
    if "dict" in node:
        return dict_type((key, _decode(value, arrays, path, dict_type, return_numpy)) for key, value in node["dict"])
    if "list" in node:
        return [_decode(value, arrays, path, dict_type, return_numpy) for value in node["list"]]
    if "tuple" in node:
        return tuple(_decode(value, arrays, path, dict_type, return_numpy) for value in node["tuple"])
    raise CheckpointError(f"load: {path} has a damaged structure entry {node!r}")


def _array(key: str, arrays: dict[str, np.ndarray], path: Any) -> np.ndarray:
    try:
        return np.array(arrays[key])  # owned and writable: the caller may train on it
    except KeyError:
        raise CheckpointError(f"load: {path} names an array {key!r} that the file does not hold") from None


def _complex(array: np.ndarray, node: dict, path: Any) -> np.ndarray:
    """The complex array `_storable` stored as parts, or `array` itself."""
    if "complex" not in node:
        return array
    dtype = np.dtype(node["complex"])
    if dtype.kind != "c" or array.shape[-1:] != (2,) or array.dtype != dtype.type(0).real.dtype:
        raise CheckpointError(f"load: {path} has a {node['complex']} entry stored as {array.dtype} "
                              f"{list(array.shape)}, not as its real and imaginary parts")
    return np.ascontiguousarray(array).view(dtype).reshape(array.shape[:-1])
