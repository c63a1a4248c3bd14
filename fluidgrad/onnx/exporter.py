"""fluidgrad Program -> ONNX model.

The program is cloned for inference and pruned to what the fetches need (as
`save_inference_model` does); each op is written by its entry in export_table.py, `while`
and `conditional_block` become `Loop` and `If` with their sub-blocks as bodies. fluidgrad
writes variables in place (`increment`, `assign(output=)`), ONNX values are written once:
so every write gets a fresh ONNX name and reads follow the latest one. Parameters become
initializers (in an external data file for large models). The file is checked with
`onnx.checker.check_model(full_check=True)` and written atomically.
"""
from __future__ import annotations

import inspect
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .. import __version__
from ..eager import Tensor, no_grad, to_tensor
from ..executor import Scope, global_scope
from ..framework import Block, Operator, Program, Variable, default_main_program
from ..io import atomic_write, prune
from ..jit import StaticFunction, _TracedProgram
from ..nn.layer import Layer
from ..static import InputSpec
from . import dtypes
from .errors import OnnxExportError
from .export_call import ExportCall, GraphNames, named_axes, parse_call
from .export_shapes import (DimRead, ShapeReads, check_counts, export_count_read, export_fill_read,
                            export_shape_reads, export_slice_reads, find_shape_reads, mark_unknown_axes,
                            probe_inputs)
from .export_table import EXPORTERS
from .load import max_opset

DEFAULT_OPSET = 18
MIN_EXPORT_OPSET = 13
EXTERNAL_DATA_BYTES = 1 << 30  # parameters above this go to `<model>.data` (protobuf's limit is 2 GB)


def export_program(path: str | os.PathLike, feed_vars: Sequence[Variable | str], fetch_vars: Sequence[Variable | str],
                   program: Program | None = None, scope: Scope | None = None, opset_version: int | None = None,
                   *, dynamic_axes: dict | None = None, external_data: bool | None = None) -> onnx.ModelProto:
    """Write the part of `program` computing `fetch_vars` from `feed_vars` as ONNX; returns the model."""
    feed_names = [v.name if isinstance(v, Variable) else v for v in _as_list(feed_vars)]
    fetch_names = [v.name if isinstance(v, Variable) else v for v in _as_list(fetch_vars)]
    if program is None:
        owners = [v.block.program for v in _as_list(feed_vars) + _as_list(fetch_vars) if isinstance(v, Variable)]
        program = owners[0] if owners else default_main_program()
    scope = scope if scope is not None else global_scope()
    return _export_pruned(path, program, feed_names, fetch_names, scope, opset_version, dynamic_axes or {},
                          external_data, ShapeReads())


def _export_pruned(path: str | os.PathLike | None, program: Program, feed_names: list[str], fetch_names: list[str],
                   scope: Scope, opset_version: int | None, dynamic_axes: dict, external_data: bool | None,
                   shape_reads: ShapeReads, naming: "GraphNames | None" = None) -> onnx.ModelProto:
    """The model (written to `path` unless it is None)."""
    opset = _check_opset(opset_version)
    pruned = prune(program.clone(for_test=True), feed_names, fetch_names, "the program to export")
    mark_unknown_axes(pruned, shape_reads.variables)
    model = ProgramExporter(pruned, scope, opset, shape_reads).build(feed_names, fetch_names, dynamic_axes, naming)
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise OnnxExportError(f"the exported model fails onnx.checker: {exc}") from exc
    if path is not None:
        _write(model, Path(path), external_data)
    return model


