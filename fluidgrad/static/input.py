"""Declaring inputs and parameters of a static program."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..framework import (ParamAttr, Parameter, Variable, default_main_program, default_startup_program,
                         normalize_dtype, unique_name)
from ..framework.dtypes import get_default_dtype
from ..initializer import Constant, Initializer, XavierUniform


def data(name: str, shape: Sequence[int | None], dtype: Any = None, lod_level: int = 0) -> Variable:
    """An input fed at run time; None or -1 in `shape` is a size known only then. Without a dtype
    it takes the default float dtype (`set_default_dtype`), as paddle.static.data does."""
    if not isinstance(name, str):
        raise TypeError(f"data: name must be a string, got {type(name).__name__}")
    block = default_main_program().global_block()
    dims = [-1 if d is None else int(d) for d in shape]
    dtype = normalize_dtype(dtype or get_default_dtype())
    existing = block.vars.get(name)
    if existing is not None and (list(existing.shape) != dims or existing.dtype != dtype):
        # a notebook cell run again after an edit: the first declaration would silently win
        raise ValueError(f"data: {name!r} is already declared in this program as {list(existing.shape)} "
                         f"{existing.dtype}; declaring it again as {dims} {dtype} would keep the first. Use "
                         f"another name, or build the model in a new Program (fg.program_guard(fg.Program(), "
                         f"fg.Program()))")
    return block.create_var(name, dims, dtype, stop_gradient=True,
                            is_data=True)


class InputSpec:
    """The shape and dtype of an input, without a value (paddle.static.InputSpec): None or -1 in
    `shape` is a size known only at run time (the batch). `jit.save` traces a Layer with them."""

    def __init__(self, shape: Sequence[int | None], dtype: Any = "float32", name: str | None = None,
                 stop_gradient: bool = False) -> None:
        if isinstance(shape, (int, np.integer)) or not all(d is None or isinstance(d, (int, np.integer))
                                                           for d in shape):
            raise TypeError(f"InputSpec: shape must be a list of sizes (None or -1 for unknown), got {shape!r}")
        self.shape = tuple(-1 if d is None else int(d) for d in shape)
        if any(d < -1 for d in self.shape):
            raise ValueError(f"InputSpec: shape {list(shape)} has a negative size other than -1")
        self.dtype = normalize_dtype(dtype)
        self.name, self.stop_gradient = name, bool(stop_gradient)

    @classmethod
    def from_tensor(cls, tensor: Any, name: str | None = None) -> "InputSpec":
        """The spec of a Tensor (or Variable): its shape and dtype."""
        return cls(tensor.shape, tensor.dtype, name or getattr(tensor, "name", None))

    @classmethod
    def from_numpy(cls, ndarray: np.ndarray, name: str | None = None) -> "InputSpec":
        """The spec of a NumPy array: its shape and dtype."""
        return cls(ndarray.shape, ndarray.dtype.name, name)

    def __repr__(self) -> str:
        return f"InputSpec(shape={list(self.shape)}, dtype={self.dtype}, name={self.name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InputSpec) and (self.shape, self.dtype, self.name, self.stop_gradient) == \
            (other.shape, other.dtype, other.name, other.stop_gradient)

    __hash__ = None  # type: ignore[assignment]  # mutable, as Paddle's


def create_parameter(shape: Sequence[int], dtype: Any = "float32", name: str | None = None,
                     attr: ParamAttr | str | None = None, is_bias: bool = False,
                     default_initializer: Initializer | None = None) -> Parameter:
    """A trainable persistable variable, initialised by an op in the startup program.

    A name already used by a parameter returns that parameter (shapes must agree), which is
    how two layers share weights.
    """
    param_attr = ParamAttr.of(attr) or ParamAttr()
    name = name or param_attr.name or unique_name("param" if not is_bias else "bias")
    dtype = normalize_dtype(dtype)
    shape = [int(d) for d in shape]
    if shape and min(shape) < 0:
        raise ValueError(f"create_parameter: parameter {name} needs a fully known shape, got {shape}")
    main_block = default_main_program().global_block()
    existing = main_block.vars.get(name)
    param = main_block.create_parameter(name, shape, dtype, trainable=param_attr.trainable)
    if isinstance(existing, Parameter):
        return param
    param.optimize_attr = {"learning_rate": float(param_attr.learning_rate)}
    param.regularizer, param.need_clip = param_attr.regularizer, param_attr.need_clip
    startup_block = default_startup_program().global_block()
    if not startup_block.has_var(name):
        init_var = startup_block.create_var(name, shape, dtype, persistable=True)
        initializer = param_attr.initializer or default_initializer or (Constant(0.0) if is_bias else XavierUniform())
        initializer(init_var, startup_block)
    return param


def create_global_var(shape: Sequence[int], value: float, dtype: Any, persistable: bool = False,
                      force_cpu: bool = False, name: str | None = None) -> Variable:
    """A variable of the main program's global block holding `value` everywhere
    (paddle.static.create_global_var): step counters, learning rates and flags that ops of the
    program read and update. It takes no gradient. persistable=True: set once by an op of the
    startup program and kept in the scope between runs (and in checkpoints). Otherwise the scope
    keeps nothing of it, so an op at the start of the main program sets it on every run.
    force_cpu changes nothing (all runs on the CPU)."""
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise ValueError(f"create_global_var: needs a fully known shape, got {shape}")
    name = name or unique_name("global_var")
    dtype = normalize_dtype(dtype)
    main_block = default_main_program().global_block()
    if main_block.has_var(name):
        raise ValueError(f"create_global_var: the main program already has a variable named {name!r}")
    var = main_block.create_var(name, shape, dtype, persistable=bool(persistable), stop_gradient=True)
    if not persistable:
        main_block._insert_op(0, "fill_constant", {}, {"Out": [name]}, {"shape": shape, "value": float(value),
                                                                       "dtype": dtype})
        return var
    startup_block = default_startup_program().global_block()
    Constant(float(value))(startup_block.create_var(name, shape, dtype, persistable=True), startup_block)
    return var
