"""to_static: trace eager code into a Program, then run that Program on the Executor.

    @fluidgrad.jit.to_static
    def f(x):
        return fluidgrad.tanh(model(x)).sum()

    y = f(x)            # Tensors in, Tensors out (values from the Executor)
    y.backward()        # gradients from the backward program built by `gradients`
    f.main_program      # the traced Program

Tracing calls `fn` once with static `data` Variables standing for the Tensor arguments,
inside a fresh Program. Ops between Variables append themselves as usual; an op that meets
a Tensor the function captured (a layer's weight, a constant) reaches `eager_apply`, whose
tracer turns that Tensor into a program variable: a trainable Parameter when it needs a
gradient, a persistable constant otherwise. Each call feeds the arguments, loads the
captured Tensors' current values into a private Scope and runs the Program. The result
Tensors get one engine node whose backward runs the backward program (the forward ops
plus those `gradients` appended), so eager code downstream of a static function
backpropagates through it.

A trace is reused only for a call it fits: the cache key is the arguments' structure
(`_structure`: containers and their lengths, each Tensor's shape, dtype and stop_gradient,
other values by type and value, unknown objects by identity), never their printed text;
every Tensor in the arguments, however nested, is fed, never baked in.

Checkpoints: `to_static(fn, checkpoints="auto")`, or `fluidgrad.recompute(block, x)` calls
inside `fn` (each marks its boundary, `recompute_eager.marked_checkpoints`), make the backward
program recompute the forward between checkpoints (`gradients(..., checkpoints=)`): the
gradients are unchanged, fewer activations stay alive in the backward run. Each trace also
records the train/eval mode of every Layer that ran while tracing (Layer.__call__ reports
it), and is reused only while those modes are unchanged: `model.eval()` retraces.

Deployment (Paddle 2's `paddle.jit.save` / `paddle.jit.load`):

    fluidgrad.jit.save(model, "out/model", input_spec=[InputSpec([None, 784], "float32")])
    loaded = fluidgrad.jit.load("out/model")      # a TranslatedLayer: no need for model's class
    y = loaded(x)

`save` traces the Layer in eval mode with data Variables of the specs' shapes (None: a size
known at run time) and writes what `io.save_inference_model` writes: the inference program
(pruned, dropout off, batch norm on running statistics) as `out/model.pdmodel.json` and its
parameters as `out/model.pdparams.safetensors`, each file atomically. `load` reads them back
into a TranslatedLayer: calling it runs the program on the Executor; its parameters are
trainable Tensors, and gradients flow through a call as through a to_static function.
"""
from __future__ import annotations

import collections
import functools
import json
import re
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .backward import gradients
from .dispatch import append_static_op
from .eager.apply import record_custom
from .eager.mode import is_grad_enabled, set_tracer
from .eager.node import CustomOp
from .eager.tensor import Tensor
from .executor import Executor, Scope
from .framework import Parameter, Program, Variable, program_guard, runtime_dims, unique_name
from .framework.dtypes import is_float
from .io import load_inference_model, save_inference_model
from .io.model_files import ModelFileError, read_metadata
from .nn import layer as layer_module
from .nn.layer import Layer
from .recompute_eager import marked_checkpoints
from . import static_views
from .static import InputSpec, data

__all__ = ["ConcreteProgram", "InputSpec", "StaticFunction", "TranslatedLayer", "load", "not_to_static", "save",
           "to_static"]


@dataclass
class ConcreteProgram:
    """One trace of a StaticFunction (Paddle's name): `parameters` pairs each captured Tensor
    with its variable's name; `checkpoints` is what the backward recomputes from (or None)."""

    main_program: Program
    inputs: list[Variable]
    outputs: list[Variable]
    parameters: list[tuple[str, Tensor]]
    checkpoints: list[str] | str | None


