"""Initializers: each appends one op to the startup program that fills a parameter."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .framework import Block, Variable, default_startup_program
from .ops.random import generator
from .ops.registry import get_op_def


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The gain Kaiming / Xavier initializers multiply the spread by for an activation (Paddle's
    and PyTorch's calculate_gain): 1 for linear, conv and sigmoid, 5/3 for tanh, sqrt(2) for relu,
    sqrt(2 / (1 + slope^2)) for leaky_relu (slope `param`, 0.01 by default), 3/4 for selu."""
    name = str(nonlinearity).lower()
    if name in ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d", "conv1d_transpose",
                "conv2d_transpose", "conv3d_transpose", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        return 1.0
    if name == "tanh":
        return 5.0 / 3.0
    if name == "relu":
        return math.sqrt(2.0)
    if name == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: the negative slope of leaky_relu must be a number, got {slope!r}")
        return math.sqrt(2.0 / (1.0 + float(slope) ** 2))
    if name == "selu":
        return 3.0 / 4.0
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r} (linear, conv1d-3d, "
                     f"conv*_transpose, sigmoid, tanh, relu, leaky_relu, selu)")


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """fan_in and fan_out, Paddle's convention: fc weights are [in, out], conv [out, in, kh, kw]."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """How a parameter gets its first value: the op an initializer appends to the startup program (or runs at once in eager mode)."""
    op_type = ""

    def attrs(self, var: Variable) -> dict[str, Any]:
        raise NotImplementedError

    def initial_value(self, shape: list[int], dtype: str) -> np.ndarray:
        """The values this initializer gives a parameter of `shape` and `dtype`, now (its op's kernel)."""
        op_def = get_op_def(self.op_type)
        attrs = {**op_def.attrs, "shape": [int(d) for d in shape], "dtype": dtype,
                 **self.attrs(_Spec([int(d) for d in shape], dtype))}
        return np.asarray(op_def.kernel(**attrs), dtype=dtype)

    def __call__(self, var: Any, block: Block | None = None) -> Any:
        """Fill `var`: a static Variable by an op appended to `block` (default: the startup
        program), an eager parameter Tensor in place, now (Paddle 2's `init(layer.weight)`)."""
        if not isinstance(var, Variable):
            if not hasattr(var, "set_value"):
                raise TypeError(f"{type(self).__name__}: expected a parameter Tensor or Variable, "
                                f"got {type(var).__name__}")
            var.set_value(self.initial_value(list(var.shape), str(var.dtype)))
            return var
        if block is None:
            block = default_startup_program().global_block()
            if not block.has_var(var.name):
                block.create_var(var.name, list(var.shape), var.dtype, persistable=True)
            var = block.var(var.name)
        attrs = {"shape": list(var.shape), "dtype": var.dtype, **self.attrs(var)}
        return block.append_op(self.op_type, {}, {"Out": [var]}, attrs)


class _Spec:
    """The shape and dtype an initializer reads, for a parameter that is not a Variable."""

    def __init__(self, shape: list[int], dtype: str) -> None:
        self.shape, self.dtype, self.name = tuple(shape), dtype, ""


class Constant(Initializer):
    """Every element `value`."""
    op_type = "fill_constant"

    def __init__(self, value: float = 0.0) -> None:
        self.value = float(value)

    def attrs(self, var: Variable) -> dict[str, Any]:
        return {"value": self.value}


class Uniform(Initializer):
    """Draws uniformly from [low, high)."""
    op_type = "uniform_random"

    def __init__(self, low: float = -1.0, high: float = 1.0, name: str | None = None, seed: int = 0) -> None:
        self.low, self.high, self.seed = float(low), float(high), seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        return {"min": self.low, "max": self.high, "seed": self.seed}


class Normal(Initializer):
    """Draws from N(mean, std**2)."""
    op_type = "gaussian_random"

    def __init__(self, mean: float = 0.0, std: float = 1.0, name: str | None = None, seed: int = 0) -> None:
        self.mean, self.std, self.seed = float(mean), float(std), seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std, "seed": self.seed}


class TruncatedNormal(Normal):
    """Draws from N(mean, std**2), redrawing values outside [a, b] (Paddle 2 and PyTorch: absolute
    bounds, -2 and 2 by default)."""
    op_type = "truncated_gaussian_random"

    def __init__(self, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                 name: str | None = None, seed: int = 0) -> None:
        super().__init__(mean, std, seed=seed)
        if not float(a) < float(b):
            raise ValueError(f"TruncatedNormal: the bounds must satisfy a < b, got a={a}, b={b}")
        if not self.mean - 10 * self.std < float(b) and float(a) < self.mean + 10 * self.std:
            raise ValueError(f"TruncatedNormal: [a, b] = [{a}, {b}] lies more than 10 std from the mean "
                             f"{self.mean} (std {self.std}): almost no draw would fall inside")
        self.a, self.b = float(a), float(b)

    def attrs(self, var: Variable) -> dict[str, Any]:
        if self.std == 0.0:  # a constant mean (the op's bounds are in std units)
            return {"mean": self.mean, "std": 0.0, "seed": self.seed, "a": -1.0, "b": 1.0}
        return {"mean": self.mean, "std": self.std, "seed": self.seed,
                "a": (self.a - self.mean) / self.std, "b": (self.b - self.mean) / self.std}


