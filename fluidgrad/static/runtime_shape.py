"""Ops computing the sizes a trace read as RuntimeDims (framework/runtime_dims.py).

`h.reshape([x.shape[0], -1])` traced with an unknown batch becomes `shape(x)` sliced to entry 0,
joined with the known entries into a 1-D int64 ShapeTensor that reshape (and fill_constant,
expand) reads when the program runs; the `shape` attribute keeps the sizes known at build time
(-1 for the others), for the shape rules. These ops export to ONNX as Shape, Slice, Concat.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..dispatch import append_static_op
from ..framework import default_main_program
from ..framework.runtime_dims import RuntimeDim, has_runtime_dims  # noqa: F401  (re-exported)

_OPS = {"add": "elementwise_add", "sub": "elementwise_sub", "mul": "elementwise_mul",
        "floordiv": "elementwise_floordiv"}


def size_tensor(dim: RuntimeDim | int) -> Any:
    """A [1] int64 Variable holding `dim` when the program runs."""
    if not isinstance(dim, RuntimeDim):
        return _constant([int(dim)])
    kind = dim.expr[0]
    if kind == "dim":
        variable, axis = dim.expr[1], dim.expr[2]
        if variable.block.program is not default_main_program():
            raise ValueError(f"{dim.describe()}: {variable.name} belongs to another program than the one being "
                             f"built; its size cannot be read here")
        sizes = append_static_op("shape", {"X": variable}, {})
        sizes.stop_gradient = True
        return append_static_op("slice", {"X": sizes}, {"axes": [0], "starts": [axis], "ends": [axis + 1]})
    left, right = size_tensor(dim.expr[1]), size_tensor(dim.expr[2])
    return append_static_op(_OPS[kind], {"X": left, "Y": right}, {})


def shape_tensor(sizes: Sequence[Any]) -> tuple[Any, list[int]]:
    """(a 1-D int64 Variable of the sizes at run time, the sizes known now with -1 for the others)."""
    pieces: list[Any] = []
    known: list[int] = []
    for d in sizes:
        if isinstance(d, RuntimeDim):
            if known:
                pieces.append(_constant(known))
                known = []
            pieces.append(size_tensor(d))
        else:
            known.append(int(d))
    if known:
        pieces.append(_constant(known))
    tensor = pieces[0] if len(pieces) == 1 else append_static_op("concat", {"X": pieces}, {"axis": 0})
    tensor.stop_gradient = True
    return tensor, [int(d) for d in sizes]


def value_of(dim: RuntimeDim, dtype: str) -> Any:
    """`dim` as a 0-D value of `dtype` (`x / x.shape[0]`)."""
    value = append_static_op("reshape", {"X": size_tensor(dim)}, {"shape": []})
    if dtype != "int64":
        value = append_static_op("cast", {"X": value}, {"dtype": dtype})
    value.stop_gradient = True
    return value


def _constant(values: list[int]) -> Any:
    array = np.asarray(values, dtype="int64")
    return append_static_op("assign_value", {}, {"shape": [len(values)], "dtype": "int64",
                                                 "values": array.tolist()})
