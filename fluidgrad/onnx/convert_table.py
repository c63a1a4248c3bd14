"""The table of node converters: ONNX op type -> [(since opset, converter)].

A converter takes a `NodeContext` (see importer.py) and returns the node's outputs: one
Variable, a list (None for an output not produced), or NumPy arrays for values known at
import time (shapes of static tensors), which the importer keeps as constants.
"""
from __future__ import annotations

from typing import Any, Callable

Converter = Callable[[Any], Any]
_TABLE: dict[str, list[tuple[int, Converter]]] = {}


def converter(*op_types: str, since: int = 1) -> Callable[[Converter], Converter]:
    """Register `fn` for `op_types` from opset `since` on (until a later registration)."""
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            versions = _TABLE.setdefault(op_type, [])
            versions.append((since, fn))
            versions.sort(key=lambda entry: entry[0])
        return fn
    return register


def find_converter(op_type: str, opset: int) -> Converter | None:
    """The converter for `op_type` valid at `opset`, or None."""
    chosen = None
    for since, fn in _TABLE.get(op_type, []):
        if since <= opset:
            chosen = fn
    return chosen


def converted_op_types() -> list[str]:
    return sorted(_TABLE)
