"""`onnx.backend.base.Backend` for fluidgrad: ONNX's own test runner runs imported programs.

    import onnx.backend.test
    import fluidgrad.onnx.backend as backend
    onnx.backend.test.BackendTest(backend, __name__)

A node that needs a value at import time (Reshape's shape, Slice's starts, Range's limit,
...) that the model computes from a graph input fed at run time is imported at `run`, with
the values of those graph inputs bound as constants (see `ValueRequiredError.graph_inputs`).
Each set of bound values gets its own import, kept in a small cache keyed by the values, so
a model run with a few different shapes imports once per shape. `import_model` itself does
not guess: it raises the ValueRequiredError naming the node and the graph inputs.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from ..executor import Executor, Scope
from ..framework import Variable
from .errors import ValueRequiredError
from .importer import import_checked_model
from .load import load_model, max_opset


class FluidgradRep(BackendRep):
    """A prepared model: the imported program, its scope, and how to feed it."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        initializers = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in initializers]
        self.output_names = [o.name for o in model.graph.output]
        self.executor = Executor()
        self._bound_names: list[str] = []           # graph inputs whose values the import needs
        self._structure_names: list[str] = []       # sequence / optional inputs (their structure)
        self._imports: dict[tuple, list] = {}       # bound values -> import (at most CACHE_SIZE)
        try:
            self._imports[()] = self._import({})
        except ValueRequiredError:
            pass  # imported at the first run, with the needed inputs bound

    CACHE_SIZE = 8

    def _import(self, bound: dict[str, np.ndarray], structures: dict[str, Any] | None = None) -> list:
        scope = Scope()
        program, feed_names, fetch_vars = import_checked_model(self.model, scope, bound, structures)
        return [program, feed_names, fetch_vars, scope]

    def _key(self, feeds: dict[str, Any]) -> tuple:
        values = tuple((n, feeds[n].dtype.str, feeds[n].shape, feeds[n].tobytes()) for n in self._bound_names)
        return values + tuple((n, _structure_of(feeds.get(n))) for n in self._structure_names)

    def _import_with(self, feeds: dict[str, Any]) -> list:
        """Import with the needed graph inputs bound, learning which ones the model needs."""
        while True:
            try:
                return self._import({n: feeds[n] for n in self._bound_names},
                                    {n: _structure_of(feeds.get(n)) for n in self._structure_names})
            except ValueRequiredError as exc:
                if exc.structure:
                    new = [n for n in exc.graph_inputs if n not in self._structure_names]
                    self._structure_names.extend(new)
                else:
                    new = [n for n in exc.graph_inputs if n in feeds and n not in self._bound_names]
                    self._bound_names.extend(new)
                if not new:
                    raise

    def _prepared(self, feeds: dict[str, Any]) -> list:
        if () in self._imports:
            return self._imports[()]
        missing = [n for n in self._bound_names if n not in feeds]
        if missing:
            raise ValueError(f"the model needs the values of inputs {missing} to build its program; feed them")
        key = self._key(feeds)
        if key not in self._imports:
            imported = self._import_with(feeds)
            key = self._key(feeds)  # the import may have learnt more inputs to bind
            if len(self._imports) >= self.CACHE_SIZE:
                self._imports.pop(next(iter(self._imports)))
            self._imports[key] = imported
        return self._imports[key]

    def run(self, inputs: Any, **kwargs: Any) -> Any:
        feeds = self._feeds(inputs)
        program, feed_names, fetch_vars, scope = self._prepared(feeds)
        flat_feeds = _flatten_feeds(feeds)
        flat_fetch = [v for entry in fetch_vars for v in (entry if isinstance(entry, list) else [entry])
                      if isinstance(v, Variable)]
        values = iter(self.executor.run(program, feed={n: flat_feeds[n] for n in feed_names}, fetch_list=flat_fetch,
                                        scope=scope) if flat_fetch else [])
        outputs = [[next(values) for _ in entry] if isinstance(entry, list) else
                   next(values) if isinstance(entry, Variable) else None for entry in fetch_vars]
        return namedtupledict("Outputs", self.output_names)(*outputs)

    def _feeds(self, inputs: Any) -> dict[str, Any]:
        if isinstance(inputs, dict):
            return {name: _as_feed(value) for name, value in inputs.items()}
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if len(inputs) > len(self.input_names):
            raise ValueError(f"the model takes {len(self.input_names)} inputs ({self.input_names}), "
                             f"got {len(inputs)}")
        return {name: _as_feed(value) for name, value in zip(self.input_names, inputs)}


def _as_feed(value: Any) -> Any:
    """An array, a list of arrays (a sequence) or None (an empty optional)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [np.asarray(v) for v in value]
    return np.asarray(value)


def _structure_of(value: Any) -> Any:
    """What the import of a sequence / optional input needs: None when empty, a sequence's
    element shapes (for elements whose type leaves dimensions open), or "tensor"."""
    if value is None:
        return None
    return tuple(tuple(v.shape) for v in value) if isinstance(value, list) else "tensor"


def _flatten_feeds(feeds: dict[str, Any]) -> dict[str, np.ndarray]:
    """A sequence `s` is fed as its elements `s[0]`, `s[1]`, ..."""
    flat: dict[str, np.ndarray] = {}
    for name, value in feeds.items():
        if isinstance(value, list):
            flat.update((f"{name}[{k}]", v) for k, v in enumerate(value))
        elif value is not None:
            flat[name] = value
    return flat


class FluidgradBackend(Backend):
    """Runs ONNX models by importing them into fluidgrad Programs (CPU, NumPy kernels)."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> FluidgradRep:
        if not cls.supports_device(device):
            raise ValueError(f"fluidgrad runs on the CPU only, not {device!r}")
        return FluidgradRep(load_model(model))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> Any:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Sequence[np.ndarray], device: str = "CPU",
                 outputs_info: Any = None, **kwargs: Any) -> Any:
        """One node as a one-node model, its inputs typed from the arrays given."""
        values = [np.asarray(v) for v in inputs]
        graph_inputs = [onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(v.dtype),
                                                           v.shape)
                        for name, v in zip(node.input, values) if name]
        graph_outputs = [onnx.helper.make_empty_tensor_value_info(name) for name in node.output if name]  # untyped
        graph = onnx.helper.make_graph([node], "run_node", graph_inputs, graph_outputs)
        opset = kwargs.get("opset_version", max_opset())
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        return FluidgradRep(model).run({name: v for name, v in zip(node.input, values) if name})

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper() == "CPU"


prepare = FluidgradBackend.prepare
run_model = FluidgradBackend.run_model
run_node = FluidgradBackend.run_node
supports_device = FluidgradBackend.supports_device
