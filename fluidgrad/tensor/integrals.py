"""The trapezoidal rule along an axis (torch.trapezoid / cumulative_trapezoid, Paddle 2's
trapezoid / cumulative_trapezoid): sample spacing from x (1-D, or y's shape), a constant dx, or
1. Composed of slice, multiply, sum and cumsum: both modes, gradients to y and x."""
from __future__ import annotations

from typing import Any

from ..dispatch import apply_op, axis_of_input, is_tensor
from ..framework import Variable
from ..framework.torch_forms import torch_keywords
from ..functions import add, multiply, reshape
from ..functions import sum as _sum
from .math import cumsum

__all__ = ["cumulative_trapezoid", "trapezoid"]

_END = 2**31 - 1


def _cut(y: Any, axis: int, start: int, end: int) -> Any:
    return apply_op("slice", {"X": y}, {"axes": [axis], "starts": [start], "ends": [end]})


def _broadcastable(a: Any, b: Any) -> bool:
    return all(m == n or 1 in (m, n) or min(m, n) < 0 for m, n in zip(a, b))


def _spacings(function: str, y: Any, x: Any, axis: int) -> Any:
    """x's differences along axis, shaped to multiply y's pairs: a 1-D x of y's length along that
    axis, or an x of y's rank."""
    size = y.shape[axis]
    if len(x.shape) == 1 and len(y.shape) != 1:
        if x.shape[0] != size:
            raise ValueError(f"{function}: a 1-D x must have y's size {size} along axis {axis}, got x of shape "
                             f"{list(x.shape)} and y of shape {list(y.shape)}")
        shape = [1] * len(y.shape)
        shape[axis] = -1
        x, along = reshape(x, shape), axis
    elif len(x.shape) != len(y.shape) or x.shape[axis] != size or not _broadcastable(x.shape, y.shape):
        raise ValueError(f"{function}: x must be 1-D of y's size along axis {axis}, or of y's shape (broadcast "
                         f"off that axis), got x of shape {list(x.shape)} and y of shape {list(y.shape)}")
    else:
        along = axis
    return _cut(x, along, 1, _END) - _cut(x, along, 0, -1)


def _pieces(function: str, y: Any, x: Any, dx: Any, axis: int) -> tuple[Any, int]:
    """Each interval's area (y_i + y_i+1) / 2 * spacing along axis, and that axis."""
    if x is not None and dx is not None:
        raise TypeError(f"{function}: give x or dx, not both")
    along = axis_of_input(function, y, axis, "y")
    means = add(_cut(y, along, 1, _END), _cut(y, along, 0, -1)) * 0.5
    if x is None:
        return means * (1.0 if dx is None else float(dx)), along
    if not (isinstance(x, Variable) or is_tensor(x)):
        raise TypeError(f"{function}: x must be a Tensor of sample points (for one spacing, use dx=), got "
                        f"{type(x).__name__}")
    return multiply(means, _spacings(function, y, x, along)), along


@torch_keywords
def trapezoid(y: Any, x: Any = None, dx: float | None = None, axis: int = -1, name: str | None = None) -> Any:
    """The integral of y along axis by the trapezoidal rule: samples at x (1-D, or y's shape) or
    spaced dx apart (default 1); y's shape without that axis. Spelled as both frameworks do:
    trapezoid(y, x), trapezoid(y, dx=0.5, dim=0) (torch), trapezoid(y, dx=0.5, axis=0) (Paddle)."""
    pieces, along = _pieces("trapezoid", y, x, dx, axis)
    return _sum(pieces, along)


@torch_keywords
def cumulative_trapezoid(y: Any, x: Any = None, dx: float | None = None, axis: int = -1,
                         name: str | None = None) -> Any:
    """The running trapezoidal integral of y along axis (one value fewer than y has along it):
    torch.cumulative_trapezoid, paddle.cumulative_trapezoid."""
    pieces, along = _pieces("cumulative_trapezoid", y, x, dx, axis)
    return cumsum(pieces, axis=along)
