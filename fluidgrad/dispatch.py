"""One entry point for every function: append an op (Variables) or run it now (Tensors).

`fluidgrad.functions` and `fluidgrad.nn.functional` call `apply_op`: Tensors go to the eager
package's `eager_apply`, Variables to `append_static_op` below. A constant Tensor (one without a
gradient, e.g. `fluidgrad.assign(array)`) meeting Variables joins the Program as a constant
(`assign_value`), as Paddle's static mode makes such data a constant Variable and as
`jit.to_static` does with the constants it captures. A parameter Tensor (a Layer's weight)
meeting Variables joins as a static Parameter of the Program, initialised by the startup program
to the Tensor's current value: an `nn` Layer called on `static.data` builds a static model that
`minimize` and the Executor train, as Paddle 2's static mode does (the trained values live in the
scope, and the Layer's Tensors share the scope's arrays around every run: scope_binding.py).
Another Tensor that needs a gradient cannot join.
"""
from __future__ import annotations

import weakref
from typing import Any

from .eager.apply import eager_apply
from .eager.mode import all_default, state
from .eager.tensor import Tensor
from .framework import (Parameter, Variable, default_main_program, default_startup_program, optimize_options,
                        unique_name)
from .ops.registry import get_op_def
from .scope_binding import bind, sync_from_scope, write_to_scope  # noqa: F401 (sync/write: Layer's)


def is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor)


def axis_of_input(function: str, x: Any, axis: int, slot: str = "x") -> int:
    """`axis` of x as a number in [0, ndim), for functions that cut or join x along it: a clear
    error naming the function when x is 0-D (no axis, as in PyTorch) or the axis is out of range."""
    ndim = len(x.shape)
    if ndim == 0:
        raise ValueError(f"{function}: {slot} is 0-D (shape []): it has no axis {axis} to work along")
    if not -ndim <= int(axis) < ndim:
        raise ValueError(f"{function}: axis {axis} is out of range for {slot} of shape {list(x.shape)}")
    return int(axis) % ndim


def _any_tensor(inputs: dict[str, Any]) -> bool:
    for value in inputs.values():
        if isinstance(value, Tensor):
            return True
        if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            return True
    return False


# fluidgrad.amp's auto_cast, while a block is open: (op_type, inputs) -> inputs cast by its rule
cast_inputs: Any = None


def apply_op(op_type: str, inputs: dict[str, Any], attrs: dict[str, Any] | None = None,
             n_out: int | None = None) -> Any:
    """Run or append `op_type`; return its output (a tuple for several slots, a list for one
    duplicable slot), as Tensors in eager mode and Variables in static mode."""
    if cast_inputs is not None:
        inputs = cast_inputs(op_type, inputs)
    if _any_tensor(inputs):
        if _any_variable(inputs) and state.tracer is None:
            return append_static_op(op_type, _with_constants(op_type, inputs), attrs or {}, n_out)
        return eager_apply(op_type, inputs, attrs or {}, n_out)
    return append_static_op(op_type, inputs, attrs or {}, n_out)


def beside(value: Any, like: Any) -> Any:
    """`value` ready to meet `like`: a Tensor (a Layer's weight) beside a static Variable becomes
    the current Program's Parameter or constant, as `apply_op` makes an op's inputs, for code that
    transforms a weight on its own (once) before it meets the Variables; anything else as it is."""
    if isinstance(value, Tensor) and isinstance(like, Variable) and state.tracer is None:
        return _with_constants("beside", {"X": value, "Like": like})["X"]
    return value


def _any_variable(inputs: dict[str, Any]) -> bool:
    for value in inputs.values():
        if isinstance(value, Variable):
            return True
        if isinstance(value, (list, tuple)) and any(isinstance(v, Variable) for v in value):
            return True
    return False