class _Tracer:
    """Turns the Tensors an op meets while tracing into variables of the traced program."""

    def __init__(self, program: Program) -> None:
        self.block = program.global_block()
        self.vars: dict[int, Variable] = {}
        self.captured: list[tuple[str, Tensor]] = []
        self.writes: list[tuple[Tensor, Variable]] = []

    def variable(self, tensor: Tensor) -> Variable:
        var = self.vars.get(id(tensor))
        if var is None:
            base = re.sub(r"[^0-9A-Za-z_.]", "_", tensor.name) if tensor.name else "captured"
            name = unique_name(base)
            shape, dtype = tensor.shape, tensor.dtype
            if not tensor.stop_gradient:
                var = self.block.create_parameter(name, shape, dtype, trainable=True)
            else:
                var = self.block.create_var(name, shape, dtype, persistable=True, stop_gradient=True)
            self.vars[id(tensor)] = var
            self.captured.append((name, tensor))
        return var

    def _convert(self, value: Any) -> Any:
        if isinstance(value, Tensor):
            return self.variable(value)
        if isinstance(value, (list, tuple)):
            return [self._convert(v) for v in value]
        return value

    def apply(self, op_type: str, inputs: dict, attrs: dict, n_out: int | None) -> Any:
        return append_static_op(op_type, {k: self._convert(v) for k, v in inputs.items()}, dict(attrs), n_out)

    def write(self, tensor: Tensor, value: Variable) -> None:
        """`tensor.set_value(variable)` while tracing (e.g. BatchNorm's running statistics):
        after every run, the variable's value is copied into the Tensor."""
        self.writes.append((tensor, value))

    def rebind(self, tensor: Tensor, value: Variable) -> None:
        """An in-place update of `tensor` while tracing (`self.count += 1`, `buf.copy_(v)`): the ops
        traced after it read `value`, and `value` is copied into the Tensor after every run."""
        self.write(tensor, value)
        self.vars[id(tensor)] = value
        static_views.refresh(tensor)   # its views traced so far read the new value


def _flatten_outputs(result: Any, tracer: _Tracer) -> tuple[list[Variable], Callable[[list], Any], Any]:
    """The output Variables (the Tensor leaves of `result`, depth first, as torch.jit.trace and
    torch.onnx.export flatten them), a function rebuilding the function's result structure:
    tuples, lists, named tuples and dicts nest to any depth (nn.LSTM returns (out, (h, c))),
    None leaves stay None; and that structure as JSON values (`output_tree`, which jit.save
    keeps so that jit.load gives the same nesting back)."""
    outputs: list[Variable] = []

    def template(item: Any) -> tuple[Callable[[Any], Any], Any]:
        if isinstance(item, (Tensor, Variable)):
            outputs.append(tracer.variable(item) if isinstance(item, Tensor) else item)
            return next, "tensor"
        if item is None:
            return (lambda values: None), None
        if isinstance(item, dict):
            kind, parts = type(item), {key: template(value) for key, value in item.items()}
            return (lambda values: kind((key, part(values)) for key, (part, _) in parts.items()),
                    {"dict": [[key, tree] for key, (_, tree) in parts.items()]})
        if isinstance(item, (tuple, list)):
            kind, parts = type(item), [template(value) for value in item]
            trees = [tree for _, tree in parts]
            if hasattr(item, "_fields"):  # a named tuple takes its fields as arguments
                return (lambda values: kind(*(part(values) for part, _ in parts)),
                        {"namedtuple": kind.__name__, "fields": list(kind._fields), "items": trees})
            return (lambda values: kind(part(values) for part, _ in parts),
                    {"tuple" if isinstance(item, tuple) else "list": trees})
        raise TypeError(f"to_static: the function must return Tensors (or tuples/lists/dicts of them, nested "
                        f"to any depth, or None), got {type(item).__name__}")

    build, tree = template(result)
    return outputs, lambda values: build(iter(values)), tree


