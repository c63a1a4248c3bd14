"""bincount: how often each value 0, 1, ..., max(X) occurs in a 1-D integer X, or the sum of
Weights at its positions (paddle.bincount, torch.bincount).

The number of bins, max(max(X) + 1, minlength), is known only at run time, so the output is
declared [-1], as `unique`'s. Weighted sums are float64, or float32 for float32 weights (PyTorch's
rule). The gradient of Weights is the output gradient gathered at X (each
weight went to bin X[i]); X, integers, has none.
"""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op


def _bincount_kernel(x, weights, minlength):
    if x.size and x.min() < 0:
        raise ValueError(f"bincount: X must be non-negative, got the value {int(x.min())}")
    if weights is None:
        return np.bincount(x, minlength=minlength).astype(np.int64)
    sums = np.bincount(x, weights=weights.astype(np.float64, copy=False), minlength=minlength)
    return sums.astype(_sum_dtype(weights.dtype.name), copy=False)


def _sum_dtype(weights_dtype: str) -> str:
    """PyTorch's rule: float32 weights sum to float32, every other dtype to float64."""
    return weights_dtype if weights_dtype in ("float32", "float64") else "float64"


def _bincount_infer(ctx):
    shape, dtype = ctx.shape("X"), ctx.dtype("X")
    if len(shape) != 1 or not dtype.startswith(("int", "uint")):
        raise ctx.shape_error(f"X must be a 1-D integer tensor, got {ctx.describe('X')}")
    if ctx.attr("minlength") < 0:
        raise ctx.shape_error(f"minlength must be non-negative, got {ctx.attr('minlength')}")
    out_dtype = "int64"
    if ctx.has_input("Weights"):
        weights = ctx.shape("Weights")
        if len(weights) != 1 or (shape[0] >= 0 and weights[0] >= 0 and weights[0] != shape[0]):
            raise ctx.shape_error(f"Weights {ctx.describe('Weights')} must have X's shape {list(shape)}")
        out_dtype = _sum_dtype(ctx.dtype("Weights"))
    ctx.set_output("Out", [-1], out_dtype)


def _bincount_grad(g: GradBuilder):
    if g.input("Weights") is not None and g.needs_input_grad("Weights"):
        grad = g.op("gather", {"X": g.output_grad("Out"), "Index": g.input("X")}, axis=0)
        weights_dtype = g.dtype(g.input("Weights"))
        if weights_dtype != g.dtype(g.output("Out")):                  # float16 weights summed in float64
            grad = g.op("cast", {"X": grad}, dtype=weights_dtype)
        g.set_input_grad("Weights", grad)


register_op("bincount", inputs="X Weights?", outputs="Out", attrs={"minlength": 0},
            kernel=_bincount_kernel, infer=_bincount_infer, grad=_bincount_grad,
            doc="Counts of each value 0..max(X) in the 1-D integer X (the sum of Weights at its positions when "
                "given), at least minlength bins; the length is known only at run time.")
