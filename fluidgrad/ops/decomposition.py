"""Matrix decompositions over the last two axes (batched over the leading ones, as torch.linalg):
svd, eigh (symmetric), qr. For fluidgrad.linalg's svd / svdvals / eigh / eigvalsh / qr and the
norms and condition numbers made of singular values.

Kernels are np.linalg's. Singular and eigen vectors are only defined up to sign; the kernels fix
it (each vector's largest-magnitude entry of U's columns, of the eigenvectors, is positive, as
scikit-learn's `svd_flip`) so that one input gives one answer whatever LAPACK computed it.

Gradients are the standard reduced-decomposition backward rules (torch's `svd_backward`,
`linalg_eig_backward`, `linalg_qr_backward`; JAX's `svd_jvp_rule`), written as ordinary ops
(matmul, transpose, elementwise, solve, eye), so they differentiate again: grad of grad works.
They are defined where the decomposition is differentiable: distinct singular values (and,
for a non-square matrix, non-zero ones: full rank), distinct eigenvalues, a full-rank QR. With
repeated singular values or eigenvalues the vectors are not unique and the gradient is
undefined (inf or nan), as in PyTorch; the values alone (svdvals, eigvalsh) have a gradient
everywhere they are distinct-or-not, since it does not divide by gaps.
"""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import float_only


def _matrix_shape(ctx, square: bool = False) -> list[int]:
    """X's shape, checked: float32/float64 matrices of known size in the last two axes."""
    float_only(ctx, "X")
    if ctx.dtype("X") not in ("float32", "float64"):  # as np.linalg and torch.linalg
        raise ctx.dtype_error(f"linear algebra in float32 or float64 only, got {ctx.describe('X')}")
    shape = list(ctx.shape("X"))
    if len(shape) < 2:
        raise ctx.shape_error(f"expects matrices in the last two axes (rank >= 2), got {ctx.describe('X')}")
    if min(shape[-2:]) < 0:
        raise ctx.shape_error(f"the matrix axes (last two) must have known sizes, got {ctx.describe('X')}")
    if square and shape[-1] != shape[-2]:
        raise ctx.shape_error(f"expects square (symmetric) matrices in the last two axes, got {ctx.describe('X')}")
    return shape


def _positive_largest(vectors: np.ndarray) -> np.ndarray:
    """+-1 per column of `vectors` making each column's largest-magnitude entry positive ([..., 1, k])."""
    at = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    signs = np.sign(np.take_along_axis(vectors, at, axis=-2))
    signs[signs == 0] = 1
    return signs


class _Ops:
    """Short names for the ops a gradient is written in (each emits one op through the builder)."""

    def __init__(self, g: GradBuilder) -> None:
        self.g = g

    def mm(self, x, y, tx=False, ty=False):
        return self.g.op("matmul", {"X": x, "Y": y}, transpose_x=tx, transpose_y=ty)

    def t(self, x):
        rank = len(self.g.shape(x))
        return self.g.op("transpose", {"X": x}, perm=list(range(rank - 2)) + [rank - 1, rank - 2])

    def add(self, x, y):
        return y if x is None else x if y is None else self.g.op("elementwise_add", {"X": x, "Y": y})

    def sub(self, x, y):
        return self.g.op("elementwise_sub", {"X": x, "Y": y})

    def mul(self, x, y):
        return self.g.op("elementwise_mul", {"X": x, "Y": y})

    def div(self, x, y):
        return self.g.op("elementwise_div", {"X": x, "Y": y})

    def scale(self, x, factor):
        return self.g.op("scale", {"X": x}, scale=float(factor))

    def row(self, v):
        """[..., k] -> [..., 1, k]: scales the columns of a matrix it multiplies."""
        return self.g.op("unsqueeze", {"X": v}, axes=[len(self.g.shape(v)) - 1])

    def col(self, v):
        """[..., k] -> [..., k, 1]: scales the rows."""
        return self.g.op("unsqueeze", {"X": v}, axes=[len(self.g.shape(v))])

    def eye(self, k, like):
        return self.g.op("eye", {}, num_rows=k, num_columns=k, dtype=self.g.dtype(like))

    def diag(self, v, k):
        """diag_embed: [..., k] -> [..., k, k] with v on the diagonal."""
        return self.mul(self.col(v), self.eye(k, v))

    def gaps(self, values, k):
        """E[i, j] = values[j] - values[i] off the diagonal, 1 on it (the divisor of the F-matrix)."""
        return self.add(self.sub(self.row(values), self.col(values)), self.eye(k, values))

    def skew(self, x):
        return self.sub(x, self.t(x))

    def cut(self, x, axis, start, end):
        return self.g.op("slice", {"X": x}, axes=[len(self.g.shape(x)) + axis], starts=[start], ends=[end])


# ---------------------------------------------------------------- svd
def _svd_kernel(x, full_matrices):
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    k = s.shape[-1]
    signs = _positive_largest(u[..., :, :k])
    u[..., :, :k] *= signs
    vh[..., :k, :] *= np.swapaxes(signs, -1, -2)
    return u.astype(x.dtype), s.astype(x.dtype), vh.astype(x.dtype)