class _Xavier(Initializer):
    """Glorot's initializers: fan_in and fan_out from the parameter's shape unless given."""

    def __init__(self, fan_in: float | None = None, fan_out: float | None = None, gain: float = 1.0,
                 name: str | None = None, seed: int = 0) -> None:
        self.fan_in, self.fan_out, self.gain, self.seed = fan_in, fan_out, float(gain), seed

    def fans(self, var: Variable) -> tuple[float, float]:
        fan_in, fan_out = _fans(var.shape)
        return (fan_in if self.fan_in is None else self.fan_in), (fan_out if self.fan_out is None else self.fan_out)


class XavierUniform(_Xavier):
    """Glorot's uniform: U(-a, a) with a = gain sqrt(6 / (fan_in + fan_out))."""
    op_type = "uniform_random"

    def attrs(self, var: Variable) -> dict[str, Any]:
        fan_in, fan_out = self.fans(var)
        limit = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        return {"min": -limit, "max": limit, "seed": self.seed}


class XavierNormal(_Xavier):
    """Glorot's normal: N(0, gain^2 2 / (fan_in + fan_out))."""
    op_type = "gaussian_random"

    def attrs(self, var: Variable) -> dict[str, Any]:
        fan_in, fan_out = self.fans(var)
        return {"mean": 0.0, "std": self.gain * math.sqrt(2.0 / (fan_in + fan_out)), "seed": self.seed}


class _Kaiming(Initializer):
    """He's initializers (Paddle 2's arguments): the spread is calculate_gain(nonlinearity,
    negative_slope) / sqrt(fan_in), fan_in from the parameter's shape unless given."""

    def __init__(self, fan_in: float | None = None, negative_slope: float = 0.0, nonlinearity: str = "relu",
                 name: str | None = None, seed: int = 0) -> None:
        self.fan_in, self.seed = fan_in, seed
        self.gain = calculate_gain(nonlinearity, negative_slope)

    def std(self, var: Variable) -> float:
        fan_in = _fans(var.shape)[0] if self.fan_in is None else self.fan_in
        return self.gain / math.sqrt(fan_in)


class KaimingNormal(_Kaiming):
    """He's normal: N(0, gain^2 / fan_in) (2 / fan_in for ReLU networks)."""
    op_type = "gaussian_random"

    def attrs(self, var: Variable) -> dict[str, Any]:
        return {"mean": 0.0, "std": self.std(var), "seed": self.seed}


class KaimingUniform(_Kaiming):
    """He's uniform: U(-a, a) with a = gain sqrt(3 / fan_in) (sqrt(6 / fan_in) for ReLU networks)."""
    op_type = "uniform_random"

    def attrs(self, var: Variable) -> dict[str, Any]:
        limit = math.sqrt(3.0) * self.std(var)
        return {"min": -limit, "max": limit, "seed": self.seed}


class Assign(Initializer):
    """Exactly the given values (an array, list or Tensor of the parameter's shape): Paddle's Assign."""
    op_type = "assign_value"

    def __init__(self, value: Any) -> None:
        self.value = np.array(value.numpy() if hasattr(value, "numpy") else value)

    def attrs(self, var: Variable) -> dict[str, Any]:
        if tuple(self.value.shape) != tuple(var.shape):
            raise ValueError(f"Assign: the value has shape {list(self.value.shape)}, the parameter "
                             f"{getattr(var, 'name', '')} has shape {list(var.shape)}")
        return {"values": self.value.astype(var.dtype).reshape(-1).tolist()}


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain` (Saxe et al.; PyTorch's orthogonal_): rows or columns
    orthonormal, the axes after the first flattened. Drawn from fluidgrad's generator when the
    initializer runs, then written as constants (a startup program replays the same values)."""
    op_type = "assign_value"

    def __init__(self, gain: float = 1.0, seed: int = 0) -> None:
        self.gain, self.seed = float(gain), seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        if len(var.shape) < 2:
            raise ValueError(f"Orthogonal: the parameter needs 2 or more axes, got shape {list(var.shape)}")
        rows, cols = var.shape[0], math.prod(var.shape[1:])
        gaussian = generator(self.seed).standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(gaussian)
        q = q * np.sign(np.diag(r))  # a uniform draw over orthogonal matrices
        q = q if rows >= cols else q.T
        return {"values": (self.gain * q).astype(var.dtype).reshape(-1).tolist()}
