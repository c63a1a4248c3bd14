"""Python operators (`+ - * / @ ** < ...`) for Variables and Tensors alike.

The functions behind them live in `fluidgrad.functions`, which serves both modes;
`install` plugs them in once at import so that no operator pays for a lookup.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

from .axes import checked_axes

_api: Any = None


def install(api: ModuleType) -> None:
    global _api
    _api = api


def _axis(axis, dim):
    """Paddle's axis= or PyTorch's dim= (not both)."""
    if dim is not None and axis is not None:
        raise TypeError(f"give the axis once, as axis= or dim= (got {axis} and {dim})")
    return dim if axis is None else axis


def _sizes(args):
    """A shape or permutation given as one list / tuple / tensor, or as several integers."""
    return args[0] if len(args) == 1 and not isinstance(args[0], int) else list(args)


class MathMixin:
    __slots__ = ()
    __array_priority__ = 100  # numpy defers `ndarray + x` to our __radd__

    def __add__(self, other): return _api.add(self, other)
    def __radd__(self, other): return _api.add(other, self)
    def __sub__(self, other): return _api.subtract(self, other)
    def __rsub__(self, other): return _api.subtract(other, self)
    def __mul__(self, other): return _api.multiply(self, other)
    def __rmul__(self, other): return _api.multiply(other, self)
    def __truediv__(self, other): return _api.divide(self, other)
    def __rtruediv__(self, other): return _api.divide(other, self)
    def __matmul__(self, other): return _api.matmul(self, other)
    def __rmatmul__(self, other): return _api.matmul(other, self)
    def __floordiv__(self, other): return _api.floor_divide(self, other)
    def __rfloordiv__(self, other): return _api.floor_divide(other, self)
    def __mod__(self, other): return _api.remainder(self, other)
    def __rmod__(self, other): return _api.remainder(other, self)
    def __pow__(self, other): return _api.pow(self, other)
    def __rpow__(self, other): return _api.pow(other, self)
    def __neg__(self): return _api.scale(self, -1.0)
    def __lt__(self, other): return _api.less_than(self, other)
    def __le__(self, other): return _api.less_equal(self, other)
    def __gt__(self, other): return _api.greater_than(self, other)
    def __ge__(self, other): return _api.greater_equal(self, other)
    def __getitem__(self, item): return _api.getitem(self, item)
    def __setitem__(self, item, value): _api.setitem(self, item, value)

    # `==` / `!=` compare elementwise (as PyTorch and Paddle, both modes); the hash stays the
    # identity's, so Variables and Tensors remain dict keys and set members (found by identity).
    def __eq__(self, other): return _api.compare_operator("equal", self, other)
    def __ne__(self, other): return _api.compare_operator("not_equal", self, other)
    __hash__ = object.__hash__

    # Paddle's signatures, and PyTorch's habits beside them: dim= for axis=, sizes as arguments
    def sum(self, axis=None, keepdim=False, dtype=None, name=None, *, dim=None):
        return _api.sum(self, _axis(axis, dim), keepdim, dtype)

    def mean(self, axis=None, keepdim=False, name=None, *, dim=None, dtype=None):
        """The mean over axis= / dim=, of the value cast to `dtype` first when given (PyTorch's
        x.mean(dtype=), as x.sum(dtype=))."""
        return _api.mean(self if dtype is None else _api.cast(self, dtype), _axis(axis, dim), keepdim)

    def reshape(self, *shape):
        """x.reshape([4, 2]) as Paddle's, or x.reshape(4, 2) / x.reshape(-1) as PyTorch's."""
        return _api.reshape(self, _sizes(shape))

    view = reshape   # PyTorch's view(6, 4) (Tensors: tensor/torch_methods.py's, a view of x)

    def transpose(self, *perm):
        """x.transpose([1, 0, 2]) as Paddle's (a permutation), or x.transpose(1, 2) as PyTorch's
        (two axes swapped)."""
        if len(perm) == 2 and all(isinstance(a, int) for a in perm):
            first, second = checked_axes("transpose", perm, self.shape)
            order = list(range(len(self.shape)))
            if order:
                order[first], order[second] = order[second], order[first]
            return _api.transpose(self, order)
        return _api.transpose(self, _sizes(perm))

    def permute(self, *dims):
        dims = _sizes(dims)
        if sorted(checked_axes("permute", dims, self.shape)) != list(range(len(self.shape))):
            raise ValueError(f"permute: dims {list(dims)} are not a permutation of the axes of a tensor of "
                             f"shape {list(self.shape)}")
        return _api.transpose(self, dims)
    def astype(self, dtype): return _api.cast(self, dtype)
    def float(self): return _api.cast(self, "float32")
    def double(self): return _api.cast(self, "float64")
    def half(self): return _api.cast(self, "float16")
    def long(self): return _api.cast(self, "int64")
    def int(self): return _api.cast(self, "int32")
    def bool(self): return _api.cast(self, "bool")
    def exp(self): return _api.exp(self)
    def log(self): return _api.log(self)
    def tanh(self): return _api.tanh(self)
    def sqrt(self): return _api.sqrt(self)
    def square(self): return _api.square(self)
    def matmul(self, other): return _api.matmul(self, other)

    @property
    def T(self):
        return _api.transpose(self, list(reversed(range(len(self.shape)))))