def output_tree_rebuilder(tree: Any) -> Callable[[list], Any]:
    """The function putting a flat list of outputs back into the nesting `tree` describes (see
    `_flatten_outputs`); named tuples come back as collections.namedtuple of the same name and fields."""
    def build(node: Any, values: Any) -> Any:
        if node == "tensor":
            return next(values)
        if node is None:
            return None
        if "dict" in node:
            return {key: build(child, values) for key, child in node["dict"]}
        if "namedtuple" in node:
            kind = collections.namedtuple(node["namedtuple"], node["fields"])
            return kind(*(build(child, values) for child in node["items"]))
        kind = tuple if "tuple" in node else list
        return kind(build(child, values) for child in node["tuple" if kind is tuple else "list"])
    return lambda values: build(tree, iter(values))


class _TracedProgram:
    """One trace: the Program, its inputs, outputs and captured Tensors, and its backward programs."""

    def __init__(self, fn: Callable, args: Sequence[Any], kwargs: dict,
                 checkpoints: Sequence[str] | str | None = None) -> None:
        self.program, self.startup = Program(), Program()
        self.checkpoint_option = checkpoints
        self.input_vars: list[Variable] = []  # one per Tensor leaf of (args, kwargs), in order
        self._input_names: list[str] = []
        tracer = _Tracer(self.program)
        owner = getattr(fn, "__self__", None)  # a Layer's forward reads its own `training` too
        ran = {id(layer): layer for layer in owner.sublayers(include_self=True)} \
            if isinstance(owner, layer_module.Layer) else {}
        with program_guard(self.program, self.startup):
            def as_input(tensor: Tensor | InputSpec) -> Variable:
                name = tensor.name if isinstance(tensor, InputSpec) and tensor.name else None
                var = data(name or unique_name(f"input_{len(self.input_vars)}"), tensor.shape, tensor.dtype)
                var.stop_gradient = tensor.stop_gradient
                tracer.vars[id(tensor)] = var
                self.input_vars.append(var)
                self._input_names.append(var.name)
                return var
            call_args, call_kwargs = _replace_tensors((tuple(args), kwargs), as_input)
            saved = set_tracer(tracer)
            layer_module.call_observers.append(lambda layer: ran.setdefault(id(layer), layer))
            try:
                with runtime_dims.reading():  # x.shape[0] of an unknown size: read at run time
                    result = fn(*call_args, **call_kwargs)
                self.outputs, self.rebuild, self.output_tree = _flatten_outputs(result, tracer)
            finally:
                layer_module.call_observers.pop()
                set_tracer(saved)
            self.input_writes = self._input_writes((tuple(args), kwargs))
        self.layer_modes = [(layer, layer.training) for layer in ran.values()]
        self.captured = tracer.captured
        self.writes = tracer.writes
        self.last_results: list[weakref.ref] = []
        self.executor = Executor()
        self._backward_programs: dict[tuple[str, ...], tuple[Program, list[Variable], list[Any]]] = {}
        self.last_backward: Program | None = None

    @classmethod
    def of_program(cls, program: Program, inputs: list[Variable], outputs: list[Variable],
                   captured: list[tuple[str, Tensor]], output_tree: Any = None) -> "_TracedProgram":
        """A program that was not traced here (jit.load's): fed `inputs`, fetching `outputs` (a
        list, or nested as `output_tree` says), reading `captured` Tensors' values for its
        persistable variables of those names."""
        traced = cls.__new__(cls)
        traced.program, traced.startup, traced.checkpoint_option = program, Program(), None
        traced.input_vars, traced._input_names = list(inputs), [v.name for v in inputs]
        traced.outputs, traced.output_tree = list(outputs), output_tree
        traced.rebuild = list if output_tree is None else output_tree_rebuilder(output_tree)
        traced.last_results = []
        traced.input_writes, traced.layer_modes, traced.writes = [], [], []
        traced.captured = list(captured)
        traced.executor = Executor()
        traced._backward_programs, traced.last_backward = {}, None
        return traced

    def _input_writes(self, arguments: Any) -> list[tuple[int, Variable]]:
        """`x[...] = v` on an argument while tracing renames its handle to the new value (see
        indexing._setitem_variable): the data variable is found again by its name, and the
        argument's final value is written back into the Tensor after each run, as in eager mode."""
        writes = []
        block = self.program.global_block()
        leaves: list[Tensor | InputSpec] = []
        _replace_tensors(arguments, leaves.append)
        for index, (var, name) in enumerate(zip(self.input_vars, self._input_names)):
            if var.name != name:
                tensor = leaves[index]
                if isinstance(tensor, Tensor) and tensor._node is None and not tensor.stop_gradient and is_grad_enabled():
                    raise RuntimeError(f"to_static: x[...] = v on the argument {index}, a leaf Tensor that requires "
                                       f"a gradient: assign inside fluidgrad.no_grad(), or to a copy (x.clone())")
                writes.append((index, var))
                self.input_vars[index] = block.var(name)
        return writes

    def fits_layer_modes(self) -> bool:
        """Every Layer that ran while tracing is still in the train/eval mode it was in then."""
        return all(layer.training == mode for layer, mode in self.layer_modes)

    # ---- forward
    def _scope(self, params: dict[str, np.ndarray]) -> Scope:
        scope = Scope()
        scope.vars.update(params)
        return scope

    def run(self, tensors: Sequence[Tensor]) -> Any:
        """Run on `tensors`, the Tensor leaves of the call's arguments (as `_structure` lists them)."""
        feed = {var.name: t._array for var, t in zip(self.input_vars, tensors)}
        params = {name: tensor._array for name, tensor in self.captured}
        fetch = self.outputs + [var for _, var in self.writes] + [var for _, var in self.input_writes]
        values = self.executor.run(self.program, feed=feed, fetch_list=fetch, scope=self._scope(params))
        written = values[len(self.outputs):]
        for (tensor, _), value in zip(self.writes, written):
            tensor._array = value
        for (index, _), value in zip(self.input_writes, written[len(self.writes):]):
            tensors[index]._array = value
        out_values = values[:len(self.outputs)]
        wrt_inputs = [(var.name, t) for var, t in zip(self.input_vars, tensors) if not t.stop_gradient]
        wrt_params = [(name, t) for name, t in self.captured if not t.stop_gradient]
        wrt = wrt_inputs + wrt_params
        tensors = record_custom(_TO_STATIC_OP, [t for _, t in wrt], out_values,
                                {"traced": self, "feed": feed, "params": params,
                                 "wrt": tuple(name for name, _ in wrt)})
        tensors = [Tensor(t._array) if var.stop_gradient and not t.stop_gradient else t  # computed under no_grad()
                   for var, t in zip(self.outputs, tensors)]
        self.last_results = [weakref.ref(t) for t in tensors]  # what jit.save's output_spec may name
        return self.rebuild(tensors)

    # ---- backward
    def checkpoints(self) -> list[str] | str | None:
        """What the backward recomputes from: "auto", the names given, or those `recompute`
        calls marked while tracing that a forward op computes (data and parameters live anyway)."""
        if self.checkpoint_option == "auto":
            return "auto"
        computed = {n for op in self.program.global_block().ops for n in op.output_arg_names}
        names = [n for n in list(self.checkpoint_option or []) + marked_checkpoints(self.program) if n in computed]
        return list(dict.fromkeys(names)) or None

    def _backward_program(self, wrt: tuple[str, ...]) -> tuple[Program, list[Variable], list[Any]]:
        cached = self._backward_programs.get(wrt)
        if cached is not None:
            return cached
        program = self.program.clone()
        block = program.global_block()
        with program_guard(program, Program()):
            targets = [block.var(v.name) for v in self.outputs if is_float(v.dtype)]
            seeds = [data(f"{t.name}@SEED", t.shape, t.dtype) for t in targets]
            for name in wrt:
                block.var(name).stop_gradient = False
            grads = gradients(targets, [block.var(n) for n in wrt], seeds, checkpoints=self.checkpoints())
        cached = (program, seeds, grads)
        self._backward_programs[wrt] = cached
        self.last_backward = program
        return cached

    def run_backward(self, feed: dict, params: dict, out_grads: list, wrt: tuple[str, ...]) -> list:
        program, seeds, grads = self._backward_program(wrt)
        float_grads = [g for v, g in zip(self.outputs, out_grads) if is_float(v.dtype)]
        feed = {**feed, **{s.name: np.asarray(g, dtype=s.dtype) for s, g in zip(seeds, float_grads)}}
        fetch = [g for g in grads if g is not None]
        values = iter(self.executor.run(program, feed=feed, fetch_list=fetch, scope=self._scope(params)))
        return [next(values) if g is not None else None for g in grads]


