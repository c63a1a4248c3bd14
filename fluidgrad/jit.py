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
backpropagates through it. A new trace is made when the arguments' shapes, dtypes or
stop_gradient flags (or the layers' train/eval mode) change.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Sequence

import numpy as np

from .backward import gradients
from .dispatch import append_static_op
from .eager.apply import record_custom
from .eager.mode import set_tracer
from .eager.node import CustomOp
from .eager.tensor import Tensor
from .executor import Executor, Scope
from .framework import Program, Variable, program_guard, unique_name
from .nn.layer import Layer
from .static import data

__all__ = ["StaticFunction", "to_static", "not_to_static"]


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


def _flatten_outputs(result: Any, tracer: _Tracer) -> tuple[list[Variable], Callable[[list], Any]]:
    """The output Variables and a function rebuilding the function's result structure."""
    def as_var(item: Any) -> Variable:
        if isinstance(item, Tensor):
            return tracer.variable(item)
        if isinstance(item, Variable):
            return item
        raise TypeError(f"to_static: the function must return Tensors (or a tuple/list of them), "
                        f"got {type(item).__name__}")
    if isinstance(result, (tuple, list)):
        kind = type(result)
        return [as_var(r) for r in result], lambda values: kind(values)
    return [as_var(result)], lambda values: values[0]


class _TracedProgram:
    """One trace: the Program, its inputs, outputs and captured Tensors, and its backward programs."""

    def __init__(self, fn: Callable, args: Sequence[Any], kwargs: dict) -> None:
        self.program, self.startup = Program(), Program()
        self.input_vars: list[tuple[int, Variable]] = []
        tracer = _Tracer(self.program)
        with program_guard(self.program, self.startup):
            call_args = list(args)
            for i, arg in enumerate(args):
                if isinstance(arg, Tensor):
                    var = data(unique_name(f"input_{i}"), arg.shape, arg.dtype)
                    var.stop_gradient = arg.stop_gradient
                    tracer.vars[id(arg)] = var
                    self.input_vars.append((i, var))
                    call_args[i] = var
            saved = set_tracer(tracer)
            try:
                result = fn(*call_args, **kwargs)
                self.outputs, self.rebuild = _flatten_outputs(result, tracer)
            finally:
                set_tracer(saved)
        self.captured = tracer.captured
        self.writes = tracer.writes
        self.executor = Executor()
        self._backward_programs: dict[tuple[str, ...], tuple[Program, list[Variable], list[Any]]] = {}

    # ---- forward
    def _scope(self, params: dict[str, np.ndarray]) -> Scope:
        scope = Scope()
        scope.vars.update(params)
        return scope

    def run(self, args: Sequence[Any]) -> Any:
        feed = {var.name: args[i].data for i, var in self.input_vars}
        params = {name: tensor.data for name, tensor in self.captured}
        fetch = self.outputs + [var for _, var in self.writes]
        values = self.executor.run(self.program, feed=feed, fetch_list=fetch, scope=self._scope(params))
        for (tensor, _), value in zip(self.writes, values[len(self.outputs):]):
            tensor.data = value
        out_values = values[:len(self.outputs)]
        wrt_inputs = [(var.name, args[i]) for i, var in self.input_vars if not args[i].stop_gradient]
        wrt_params = [(name, t) for name, t in self.captured if not t.stop_gradient]
        wrt = wrt_inputs + wrt_params
        tensors = record_custom(_TO_STATIC_OP, [t for _, t in wrt], out_values,
                                {"traced": self, "feed": feed, "params": params,
                                 "wrt": tuple(name for name, _ in wrt)})
        return self.rebuild(tensors)

    # ---- backward
    def _backward_program(self, wrt: tuple[str, ...]) -> tuple[Program, list[Variable], list[Any]]:
        cached = self._backward_programs.get(wrt)
        if cached is not None:
            return cached
        program = self.program.clone()
        block = program.global_block()
        with program_guard(program, Program()):
            targets = [block.var(v.name) for v in self.outputs if v.dtype.startswith("float")]
            seeds = [data(f"{t.name}@SEED", t.shape, t.dtype) for t in targets]
            for name in wrt:
                block.var(name).stop_gradient = False
            grads = gradients(targets, [block.var(n) for n in wrt], seeds)
        cached = (program, seeds, grads)
        self._backward_programs[wrt] = cached
        return cached

    def run_backward(self, feed: dict, params: dict, out_grads: list, wrt: tuple[str, ...]) -> list:
        program, seeds, grads = self._backward_program(wrt)
        float_grads = [g for v, g in zip(self.outputs, out_grads) if v.dtype.startswith("float")]
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


def _training_flags(fn: Callable) -> tuple:
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, Layer):
        return tuple(layer.training for layer in owner.sublayers(include_self=True))
    return ()


def _signature(args: Sequence[Any], kwargs: dict, fn: Callable) -> tuple:
    parts = []
    for arg in args:
        if isinstance(arg, Tensor):
            parts.append(("T", arg.shape, arg.dtype, arg.stop_gradient))
        else:
            parts.append(("V", repr(arg)))
    for key in sorted(kwargs):
        value = kwargs[key]
        if isinstance(value, Tensor):
            raise TypeError(f"to_static: pass Tensors positionally (got Tensor keyword argument {key!r})")
        parts.append((key, repr(value)))
    return tuple(parts) + _training_flags(fn)


class StaticFunction:
    """A function traced into a Program on its first call (and again for new input signatures)."""

    def __init__(self, fn: Callable) -> None:
        self._fn = fn
        self._traces: dict[tuple, _TracedProgram] = {}
        self._last: _TracedProgram | None = None
        functools.update_wrapper(self, fn)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        bound = instance.__dict__.get(f"_static_{id(self)}")
        if bound is None:
            bound = StaticFunction(self._fn.__get__(instance, owner))
            instance.__dict__[f"_static_{id(self)}"] = bound
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = _signature(args, kwargs, self._fn)
        traced = self._traces.get(key)
        if traced is None:
            traced = self._traces[key] = _TracedProgram(self._fn, args, kwargs)
        self._last = traced
        return traced.run(args)

    @property
    def main_program(self) -> Program:
        """The Program of the latest call's trace."""
        if self._last is None:
            raise RuntimeError("to_static: call the function once (with Tensors) before asking for its program")
        return self._last.program

    @property
    def concrete_programs(self) -> list[Program]:
        return [t.program for t in self._traces.values()]

    def dygraph_function(self, *args: Any, **kwargs: Any) -> Any:
        """The undecorated eager function."""
        return self._fn(*args, **kwargs)


def to_static(function: Any = None, input_spec: Any = None, **_: Any) -> Any:
    """Decorate a function (or method), or convert a Layer's forward, to run as a traced Program."""
    if function is None:
        return lambda fn: to_static(fn, input_spec)
    if isinstance(function, Layer):
        object.__setattr__(function, "forward", StaticFunction(function.forward))
        return function
    if isinstance(function, StaticFunction):
        return function
    return StaticFunction(function)


def not_to_static(fn: Callable) -> Callable:
    return fn