def _svd_infer(ctx):
    shape = _matrix_shape(ctx)
    batch, (m, n) = shape[:-2], shape[-2:]
    k = min(m, n)
    u_cols, vh_rows = (m, n) if ctx.attr("full_matrices") else (k, k)
    ctx.set_output("U", batch + [m, u_cols], ctx.dtype("X"))
    ctx.set_output("S", batch + [k], ctx.dtype("X"))
    ctx.set_output("VH", batch + [vh_rows, n], ctx.dtype("X"))


def _svd_grad(g: GradBuilder) -> None:
    """The reduced-SVD backward (A = U diag(S) VH, k = min(m, n) singular values):
        dL/dA = U [ (skew(U^T gU) S + S skew(VH gVH^T)) / E + diag(gS) ] VH
                + (I - U U^T) gU S^-1 VH          (m > n)
                + U S^-1 gVH (I - VH^T VH)        (m < n)
    with E[i, j] = S_j^2 - S_i^2 off the diagonal; with gradients for S alone, U diag(gS) VH.
    With full_matrices the columns of U (rows of VH) past k, an arbitrary basis of the
    complement, get no gradient (torch does the same)."""
    o = _Ops(g)
    u, s, vh = g.output("U"), g.output("S"), g.output("VH")
    m, n = g.shape(u)[-2], g.shape(vh)[-1]
    k = g.shape(s)[-1]
    grad_u = g.output_grad("U") if g.has_output_grad("U") else None
    grad_vh = g.output_grad("VH") if g.has_output_grad("VH") else None
    if g.attr("full_matrices"):
        u, vh = (o.cut(u, -1, 0, k) if m > k else u), (o.cut(vh, -2, 0, k) if n > k else vh)
        grad_u = o.cut(grad_u, -1, 0, k) if grad_u is not None and m > k else grad_u
        grad_vh = o.cut(grad_vh, -2, 0, k) if grad_vh is not None and n > k else grad_vh
    grad_s = g.output_grad("S") if g.has_output_grad("S") or (grad_u is None and grad_vh is None) else None
    if grad_u is None and grad_vh is None:
        g.set_input_grad("X", o.mm(o.mul(u, o.row(grad_s)), vh))
        return
    inner = None
    if grad_u is not None:
        inner = o.mul(o.skew(o.mm(u, grad_u, tx=True)), o.row(s))
    if grad_vh is not None:
        inner = o.add(inner, o.mul(o.col(s), o.skew(o.mm(vh, grad_vh, ty=True))))
    inner = o.div(inner, o.gaps(o.mul(s, s), k))
    if grad_s is not None:
        inner = o.add(inner, o.diag(grad_s, k))
    if m > n and grad_u is not None:
        scaled = o.div(grad_u, o.row(s))   # gU S^-1, then its part outside span(U)
        left = o.add(o.mm(u, inner), o.sub(scaled, o.mm(u, o.mm(u, scaled, tx=True))))
        g.set_input_grad("X", o.mm(left, vh))
    elif m < n and grad_vh is not None:
        scaled = o.div(grad_vh, o.col(s))  # S^-1 gVH, then its part outside span(VH^T)
        right = o.add(o.mm(inner, vh), o.sub(scaled, o.mm(o.mm(scaled, vh, ty=True), vh)))
        g.set_input_grad("X", o.mm(u, right))
    else:
        g.set_input_grad("X", o.mm(o.mm(u, inner), vh))


register_op("svd", inputs="X", outputs="U S VH", attrs={"full_matrices": False}, kernel=_svd_kernel,
            infer=_svd_infer, grad=_svd_grad, broadcasts=False,
            doc="X = U diag(S) VH for each matrix in the last two axes; S descending, vector signs fixed.")


# ---------------------------------------------------------------- eigh
def _eigh_kernel(x):
    """Of the symmetric part of x (np.linalg.eigh would read one triangle): the derivative is
    then the symmetric one; fluidgrad.linalg.eigh builds the symmetric matrix from UPLO's triangle."""
    values, vectors = np.linalg.eigh((x + np.swapaxes(x, -1, -2)) / 2)
    vectors *= _positive_largest(vectors)
    return values.astype(x.dtype), vectors.astype(x.dtype)


def _eigh_infer(ctx):
    shape = _matrix_shape(ctx, square=True)
    ctx.set_output("Eigenvalues", shape[:-1], ctx.dtype("X"))
    ctx.set_output("Eigenvectors", shape, ctx.dtype("X"))