def export(layer_or_function: Any, path: Any = None, example_inputs: Any = None, opset_version: int | None = None,
           dynamic_axes: dict | None = None, **options: Any) -> onnx.ModelProto:
    """Trace `layer_or_function` (eager code) with `jit.to_static` and write it as ONNX; called as
    fluidgrad's (layer, path, example_inputs), torch.onnx.export's (model, args, f, input_names=,
    output_names=, ...) or paddle.onnx.export's (layer, path_prefix, input_spec=[...]) (export_call.py).

    Example inputs are traced at their shapes; `dynamic_axes` maps an input or output (its index,
    inputs first; the function's argument name; or its ONNX name) to its axes of unknown size (a
    list, or a dict axis -> name as PyTorch takes); a key naming nothing is an error. Shape reads
    of dynamic input axes (`t.shape[0]`) are found by tracing again at another size
    (export_shapes.py); a function whose ops change with the size (a recurrent layer's steps)
    is traced again with those axes unknown (-1), as InputSpecs are traced (Paddle's call).

    Graph names: input_names, else the InputSpecs' names, else the function's argument names,
    else input_<i>; output_names, else output_<i>: the same on every export.

    A Layer is traced in eval mode, as torch.onnx.export does by default: tracing then neither
    updates BatchNorm's running statistics nor exports dropout; each sublayer's mode is restored."""
    call = parse_call(layer_or_function, path, example_inputs, opset_version, dynamic_axes, options)
    if not isinstance(layer_or_function, Layer):
        model = _export_traced(call)
    else:
        modes = [(layer, layer.training) for layer in layer_or_function.sublayers(include_self=True)]
        layer_or_function.eval()
        try:
            model = _export_traced(call)
        finally:
            for layer, training in modes:
                object.__setattr__(layer, "training", training)
    if call.file is not None:
        call.file.write(model.SerializeToString())
    if call.verbose:
        print(onnx.printer.to_text(model.graph))
    return model


def _export_traced(call: ExportCall) -> onnx.ModelProto:
    target = call.target
    fn = target.forward if isinstance(target, Layer) else target
    fn = fn if isinstance(fn, StaticFunction) else StaticFunction(fn)
    if call.specs is not None:
        traced, tensors = _TracedProgram(fn._fn, call.specs, {}), None
    else:
        tensors = [x if isinstance(x, Tensor) else to_tensor(np.asarray(x)) for x in call.inputs]
        fn(*tensors)
        traced = fn._last
    arguments = _argument_names(fn._fn, len(traced.input_vars))
    naming = GraphNames.of(traced, call, arguments)
    ranks = [len(v.shape) for v in traced.input_vars + traced.outputs]
    axes = named_axes(call.dynamic_axes, len(traced.input_vars), naming.all, arguments, ranks)
    reads = ShapeReads()
    if tensors is not None:
        try:
            reads = _shape_reads(fn._fn, traced, tensors, [v.name for v in traced.input_vars], axes)
        except OnnxExportError as refused:  # the ops change with the size: trace with the axes unknown
            traced = _traced_unknown(fn._fn, tensors, axes, refused)
    naming.dims = {naming.all[i]: {a: n for a, n in named.items() if n} for i, named in axes.items()}
    feed = [v.name for v in traced.input_vars]
    fetch = [v.name for v in traced.outputs]
    scope = Scope()
    for name, tensor in traced.captured:
        scope[name] = tensor._array
        traced.program.global_block().var(name).persistable = True
    by_var = {(feed + fetch)[i]: sorted(named) for i, named in axes.items()}
    return _export_pruned(call.path, traced.program, feed, fetch, scope, call.opset_version,
                          _with_output_axes(by_var, fetch, reads), call.external_data, reads, naming)


def _traced_unknown(fn: Any, tensors: list[Tensor], axes: dict[int, dict[int, str | None]],
                    refused: OnnxExportError) -> Any:
    """The trace with every dynamic input axis -1 (InputSpecs), for a function whose ops change
    with the size of the example (unrolled loops). It must give the function's own outputs on the
    example and on the example one longer on those axes (a size read that tracing cannot carry,
    such as `range(t.shape[0])`, would not); otherwise the refusal stands."""
    specs = [InputSpec([-1 if a in axes.get(i, {}) else d for a, d in enumerate(t.shape)], t.dtype,
                       stop_gradient=t.stop_gradient) for i, t in enumerate(tensors)]
    try:
        traced = _TracedProgram(fn, specs, {})
        mismatch = _first_mismatch(fn, traced, tensors, {i: sorted(named) for i, named in axes.items()})
    except Exception as exc:
        raise OnnxExportError(f"{refused}; traced again with the dynamic axes unknown (-1), it fails: "
                              f"{type(exc).__name__}: {exc}") from exc
    if mismatch:
        raise OnnxExportError(f"{refused}; traced again with the dynamic axes unknown (-1), {mismatch}")
    return traced


