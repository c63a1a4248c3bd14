"""ONNX graph -> fluidgrad Program: each node becomes registered ops, one or a few.

The whole program is built first; only when every node has converted are the initializer
values written into the scope, so a model that fails to import leaves nothing behind.
Initializers become Parameters keeping their ONNX names (float ones trainable, the others
constants); graph inputs become `data` variables (unknown dimensions stay -1); `If` and
`Loop` become `conditional_block` and `while` sub-blocks (see convert_control.py).
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import helper

from ..executor import Scope, global_scope
from ..framework import Parameter, Program, Variable, program_guard
from ..ops.registry import get_op_def
from . import convert_control, convert_math, convert_nn, convert_search, convert_tensor  # noqa: F401  (fill the table)
from . import convert_bits, convert_quant, convert_signal, convert_training  # noqa: F401
from .convert_sequence import EMPTY, SequenceValue, is_structured
from .convert_tensor import expand_at_run_time, expand_to_symbolic, reshape_at_run_time, sizes_as_data
from .convert_table import find_converter
from . import dtypes
from .dtypes import value_info_type
from .errors import OnnxImportError, UnsupportedOnnxOpError, ValueRequiredError
from .evaluate import evaluate_constant
from .fold import SymDim, fold_node, foldable, symbolic
from .functions import expand_function, find_function
from .load import DEFAULT_DOMAINS, default_opset, load_model, tensor_to_array


def import_model(model_or_path: "onnx.ModelProto | str | os.PathLike", scope: Scope | None = None
                 ) -> list:
    """`[program, feed_names, fetch_vars]` for an ONNX model (a ModelProto or a file path);
    initializers go into `scope` (default: the global scope) under their ONNX names."""
    return import_checked_model(load_model(model_or_path), scope)


def import_checked_model(model: onnx.ModelProto, scope: Scope | None = None,
                         bound_inputs: dict[str, np.ndarray] | None = None,
                         structures: dict[str, Any] | None = None) -> list:
    """Import a model that `load_model` has checked. `bound_inputs` turns graph inputs into
    constants (the backend binds inputs that a node needs at import time, such as a shape).
    `structures` gives the structure of sequence and optional graph inputs (see
    `structure_of`): a sequence of n elements is fed as n tensors named `name[k]`."""
    importer = ModelImporter(model, bound_inputs or {}, structures or {})
    program, feed_names, fetch_vars = importer.build()
    scope = scope if scope is not None else global_scope()
    for name, value in importer.values.items():
        scope[name] = value
    return [program, feed_names, fetch_vars]


class ModelImporter:
    """Holds what the graphs of one model share: the program, the opset, the constants."""

    def __init__(self, model: onnx.ModelProto, bound_inputs: dict[str, np.ndarray],
                 structures: dict[str, Any] | None = None) -> None:
        self.model = model
        self.structures = structures or {}
        self.opset = default_opset(model)
        self.program = Program()
        self.values: dict[str, np.ndarray] = {}   # written into the scope once the build succeeded
        self.bound_inputs = bound_inputs
        self.local_functions = {(f.domain, f.name): f for f in model.functions}
        self._counter = 0

    def build(self) -> tuple[Program, list[str], list[Variable]]:
        with program_guard(self.program, Program()):
            graph = GraphImporter(self, self.model.graph, parent=None)
            feed_names = graph.declare_inputs()
            graph.convert_nodes(self.opset)
            fetch_vars = [self._fetchable(graph.value(out.name, as_variable=True)) for out in self.model.graph.output]
        return self.program, feed_names, fetch_vars

    def _fetchable(self, value: Any) -> Any:
        """A Variable; a list of them for a sequence; None for an empty optional."""
        if value is EMPTY:
            return None
        if isinstance(value, SequenceValue):
            return [v if isinstance(v, Variable) else self.add_constant(np.asarray(v)) for v in value]
        return value

    def fresh_name(self, prefix: str) -> str:
        while True:
            name = f"{prefix}_{self._counter}"
            self._counter += 1
            if not any(b.has_var(name) for b in self.program.blocks) and name not in self.values:
                return name

    def add_constant(self, array: np.ndarray, name: str | None = None, trainable: bool = False) -> Parameter:
        """A persistable variable of the global block holding `array` (written to the scope later)."""
        block = self.program.global_block()
        name = name if name is not None and not block.has_var(name) else self.fresh_name("onnx.const")
        param = block.create_parameter(name, array.shape, array.dtype.name, trainable=trainable)
        param.stop_gradient = not trainable
        self.values[name] = array
        return param


class GraphImporter:
    """One ONNX graph (the main graph or an If/Loop body): its names and their values."""

    def __init__(self, model: ModelImporter, graph: onnx.GraphProto, parent: "GraphImporter | None") -> None:
        self.model = model
        self.graph = graph
        self.parent = parent
        self.env: dict[str, Variable] = {}        # ONNX name -> fluidgrad Variable
        self.consts: dict[str, np.ndarray] = {}   # ONNX name -> value known at import time
        self.sources: dict[str, frozenset[str]] = {}  # ONNX name -> the graph inputs it is computed from
        self.trainable: set[str] = set()          # initializers that stay Parameters (never folded)
        for tensor in graph.initializer:
            self.consts[tensor.name] = tensor_to_array(tensor, f"initializer {tensor.name!r}")

    # -- names
    def lookup_const(self, name: str) -> np.ndarray | None:
        graph: GraphImporter | None = self
        while graph is not None:
            if name in graph.env and name not in graph.consts:
                return None
            if name in graph.consts:
                return graph.consts[name]
            graph = graph.parent
        return None

    def lookup_sources(self, name: str) -> frozenset[str]:
        graph: GraphImporter | None = self
        while graph is not None:
            if name in graph.sources or name in graph.env or name in graph.consts:
                return graph.sources.get(name, frozenset())
            graph = graph.parent
        return frozenset()

    def is_trainable(self, name: str) -> bool:
        graph: GraphImporter | None = self
        while graph is not None:
            if name in graph.trainable:
                return True
            if name in graph.env or name in graph.consts:
                return False
            graph = graph.parent
        return False

    def evaluate(self, name: str) -> np.ndarray | None:
        """The value of `name` if it is computed from constants alone (see evaluate.py)."""
        if self.lookup_sources(name) or not self.knows(name):
            return None
        program = self.model.program
        trainable = {p.name for p in program.all_parameters() if p.trainable}
        value = evaluate_constant(self.variable(name), self.model.values, trainable)
        if value is not None:
            self.consts[name] = value
        return value

    def knows(self, name: str) -> bool:
        graph: GraphImporter | None = self
        while graph is not None:
            if name in graph.env or name in graph.consts:
                return True
            graph = graph.parent
        return False

    def variable(self, name: str) -> Variable:
        """The Variable of an ONNX value; a constant gets its variable on first use."""
        graph: GraphImporter | None = self
        while graph is not None:
            if name in graph.env:
                return graph.env[name]
            if name in graph.consts:
                if symbolic(graph.consts[name]):
                    counted = sizes_as_data(NodeContext(self, onnx.NodeProto(name=f"sizes of {name}"), 0),
                                            graph.consts[name])
                    if counted is not None:
                        self.env[name] = counted
                        return counted
                    raise OnnxImportError(f"ONNX value {name!r} is computed from dimensions unknown when the "
                                          f"program is built ({list(graph.consts[name])}), and is used as data; "
                                          f"give the model's inputs fixed sizes")
                var = graph.model.add_constant(graph.consts[name], name=None)
                graph.env[name] = var
                return var
            graph = graph.parent
        raise OnnxImportError(f"ONNX value {name!r} is used before any node produces it")

    # -- the main graph's inputs and initializers
    def declare_inputs(self) -> list[str]:
        block = self.model.program.global_block()
        for tensor in self.graph.initializer:
            value = self.consts[tensor.name]
            trainable = value.dtype.kind == "f"
            self.env[tensor.name] = self.model.add_constant(value, name=tensor.name, trainable=trainable)
            if trainable:
                self.trainable.add(tensor.name)
        feed_names = []
        for value_info in self.graph.input:
            name = value_info.name
            if name in self.env:
                continue  # an initializer listed as input (IR < 4): its value is the default
            if name in self.model.bound_inputs:
                self.consts[name] = self.model.bound_inputs[name]
                continue
            self.sources[name] = frozenset([name])
            if value_info.type.WhichOneof("value") in ("sequence_type", "optional_type"):
                self.env[name] = self.declare_structured(name, value_info.type, feed_names)
                continue
            dtype, shape = value_info_type(value_info, f"graph input {name!r}")
            self.env[name] = block.create_var(name, shape, dtype, stop_gradient=True, is_data=True)
            feed_names.append(name)
        return feed_names

    def declare_structured(self, name: str, type_proto: onnx.TypeProto, feed_names: list[str]) -> Any:
        """A sequence or optional graph input, by the structure the caller gives (its length,
        or whether it holds a value): its tensors become data variables."""
        if name not in self.model.structures:
            raise ValueRequiredError(f"graph input {name!r} is an ONNX {type_proto.WhichOneof('value')}: fluidgrad "
                                     f"needs its structure (a sequence's length, whether an optional holds a "
                                     f"value) when it builds the program; fluidgrad.onnx.backend binds it at run "
                                     f"time", name, [name], structure=True)
        return self._declare_value(name, type_proto, self.model.structures[name], feed_names)

    def _declare_value(self, name: str, type_proto: onnx.TypeProto, structure: Any, feed_names: list[str]) -> Any:
        kind = type_proto.WhichOneof("value")
        if kind == "optional_type":
            if structure is None:
                return EMPTY
            return self._declare_value(name, type_proto.optional_type.elem_type, structure, feed_names)
        if kind == "sequence_type":
            if not isinstance(structure, tuple):
                raise OnnxImportError(f"graph input {name!r} is a sequence; its structure must give the shapes "
                                      f"of its elements, not {structure!r}")
            return SequenceValue(self._declare_value(f"{name}[{k}]", type_proto.sequence_type.elem_type, shape,
                                                     feed_names) for k, shape in enumerate(structure))
        value_info = onnx.helper.make_value_info(name, type_proto)
        tensor_type = type_proto.tensor_type
        if isinstance(structure, tuple) and (not tensor_type.HasField("shape") or any(
                not d.HasField("dim_value") for d in tensor_type.shape.dim)):
            value_info = onnx.helper.make_tensor_value_info(name, tensor_type.elem_type, list(structure))
        dtype, shape = value_info_type(value_info, f"graph input {name!r}")
        feed_names.append(name)
        return self.model.program.global_block().create_var(name, shape, dtype, stop_gradient=True, is_data=True)

    def value(self, name: str, as_variable: bool = False) -> Any:
        """What `name` holds: a known array, a Variable, a SequenceValue or EMPTY."""
        const = self.lookup_const(name)
        if const is not None and not as_variable:
            return const
        return self.variable(name)

    def bind(self, name: str, value: Any) -> None:
        if isinstance(value, np.ndarray):
            self.consts[name] = value
        else:
            self.env[name] = value

    # -- nodes
    def convert_nodes(self, opset: int, nodes: Sequence[onnx.NodeProto] | None = None) -> None:
        for node in (self.graph.node if nodes is None else nodes):
            self.convert_node(node, opset)

    def convert_node(self, node: onnx.NodeProto, opset: int) -> None:
        if node.op_type == "Identity" and node.input and self.knows(node.input[0]) and \
                is_structured(self.variable(node.input[0])):
            self.env[node.output[0]] = self.variable(node.input[0])  # a sequence or empty optional
            return
        ctx = NodeContext(self, node, opset)
        sources = frozenset().union(*(self.lookup_sources(n) for n in _names_read(node)))
        for name in node.output:
            self.sources[name] = sources
        if node.domain in DEFAULT_DOMAINS and (self.try_fold(ctx) or self.try_inline_if(ctx) or
                                               self.try_symbolic_shape(ctx)):
            return
        if node.domain in DEFAULT_DOMAINS and node.op_type == "Expand" and symbolic(ctx.maybe_const(1)) and \
                (self.try_expand_like(ctx) or self.try_expand_to_symbolic(ctx)):
            return
        if node.domain in DEFAULT_DOMAINS and node.op_type in ("Reshape", "Expand") and symbolic(ctx.maybe_const(1)):
            try:
                ctx.overrides[1] = resolve_symbolic_shape(ctx)
            except UnsupportedOnnxOpError:  # not as attributes: the shape is then computed at run time
                out = (reshape_at_run_time if node.op_type == "Reshape" else expand_at_run_time)(ctx)
                if out is None:
                    raise
                self.bind_outputs(ctx, [out])
                return
        fn = find_converter(node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}:{node.op_type}",
                            opset)
        if fn is None:
            function = find_function(self.model, node, opset, ctx.input_types)
            if function is None:
                raise ctx.unsupported("no converter and no function body to expand")
            self.convert_nodes(function[1], expand_function(node, function[0], self.model.fresh_name("fn")))
            return
        try:
            result = fn(ctx)
        except (OnnxImportError, NotImplementedError):
            raise
        except Exception as exc:
            raise OnnxImportError(f"{ctx.where()}: {type(exc).__name__}: {exc}") from exc
        self.bind_outputs(ctx, result)

    def try_fold(self, ctx: "NodeContext") -> bool:
        """Shape arithmetic on known small tensors is computed now (see fold.py)."""
        values = [ctx.maybe_const(i) for i in range(ctx.num_inputs)]
        present = [v for i, v in enumerate(values) if ctx.has_input(i)]
        if len(present) != len([i for i in range(ctx.num_inputs) if ctx.has_input(i)]) or \
                not foldable(ctx.node.op_type, present) or \
                any(self.is_trainable(n) for n in ctx.node.input if n):
            return False
        cast_to = None
        if ctx.node.op_type == "Cast":
            cast_to = dtypes.to_fluidgrad(ctx.attr("to"), ctx.where())
        try:
            value = fold_node(ctx.node.op_type, ctx.attrs, values, ctx.opset, cast_to)
        except (ValueError, IndexError, TypeError, KeyError):
            return False  # not foldable after all: the converter builds ops (or says why not)
        self.bind_outputs(ctx, [value])
        return True

    def try_symbolic_shape(self, ctx: "NodeContext") -> bool:
        """Shape of a variable with unknown (-1) dimensions: an object array whose unknown
        entries are SymDims, so Shape -> Gather -> Concat -> Reshape chains of a model
        exported with a dynamic batch still fold (see fold.py and resolve_symbolic_shape)."""
        if ctx.node.op_type != "Shape" or ctx.maybe_const(0) is not None:
            return False
        var = ctx.input(0)
        if not isinstance(var, Variable) or all(d >= 0 for d in var.shape):
            return False
        dims = [SymDim(var.name, k) if d < 0 else int(d) for k, d in enumerate(var.shape)]
        picked = dims[slice(ctx.attr("start", 0), ctx.attr("end", None))]
        if not any(isinstance(d, SymDim) for d in picked):  # only known sizes picked: plain ints
            self.bind_outputs(ctx, [np.asarray(picked, dtype="int64")])
            return True
        value = np.empty(len(picked), dtype=object)
        value[:] = picked
        self.bind_outputs(ctx, [value])
        return True

    def try_expand_like(self, ctx: "NodeContext") -> bool:
        """Expand(x, Shape(t)) with sizes of t unknown when the program is built (torch's
        x.expand_as(t), fluidgrad's own expand_as): `expand_as`, when x broadcasts to t's shape."""
        target = list(ctx.maybe_const(1).reshape(-1))
        names = {d.var for d in target if isinstance(d, SymDim)}
        block = self.model.program.current_block()
        if len(names) != 1 or None in names or not block.has_var_recursive(next(iter(names))):
            return False
        like, x = block.var_recursive(names.pop()), ctx.input(0)
        if len(like.shape) != len(target) or len(x.shape) > len(target):
            return False
        if any(d.axis != k if isinstance(d, SymDim) else int(d) != like.shape[k] for k, d in enumerate(target)):
            return False
        if any(dx not in (1, dt) for dx, dt in zip(x.shape[::-1], like.shape[::-1])):
            return False
        self.bind_outputs(ctx, [ctx.op("expand_as", {"X": x, "Target": like})])
        return True

    def try_expand_to_symbolic(self, ctx: "NodeContext") -> bool:
        """Expand to a shape read from one variable at run time (see expand_to_symbolic)."""
        out = expand_to_symbolic(ctx, ctx.input(0), list(ctx.maybe_const(1).reshape(-1)))
        if out is None:
            return False
        self.bind_outputs(ctx, [out])
        return True

    def try_inline_if(self, ctx: "NodeContext") -> bool:
        """An If whose condition is known now: the chosen branch's nodes join this graph
        (function bodies choose by rank or attribute this way)."""
        if ctx.node.op_type != "If" or ctx.maybe_const(0) is None:
            return False
        branch = ctx.attr("then_branch" if bool(ctx.maybe_const(0).reshape(-1)[0]) else "else_branch")
        sub = GraphImporter(self.model, branch, parent=self)
        sub.convert_nodes(ctx.opset)
        results = [sub.lookup_const(out.name) if sub.lookup_const(out.name) is not None else sub.variable(out.name)
                   for out in branch.output]
        self.bind_outputs(ctx, results)
        for name, out in zip(ctx.node.output, branch.output):
            self.sources[name] = sub.lookup_sources(out.name)
        return True

    def bind_outputs(self, ctx: "NodeContext", result: Any) -> None:
        results = [result] if isinstance(result, SequenceValue) or not isinstance(result, (list, tuple)) \
            else list(result)
        for i, name in enumerate(ctx.node.output):
            if not name:
                continue
            value = results[i] if i < len(results) else None
            if value is None:
                raise ctx.unsupported(f"output {i} ({name!r}) is not produced by fluidgrad")
            if isinstance(value, Variable) or is_structured(value):
                self.env[name] = value
            else:
                self.consts[name] = np.asarray(value)
                self.env.pop(name, None)


class NodeContext:
    """What a converter sees: the node's attributes, inputs as Variables or constants, and a
    way to append registered ops."""

    def __init__(self, graph: GraphImporter, node: onnx.NodeProto, opset: int) -> None:
        self.graph = graph
        self.node = node
        self.opset = opset
        self.attrs = {a.name: _attr_value(a) for a in node.attribute}
        self.overrides: dict[int, np.ndarray] = {}  # input values the importer resolved for the converter

    # -- description and errors
    def where(self) -> str:
        return f"ONNX node {self.node.name or '(unnamed)'!r} (op {self.node.op_type}, opset {self.opset})"

    def unsupported(self, reason: str) -> UnsupportedOnnxOpError:
        return UnsupportedOnnxOpError(f"{self.where()} is not supported: {reason}")

    @property
    def input_types(self) -> list[tuple[str, int] | None]:
        """(dtype, rank) of each input, for context-dependent function bodies."""
        types: list[tuple[str, int] | None] = []
        for i in range(len(self.node.input)):
            if not self.has_input(i):
                types.append(None)
                continue
            const = self.graph.lookup_const(self.node.input[i])
            if const is not None:
                types.append((const.dtype.name, const.ndim))
            else:
                var = self.graph.variable(self.node.input[i])
                types.append((var.dtype, len(var.shape)))
        return types

    # -- attributes
    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    # -- inputs
    @property
    def num_inputs(self) -> int:
        return len(self.node.input)

    def has_input(self, i: int) -> bool:
        return i < len(self.node.input) and self.node.input[i] != ""

    def input(self, i: int) -> Variable:
        if not self.has_input(i):
            raise self.unsupported(f"input {i} is required")
        return self.graph.variable(self.node.input[i])

    def inputs(self) -> list[Variable]:
        return [self.input(i) for i in range(self.num_inputs) if self.has_input(i)]

    def maybe_const(self, i: int) -> np.ndarray | None:
        if i in self.overrides:
            return self.overrides[i]
        return self.graph.lookup_const(self.node.input[i]) if self.has_input(i) else None

    def const(self, i: int, what: str) -> np.ndarray:
        """The value of input `i`, which fluidgrad needs at import time (a shape, axes, ...)."""
        value = self.maybe_const(i)
        if value is None and self.has_input(i):
            value = self.graph.evaluate(self.node.input[i])
        if symbolic(value):
            raise UnsupportedOnnxOpError(f"{self.where()}: input {i} ({self.node.input[i]!r}, the {what}) depends on "
                                         f"dimensions unknown when the program is built: {list(value)}; fluidgrad "
                                         f"resolves those only in Reshape and Expand shapes")
        if value is None:
            name = self.node.input[i] if self.has_input(i) else ""
            sources = sorted(self.graph.lookup_sources(name))
            origin = (f"it is computed from graph input(s) {', '.join(map(repr, sources))}, fed only at run "
                      f"time (fluidgrad.onnx.backend binds their values then; for import_model, make them "
                      f"initializers)") if sources else "it is not computed from initializers and constants alone"
            raise ValueRequiredError(f"{self.where()}: input {i} ({name!r}, the {what}) must be known when "
                                     f"fluidgrad builds the program, but {origin}", name, sources)
        return value

    def dtype(self, i: int) -> str:
        const = self.maybe_const(i)
        return const.dtype.name if const is not None else self.input(i).dtype

    def shape(self, i: int) -> tuple[int, ...]:
        const = self.maybe_const(i)
        return tuple(const.shape) if const is not None else tuple(self.input(i).shape)

    def rank(self, i: int) -> int:
        return len(self.shape(i))

    # -- building
    def subgraph(self, graph: onnx.GraphProto) -> GraphImporter:
        """An importer for a body (If branch, Loop body) that sees this graph's names."""
        return GraphImporter(self.graph.model, graph, parent=self.graph)

    def has_op(self, type: str) -> bool:
        try:
            get_op_def(type)
        except KeyError:
            return False
        return True

    def op(self, type: str, inputs: dict[str, Any], n_out: int | None = None, **attrs: Any) -> Any:
        """Append registered op `type`; returns its output Variable (a tuple for several slots,
        a list for a duplicable slot), as `fluidgrad.dispatch.apply_op` does."""
        try:
            op_def = get_op_def(type)
        except KeyError:
            raise self.unsupported(f"fluidgrad has no op {type!r}") from None
        program = self.graph.model.program
        block = program.current_block()
        outputs: dict[str, list[Variable]] = {}
        for slot in op_def.outputs:
            count = (n_out or 1) if slot.duplicable else 1
            outputs[slot.name] = [block.create_var(self.graph.model.fresh_name(f"{type}.out"))
                                  for _ in range(count)]
        try:
            block.append_op(type, inputs, outputs, attrs)
        except Exception:
            for var in (v for vs in outputs.values() for v in vs):
                block.vars.pop(var.name, None)
            raise
        values = [outputs[s.name] if s.duplicable else outputs[s.name][0] for s in op_def.outputs]
        return values[0] if len(values) == 1 else tuple(values)

    def constant(self, value: Any, dtype: str | None = None) -> Variable:
        """A constant Variable (persistable, not trainable) holding `value`."""
        array = np.asarray(value, dtype=dtype)
        return self.graph.model.add_constant(array)

    def scalar(self, value: float, dtype: str) -> Variable:
        """A 0-d constant made by `fill_constant`, so it lives in the program itself."""
        return self.op("fill_constant", {}, shape=[], value=float(value), dtype=dtype)


def resolve_symbolic_shape(ctx: NodeContext) -> np.ndarray:
    """A Reshape / Expand target holding SymDims, as the ints the op attributes take:
    Reshape copies (0) a dimension of its own input at the same position, and the one
    remaining unknown becomes -1; Expand keeps (-1) an unknown dimension the input has too."""
    target = list(ctx.maybe_const(1).reshape(-1))
    x = ctx.input(0)
    unknown = [k for k, d in enumerate(target) if isinstance(d, SymDim)]
    if ctx.node.op_type == "Expand":
        offset = len(target) - len(x.shape)
        for k in unknown:
            if k - offset < 0 or x.shape[k - offset] != -1:
                raise ctx.unsupported(f"expanding {list(x.shape)} to {target}: a dimension unknown when the "
                                      f"program is built would broadcast a known one")
            target[k] = -1
        return np.asarray(target, dtype="int64")
    if ctx.attr("allowzero", 0):
        raise ctx.unsupported(f"a shape {target} with unknown dimensions under allowzero=1")
    for k in list(unknown):
        d = target[k]
        if d.var == x.name and d.axis == k:
            target[k] = 0
            unknown.remove(k)
    if len(unknown) > 1 or (unknown and -1 in target):
        raise ctx.unsupported(f"reshaping {list(x.shape)} to {target}: more than one dimension is unknown when "
                              f"the program is built")
    for k in unknown:
        target[k] = -1
    return np.asarray(target, dtype="int64")


def _names_read(node: onnx.NodeProto) -> list[str]:
    """The node's inputs and the outer names its subgraphs read (If, Loop, Scan bodies)."""
    names = [n for n in node.input if n]
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for graph in graphs:
            for inner in graph.node:
                names.extend(_names_read(inner))
    return names


def _attr_value(attr: onnx.AttributeProto) -> Any:
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8") for v in value]
    return value