def _to_static_grad(g: Any) -> None:
    """The grad maker of a traced call: run its backward program."""
    if g.create_graph:
        raise NotImplementedError("to_static: create_graph=True (grad of grad) through a static function is "
                                  "not supported; call the function's eager code directly for that")
    grads = g.attr("traced").run_backward(g.attr("feed"), g.attr("params"), g.output_grad("Out"), g.attr("wrt"))
    g.set_input_grad("X", grads)


_TO_STATIC_OP = CustomOp("run_program", _to_static_grad)


_ATOMS = (type(None), bool, int, float, complex, str, bytes)


def _structure(value: Any, tensors: list[Tensor], keep: list[Any]) -> Any:
    """A hashable description of an argument that two calls share exactly when one trace
    serves both; Tensor leaves are appended to `tensors` (they are fed), objects whose identity
    is keyed on are appended to `keep` (held by the trace, so that their ids stay theirs)."""
    kind = type(value)
    if isinstance(value, Tensor):
        tensors.append(value)
        return "Tensor", value.shape, value.dtype, value.stop_gradient
    if kind in _ATOMS:
        return kind, value
    if kind in (list, tuple):
        return kind, tuple(_structure(v, tensors, keep) for v in value)
    if kind is dict:
        return dict, tuple((_structure(k, tensors, keep), _structure(v, tensors, keep)) for k, v in value.items())
    if isinstance(value, np.ndarray):  # a constant of the trace: keyed on its contents
        return np.ndarray, value.shape, value.dtype.str, value.tobytes()
    if isinstance(value, np.generic):
        return kind, value.item()
    keep.append(value)  # a Layer, a function, any object: the trace may read it, so key on which one
    return "object", kind, id(value)