def _first_mismatch(fn: Any, traced: Any, tensors: list[Tensor], dynamic: dict[int, list[int]]) -> str | None:
    """Where `traced` and the eager `fn` disagree, on the example and on the example one longer
    along the dynamic axes (skipped when fn cannot run at that size); None if nowhere."""
    with no_grad():
        for inputs, at in ((tensors, "the example"), (probe_inputs(tensors, dynamic), "the example one longer")):
            try:
                want = _tensor_leaves(fn(*inputs))
            except Exception:
                if inputs is tensors:
                    raise
                continue
            got = _tensor_leaves(traced.run(inputs))
            if len(got) != len(want):
                return f"it gives {len(got)} outputs where the function gives {len(want)}"
            for k, (a, b) in enumerate(zip(got, want)):
                if a.shape != b.shape or not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
                    return f"its output {k} differs from the function's on {at}"
    return None


def _tensor_leaves(tree: Any) -> list[np.ndarray]:
    if isinstance(tree, Tensor):
        return [tree.numpy()]
    if isinstance(tree, dict):
        tree = list(tree.values())
    if isinstance(tree, (tuple, list)):
        return [leaf for part in tree for leaf in _tensor_leaves(part)]
    return []


def _argument_names(fn: Any, count: int) -> list[str]:
    """The names of the first `count` positional parameters of `fn` (fewer if it takes *args)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return []
    names = []
    for parameter in parameters[:count]:
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            break
        names.append(parameter.name)
    return names


def _shape_reads(fn: Any, traced: Any, tensors: list[Tensor], feed: list[str],
                 axes: dict[int, dict[int, str | None]]) -> ShapeReads:
    """Trace again with every dynamic input axis one longer: what the shapes read (see export_shapes)."""
    dynamic = {i: sorted(axes[i]) for i in range(len(feed)) if axes.get(i)}
    if not dynamic:
        return ShapeReads()
    # one longer; twice as long where that cannot run (split(x, 2) of an even batch), then
    # three times as long for the third trace
    sizings = [(dict(longer=1), dict(longer=2), "one longer"), (dict(longer=0, times=2), dict(longer=0, times=3),
                                                                 "twice as long")]
    failures = []
    for probe_sizing, third_sizing, how in sizings:
        probes = probe_inputs(tensors, dynamic, **probe_sizing)
        try:
            probe = _TracedProgram(fn, probes, {})
            break
        except Exception as exc:  # the function cannot run at that size
            failures.append(f"{how}: {exc}")
    else:
        warnings.warn(f"onnx.export: tracing again with the dynamic axes at other sizes failed ("
                      f"{'; '.join(failures)}); shape reads of the dynamic axes (t.shape[i]) are not checked",
                      stacklevel=3)
        return ShapeReads()
    sizes = ([t.shape for t in tensors], [t.shape for t in probes])
    reads = find_shape_reads(traced, probe, feed, dynamic, sizes)
    if reads.scale:  # counts of a dynamic axis: checked at a third size
        third_inputs = probe_inputs(tensors, dynamic, **third_sizing)
        try:
            third = _TracedProgram(fn, third_inputs, {})
        except Exception as exc:
            warnings.warn(f"onnx.export: tracing again with the dynamic axes at a third size failed ({exc}); the "
                          f"counts of dynamic axes (var's 1 / (n - 1)) are not checked", stacklevel=3)
            return reads
        check_counts(reads, third, {DimRead(feed[i], axis): third_inputs[i].shape[axis]
                                    for i, axes in dynamic.items() for axis in axes})
    return reads


def _with_output_axes(axes: dict[str, list[int]], fetch: list[str], reads: ShapeReads) -> dict[str, list[int]]:
    """`axes` and the output axes that follow a dynamic input axis (found by the second trace)."""
    result = dict(axes)
    for index, found in reads.outputs.items():
        result[fetch[index]] = sorted(set(result.get(fetch[index], [])) | set(found))
    return result


def _as_list(items: Any) -> list:
    return [items] if isinstance(items, (Variable, str)) else list(items)


def _check_opset(opset_version: int | None) -> int:
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_EXPORT_OPSET <= opset <= max_opset():
        raise OnnxExportError(f"opset_version {opset} is outside what fluidgrad exports "
                              f"({MIN_EXPORT_OPSET} to {max_opset()})")
    return opset


def _write(model: onnx.ModelProto, path: Path, external_data: bool | None) -> None:
    size = sum(t.ByteSize() for t in model.graph.initializer)
    if external_data is None:
        external_data = size > EXTERNAL_DATA_BYTES
    if not external_data:
        atomic_write(path, model.SerializeToString())
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    data_name = path.name + ".data"
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        data_path = path.parent / data_name
        if data_path.exists():
            data_path.unlink()  # save_model appends to an existing data file
        onnx.save_model(copy, tmp, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=data_name, size_threshold=1024)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class ProgramExporter:
    """Writes one pruned program: its nodes, initializers and fresh SSA names."""

    def __init__(self, program: Program, scope: Scope, opset: int, shape_reads: ShapeReads | None = None) -> None:
        self.program = program
        self.scope = scope
        self.opset = opset
        self.shape_reads = shape_reads or ShapeReads()
        self.initializers: dict[str, onnx.TensorProto] = {}
        self.used: set[str] = set()
        self._counter = 0
        self.fetched: set[str] = set()
        self._read_by_ops = {n for b in program.blocks for op in b.ops for n in op.input_arg_names}

    def build(self, feed_names: list[str], fetch_names: list[str], dynamic_axes: dict,
              naming: "GraphNames | None" = None) -> onnx.ModelProto:
        """The model; its inputs and outputs are named as `naming` says (default: the variables')."""
        block = self.program.global_block()
        self.fetched = set(fetch_names)
        input_names = naming.inputs if naming is not None else feed_names
        output_names = naming.outputs if naming is not None else [None] * len(fetch_names)
        dims = naming.dims if naming is not None else {}
        self.used.update(input_names)
        self.used.update(n for n in output_names if n is not None)
        env: dict[str, str] = {}
        inputs = []
        for name, onnx_name in zip(feed_names, input_names):
            inputs.append(_value_info(onnx_name, block.var(name), dynamic_axes.get(name), dims=dims.get(onnx_name)))
            env[name] = onnx_name
        nodes: list[onnx.NodeProto] = []
        self.export_block(block, nodes, env)
        outputs = []
        for name, wanted in zip(fetch_names, output_names):
            onnx_name = self.read(env, block, name)
            if wanted is not None:
                onnx_name = self.emit(nodes, "Identity", [onnx_name], [wanted])
            elif onnx_name in self.initializers or onnx_name in input_names or onnx_name in {
                    o.name for o in outputs}:
                onnx_name = self.emit(nodes, "Identity", [onnx_name])
            outputs.append(_value_info(onnx_name, block.var(name), dynamic_axes.get(name), dims=dims.get(onnx_name)))
        graph = helper.make_graph(nodes, "fluidgrad", inputs, outputs, list(self.initializers.values()))
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                 producer_name="fluidgrad", producer_version=__version__)

    def is_read(self, name: str) -> bool:
        """Whether the model needs `name` (an op reads it, or it is fetched): an optional output
        nobody reads (max pooling's mask) is not written."""
        return name in self.fetched or name in self._read_by_ops

    # -- names
    def fresh(self, base: str) -> str:
        name = base
        while name in self.used:
            name = f"{base}__{self._counter}"
            self._counter += 1
        self.used.add(name)
        return name

    def read(self, env: dict[str, str], block: Block, name: str) -> str:
        """The ONNX name holding `name`'s current value; a parameter becomes an initializer."""
        if name in env:
            return env[name]
        var = block._find_var_recursive(name)
        if var is None or not var.persistable:
            raise OnnxExportError(f"variable {name!r} is read before any op writes it, and it is neither fed "
                                  f"nor a parameter")
        value = self.scope.get(name)
        if value is None:
            raise OnnxExportError(f"parameter {name!r} has no value in the scope (run the startup program, or "
                                  f"load the parameters, before exporting)")
        self.initializers[name] = numpy_helper.from_array(np.asarray(value, dtype=var.dtype), name)
        self.used.add(name)
        env[name] = name
        return name

    def constant(self, array: np.ndarray) -> str:
        name = self.fresh("const")
        self.initializers[name] = numpy_helper.from_array(np.asarray(array), name)
        return name

    def emit(self, nodes: list, op_type: str, inputs: list[str], outputs: list[str] | None = None, **attrs) -> str:
        outputs = outputs if outputs is not None else [self.fresh(op_type.lower())]
        nodes.append(helper.make_node(op_type, inputs, outputs, name=self.fresh(f"{op_type}_node"), **attrs))
        return outputs[0]

    # -- blocks
    def export_block(self, block: Block, nodes: list, env: dict[str, str]) -> None:
        for op in block.ops:
            context = OpContext(self, op, block, nodes, env)
            if op.type in CONTROL_FLOW:
                CONTROL_FLOW[op.type](context)
                continue
            fn = EXPORTERS.get(op.type)
            if fn is None:
                raise OnnxExportError(f"op {op.type} ({_describe_op(op)}) has no ONNX equivalent in fluidgrad's "
                                      f"exporter; it cannot be exported")
            if _along_an_axis_of_0d(op, block):
                raise context.refuse("a 0-D X along axis 0 / -1 (ONNX's Softmax, Reduce*, TopK, Slice want rank >= 1)")
            if block.idx == 0 and self._export_shape_read(context):
                continue
            fn(context)

    def _export_shape_read(self, c: "OpContext") -> bool:
        """Write an op that carries the size of a dynamic axis (`t.shape[0]`) as that size read at run time."""
        key = c.op.output_arg_names[0] if c.op.output_arg_names else None
        if c.op.type == "fill_constant" and key in self.shape_reads.fill:
            export_fill_read(c, self.shape_reads.fill[key])
            return True
        if key in self.shape_reads.shape:
            export_shape_reads(c, self.shape_reads.shape[key])
            return True
        if c.op.type == "slice" and key in self.shape_reads.slice:
            export_slice_reads(c, self.shape_reads.slice[key])
            return True
        if c.op.type == "scale" and key in self.shape_reads.scale:
            export_count_read(c, self.shape_reads.scale[key])
            return True
        return False

    def subgraph(self, block: Block, env: dict[str, str], inputs: list[onnx.ValueInfoProto],
                 outputs_of: Any, name: str, prologue: Any = None) -> onnx.GraphProto:
        nodes: list = []
        if prologue is not None:  # nodes before the block's own (a Loop body's scan-input rows)
            prologue(nodes, env)
        self.export_block(block, nodes, env)
        outputs = outputs_of(nodes, env)
        return helper.make_graph(nodes, self.fresh(name), inputs, outputs)


