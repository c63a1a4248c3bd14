"""scatter_reduce: X with Src reduced into it at Index along an axis (torch's Tensor.scatter_reduce:
sum, prod, mean, amax, amin; include_self), the segment sum / max / mean of graph networks.

One op with one kernel; its gradients are written in ordinary ops (take_along_axis,
put_along_axis, equal, divide and scatter_reduce itself), so they differentiate again. They are
torch's: prod's stays exact where X or Src hold zeros, amax / amin share the gradient evenly among
the entries equal to the result (torch counts an excluded X in that share when include_self=False;
here only the entries that took part share it, so the shares add up to the output's gradient)."""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op
from .search import _along_index, _check_along

_UFUNCS = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _identity(reduce: str, dtype: np.dtype):
    """The value an excluded X entry starts from, so that it does not count."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "b":
        return reduce == "amin"
    if dtype.kind in "iu":
        return np.iinfo(dtype).min if reduce == "amax" else np.iinfo(dtype).max
    return -np.inf if reduce == "amax" else np.inf


def _scatter_reduce_kernel(x, index, src, axis, reduce, include_self):
    if x.ndim == 0:  # as a vector of one value
        return _scatter_reduce_kernel(x.reshape(1), index.reshape(1), src.reshape(1), 0, reduce,
                                      include_self).reshape(())
    axis %= x.ndim
    where = _along_index(x.shape, index, axis, "scatter_reduce", False)
    out = x.copy()
    if not include_self:
        out[where] = _identity(reduce, x.dtype)
    _UFUNCS[reduce].at(out, where, src)
    if reduce != "mean":
        return out
    count = np.full(x.shape, 1 if include_self else 0, dtype=np.int64)
    np.add.at(count, where, 1)
    count = np.maximum(count, 1)   # untouched entries without self keep X (out there is X, count 1)
    return out // count if x.dtype.kind in "iu" else (out / count).astype(x.dtype)   # torch floors integers


def _scatter_reduce_infer(ctx):
    _check_along(ctx)
    if ctx.attr("reduce") not in _UFUNCS:
        raise ctx.shape_error(f"reduce={ctx.attr('reduce')!r} is not one of {list(_UFUNCS)}")
    if ctx.dtype("Src") != ctx.dtype("X"):
        raise ctx.dtype_error(f"Src must have the dtype of X: {ctx.describe('Src')} vs {ctx.describe('X')}")
    index, src = ctx.shape("Index"), ctx.shape("Src")
    if len(src) != len(index) or any(a != b and a >= 0 and b >= 0 for a, b in zip(src, index)):
        raise ctx.shape_error(f"{ctx.describe('Src')} must have the shape of {ctx.describe('Index')}")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


class _Parts:
    """The ordinary ops the gradients are written in, along the forward op's axis and index."""

    def __init__(self, g: GradBuilder):
        self.g, self.index, self.axis = g, g.input("Index"), g.attr("axis")
        self.include_self = g.attr("include_self")

    def op(self, type_: str, x, y):
        return self.g.op(type_, {"X": x, "Y": y})

    def take(self, value):
        return self.g.op("take_along_axis", {"X": value, "Index": self.index}, axis=self.axis)

    def reduce(self, base, src, reduce, include_self=None):
        include_self = self.include_self if include_self is None else include_self
        return self.g.op("scatter_reduce", {"X": base, "Index": self.index, "Src": src}, axis=self.axis,
                         reduce=reduce, include_self=include_self)

    def like(self, value, fill: float):
        return self.g.op("fill_any_like", {"X": value}, value=fill)

    def is_equal(self, x, y):
        return self.g.op("cast", {"X": self.op("equal", x, y)}, dtype=self.g.dtype(x))

    def one_where(self, value, mask):
        """value with 1 where mask is 1: constant there (masked_fill), so its derivative is 0 too."""
        kept = self.op("elementwise_mul", value, self.op("elementwise_sub", self.like(mask, 1.0), mask))
        return self.op("elementwise_add", kept, mask)

    def excluded(self, grad_x, src):
        """grad_x without the entries Src was reduced into (X did not take part there)."""
        if self.include_self:
            return grad_x
        return self.g.op("put_along_axis", {"X": grad_x, "Index": self.index, "Value": self.like(src, 0.0)},
                         axis=self.axis, reduce="assign")


def _sum_grads(p: _Parts, dout, x, src, out):
    return p.excluded(dout, src), p.take(dout)


def _mean_grads(p: _Parts, dout, x, src, out):
    count = p.reduce(p.like(x, 1.0), p.like(src, 1.0), "sum")   # >= 1 everywhere
    shared = p.op("elementwise_div", dout, count)
    return p.excluded(shared, src), p.take(shared)


def _prod_grads(p: _Parts, dout, x, src, out):
    """torch's: a zero in X or Src is replaced by one to get the product of the others."""
    x_ones = p.one_where(x, p.is_equal(x, p.like(x, 0.0)))
    dx = p.op("elementwise_mul", dout, p.op("elementwise_div", p.reduce(x_ones, src, "prod"), x_ones))
    src_zero = p.is_equal(src, p.like(src, 0.0))
    zeros_there = p.take(p.reduce(p.like(x, 0.0), src_zero, "sum", include_self=True))
    single = p.op("elementwise_mul", src_zero, p.is_equal(zeros_there, p.like(zeros_there, 1.0)))
    others = p.reduce(x, p.one_where(src, single), "prod")   # the lone zero read as one
    at_single = p.take(p.op("elementwise_mul", dout, others))
    elsewhere = p.op("elementwise_div", p.take(p.op("elementwise_mul", dout, out)), p.one_where(src, src_zero))
    dsrc = p.op("elementwise_add", p.op("elementwise_mul", single, at_single),
                p.op("elementwise_mul", p.op("elementwise_sub", p.like(single, 1.0), single), elsewhere))
    return p.excluded(dx, src), dsrc


def _extreme_grads(p: _Parts, dout, x, src, out):
    """The gradient shared evenly among the entries (of X where it took part, and of Src) equal to
    the result."""
    x_is = p.excluded(p.is_equal(x, out), src)
    src_is = p.is_equal(src, p.take(out))
    shared = p.op("elementwise_div", dout, p.reduce(x_is, src_is, "sum", include_self=True))
    return p.op("elementwise_mul", x_is, shared), p.op("elementwise_mul", src_is, p.take(shared))


_GRADS = {"sum": _sum_grads, "mean": _mean_grads, "prod": _prod_grads, "amax": _extreme_grads,
          "amin": _extreme_grads}


def _scatter_reduce_grad(g: GradBuilder):
    p = _Parts(g)
    dx, dsrc = _GRADS[g.attr("reduce")](p, g.output_grad("Out"), g.input("X"), g.input("Src"), g.output("Out"))
    if g.needs_input_grad("X"):
        g.set_input_grad("X", dx)
    if g.needs_input_grad("Src"):
        g.set_input_grad("Src", dsrc)


register_op("scatter_reduce", inputs="X Index Src", outputs="Out",
            attrs={"axis": 0, "reduce": "sum", "include_self": True}, kernel=_scatter_reduce_kernel,
            infer=_scatter_reduce_infer, grad=_scatter_reduce_grad,
            doc="X with Src reduced (sum, prod, mean, amax, amin) into it at Index along axis, X's own "
                "entries taking part when include_self (torch.Tensor.scatter_reduce). A negative index is "
                "an error, as in torch.")
