"""The errors of ONNX import and export: each says what was refused and why."""
from __future__ import annotations

from ..framework.errors import FluidgradError


class OnnxImportError(FluidgradError, ValueError):
    """A model that cannot be imported: not ONNX, truncated, malformed, or too new."""


class UnsafeModelError(OnnxImportError):
    """A model file that tries to read outside its folder or to allocate more than it holds."""


class UnsupportedOnnxOpError(OnnxImportError, NotImplementedError):
    """An ONNX node with no fluidgrad equivalent (names op type, node name and opset)."""


class ValueRequiredError(UnsupportedOnnxOpError):
    """A node needs the value of an input at import time (a shape, axes, pads) and the input is
    fed only at run time. `graph_inputs` names the graph inputs the value is computed from:
    the backend binds their values and imports again."""

    def __init__(self, message: str, input_name: str, graph_inputs: "list[str] | None" = None,
                 structure: bool = False) -> None:
        super().__init__(message)
        self.input_name = input_name
        self.graph_inputs = list(graph_inputs or [])
        self.structure = structure  # only the structure of a sequence / optional input is needed


class OnnxExportError(FluidgradError, ValueError):
    """A program that cannot be written as ONNX (an op without an ONNX equivalent, ...)."""