def _along_an_axis_of_0d(op: Operator, block: Block) -> bool:
    """An op along an axis of a 0-D X (fluidgrad and PyTorch accept axis 0 / -1 there)."""
    if op.attrs.get("axis") in (None, [], ()) or not op.inputs.get("X"):
        return False
    return len(block.var_recursive(op.inputs["X"][0]).shape) == 0


def _describe_op(op: Operator) -> str:
    ins = ", ".join(f"{k}={v}" for k, v in op.inputs.items())
    return f"inputs {ins}" if ins else "no inputs"


def _value_info(name: str, var: Variable, dynamic: Sequence[int] | None = None, with_shape: bool = True,
                dims: dict[int, str] | None = None) -> onnx.ValueInfoProto:
    """`name`'s type; an unknown or dynamic axis is a named dimension (`dims`' name, or
    `<name>_dim<axis>`)."""
    elem = dtypes.to_onnx(var.dtype)
    if not with_shape:
        return helper.make_tensor_value_info(name, elem, None)
    dynamic, dims = set(dynamic or ()) | set(dims or ()), dims or {}
    shape = [dims.get(i, f"{name}_dim{i}") if d < 0 or i in dynamic else int(d) for i, d in enumerate(var.shape)]
    return helper.make_tensor_value_info(name, elem, shape)