def _replace_tensors(value: Any, replace: Callable[[Any], Any]) -> Any:
    """`value` with every Tensor leaf (in `_structure`'s order; an InputSpec is a leaf too)
    replaced by `replace(tensor)`."""
    if isinstance(value, (Tensor, InputSpec)):
        return replace(value)
    kind = type(value)
    if kind in (list, tuple):
        return kind(_replace_tensors(v, replace) for v in value)
    if kind is dict:
        return {_replace_tensors(k, replace): _replace_tensors(v, replace) for k, v in value.items()}
    return value


class StaticFunction:
    """A function traced into a Program on its first call (and again for new input signatures)."""

    def __init__(self, fn: Callable, checkpoints: Sequence[str] | str | None = None) -> None:
        if not (checkpoints is None or checkpoints == "auto" or
                (isinstance(checkpoints, (list, tuple)) and all(isinstance(n, str) for n in checkpoints))):
            raise TypeError(f"to_static: checkpoints must be None, 'auto' or a list of variable names, "
                            f"got {checkpoints!r}")
        self._fn = fn
        self._checkpoints = checkpoints
        self._traces: dict[Any, list[_TracedProgram]] = {}
        self._last: _TracedProgram | None = None
        functools.update_wrapper(self, fn)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        bound = instance.__dict__.get(f"_static_{id(self)}")
        if bound is None:
            bound = StaticFunction(self._fn.__get__(instance, owner), self._checkpoints)
            instance.__dict__[f"_static_{id(self)}"] = bound
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tensors: list[Tensor] = []
        keep: list[Any] = []
        key = (_structure((args, kwargs), tensors, keep), is_grad_enabled())  # under no_grad() nothing is differentiable
        candidates = self._traces.setdefault(key, [])
        traced = next((t for t in candidates if t.fits_layer_modes()), None)
        if traced is None:
            traced = _TracedProgram(self._fn, args, kwargs, self._checkpoints)
            traced.keep = keep
            candidates.append(traced)
        self._last = traced
        return traced.run(tensors)

    @property
    def main_program(self) -> Program:
        """The Program of the latest call's trace."""
        if self._last is None:
            raise RuntimeError("to_static: call the function once (with Tensors) before asking for its program")
        return self._last.program

    @property
    def concrete_program(self) -> "ConcreteProgram":
        """The latest trace: its Program, input and output Variables, captured Tensors and
        checkpoints, e.g. to append an optimizer to a copy of it and train it statically."""
        if self._last is None:
            raise RuntimeError("to_static: call the function once (with Tensors) before asking for its program")
        t = self._last
        return ConcreteProgram(t.program, list(t.input_vars), list(t.outputs), list(t.captured), t.checkpoints())

    @property
    def backward_program(self) -> Program | None:
        """The latest trace's backward Program (forward ops, then those `gradients` appended),
        once a backward has run through it; `.recompute_checkpoints` names the checkpoints used."""
        if self._last is None:
            raise RuntimeError("to_static: call the function once (with Tensors) before asking for its program")
        return self._last.last_backward

    @property
    def concrete_programs(self) -> list[Program]:
        return [t.program for traces in self._traces.values() for t in traces]

    def dygraph_function(self, *args: Any, **kwargs: Any) -> Any:
        """The undecorated eager function."""
        return self._fn(*args, **kwargs)