def _with_constants(op_type: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The inputs with each Tensor made a constant of the current Program."""
    def constant(slot: str, value: Any) -> Any:
        if not isinstance(value, Tensor):
            return value
        if not value.stop_gradient and value.persistable and value.is_leaf:
            return _as_parameter(value)
        if not value.stop_gradient:
            variable = next(v for vs in inputs.values() for v in (vs if isinstance(vs, (list, tuple)) else [vs])
                            if isinstance(v, Variable))
            raise TypeError(f"{op_type}: input {slot} is an eager Tensor that requires a gradient, mixed with the "
                            f"static Variable {variable.name}; a Program can neither differentiate nor update it: "
                            f"make it a parameter (static.create_parameter), or trace the eager code (jit.to_static)")
        array = value._array
        return append_static_op("assign_value", {}, {"shape": list(array.shape), "dtype": array.dtype.name,
                                                     "values": array.reshape(-1).tolist()})
    return {slot: [constant(slot, v) for v in value] if isinstance(value, (list, tuple)) else constant(slot, value)
            for slot, value in inputs.items()}


def _as_parameter(tensor: Tensor, trainable: bool = True) -> Parameter:
    """The current Program's Parameter for an eager parameter Tensor (made at its first use in
    the Program, initialised by the startup program to the Tensor's value now); trainable=False
    for a state Tensor the Program updates itself (a BatchNorm's running statistics)."""
    program = default_main_program()
    lifted = program.__dict__.setdefault("_lifted_parameters", {})
    entry = lifted.get(id(tensor))
    if entry is not None and entry[0]() is tensor:
        return entry[1]
    block, array = program.global_block(), tensor._array
    name = tensor.name if tensor.name and not block.has_var(tensor.name) else unique_name(tensor.name or "param")
    param = block.create_parameter(name, list(array.shape), array.dtype.name, trainable=trainable)
    rate, param.regularizer, param.need_clip = optimize_options(tensor)   # its ParamAttr's, as created
    param.optimize_attr = {"learning_rate": rate}
    startup = default_startup_program().global_block()
    if not startup.has_var(name):
        init = startup.create_var(name, list(array.shape), array.dtype.name, persistable=True)
        init = startup.append_op("assign_value", {}, {"Out": [init]}, {"shape": list(array.shape), "dtype": array.dtype.name,
                                                                "values": array.reshape(-1).tolist()})
    else:
        init = None
    lifted[id(tensor)] = (weakref.ref(tensor), param)
    bind(tensor, name, init)
    return param


def lifted_parameter(tensor: Tensor, program: Any) -> Parameter | None:
    """The Parameter `program` made of the parameter Tensor `tensor` (None if it never met the
    Program): static optimizers take a Layer's `parameters()` as Paddle's static mode does."""
    entry = program.__dict__.get("_lifted_parameters", {}).get(id(tensor))
    return entry[1] if entry is not None and entry[0]() is tensor else None


def as_state_variable(tensor: Tensor) -> Parameter:
    """A state Tensor (a Layer's buffer, e.g. BatchNorm's running mean) as a persistable,
    untrained Variable of the current Program, which the Program's ops may write (its values live
    in the scope, as a parameter's do)."""
    return _as_parameter(tensor, trainable=False)


def append_static_op(op_type: str, inputs: dict[str, Any], attrs: dict[str, Any],
                     n_out: int | None = None) -> Any:
    """Append `op_type` to the current block of the default main program; return its output Variable(s)."""
    for slot, value in inputs.items():
        if isinstance(value, Variable):
            continue
        for item in (value if isinstance(value, (list, tuple)) else [value]):
            if item is not None and not isinstance(item, Variable):
                raise TypeError(f"{op_type}: input {slot} must be a Variable or Tensor, got {type(item).__name__}")
    block = default_main_program().current_block()
    op_def = get_op_def(op_type)
    outputs: dict[str, list[Variable]] = {}
    for slot in op_def.outputs:
        count = (n_out or 1) if slot.duplicable else 1
        outputs[slot.name] = [block.create_var(unique_name(f"{op_type}.tmp")) for _ in range(count)]
    try:
        block.append_op(op_type, inputs, outputs, attrs)
    except Exception:
        for var in (v for vs in outputs.values() for v in vs):  # a failed op leaves no trace
            block.vars.pop(var.name, None)
        raise
    if not all_default.on and state.tracer is not None and not state.grad_enabled:
        for var in (v for vs in outputs.values() for v in vs):  # jit.to_static of eager code under no_grad()
            var.stop_gradient = True
    values = [outputs[s.name] if s.duplicable else outputs[s.name][0] for s in op_def.outputs]
    return values[0] if len(values) == 1 else tuple(values)
