"""Products and distances of Paddle 2 and PyTorch composed of registered ops (so gradients, static
mode and ONNX export come from those ops): addmm, baddbmm, inner, cdist, dist, diag_embed."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..functions import abs as _abs
from ..functions import add, cast, gather, matmul, multiply, not_equal, reshape, scale, subtract, transpose, unsqueeze
from ..functions import sum as _sum
from ..indexing import constant
from .keywords import paddle_or_torch
from .linalg import norm, tensordot
from .search import where

__all__ = ["addmm", "baddbmm", "cdist", "diag_embed", "dist", "inner"]


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def addmm(input: Any, x: Any = None, y: Any = None, beta: float = 1.0, alpha: float = 1.0, name: str | None = None, *,
          mat1: Any = None, mat2: Any = None) -> Any:
    """beta * input + alpha * (x @ y) for matrices x and y, input broadcast to the product's shape
    (paddle.addmm, torch.addmm: mat1= / mat2= too). With beta = 0 input is not read (its NaNs do
    not leak), as torch."""
    x, y = paddle_or_torch("addmm", "x", x, "mat1", mat1), paddle_or_torch("addmm", "y", y, "mat2", mat2)
    if x is None or y is None:
        raise TypeError("addmm: missing the matrices x= and y= (PyTorch's mat1= and mat2=)")
    if len(x.shape) != 2 or len(y.shape) != 2:
        raise ValueError(f"addmm: x and y must be matrices, got {_describe(x)} and {_describe(y)}")
    if x.shape[1] != y.shape[0] and -1 not in (x.shape[1], y.shape[0]):
        raise ValueError(f"addmm: x {_describe(x)} and y {_describe(y)} cannot be multiplied")
    if len(input.shape) > 2 or any(a not in (1, b, -1) and b != -1 for a, b in
                                   zip(reversed(input.shape), (y.shape[1], x.shape[0]))):
        raise ValueError(f"addmm: input {_describe(input)} does not broadcast to the product's shape "
                         f"[{x.shape[0]}, {y.shape[1]}] of x {_describe(x)} and y {_describe(y)}")
    product = matmul(x, y)
    product = product if alpha == 1 else scale(product, float(alpha))
    if beta == 0:
        return product
    return add(input if beta == 1 else scale(input, float(beta)), product)


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: float = 1.0, alpha: float = 1.0) -> Any:
    """beta * input + alpha * (batch1 @ batch2) for batches of matrices [b, n, m] @ [b, m, p],
    input broadcast to [b, n, p] (torch.baddbmm: attention scores plus a bias). With beta = 0
    input is not read (its NaNs do not leak), as torch."""
    if len(batch1.shape) != 3 or len(batch2.shape) != 3:
        raise ValueError(f"baddbmm: batch1 and batch2 must be 3-D batches of matrices, got {_describe(batch1)} "
                         f"and {_describe(batch2)}")
    if any(a != b and -1 not in (a, b) for a, b in ((batch1.shape[0], batch2.shape[0]),
                                                    (batch1.shape[2], batch2.shape[1]))):
        raise ValueError(f"baddbmm: batch1 {_describe(batch1)} and batch2 {_describe(batch2)} cannot be multiplied "
                         f"batch by batch")
    target = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    if len(input.shape) > 3 or any(a not in (1, b, -1) and b != -1 for a, b in
                                   zip(reversed(input.shape), reversed(target))):
        raise ValueError(f"baddbmm: input {_describe(input)} does not broadcast to the product's shape "
                         f"{list(target)}")
    product = matmul(batch1, batch2)
    product = product if alpha == 1 else scale(product, float(alpha))
    if beta == 0:
        return product
    return add(input if beta == 1 else scale(input, float(beta)), product)


def dist(x: Any, y: Any, p: float = 2, name: str | None = None) -> Any:
    """The p-norm of x - y over all elements (broadcast), a 0-D Tensor (paddle.dist, torch.dist;
    p > 0 or +-inf)."""
    difference = subtract(x, y)
    return norm(reshape(difference, [-1]), p=float(p))


def inner(x: Any, y: Any = None, name: str | None = None, *, other: Any = None) -> Any:
    """Sums of products over the last axes of x and y: shape x.shape[:-1] + y.shape[:-1]
    (paddle.inner, torch.inner: other= for y, np.inner); a 0-D side multiplies."""
    y = paddle_or_torch("inner", "y", y, "other", other)
    if y is None:
        raise TypeError("inner: missing the argument y= (PyTorch's other=)")
    if len(x.shape) == 0 or len(y.shape) == 0:
        return multiply(x, y)
    if x.shape[-1] != y.shape[-1] or x.shape[-1] < 0:
        raise ValueError(f"inner: the last axes of x {_describe(x)} and y {_describe(y)} must have the same known size")
    if len(x.shape) <= 2 and len(y.shape) <= 2:      # one matmul, run-time batch sizes on both sides included
        return matmul(y, x) if len(x.shape) == 1 and len(y.shape) == 2 else matmul(x, y, transpose_y=len(y.shape) == 2)
    return tensordot(x, y, [[len(x.shape) - 1], [len(y.shape) - 1]])


def cdist(x: Any = None, y: Any = None, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary",
          name: str | None = None, *, x1: Any = None, x2: Any = None) -> Any:
    """The p-norm distance between each row of x [..., P, M] and each row of y [..., R, M]:
    [..., P, R] (paddle.cdist, torch.cdist; batch axes broadcast). p = 0 counts the differing
    entries, p = inf takes the largest (tied largest share its gradient, where torch's cdist gives
    each the whole); the gradient at a zero distance is 0, as torch's. Computed
    from the differences (never through the |x|^2 - 2xy + |y|^2 expansion), so compute_mode only
    chooses torch's speed, not these values. PyTorch's x1= / x2= are taken for x and y."""
    x, y = paddle_or_torch("cdist", "x", x, "x1", x1), paddle_or_torch("cdist", "y", y, "x2", x2)
    if x is None or y is None:
        raise TypeError("cdist: missing the arguments x= and y= (PyTorch's x1= and x2=)")
    if len(x.shape) < 2 or len(y.shape) < 2 or x.shape[-1] != y.shape[-1]:
        raise ValueError(f"cdist: x {_describe(x)} and y {_describe(y)} must be [..., P, M] and [..., R, M]")
    if not p >= 0:
        raise ValueError(f"cdist: p must be >= 0, got {p}")
    difference = subtract(unsqueeze(x, -2), unsqueeze(y, -3))            # [..., P, R, M]
    if p == 0:
        return _sum(cast(not_equal(difference, constant(0, difference)), x.dtype), axis=-1)
    if p == math.inf:
        return norm(_abs(difference), math.inf, axis=-1)
    return norm(difference, float(p), axis=-1)


def diag_embed(input: Any, offset: int = 0, dim1: int = -2, dim2: int = -1, name: str | None = None) -> Any:
    """Each vector along input's last axis put on diagonal `offset` of a square matrix (zeros
    elsewhere) whose two axes are dim1 and dim2 of the result (paddle.diag_embed,
    torch.diag_embed). One gather of the entries then a `where`: any dtype, gradients by gather's."""
    rank, offset = len(input.shape), int(offset)
    if rank == 0:
        raise ValueError(f"diag_embed: input must have at least one axis, got {_describe(input)}")
    out_rank = rank + 1
    first, second = (d % out_rank if -out_rank <= d < out_rank else None for d in (int(dim1), int(dim2)))
    if first is None or second is None or first == second:
        raise ValueError(f"diag_embed: dim1={dim1} and dim2={dim2} must be two different axes of the "
                         f"{out_rank}-D result")
    n = input.shape[-1]
    if n < 0:
        raise ValueError(f"diag_embed: the last axis of {_describe(input)} must have a known size")
    size = n + abs(offset)
    rows = np.arange(n) + max(-offset, 0)
    columns = np.arange(n) + max(offset, 0)
    source = np.zeros((size, size), dtype="int64")
    on_diagonal = np.zeros((size, size), dtype=bool)
    source[rows, columns], on_diagonal[rows, columns] = np.arange(n), True
    picked = gather(input, constant(source.reshape(-1), input), axis=rank - 1)    # [..., size * size]
    flat = where(constant(on_diagonal.reshape(-1), input), picked, constant(0, input))
    out = reshape(flat, [0] * (rank - 1) + [size, size])
    if (first, second) == (out_rank - 2, out_rank - 1):
        return out
    batch = iter(range(out_rank - 2))
    perm = [out_rank - 2 if d == first else out_rank - 1 if d == second else next(batch) for d in range(out_rank)]
    return transpose(out, perm)