def to_static(function: Any = None, input_spec: Any = None, checkpoints: Sequence[str] | str | None = None,
              **_: Any) -> Any:
    """Decorate a function (or method), or convert a Layer's forward, to run as a traced Program.
    `checkpoints`: "auto" or variable names of the trace; the backward recomputes the forward
    between them (`fluidgrad.recompute` calls inside the function add theirs)."""
    if function is None:
        return lambda fn: to_static(fn, input_spec, checkpoints)
    if isinstance(function, Layer):
        object.__setattr__(function, "forward", StaticFunction(function.forward, checkpoints))
        return function
    if isinstance(function, StaticFunction):
        return function
    return StaticFunction(function, checkpoints)


def not_to_static(fn: Callable) -> Callable:
    """Mark a function that `to_static` must call as it is rather than trace into."""
    return fn


# ---------------------------------------------------------------- jit.save / jit.load

def _forward_of(layer: Any) -> tuple[Callable, Layer | None, "StaticFunction | None"]:
    """What jit.save traces: the eager function, the Layer that owns it, and its StaticFunction."""
    static = None
    if isinstance(layer, Layer):
        function, owner = layer.forward, layer
    elif isinstance(layer, StaticFunction) or callable(layer):
        function, owner = layer, getattr(getattr(layer, "_fn", layer), "__self__", None)
    else:
        raise TypeError(f"jit.save: expected a Layer or a function, got {type(layer).__name__}")
    if isinstance(function, StaticFunction):
        static, function = function, function._fn
    return function, owner if isinstance(owner, Layer) else None, static


def _specs(input_spec: Any, static: "StaticFunction | None") -> list[Any]:
    if input_spec is None:
        if static is not None and static._last is not None:  # the latest call's signature
            return [InputSpec(v.shape, v.dtype, stop_gradient=v.stop_gradient) for v in static._last.input_vars]
        raise ValueError("jit.save: give input_spec=[InputSpec(shape, dtype), ...] (None in a shape for the "
                         "batch), or call the to_static function once before saving")
    specs = list(input_spec) if isinstance(input_spec, (list, tuple)) else [input_spec]
    for i, spec in enumerate(specs):
        if not isinstance(spec, (InputSpec, Tensor)):
            raise TypeError(f"jit.save: input_spec[{i}] must be an InputSpec or an example Tensor, got "
                            f"{type(spec).__name__}")
    return specs