class OpContext:
    """What an op exporter sees (see export_table.py)."""

    def __init__(self, exporter: ProgramExporter, op: Operator, block: Block, nodes: list, env: dict[str, str]):
        self.exporter, self.op, self.block, self.nodes, self.env = exporter, op, block, nodes, env
        self.opset = exporter.opset

    def refuse(self, reason: str) -> OnnxExportError:
        return OnnxExportError(f"op {self.op.type} ({_describe_op(self.op)}) cannot be exported: {reason}")

    def attr(self, name: str) -> Any:
        return self.op.attr(name)

    def has(self, slot: str) -> bool:
        return bool(self.op.input(slot))

    def var(self, name: str) -> Variable:
        return self.block.var_recursive(name)

    def x(self, slot: str, index: int = 0) -> str:
        return self.exporter.read(self.env, self.block, self.op.input(slot)[index])

    def xs(self, slot: str) -> list[str]:
        return [self.exporter.read(self.env, self.block, n) for n in self.op.input(slot)]

    def out(self, slot: str, index: int = 0) -> str:
        name = self.op.output(slot)[index]
        onnx_name = self.exporter.fresh(name)
        self.env[name] = onnx_name
        return onnx_name

    def dtype_in(self, slot: str) -> str:
        return self.var(self.op.input(slot)[0]).dtype

    def shape_in(self, slot: str) -> tuple[int, ...]:
        return self.var(self.op.input(slot)[0]).shape

    def dtype_of(self, slot: str) -> str:
        return self.var(self.op.output(slot)[0]).dtype

    def shapes_out(self, slot: str) -> list[tuple[int, ...]]:
        return [self.var(n).shape for n in self.op.output(slot)]

    def onnx_dtype(self, dtype: str) -> int:
        return dtypes.to_onnx(dtype)

    def node(self, op_type: str, inputs: list[str], outputs: list[str] | None = None, **attrs: Any) -> str:
        return self.exporter.emit(self.nodes, op_type, inputs, outputs, **attrs)

    def const(self, array: np.ndarray) -> str:
        return self.exporter.constant(array)

    def tensor(self, array: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(array))

    def cast(self, name: str, dtype: str) -> str:
        return self.node("Cast", [name], to=dtypes.to_onnx(dtype))

    def scalar_bool(self, name: str) -> str:
        """A one-element condition as the 0-d bool ONNX wants."""
        return self.cast(self.node("Reshape", [name, self.const(np.zeros([0], "int64"))]), "bool")


