"""Tensors assembled from pieces of others, as PyTorch and Paddle 2 both spell them:
cartesian_prod (every combination of vectors' elements), block_diag (matrices down a diagonal),
vander (the powers of a vector). Composed of registered ops (meshgrid, concat, multiply, stack):
both modes, and gradients to every piece."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..functions import concat, full_like, multiply, reshape, stack
from ..indexing import constant
from .creation import meshgrid

__all__ = ["block_diag", "cartesian_prod", "vander"]


def _pieces(function: str, tensors: Sequence[Any]) -> list[Any]:
    """The tensors given as arguments (torch) or as one list (Paddle), of one dtype."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise ValueError(f"{function}: needs at least one tensor")
    dtypes = sorted({str(t.dtype) for t in tensors})
    if len(dtypes) > 1:
        raise TypeError(f"{function}: the tensors must have one dtype, got {', '.join(dtypes)} (cast them first)")
    return list(tensors)


def cartesian_prod(*tensors: Any, name: str | None = None) -> Any:
    """Every combination of one element of each 1-D tensor, as rows [n1 * n2 * ..., k] in
    itertools.product's order (torch.cartesian_prod; paddle.cartesian_prod takes one list). One
    tensor gives itself."""
    pieces = _pieces("cartesian_prod", tensors)
    shapes = [list(t.shape) for t in pieces]
    if any(len(s) != 1 for s in shapes):
        raise ValueError(f"cartesian_prod: every tensor must be 1-D, got shapes {shapes}")
    if len(pieces) == 1:
        return pieces[0] * 1
    grids = meshgrid(*pieces, indexing="ij")
    return stack([reshape(g, [-1]) for g in grids], axis=1)


def _as_matrix(t: Any) -> Any:
    rank = len(t.shape)
    if rank > 2:
        raise ValueError(f"block_diag: each tensor must be 0-D, 1-D or 2-D, got shape {list(t.shape)}")
    return reshape(t, [1, 1] if rank == 0 else [1, t.shape[0]]) if rank < 2 else t


def block_diag(*tensors: Any, name: str | None = None) -> Any:
    """The matrices placed along the diagonal of one zero matrix (torch.block_diag(a, b, ...);
    paddle.block_diag([a, b, ...])): a 0-D tensor is a 1 x 1 block, a 1-D one a single row."""
    matrices = [_as_matrix(t) for t in _pieces("block_diag", tensors)]
    shapes = [list(m.shape) for m in matrices]
    if any(d < 0 for s in shapes for d in s):
        raise ValueError(f"block_diag: the blocks' sizes must be known, got shapes {shapes}")
    width, rows, left = sum(s[1] for s in shapes), [], 0
    dtype = str(matrices[0].dtype)
    for m, (r, c) in zip(matrices, shapes):
        parts = [constant(np.zeros((r, left), dtype), m)] if left else []
        parts.append(m)
        if width - left - c:
            parts.append(constant(np.zeros((r, width - left - c), dtype), m))
        rows.append(concat(parts, 1) if len(parts) > 1 else m)
        left += c
    return concat(rows, 0) if len(rows) > 1 else rows[0] * 1


def vander(x: Any, n: int | None = None, increasing: bool = False, name: str | None = None, *,
           N: int | None = None) -> Any:
    """The Vandermonde matrix of a 1-D x: column j is x ** (n - 1 - j), or x ** j with
    `increasing` (paddle.vander's n, torch.vander's N; default len(x)). Built by repeated
    products, so its gradient is exact at x = 0."""
    if N is not None:
        if n is not None:
            raise TypeError("vander: give n= or N=, not both")
        n = N
    if len(x.shape) != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {list(x.shape)}")
    n = x.shape[0] if n is None else int(n)
    if n < 0 and N is None and x.shape[0] < 0:
        raise ValueError("vander: x's length is unknown when the program is built; give the number of columns n")
    if n < 0:
        raise ValueError(f"vander: the number of columns must not be negative, got {n}")
    columns, power = [], None
    for j in range(n):
        power = full_like(x, 1) if j == 0 else (x * 1 if j == 1 else multiply(power, x))
        columns.append(power)
    if not columns:
        return reshape(x, [-1, 1])[:, :0]
    return stack(columns if increasing else columns[::-1], axis=1)