def save(layer: Any, path: str, input_spec: Sequence[InputSpec | Tensor] | None = None,
         output_spec: Sequence[Any] | None = None, **configs: Any) -> None:
    """Save `layer` (or a function, e.g. one decorated with to_static) for inference: the traced
    program and its parameters, loadable by `jit.load` without the Python code (see the module
    docstring), which returns the outputs nested as the function returned them.
    `input_spec`: one InputSpec (or example Tensor) per positional argument. `output_spec`
    (Paddle 2's config): the outputs to keep, the program pruned to them, which `jit.load`
    then returns as a list (one: itself); each named by an output Tensor of the to_static
    function's latest call, a Variable of its `concrete_program.outputs`, or (fluidgrad's
    addition) its position among the flattened outputs."""
    if configs:
        raise TypeError(f"jit.save: unknown configs {sorted(configs)} (fluidgrad takes output_spec)")
    function, owner, static = _forward_of(layer)
    specs = _specs(input_spec, static)
    layers = owner.sublayers(include_self=True) if owner is not None else []
    modes = [(sub, sub.training) for sub in layers]
    for sub in layers:
        sub.training = False
    try:
        traced = _TracedProgram(function, specs, {})
    finally:
        for sub, mode in modes:
            sub.training = mode
    outputs, tree = _selected_outputs(traced, output_spec, static)
    try:
        kept = json.loads(json.dumps(tree, allow_nan=False)) == tree   # a tuple key would come back a list
    except (TypeError, ValueError):
        kept = False
    if not kept:
        raise TypeError(f"jit.save: the function's outputs are nested in a way a model file cannot keep "
                        f"({tree!r}): dict keys must be str, int, float, bool or None")
    scope = Scope()
    scope.vars.update({name: tensor._array for name, tensor in traced.captured})
    save_inference_model(path, traced.input_vars, outputs, program=traced.program, scope=scope,
                         metadata={"jit_output_tree": tree})


def _selected_outputs(traced: _TracedProgram, output_spec: Any, static: "StaticFunction | None"
                      ) -> tuple[list[Variable], Any]:
    """The outputs to save and their nesting: all, as the function returned them, or those
    `output_spec` names (see `save`), as a list (or one alone)."""
    if output_spec is None:
        return traced.outputs, traced.output_tree
    items = list(output_spec) if isinstance(output_spec, (list, tuple)) else [output_spec]
    latest = static._last if static is not None else None
    results = [ref() for ref in latest.last_results] if latest is not None else []
    picked = []
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool):
            index = item if -len(traced.outputs) <= item < len(traced.outputs) else None
        elif isinstance(item, Variable) and latest is not None:
            index = next((i for i, v in enumerate(latest.outputs) if v is item), None)
        elif isinstance(item, Tensor):
            index = next((i for i, t in enumerate(results) if t is item), None)
        else:
            index = None
        if index is None or (latest is not None and not isinstance(item, int)
                             and len(latest.outputs) != len(traced.outputs)):
            raise ValueError(f"jit.save: output_spec entry {item!r} is none of the function's "
                             f"{len(traced.outputs)} outputs: give an output Tensor of the to_static function's "
                             f"latest call, a Variable of its concrete_program.outputs, or an output's position")
        picked.append(traced.outputs[index])
    return picked, "tensor" if len(picked) == 1 else {"list": ["tensor"] * len(picked)}


