"""The three ways code calls `onnx.export`, read into one `ExportCall`; the graph's names.

    fluidgrad.onnx.export(layer, "m.onnx", [x], opset_version=None, dynamic_axes=None)    # fluidgrad's
    torch.onnx.export(model, (x,), "m.onnx", input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})      # PyTorch's
    paddle.onnx.export(layer, "out/m", input_spec=[InputSpec([None, 4], "float32", "input")])  # Paddle's

torch passes the example arguments second and the file third; the call is read that way when
the second argument is not a path and the third is one (a path or a binary file object).
Paddle's `path` is a prefix: the model is written to `path + ".onnx"` (a path already ending
in ".onnx" is kept). Keywords that change nothing in fluidgrad's exporter are accepted
(`do_constant_folding`, `dynamo`, `optimize`, ...); those asking for what it does not do
(`export_params=False`, `keep_initializers_as_inputs=True`, training mode) are refused by name.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..eager import Tensor
from ..static import InputSpec

# torch's and Paddle's keywords that fluidgrad's exporter has no use for (it always folds the
# constants it can, checks the model, and has one exporter)
_NO_EFFECT = frozenset({"do_constant_folding", "dynamo", "optimize", "autograd_inlining", "enable_onnx_checker",
                        "report", "verify", "profile", "dump_exported_program", "artifacts_dir"})


@dataclass
class ExportCall:
    """One export, whichever way it was asked for: what to trace (example `inputs`, or `specs`
    without values), where to write it (`path`, or torch's binary `file`), and the graph's names."""

    target: Any
    path: str | os.PathLike | None = None
    file: Any = None
    inputs: list[Any] | None = None
    specs: list[InputSpec] | None = None
    opset_version: int | None = None
    dynamic_axes: dict = field(default_factory=dict)
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    verbose: bool = False
    external_data: bool | None = None


def _is_destination(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike)) or (hasattr(value, "write") and not isinstance(value, Tensor))


def _example_list(args: Any) -> list[Any]:
    """torch's `args` / fluidgrad's example_inputs: one value, or a tuple / list of them."""
    items = list(args) if isinstance(args, (list, tuple)) else [args]
    if items and isinstance(items[-1], dict):
        raise TypeError("onnx.export: keyword arguments for the model (a dict at the end of args, or kwargs=) are "
                        "not supported; pass the model's inputs positionally")
    return items


def _names(value: Any, what: str) -> list[str]:
    names = list(value or [])
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise ValueError(f"onnx.export: {what} must be distinct non-empty strings, got {value!r}")
    return names


def _specs(input_spec: Any) -> list[InputSpec]:
    """Paddle's input_spec: InputSpecs (None in a shape: a dynamic axis) or example Tensors."""
    items = list(input_spec) if isinstance(input_spec, (list, tuple)) else [input_spec]
    specs = []
    for i, item in enumerate(items):
        if isinstance(item, Tensor):
            item = InputSpec(item.shape, item.dtype, stop_gradient=item.stop_gradient)
        if not isinstance(item, InputSpec):
            raise TypeError(f"onnx.export: input_spec[{i}] must be an InputSpec or a Tensor, got "
                            f"{type(item).__name__}")
        specs.append(item)
    return specs


def _check_options(options: dict[str, Any]) -> None:
    """Refuse, by name, the keywords asking for an export fluidgrad does not make."""
    if not options.pop("export_params", True):
        raise ValueError("onnx.export: export_params=False (parameters as graph inputs) is not supported; "
                         "fluidgrad writes them as initializers")
    if options.pop("keep_initializers_as_inputs", None):
        raise ValueError("onnx.export: keep_initializers_as_inputs=True is not supported")
    training = options.pop("training", None)
    if training and "EVAL" not in str(training).upper():
        raise ValueError(f"onnx.export: training={training!r}: fluidgrad exports a Layer in eval mode "
                         f"(dropout off, batch norm on its running statistics), as TrainingMode.EVAL")
    if options.pop("kwargs", None) or options.pop("dynamic_shapes", None):
        raise TypeError("onnx.export: kwargs= and dynamic_shapes= (torch.export's) are not supported; pass the "
                        "inputs positionally and mark their dynamic axes with dynamic_axes=")
    if options.pop("custom_opsets", None) or options.pop("export_modules_as_functions", False):
        raise ValueError("onnx.export: custom_opsets and export_modules_as_functions are not supported")
    operator_export_type = options.pop("operator_export_type", None)
    if operator_export_type is not None and not str(operator_export_type).upper().endswith("ONNX"):
        raise ValueError(f"onnx.export: operator_export_type={operator_export_type!r}: fluidgrad writes standard "
                         f"ONNX operators only")
    unknown = sorted(set(options) - _NO_EFFECT)
    if unknown:
        raise TypeError(f"onnx.export: unexpected keyword arguments {unknown}")


def parse_call(target: Any, path: Any, example_inputs: Any, opset_version: int | None, dynamic_axes: Any,
               options: dict[str, Any]) -> ExportCall:
    """The ExportCall of `onnx.export(target, path, example_inputs, opset_version, dynamic_axes, **options)`,
    whichever of the three forms the arguments follow (see the module docstring)."""
    options = dict(options)
    input_spec = options.pop("input_spec", None)
    if example_inputs is not None and _is_destination(example_inputs) and not _is_destination(path):
        path, example_inputs = example_inputs, path                       # torch's (model, args, f)
    call = ExportCall(target, opset_version=opset_version, dynamic_axes=dict(dynamic_axes or {}),
                      input_names=_names(options.pop("input_names", None), "input_names"),
                      output_names=_names(options.pop("output_names", None), "output_names"),
                      verbose=bool(options.pop("verbose", False)), external_data=options.pop("external_data", None))
    _check_options(options)
    if not _is_destination(path):
        raise TypeError(f"onnx.export: give the file to write (a path, or a binary file object), got "
                        f"{type(path).__name__}")
    if input_spec is not None:
        if example_inputs is not None:
            raise TypeError("onnx.export: give example inputs or input_spec (Paddle's), not both")
        call.specs = _specs(input_spec)
        if isinstance(path, (str, os.PathLike)) and not os.fspath(path).endswith(".onnx"):
            path = os.fspath(path) + ".onnx"                              # Paddle's path prefix
    elif example_inputs is None:
        raise TypeError("onnx.export: give example inputs (fluidgrad's example_inputs, torch's args) or "
                        "input_spec=[InputSpec(...)] (Paddle's)")
    else:
        call.inputs = _example_list(example_inputs)
    if isinstance(path, (str, os.PathLike)):
        call.path = path
    else:
        call.file = path
    return call


@dataclass
class GraphNames:
    """The ONNX names of the graph's inputs and outputs (in the traced program's order), and the
    names of dynamic dimensions given by dynamic_axes' dict form ({ONNX name: {axis: name}})."""

    inputs: list[str]
    outputs: list[str]
    dims: dict[str, dict[int, str]] = field(default_factory=dict)

    @property
    def all(self) -> list[str]:
        return self.inputs + self.outputs

    @classmethod
    def of(cls, traced: Any, call: ExportCall, arguments: list[str]) -> "GraphNames":
        n_in, n_out = len(traced.input_vars), len(traced.outputs)
        for given, count, what in ((call.input_names, n_in, "inputs"), (call.output_names, n_out, "outputs")):
            if len(given) > count:
                raise ValueError(f"onnx.export: {len(given)} names given for the {count} {what} of the traced "
                                 f"function: {given}")
        taken = set(call.input_names) | set(call.output_names)
        inputs = [call.input_names[i] if i < len(call.input_names) else
                  _untaken(_default_input_name(call, arguments, i), taken) for i in range(n_in)]
        outputs = [call.output_names[i] if i < len(call.output_names) else _untaken(f"output_{i}", taken)
                   for i in range(n_out)]
        return cls(inputs, outputs)


def _default_input_name(call: ExportCall, arguments: list[str], i: int) -> str:
    spec_name = call.specs[i].name if call.specs is not None and i < len(call.specs) else None
    return spec_name or (arguments[i] if i < len(arguments) else f"input_{i}")


def _untaken(name: str, taken: set[str]) -> str:
    """`name`, or `name_1`, `name_2`, ... if a name given or chosen before has it; then taken."""
    candidate, k = name, 0
    while candidate in taken:
        k += 1
        candidate = f"{name}_{k}"
    taken.add(candidate)
    return candidate


def named_axes(dynamic_axes: dict, n_inputs: int, names: list[str], arguments: list[str],
                ranks: list[int]) -> dict[int, dict[int, str | None]]:
    """Input / output index (inputs first) -> {axis: its name, or None}. Keys are indices,
    argument names or ONNX names (PyTorch keys dynamic_axes by input and output names); values
    a list of axes, or PyTorch's dict axis -> name."""
    by_name = {**{name: i for i, name in enumerate(names)}, **{arg: i for i, arg in enumerate(arguments)}}
    result: dict[int, dict[int, str | None]] = {}
    for key, axes in dynamic_axes.items():
        if isinstance(key, int) and not isinstance(key, bool) and -len(names) <= key < len(names):
            index = key % len(names)
        elif isinstance(key, str) and key in by_name:
            index = by_name[key]
        else:
            raise ValueError(f"onnx.export: dynamic_axes key {key!r} names no input or output; use an index "
                             f"(inputs first, {n_inputs} inputs and {len(names) - n_inputs} outputs), an argument "
                             f"name {arguments} or an ONNX name {names}")
        rank = ranks[index]
        named = dict(axes) if isinstance(axes, dict) else {a: None for a in axes}
        if not all(isinstance(a, int) and -rank <= a < rank for a in named):
            raise ValueError(f"onnx.export: dynamic_axes[{key!r}] = {axes!r} names an axis outside the "
                             f"{rank} axes of {names[index]}")
        if not all(n is None or isinstance(n, str) for n in named.values()):
            raise ValueError(f"onnx.export: dynamic_axes[{key!r}] = {axes!r}: an axis's name must be a string")
        result.setdefault(index, {}).update({a % rank: n for a, n in named.items()})
    return result
