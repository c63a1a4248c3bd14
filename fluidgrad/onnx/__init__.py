"""ONNX in and out (optional dependency group `onnx`: pip install 'fluidgrad[onnx]').

    program, feed_names, fetch_vars = fluidgrad.onnx.import_model("model.onnx")
    fluidgrad.onnx.export(layer, "model.onnx", example_inputs=[x])
    fluidgrad.onnx.backend   # onnx.backend.base.Backend, for ONNX's own test runner

`import fluidgrad` does not import onnx: the modules that need it load on first use.
"""
from __future__ import annotations

import importlib
from typing import Any


def import_model(model_or_path: Any, scope: Any = None) -> list:
    """`[program, feed_names, fetch_vars]`: an ONNX model (ModelProto or path) as a Program whose
    initializers are Parameters in `scope` (default: the global scope), keeping their ONNX names."""
    return importlib.import_module(".importer", __name__).import_model(model_or_path, scope)


def export(layer_or_function: Any, path: Any = None, example_inputs: Any = None, opset_version: int | None = None,
           dynamic_axes: Any = None, **options: Any) -> Any:
    """Trace eager code with `jit.to_static` and write it as ONNX; returns the ModelProto. Takes
    fluidgrad's call (layer_or_function, path, example_inputs), torch.onnx.export's (model, args, f,
    input_names=, output_names=, dynamic_axes=, ...) and paddle.onnx.export's (layer, path_prefix,
    input_spec=[InputSpec(...)]), see exporter.export."""
    return importlib.import_module(".exporter", __name__).export(layer_or_function, path, example_inputs,
                                                                opset_version, dynamic_axes, **options)


def export_program(path: Any, feed_vars: Any, fetch_vars: Any, program: Any = None, scope: Any = None,
                   opset_version: int | None = None, **options: Any) -> Any:
    """Write a static program's inference part as ONNX (parameters as initializers); returns the ModelProto.
    `options`: dynamic_axes={name: [axes]}, external_data=True/False (default: above 1 GB)."""
    return importlib.import_module(".exporter", __name__).export_program(path, feed_vars, fetch_vars, program,
                                                                        scope, opset_version, **options)


def __getattr__(name: str) -> Any:
    if name in ("backend", "importer", "exporter", "load"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