# ---------------------------------------------------------------- control flow
def _export_while(c: OpContext) -> None:
    op, exporter = c.op, c.exporter
    sub = op.attr("sub_block")
    cond_name = op.input("Condition")[0]
    carried = [n for n in op.output("Out") if n != cond_name]
    initial = [c.exporter.read(c.env, c.block, n) for n in carried]
    body_env = dict(c.env)
    iteration = exporter.fresh("iteration")
    cond_in = exporter.fresh(f"{cond_name}_in")
    body_env[cond_name] = cond_in
    body_inputs = [helper.make_tensor_value_info(iteration, onnx.TensorProto.INT64, []),
                   helper.make_tensor_value_info(cond_in, onnx.TensorProto.BOOL, [])]
    for name in carried:
        inner = exporter.fresh(f"{name}_in")
        body_env[name] = inner
        body_inputs.append(_value_info(inner, c.var(name), with_shape=False))

    scan_vars = list(op.attr("scan_vars") or [])

    def body_outputs(nodes, env):
        cond_ctx = OpContext(exporter, op, sub, nodes, env)
        outs = [helper.make_tensor_value_info(cond_ctx.scalar_bool(env[cond_name]), onnx.TensorProto.BOOL, [])]
        for name in carried:
            value = exporter.emit(nodes, "Identity", [env[name]])
            outs.append(_value_info(value, c.var(name), with_shape=False))
        for name in scan_vars:  # the Loop's scan outputs, one row per step
            value = exporter.emit(nodes, "Identity", [env[name]])
            outs.append(_value_info(value, sub.var(name), with_shape=False))
        return outs

    scan_ins = c.xs("ScanIn")

    def rows_of_scan_inputs(nodes, env):  # ONNX Loop has no scan inputs: step i gathers its row
        for name, x in zip(op.attr("scan_in_vars") or [], scan_ins):
            env[name] = exporter.emit(nodes, "Gather", [x, iteration], axis=0)

    body = exporter.subgraph(sub, body_env, body_inputs, body_outputs, "loop_body", rows_of_scan_inputs)
    results = [c.out("Out", op.output("Out").index(n)) for n in carried]
    steps = [exporter.fresh("scan_rows") for _ in scan_vars]
    c.node("Loop", ["", c.scalar_bool(c.x("Condition"))] + initial, results + steps, body=body)
    for k, rows in enumerate(steps):
        _export_scan_output(c, k, rows)


