"""The gradient of `cumprod_grad` (grad of grad of cumprod), exact where X has zeros.

cumprod_grad stays a fused kernel for the first derivative (one backward scan). Its own
gradient uses the product-omitting-one form, as PyTorch's double backward of cumprod does:
along the scanned axis, with a new axis k (the input differentiated) before it,

    E[k, i] = 1 if i == k else x_i,      C = cumprod(E) along i (same exclusive / reverse),

so that C[k, j] is out_j with x_k left out, and with mask[k, j] = 1 where x_k is a factor of out_j,

    DX_k = sum_j mask[k, j] DOut_j C[k, j].

Its partial derivatives, for a cotangent W of DX, are then ordinary registered ops:

    d/dDOut_j = sum_k W_k mask[k, j] C[k, j]
    d/dx_i    = sum_{k != i} cumprod_grad(E, mask W_k DOut_j)[k, i]

O(n^2) in the length n of the scanned axis, which must be known when the backward is built;
cumprod_grad appears again, so every higher order follows.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .grad_builder import GradBuilder


def _constant(g: GradBuilder, array: np.ndarray, dtype: str) -> Any:
    return g.op("assign_value", {}, shape=list(array.shape), dtype=dtype,
                values=[float(v) for v in array.reshape(-1)])


def _masks(n: int, trailing: int, exclusive: bool, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """The identity over (k, i) and mask[k, j] (x_k is a factor of out_j), shaped [n, n, 1...]
    to broadcast against the expanded arrays."""
    k, j = np.arange(n)[:, None], np.arange(n)[None, :]
    factor = (k > j if exclusive else k >= j) if reverse else (k < j if exclusive else k <= j)
    shape = (n, n) + (1,) * trailing
    return np.eye(n).reshape(shape), factor.astype(np.float64).reshape(shape)


def cumprod_grad_grad(g: GradBuilder) -> None:
    """The gradient of cumprod_grad (X, DOut -> DX) in X and DOut."""
    x, dout, cotangent = g.input("X"), g.input("DOut"), g.output_grad("DX")
    shape, dtype = list(g.shape(x)), g.dtype(x)
    exclusive, reverse = g.attr("exclusive"), g.attr("reverse")
    if not shape:  # a scalar: DX = DOut (or 0 when exclusive), whatever X is
        if not exclusive:
            g.set_input_grad("DOut", cotangent)
        return
    axis = g.attr("axis") % len(shape)
    n = shape[axis]
    if n < 0:
        raise ValueError(f"grad of op cumprod_grad: the second derivative of cumprod needs the length of the "
                         f"scanned axis {axis} of X (shape {shape}) at build time")
    eye, mask = _masks(n, len(shape) - axis - 1, exclusive, reverse)
    # E[k, i]: x along i (axis + 1), with x_k replaced by 1 (k on `axis`)
    x_row = g.op("unsqueeze", {"X": x}, axes=[axis])
    off_diagonal = _constant(g, 1.0 - eye, dtype)
    omitted = g.op("elementwise_add", {"X": g.op("elementwise_mul", {"X": x_row, "Y": off_diagonal}),
                                       "Y": _constant(g, eye, dtype)})
    scan = {"axis": axis + 1, "exclusive": exclusive, "reverse": reverse}
    weighted = g.op("elementwise_mul", {"X": g.op("unsqueeze", {"X": cotangent}, axes=[axis + 1]),
                                        "Y": _constant(g, mask, dtype)})  # W_k mask[k, j]
    if g.needs_input_grad("DOut"):
        products = g.op("cumprod", {"X": omitted}, **scan)
        terms = g.op("elementwise_mul", {"X": weighted, "Y": products})
        g.set_input_grad("DOut", g.op("reduce_sum", {"X": terms}, axis=[axis]))
    if g.needs_input_grad("X"):
        through = g.op("elementwise_mul", {"X": weighted, "Y": g.op("unsqueeze", {"X": dout}, axes=[axis])})
        d_omitted = g.op("cumprod_grad", {"X": omitted, "DOut": through}, **scan)
        d_x = g.op("elementwise_mul", {"X": d_omitted, "Y": off_diagonal})
        g.set_input_grad("X", g.op("reduce_sum", {"X": d_x}, axis=[axis]))
