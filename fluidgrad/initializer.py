"""Initializers: each appends one op to the startup program that fills a parameter."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .framework import Block, Variable
from .ops.random import generator


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

    def __call__(self, var: Variable, block: Block) -> None:
        attrs = {"shape": list(var.shape), "dtype": var.dtype, **self.attrs(var)}
        block.append_op(self.op_type, {}, {"Out": [var]}, attrs)


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

    def __init__(self, low: float = -1.0, high: float = 1.0, seed: int = 0) -> None:
        self.low, self.high, self.seed = float(low), float(high), seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        return {"min": self.low, "max": self.high, "seed": self.seed}


class Normal(Initializer):
    """Draws from N(mean, std**2)."""
    op_type = "gaussian_random"

    def __init__(self, mean: float = 0.0, std: float = 1.0, seed: int = 0) -> None:
        self.mean, self.std, self.seed = float(mean), float(std), seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std, "seed": self.seed}


class TruncatedNormal(Normal):
    """Draws from N(mean, std**2), redrawing values more than two std from the mean."""
    op_type = "truncated_gaussian_random"


class XavierUniform(Initializer):
    """Glorot's uniform: U(-a, a) with a = sqrt(6 / (fan_in + fan_out))."""
    op_type = "uniform_random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        fan_in, fan_out = _fans(var.shape)
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return {"min": -limit, "max": limit, "seed": self.seed}


class XavierNormal(Initializer):
    """Glorot's normal: N(0, 2 / (fan_in + fan_out))."""
    op_type = "gaussian_random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        fan_in, fan_out = _fans(var.shape)
        return {"mean": 0.0, "std": math.sqrt(2.0 / (fan_in + fan_out)), "seed": self.seed}


class KaimingNormal(Initializer):
    """He's normal for ReLU networks: N(0, 2 / fan_in)."""
    op_type = "gaussian_random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        fan_in, _ = _fans(var.shape)
        return {"mean": 0.0, "std": math.sqrt(2.0 / fan_in), "seed": self.seed}


class KaimingUniform(Initializer):
    """He's uniform for ReLU networks: U(-a, a) with a = sqrt(6 / fan_in)."""
    op_type = "uniform_random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def attrs(self, var: Variable) -> dict[str, Any]:
        fan_in, _ = _fans(var.shape)
        limit = math.sqrt(6.0 / fan_in)
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
