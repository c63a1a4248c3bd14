"""PyTorch's `nn.Parameter(data, requires_grad=True)`: a parameter Tensor holding data's value.

fluidgrad's parameters are ordinary Tensors marked persistable (what `create_parameter` makes),
so `Parameter(t)` returns such a Tensor rather than an instance of a new class: every op, the
optimizers and `Layer.__setattr__` (which registers it, as a Layer's own weights) treat it as
they treat a Layer's weight. `isinstance(x, nn.Parameter)` holds for a persistable leaf Tensor
that is trainable or was made as a parameter (by `Parameter` or `create_parameter`, so a
frozen weight still is one; a buffer is not).

In static mode `fluidgrad.ones([3])` is a Variable whose op is appended to the Program; a
parameter takes its value at once (as a Layer's initialisers do in both modes), so the ops
that compute it are run now, as long as they read no fed input.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..eager.tensor import Tensor
from ..executor import Executor, Scope, global_scope
from ..framework import Variable
from ..framework.device import as_device
from ..framework.dtypes import get_default_dtype

# id -> weak reference of the Tensors made as parameters (by Parameter or create_parameter)
_made: dict[int, weakref.ref] = {}


def mark_parameter(tensor: Tensor) -> Tensor:
    """Note `tensor` as made to be a parameter: `isinstance(tensor, Parameter)` holds even when frozen."""
    key = id(tensor)
    _made[key] = weakref.ref(tensor, lambda _, key=key: _made.pop(key, None))
    return tensor


class _ParameterType(type):
    def __instancecheck__(cls, value: Any) -> bool:
        if not (isinstance(value, Tensor) and value.persistable and value.is_leaf):
            return False
        entry = _made.get(id(value))
        return not value.stop_gradient or (entry is not None and entry() is value)


class Parameter(metaclass=_ParameterType):
    """`Parameter(data, requires_grad=True)`: a persistable leaf Tensor with data's value (shared,
    as PyTorch shares the storage), trainable unless requires_grad=False (stop_gradient)."""

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Tensor:  # type: ignore[misc]
        array = np.zeros((0,), get_default_dtype()) if data is None else array_of(data, "nn.Parameter")
        tensor = Tensor(array, stop_gradient=not requires_grad, name=getattr(data, "name", None))
        tensor.persistable = True
        return mark_parameter(tensor)


def array_of(data: Any, where: str) -> np.ndarray:
    """The array a Tensor holds (shared), a static Variable's value now, or an array-like as an array."""
    if isinstance(data, Tensor):
        return data._array
    if isinstance(data, Variable):
        return value_now(data, where)
    return np.asarray(data)


def value_now(var: Variable, where: str) -> np.ndarray:
    """The value of a global-block Variable computed now by the ops that write it, which may read
    persistable values of the global scope but no fed input (a clear error names the input)."""
    program, block = var.block.program, var.block
    if block.idx != 0:
        raise ValueError(f"{where}: {var.name} lives in a sub-block; give a Tensor")
    needed, kept = {var.name}, []
    for op in reversed(block.ops):
        if needed & set(op.output_arg_names):
            kept.append(op)
            needed |= {n for n in op.input_arg_names if n}
    produced = {n for op in kept for n in op.output_arg_names}
    scope = Scope()
    for name in sorted(needed - produced):
        if name not in global_scope():
            raise ValueError(f"{where}: {var.name} (shape {list(var.shape)}) is computed from {name!r}, an input of "
                             f"the Program with no value yet; a parameter's value must be known when it is made: "
                             f"give a Tensor (fluidgrad.to_tensor)")
        scope[name] = np.asarray(global_scope()[name])
    scratch = program.clone()
    kept_ids = {id(op) for op in kept}
    order = [i for i, op in enumerate(block.ops) if id(op) in kept_ids]
    scratch.global_block().ops = [scratch.global_block().ops[i] for i in order]
    scratch._bump()
    value, = Executor().run(scratch, fetch_list=[var.name], scope=scope)
    return np.array(value)


def bias_attr_of(where: str, bias: bool, bias_attr: Any) -> Any:
    """Paddle's bias_attr given PyTorch's `bias=` keyword too: bias=False means bias_attr=False."""
    if not isinstance(bias, (bool, np.bool_)):
        raise TypeError(f"{where}: bias must be True or False (PyTorch's keyword), got {type(bias).__name__}")
    if bias:
        return bias_attr
    if bias_attr is not None and bias_attr is not False:
        raise ValueError(f"{where}: bias=False drops the bias, yet bias_attr={bias_attr!r} describes one")
    return False


def check_device(where: str, device: Any) -> None:
    """PyTorch's `device=` keyword of a layer's constructor: fluidgrad runs on the CPU."""
    as_device(device, where)
