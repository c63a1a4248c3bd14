"""torch.nn.init: PyTorch's in-place initialisers, so `model.apply(fn)` loops written for PyTorch
(`nn.init.xavier_uniform_(m.weight)`, `nn.init.zeros_(m.bias)`) run unchanged.

Each function fills its tensor through one of the initializer classes of `fluidgrad.initializer`
(the Paddle 2 ones, which own the fans and the distributions), so the formulas exist once. An eager
Tensor is overwritten in place (`set_value`: nothing is recorded for autograd) and returned; a
static Variable gets the filling op appended to the startup program, as Paddle's initializers do.

Fans follow the layouts fluidgrad stores: a 2-D weight is [in, out] (Paddle's Linear; PyTorch's
Linear stores [out, in]), so a Linear(400, 300) has fan_in 400 and fan_out 300 in both
frameworks; a convolution weight is [out, in / groups, *kernel] as in PyTorch. Random draws come
from the global generator that `fluidgrad.seed` resets.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..initializer import (Assign, Constant, Initializer, KaimingNormal, KaimingUniform, Normal, Orthogonal,
                           TruncatedNormal, Uniform, XavierNormal, XavierUniform, _fans, calculate_gain)
from ..ops.random import generator as _generator

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_"]


def _shape(tensor: Any, what: str) -> tuple[int, ...]:
    if not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
        raise TypeError(f"nn.init.{what}: expected a parameter Tensor or Variable, got {type(tensor).__name__}")
    return tuple(int(d) for d in tensor.shape)


def _fill(tensor: Any, initializer: Initializer, what: str, generator: Any = None) -> Any:
    """Fill `tensor` with `initializer` and return it (PyTorch's functions return their tensor)."""
    if generator is not None:
        raise TypeError(f"nn.init.{what}: a generator argument is not supported; seed the draws with "
                        f"fluidgrad.seed(n)")
    if 0 in _shape(tensor, what):
        return tensor  # nothing to fill (PyTorch warns and returns)
    if not hasattr(tensor, "set_value") and not hasattr(tensor, "block"):
        raise TypeError(f"nn.init.{what}: expected a parameter Tensor or Variable, got {type(tensor).__name__}")
    initializer(tensor)
    return tensor


def _calculate_fan_in_and_fan_out(tensor: Any, what: str = "_calculate_fan_in_and_fan_out") -> tuple[int, int]:
    """fan_in and fan_out of a weight of 2 or more axes (PyTorch refuses fewer: a bias has no fans)."""
    shape = _shape(tensor, what)
    if len(shape) < 2:
        raise ValueError(f"nn.init.{what}: fan in and fan out can not be computed for a tensor of fewer than "
                         f"2 dimensions, got shape {list(shape)}")
    return _fans(shape)


def _calculate_correct_fan(tensor: Any, mode: str, what: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"nn.init.{what}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, what)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Any, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Any:
    """U(a, b)."""
    return _fill(tensor, Uniform(a, b), "uniform_", generator)


def normal_(tensor: Any, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Any:
    """N(mean, std^2)."""
    return _fill(tensor, Normal(mean, std), "normal_", generator)


def trunc_normal_(tensor: Any, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Any = None) -> Any:
    """N(mean, std^2) redrawn outside [a, b] (absolute bounds, as PyTorch)."""
    return _fill(tensor, TruncatedNormal(mean, std, a, b), "trunc_normal_", generator)


def constant_(tensor: Any, val: float) -> Any:
    """Every element `val`."""
    return _fill(tensor, Constant(val), "constant_")


def ones_(tensor: Any) -> Any:
    """Every element 1."""
    return _fill(tensor, Constant(1.0), "ones_")


def zeros_(tensor: Any) -> Any:
    """Every element 0."""
    return _fill(tensor, Constant(0.0), "zeros_")


def eye_(tensor: Any) -> Any:
    """The identity of a 2-D weight (ones on the main diagonal of a rectangular one): a Linear that
    passes its inputs through."""
    shape = _shape(tensor, "eye_")
    if len(shape) != 2:
        raise ValueError(f"nn.init.eye_: only 2-D tensors are supported, got shape {list(shape)}")
    return _fill(tensor, Assign(np.eye(*shape)), "eye_")


def dirac_(tensor: Any, groups: int = 1) -> Any:
    """The Dirac delta of a 3-, 4- or 5-D convolution weight [out, in, *kernel]: a convolution that
    keeps as many input channels as it can (per group), each by a 1 at the kernel's centre."""
    shape = _shape(tensor, "dirac_")
    if len(shape) not in (3, 4, 5):
        raise ValueError(f"nn.init.dirac_: only 3-, 4- and 5-D tensors are supported, got shape {list(shape)}")
    if groups < 1 or shape[0] % groups:
        raise ValueError(f"nn.init.dirac_: the {shape[0]} output channels of shape {list(shape)} do not split "
                         f"into groups={groups}")
    values = np.zeros(shape)
    out_per_group = shape[0] // groups
    centre = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1.0
    return _fill(tensor, Assign(values), "dirac_")


def xavier_uniform_(tensor: Any, gain: float = 1.0, generator: Any = None) -> Any:
    """Glorot's U(-a, a), a = gain sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_uniform_")
    return _fill(tensor, XavierUniform(fan_in, fan_out, gain), "xavier_uniform_", generator)


def xavier_normal_(tensor: Any, gain: float = 1.0, generator: Any = None) -> Any:
    """Glorot's N(0, gain^2 2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_normal_")
    return _fill(tensor, XavierNormal(fan_in, fan_out, gain), "xavier_normal_", generator)


def kaiming_uniform_(tensor: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Any = None) -> Any:
    """He's U(-b, b), b = gain sqrt(3 / fan) with gain = calculate_gain(nonlinearity, a) and fan
    the `mode` fan (fan_in keeps the forward pass's variance, fan_out the backward pass's)."""
    fan = _calculate_correct_fan(tensor, mode, "kaiming_uniform_")
    return _fill(tensor, KaimingUniform(fan, a, nonlinearity), "kaiming_uniform_", generator)


def kaiming_normal_(tensor: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Any = None) -> Any:
    """He's N(0, gain^2 / fan), gain and fan as in kaiming_uniform_."""
    fan = _calculate_correct_fan(tensor, mode, "kaiming_normal_")
    return _fill(tensor, KaimingNormal(fan, a, nonlinearity), "kaiming_normal_", generator)


def orthogonal_(tensor: Any, gain: float = 1.0, generator: Any = None) -> Any:
    """A (semi-)orthogonal matrix times `gain`, the axes after the first flattened."""
    shape = _shape(tensor, "orthogonal_")
    if len(shape) < 2:
        raise ValueError(f"nn.init.orthogonal_: only tensors with 2 or more dimensions are supported, "
                         f"got shape {list(shape)}")
    return _fill(tensor, Orthogonal(gain), "orthogonal_", generator)


def sparse_(tensor: Any, sparsity: float, std: float = 0.01, generator: Any = None) -> Any:
    """N(0, std^2) with a `sparsity` fraction of each column (ceil(sparsity * rows) entries,
    chosen at random) set to zero, as PyTorch's sparse_ on a 2-D tensor."""
    shape = _shape(tensor, "sparse_")
    if len(shape) != 2:
        raise ValueError(f"nn.init.sparse_: only 2-D tensors are supported, got shape {list(shape)}")
    if not 0.0 <= sparsity <= 1.0:
        raise ValueError(f"nn.init.sparse_: sparsity must lie in [0, 1], got {sparsity}")
    rows, cols = shape
    values = Normal(0.0, std).initial_value([rows, cols], "float64")
    zeros_per_column = math.ceil(sparsity * rows)
    for column in range(cols):
        values[_generator().permutation(rows)[:zeros_per_column], column] = 0.0
    return _fill(tensor, Assign(values), "sparse_", generator)