def _eigh_grad(g: GradBuilder) -> None:
    """A = V diag(L) V^T: dL/dA = sym(V [ (V^T gV) o F + diag(gL) ] V^T), F[i, j] = 1 / (L_j - L_i)
    off the diagonal and 0 on it (sym: the mean with the transpose, as the kernel reads
    the symmetric part); with gradients for L alone, V diag(gL) V^T."""
    o = _Ops(g)
    values, vectors = g.output("Eigenvalues"), g.output("Eigenvectors")
    k = g.shape(values)[-1]
    grad_values = g.output_grad("Eigenvalues")
    if not g.has_output_grad("Eigenvectors"):
        g.set_input_grad("X", o.mm(o.mul(vectors, o.row(grad_values)), vectors, ty=True))
        return
    off_diagonal = g.op("scale", {"X": o.eye(k, values)}, scale=-1.0, bias=1.0)
    inner = o.div(o.mul(o.mm(vectors, g.output_grad("Eigenvectors"), tx=True), off_diagonal), o.gaps(values, k))
    if g.has_output_grad("Eigenvalues"):
        inner = o.add(inner, o.diag(grad_values, k))
    grad = o.mm(o.mm(vectors, inner), vectors, ty=True)
    g.set_input_grad("X", o.scale(o.add(grad, o.t(grad)), 0.5))


register_op("eigh", inputs="X", outputs="Eigenvalues Eigenvectors", kernel=_eigh_kernel, infer=_eigh_infer,
            grad=_eigh_grad, broadcasts=False,
            doc="Eigenvalues (ascending) and orthonormal eigenvectors of the symmetric part of each matrix.")


# ---------------------------------------------------------------- qr
def _qr_kernel(x, mode):
    q, r = np.linalg.qr(x, mode="complete" if mode == "complete" else "reduced")
    return q.astype(x.dtype), r.astype(x.dtype)


def _qr_infer(ctx):
    shape = _matrix_shape(ctx)
    mode = ctx.attr("mode")
    if mode not in ("reduced", "complete"):
        raise ctx.shape_error(f"mode must be 'reduced' or 'complete', got {mode!r}")
    batch, (m, n) = shape[:-2], shape[-2:]
    k = m if mode == "complete" else min(m, n)
    ctx.set_output("Q", batch + [m, k], ctx.dtype("X"))
    ctx.set_output("R", batch + [k, n], ctx.dtype("X"))


def _qr_square_grad(o: _Ops, q, r, grad_q, grad_r):
    """For m >= n (Q [m, n], R [n, n] invertible): (gQ + Q copyltu(M)) R^-T with
    M = R gR^T - gQ^T Q and copyltu(M) the symmetric matrix of M's lower triangle."""
    m_matrix = None
    if grad_r is not None:
        m_matrix = o.mm(r, grad_r, ty=True)
    if grad_q is not None:
        qq = o.mm(grad_q, q, tx=True)
        m_matrix = o.scale(qq, -1.0) if m_matrix is None else o.sub(m_matrix, qq)
    lower = o.g.op("tril_triu", {"X": m_matrix}, diagonal=0, lower=True)
    strictly = o.g.op("tril_triu", {"X": m_matrix}, diagonal=-1, lower=True)
    left = o.add(grad_q, o.mm(q, o.add(lower, o.t(strictly))))
    return o.t(o.g.op("solve", {"X": r, "Y": o.t(left)}))


def _qr_grad(g: GradBuilder) -> None:
    """The reduced-QR backward (Walter & Lehmann 2018; Liao et al. 2019), for full-rank A. For
    m < n, A = [X | Y] with X square: X = Q R_x is a square QR and Y = Q R_y, so
    dL/dY = Q gR_y and dL/dX is the square rule with gQ + Y gR_y^T."""
    o = _Ops(g)
    q, r = g.output("Q"), g.output("R")
    m, n = g.shape(q)[-2], g.shape(r)[-1]
    if g.attr("mode") == "complete" and m > n:
        raise NotImplementedError(f"grad of op qr: mode='complete' with more rows than columns (X of shape "
                                  f"{list(g.shape(g.input_like('X')))}) has no gradient (the extra columns of Q "
                                  f"are not unique), as in PyTorch; use mode='reduced'")
    grad_q = g.output_grad("Q") if g.has_output_grad("Q") else None
    grad_r = g.output_grad("R") if g.has_output_grad("R") or grad_q is None else None
    if m >= n:
        g.set_input_grad("X", _qr_square_grad(o, q, r, grad_q, grad_r))
        return
    x = g.input("X")
    wide, r_square = o.cut(x, -1, m, n), o.cut(r, -1, 0, m)
    grad_wide = None
    if grad_r is not None:
        grad_r_wide = o.cut(grad_r, -1, m, n)
        grad_q = o.add(grad_q, o.mm(wide, grad_r_wide, ty=True))
        grad_wide, grad_r = o.mm(q, grad_r_wide), o.cut(grad_r, -1, 0, m)
    grad_square = _qr_square_grad(o, q, r_square, grad_q, grad_r)
    if grad_wide is None:
        grad_wide = g.op("fill_zeros_like", {"X": wide})
    g.set_input_grad("X", g.op("concat", {"X": [grad_square, grad_wide]}, axis=len(g.shape(x)) - 1))


register_op("qr", inputs="X", outputs="Q R", attrs={"mode": "reduced"}, kernel=_qr_kernel, infer=_qr_infer,
            grad=_qr_grad, broadcasts=False,
            doc="X = Q R for each matrix in the last two axes: Q orthonormal columns, R upper triangular.")