def _export_scan_output(c: OpContext, k: int, rows: str) -> None:
    """ScanOut k = Concat(ScanInit k, the Loop's rows). A Loop that ran no step gives rows of
    shape [0, 0, ...] (onnxruntime cannot know a dynamic size), so the rows are first reshaped
    to [-1] + ScanInit's row shape."""
    init = c.x("ScanInit", k)
    row_shape = c.node("Slice", [c.node("Shape", [init]), c.const(np.array([1], "int64")),
                                 c.const(np.array([np.iinfo(np.int64).max], "int64"))])
    target = c.node("Concat", [c.const(np.array([-1], "int64")), row_shape], axis=0)
    c.node("Concat", [init, c.node("Reshape", [rows, target])], [c.out("ScanOut", k)], axis=0)


def _export_conditional_block(c: OpContext) -> None:
    op, exporter = c.op, c.exporter
    sub = op.attr("sub_block")
    outs = op.output("Out")
    if not outs:
        return  # a branch writing nothing outside has no effect on the fetches

    def then_outputs(nodes, env):
        return [_value_info(exporter.emit(nodes, "Identity", [env[n]]), c.var(n), with_shape=False) for n in outs]

    def else_outputs(nodes, env):
        values = []
        for name in outs:
            var = c.var(name)
            if name in c.env or (var.persistable and exporter.scope.get(name) is not None):
                before = exporter.read(c.env, c.block, name)
                value = exporter.emit(nodes, "Identity", [before])
            else:  # written only by the branch: a placeholder that `select_input` never picks
                value = exporter.emit(nodes, "Constant", [], value=numpy_helper.from_array(
                    np.zeros([], var.dtype)))
            values.append(_value_info(value, var, with_shape=False))
        return values

    then_branch = exporter.subgraph(sub, dict(c.env), [], then_outputs, "then")
    else_branch = _else_graph(exporter, c, else_outputs)
    results = [c.out("Out", i) for i in range(len(outs))]
    c.node("If", [c.scalar_bool(c.x("Cond"))], results, then_branch=then_branch, else_branch=else_branch)


def _else_graph(exporter: ProgramExporter, c: OpContext, outputs_of: Any) -> onnx.GraphProto:
    nodes: list = []
    outputs = outputs_of(nodes, c.env)
    return helper.make_graph(nodes, exporter.fresh("else"), [], outputs)


CONTROL_FLOW = {"while": _export_while, "conditional_block": _export_conditional_block}