class TranslatedLayer(Layer):
    """A model `jit.load` read (paddle.jit.TranslatedLayer): call it with one Tensor (or array)
    per saved input; it returns the outputs nested as the saved function returned them (a file
    saved without that nesting: the output Tensor, or a list of them). Its parameters are the
    saved ones, trainable: a loss on its outputs backpropagates into them (fine-tuning)."""

    def __init__(self, program: Program, feed_names: list[str], fetch_vars: list[Variable], scope: Scope,
                 output_tree: Any = None) -> None:
        super().__init__()
        block = program.global_block()
        captured = []
        for name, value in scope.vars.items():
            var = block.var(name)
            trainable = isinstance(var, Parameter) and var.trainable and is_float(var.dtype)
            tensor = Tensor(value, stop_gradient=not trainable, name=name)
            key = re.sub(r"\W", "_", name)
            if trainable:
                self.add_parameter(key, tensor)
            else:
                self.register_buffer(key, tensor)
            captured.append((name, tensor))
        self._feed_names = list(feed_names)
        self._traced = _TracedProgram.of_program(program, [block.var(n) for n in feed_names], fetch_vars, captured,
                                                 output_tree)
        self._training_traced: _TracedProgram | None = None   # built on the first call in train mode
        self.eval()   # the saved program is the inference one; train() switches to its training form

    def forward(self, *inputs: Any) -> Any:
        if len(inputs) != len(self._feed_names):
            raise TypeError(f"TranslatedLayer: the saved program takes {len(self._feed_names)} input(s) "
                            f"({', '.join(self._feed_names)}), got {len(inputs)}")
        tensors = [x if isinstance(x, Tensor) else Tensor(np.asarray(x)) for x in inputs]
        traced = self._for_training() if self.training else self._traced
        outputs = traced.run(tensors)
        if traced.output_tree is not None:
            return outputs
        return outputs[0] if len(outputs) == 1 else outputs

    def _for_training(self) -> _TracedProgram:
        """The saved program in training form (Paddle's TranslatedLayer.train()): ops with an
        `is_test` attribute (dropout, batch norm) run as in training, batch norm on the batch's
        statistics, and its running statistics are written back into this layer's buffers. (The
        saved program cannot tell a batch norm built with use_global_stats=True from one traced in
        eval mode: both train on the batch's statistics here.)"""
        if self._training_traced is None:
            inference = self._traced
            program = inference.program.clone()
            block = program.global_block()
            captured = dict(inference.captured)
            writes = []
            for op in (op for b in program.blocks for op in b.ops):
                if "is_test" in op.attrs:
                    op.attrs["is_test"] = False
                if op.attrs.get("use_global_stats") is True:
                    op.attrs["use_global_stats"] = False
                for slot_in, slot_out in (("Mean", "MeanOut"), ("Variance", "VarianceOut")):
                    source, target = op.inputs.get(slot_in, []), op.outputs.get(slot_out, [])
                    if len(source) == 1 and len(target) == 1 and source[0] in captured:
                        writes.append((captured[source[0]], block.var(target[0])))
            program._bump()
            traced = _TracedProgram.of_program(program, [block.var(v.name) for v in inference.input_vars],
                                               [block.var(v.name) for v in inference.outputs],
                                               inference.captured, inference.output_tree)
            traced.writes = writes
            self._training_traced = traced
        return self._training_traced

    def program(self) -> Program:
        """The loaded inference program."""
        return self._traced.program


def load(path: str) -> TranslatedLayer:
    """Load what `jit.save` wrote at `path` as a callable TranslatedLayer."""
    scope = Scope()
    program, feed_names, fetch_vars = load_inference_model(path, scope=scope)
    tree = read_metadata(path).get("jit_output_tree")
    if tree is not None and _tensor_leaves(tree) != len(fetch_vars):
        raise ModelFileError(f"jit.load: the output nesting saved in {path} does not hold its "
                             f"{len(fetch_vars)} outputs: {tree!r}")
    return TranslatedLayer(program, feed_names, fetch_vars, scope, tree)


def _tensor_leaves(tree: Any) -> int | None:
    """How many outputs a saved nesting holds (None: not one `_flatten_outputs` writes)."""
    if tree == "tensor":
        return 1
    if tree is None:
        return 0
    if not isinstance(tree, dict) or len(tree) not in (1, 3):
        return None
    if "dict" in tree:
        children = [pair[1] for pair in tree["dict"] if isinstance(pair, list) and len(pair) == 2] \
            if isinstance(tree["dict"], list) else None
        if children is None or len(children) != len(tree["dict"]):
            return None
    elif "namedtuple" in tree:
        children = tree.get("items")
        if not (isinstance(children, list) and isinstance(tree.get("fields"), list)
                and len(tree["fields"]) == len(children) and isinstance(tree["namedtuple"], str)):
            return None
    else:
        children = tree.get("tuple", tree.get("list"))
        if not isinstance(children, list):
            return None
    counts = [_tensor_leaves(child) for child in children]
    return None if None in counts else sum(counts)
