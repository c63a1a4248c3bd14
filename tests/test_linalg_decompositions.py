"""fluidgrad.linalg's decompositions and norms against torch.linalg: svd / svdvals, qr, eigh /
eigvalsh, lstsq, matrix_rank, multi_dot, cond, vector_norm, matrix_norm, norm. Values and
gradients in eager mode, the same values in a static program, grad of grad of the norms
regularizers use, central differences of whole functions, and the errors of bad input.

Singular and eigen vectors are defined up to sign, so what is compared of them is invariant
under a flip (as torch's own tests do): U diag(f(S)) Vh, squared entries, projectors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.testing import check_program_grad

_RNG = np.random.default_rng(11)
TALL = _RNG.standard_normal((5, 3))
WIDE = _RNG.standard_normal((3, 4))
SQUARE = _RNG.standard_normal((3, 3)) + 2.0 * np.eye(3)
BATCH = _RNG.standard_normal((2, 4, 3))
_S = _RNG.standard_normal((4, 4))
SYM = _S + _S.T
BATCH_SYM = np.stack([SYM, SYM @ SYM / 4 - np.eye(4)])


def _usv(m, a, full_matrices=False):
    """U diag(sqrt S) Vh: every factor reaches it, and a sign flip of a pair of vectors does not."""
    u, s, vh = m.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    if full_matrices:
        u, vh = u[..., :k], vh[..., :k, :]
    return m.matmul(u * m.unsqueeze(m.sqrt(s), -2), vh)


def _exp_sym(m, a):
    """V diag(exp(L / 4)) V^T: the matrix exponential of a symmetric matrix by its eigenvectors."""
    values, vectors = m.linalg.eigh(a)
    return m.matmul(vectors * m.unsqueeze(m.exp(values / 4), -2), vectors.mT if m is torch else
                    m.transpose(vectors, [0, 2, 1] if len(vectors.shape) == 3 else [1, 0]))


def _sym(m, a):
    """A matrix symmetric by construction: the gradient reaching `a` is then the same whether eigh
    differentiates the triangle it reads (fluidgrad: the exact derivative) or spreads it over both
    (torch); see test_eigh_differentiates_the_triangle_it_reads."""
    return a + (a.mT if m is torch else m.transpose(a, list(range(len(a.shape) - 2)) + [len(a.shape) - 1,
                                                                                    len(a.shape) - 2]))


def _cond(m, a, p):
    """cond for p other than 2: torch 2.13's own cond backward fails (an in-place inverse), so its
    definition norm(a) * norm(inv(a)) is the reference."""
    if m is torch:
        return torch.linalg.matrix_norm(a, p) * torch.linalg.matrix_norm(torch.linalg.inv(a), p)
    return m.linalg.cond(a, p)


_CASES = {
    "svd U sqrt(S) Vh, tall": (_usv, TALL),
    "svd U sqrt(S) Vh, wide": (_usv, WIDE),
    "svd U sqrt(S) Vh, batched": (_usv, BATCH),
    "svd full_matrices U sqrt(S) Vh": (lambda m, a: _usv(m, a, True), TALL),
    "svd U * U": (lambda m, a: m.linalg.svd(a, full_matrices=False)[0] ** 2, TALL),
    "svd Vh * Vh": (lambda m, a: m.linalg.svd(a, full_matrices=False)[2] ** 2, WIDE),
    "svdvals": (lambda m, a: m.linalg.svdvals(a), BATCH),
    "qr Q": (lambda m, a: m.linalg.qr(a)[0], TALL),
    "qr R, wide": (lambda m, a: m.linalg.qr(a)[1], WIDE),
    "qr Q, wide": (lambda m, a: m.linalg.qr(a)[0], WIDE),
    "qr Q R, batched": (lambda m, a: m.matmul(m.linalg.qr(a)[0], m.linalg.qr(a)[1] ** 2), BATCH),
    "eigh exp, symmetric": (lambda m, a: _exp_sym(m, _sym(m, a)), SYM),
    "eigh exp, batched": (lambda m, a: _exp_sym(m, _sym(m, a)), BATCH_SYM),
    "eigh vectors squared": (lambda m, a: m.linalg.eigh(_sym(m, a))[1] ** 2, SYM),
    "eigvalsh": (lambda m, a: m.linalg.eigvalsh(_sym(m, a)), BATCH_SYM),
    "lstsq, tall": (lambda m, a: m.linalg.lstsq(a, a[:, :2] + 1.0)[0], TALL),
    "lstsq, batched": (lambda m, a: m.linalg.lstsq(a, a[..., :1] ** 2)[0], BATCH),
    "lstsq, wide (minimum norm)": (lambda m, a: m.linalg.lstsq(a, a[:, :2], driver="gelsd")[0], WIDE),
    "lstsq residuals": (lambda m, a: m.linalg.lstsq(a, a[:, :2] ** 2, driver="gelsd")[1], TALL),
    "multi_dot": (lambda m, a: m.linalg.multi_dot([a, a.mT if m is torch else a.t(), a, a.mT if m is torch else
                                                   a.t()]), TALL),
    "multi_dot with vector ends": (lambda m, a: m.linalg.multi_dot([a[0], a.mT if m is torch else a.t(), a[:, 1]]),
                                   TALL),
    "cond": (lambda m, a: m.linalg.cond(a), BATCH),
    "cond -2": (lambda m, a: m.linalg.cond(a, -2), TALL),
    "cond fro": (lambda m, a: _cond(m, a, "fro"), SQUARE),
    "cond 1": (lambda m, a: _cond(m, a, 1), SQUARE),
    "vector_norm 3": (lambda m, a: m.linalg.vector_norm(a, 3), BATCH),
    "vector_norm inf over an axis": (lambda m, a: m.linalg.vector_norm(a, float("inf"), dim=1), BATCH),
    "vector_norm 0": (lambda m, a: m.linalg.vector_norm(a, 0, dim=-1), np.where(BATCH > 0.5, 0.0, BATCH)),
    "vector_norm keepdim": (lambda m, a: m.linalg.vector_norm(a, 2.5, dim=(0, 2), keepdim=True), BATCH),
    "matrix_norm nuc": (lambda m, a: m.linalg.matrix_norm(a, "nuc"), BATCH),
    "matrix_norm 2": (lambda m, a: m.linalg.matrix_norm(a, 2), BATCH),
    "matrix_norm -2 over (2, 0), keepdim": (lambda m, a: m.linalg.matrix_norm(a, -2, dim=(2, 0), keepdim=True), BATCH),
    "matrix_norm inf": (lambda m, a: m.linalg.matrix_norm(a, float("inf")), BATCH),
    "norm ord=2 of a matrix (torch's keyword)": (lambda m, a: m.linalg.norm(a, ord=2), TALL),
    "norm ord=nuc": (lambda m, a: m.linalg.norm(a, ord="nuc"), WIDE),
    "norm over two axes, nuc": (lambda m, a: m.linalg.norm(a, "nuc", dim=(0, 2)), BATCH),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_values_and_gradients_match_torch(name):
    fn, a0 = _CASES[name]
    at = torch.tensor(a0, requires_grad=True)
    expected = fn(torch, at)
    weights = np.random.default_rng(0).uniform(0.5, 1.5, expected.shape)
    a = fg.to_tensor(a0, stop_gradient=False)
    got = fn(fg, a)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert list(got.shape) == list(expected.shape)
    if got.stop_gradient:                      # vector_norm 0: a count; torch's gradient is zero
        (expected * torch.tensor(weights)).sum().backward()
        assert at.grad is None or not at.grad.numpy().any()
    else:
        (expected * torch.tensor(weights)).sum().backward()
        fg.sum(got * fg.to_tensor(weights)).backward()
        np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), rtol=1e-7, atol=1e-10)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        out = fn(fg, fg.static.data("a", list(a0.shape), "float64"))
    static, = fg.Executor().run(main, feed={"a": a0}, fetch_list=[out])
    np.testing.assert_allclose(static, got.numpy(), rtol=1e-12, atol=1e-13)


def test_integer_results_match_torch():
    """matrix_rank (int64, no gradient) with its tolerances; lstsq's rank and singular values."""
    low_rank = TALL[:, :2] @ WIDE[:2, :]                            # rank 2 of 5 x 4
    for kwargs in ({}, {"atol": 1.0}, {"rtol": 0.5}, {"hermitian": True}):
        matrix = low_rank @ low_rank.T if kwargs.get("hermitian") else low_rank
        expected = torch.linalg.matrix_rank(torch.tensor(matrix), **kwargs)
        got = fg.linalg.matrix_rank(fg.to_tensor(matrix), **kwargs)
        assert got.dtype == "int64" and got.numpy() == expected.numpy(), kwargs
    assert fg.linalg.matrix_rank(fg.to_tensor(low_rank), tol=1.0).numpy() == \
        torch.linalg.matrix_rank(torch.tensor(low_rank), atol=1.0).numpy()
    batched = fg.linalg.matrix_rank(fg.to_tensor(np.stack([low_rank, TALL @ WIDE])))
    np.testing.assert_array_equal(batched.numpy(), [2, 3])
    result = fg.linalg.lstsq(fg.to_tensor(low_rank), fg.to_tensor(TALL[:, :2]))
    reference = torch.linalg.lstsq(torch.tensor(low_rank), torch.tensor(TALL[:, :2]), driver="gelsd")
    assert result.rank.numpy() == reference.rank.numpy() == 2
    np.testing.assert_allclose(result.solution.numpy(), reference.solution.numpy(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(result.singular_values.numpy(), reference.singular_values.numpy(), rtol=1e-12,
                               atol=1e-14)


def test_the_factors_rebuild_the_matrix_and_are_orthonormal():
    u, s, vh = fg.linalg.svd(fg.to_tensor(BATCH))
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), BATCH, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(u.numpy(), -1, -2) @ u.numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)),
                               atol=1e-12)
    assert (np.abs(u.numpy()).argmax(-2) == np.argmax(u.numpy(), -2)).all()   # the sign convention
    u, s, vh = fg.linalg.svd(fg.to_tensor(TALL), full_matrices=True)
    assert (list(u.shape), list(s.shape), list(vh.shape)) == ([5, 5], [3], [3, 3])
    np.testing.assert_allclose(u.numpy().T @ u.numpy(), np.eye(5), atol=1e-12)
    q, r = fg.linalg.qr(fg.to_tensor(TALL), mode="complete")
    assert (list(q.shape), list(r.shape)) == ([5, 5], [5, 3])
    np.testing.assert_allclose(q.numpy() @ r.numpy(), TALL, atol=1e-12)
    np.testing.assert_allclose(fg.linalg.qr(fg.to_tensor(TALL), mode="r").numpy(), np.linalg.qr(TALL)[1], atol=1e-12)
    values, vectors = fg.linalg.eigh(fg.to_tensor(SYM))
    np.testing.assert_allclose(vectors.numpy() @ np.diag(values.numpy()) @ vectors.numpy().T, SYM, atol=1e-12)


@pytest.mark.parametrize("p", [2, "nuc", -2])
def test_grad_of_grad_of_the_singular_value_norms_matches_torch(p):
    """The Hessian-vector product of a spectral / nuclear norm regularizer (eager, create_graph)."""
    direction = _RNG.standard_normal(TALL.shape)
    a = fg.to_tensor(TALL, stop_gradient=False)
    grad, = fg.grad(fg.linalg.matrix_norm(a, p), [a], create_graph=True)
    hvp, = fg.grad(fg.sum(grad * fg.to_tensor(direction)), [a])
    at = torch.tensor(TALL, requires_grad=True)
    grad_t, = torch.autograd.grad(torch.linalg.matrix_norm(at, p), [at], create_graph=True)
    hvp_t, = torch.autograd.grad((grad_t * torch.tensor(direction)).sum(), [at])
    np.testing.assert_allclose(grad.numpy(), grad_t.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hvp.numpy(), hvp_t.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("build, feed", [
    (lambda v: fg.linalg.matrix_norm(v["a"], "nuc") + fg.linalg.cond(v["a"]), TALL),
    (lambda v: _usv(fg, v["a"]), WIDE),
    (lambda v: fg.linalg.lstsq(v["a"], v["a"][:, :1] * 2.0 + 1.0)[0], TALL),
    (lambda v: _exp_sym(fg, v["a"]), SYM),
    (lambda v: fg.linalg.qr(v["a"])[0] * fg.linalg.qr(v["a"])[1][:, :1].t(), TALL),
], ids=["nuc+cond", "svd", "lstsq", "eigh", "qr"])
def test_static_gradients_equal_central_differences(build, feed):
    check_program_grad(build, {"a": feed}, rtol=1e-6, atol=1e-8)


def _raises(match, fn, *args, error=Exception, **kwargs):
    with pytest.raises(error, match=match):
        fn(*args, **kwargs)


def test_bad_input_is_refused_clearly():
    la, t = fg.linalg, fg.to_tensor
    _raises(r"linalg.eigh: expects square \(symmetric\) matrices .* shape \[5, 3\]", la.eigh, t(TALL), error=ValueError)
    _raises(r"linalg.eigvalsh: .*UPLO must be 'L' or 'U'", la.eigvalsh, t(SYM), UPLO="X", error=ValueError)
    _raises(r"op eigh: .*square .*\[3, 4\]", fg.dispatch.apply_op, "eigh", {"X": t(WIDE)})
    _raises(r"op svd: .*rank >= 2.*\[3\]", la.svd, t(np.ones(3)))
    _raises(r"op svd: .*floating point.*int64", la.svdvals, t(np.ones((2, 2), "int64")))
    _raises(r"op qr: .*rank >= 2", la.qr, t(np.ones(3)))
    _raises(r"linalg.qr: mode must be", la.qr, t(TALL), mode="economic", error=ValueError)
    _raises(r"linalg.lstsq: .*x of shape \[5, 3\] and y of shape \[4, 1\]", la.lstsq, t(TALL), t(np.ones((4, 1))),
            error=ValueError)
    _raises(r"linalg.lstsq: driver", la.lstsq, t(TALL), t(TALL), driver="magic", error=ValueError)
    _raises(r"multi_dot: tensor 0 of shape \[5, 3\] cannot multiply tensor 1 of shape \[5, 3\]", la.multi_dot,
            [t(TALL), t(TALL)], error=ValueError)
    _raises(r"multi_dot: expects at least two", la.multi_dot, [t(TALL)], error=ValueError)
    _raises(r"multi_dot: tensor 1 must be a matrix", la.multi_dot, [t(TALL), t(np.ones(3)), t(TALL.T)],
            error=ValueError)
    _raises(r"matrix_norm: p='euclid' is not a matrix norm", la.matrix_norm, t(TALL), "euclid", error=ValueError)
    _raises(r"matrix_norm: axes \[0, 3\] are not two axes of shape \[5, 3\]", la.matrix_norm, t(TALL), 2, [0, 3],
            error=ValueError)
    _raises(r"matrix_norm: .*\[1, 1\] must differ", la.matrix_norm, t(TALL), "nuc", [1, 1], error=ValueError)
    _raises(r"vector_norm: p='nuc' is a matrix norm", la.vector_norm, t(TALL), "nuc", error=ValueError)
    _raises(r"vector_norm: give p or ord", la.vector_norm, t(TALL), 3, ord=2, error=TypeError)
    _raises(r"linalg.norm: p='nuc' is a matrix norm: give two axes", la.norm, t(BATCH), "nuc", error=ValueError)
    _raises(r"linalg.cond: expects matrices", la.cond, t(np.ones(3)), error=ValueError)
    _raises(r"op inverse: .*square", la.cond, t(TALL), "fro")
    _raises(r"matrix_rank: give tol .* or atol", la.matrix_rank, t(TALL), 1.0, atol=1.0, error=TypeError)


def test_eigh_differentiates_the_triangle_it_reads():
    """eigh reads x's lower (UPLO='L') or upper triangle, as torch and Paddle: its gradient is the
    exact derivative of that, zero on the other triangle, and equal to central differences."""
    a0 = WIDE[:, :3] @ SQUARE                                          # not symmetric
    a = fg.to_tensor(a0, stop_gradient=False)
    for uplo, unread in (("L", np.triu_indices(3, 1)), ("U", np.tril_indices(3, -1))):
        a.clear_grad()
        values, vectors = fg.linalg.eigh(a, UPLO=uplo)
        values_t, vectors_t = torch.linalg.eigh(torch.tensor(a0), UPLO=uplo)
        np.testing.assert_allclose(values.numpy(), values_t.numpy(), rtol=1e-12)
        np.testing.assert_allclose(np.abs(vectors.numpy()), np.abs(vectors_t.numpy()), rtol=1e-10)
        fg.sum(fg.linalg.eigvalsh(a, UPLO=uplo) * fg.to_tensor(np.array([1.0, 2.0, 3.0]))).backward()
        assert not a.grad.numpy()[unread].any() and a.grad.numpy()[np.diag_indices(3)].all()
    check_program_grad(lambda v: fg.linalg.eigh(v["a"], UPLO="U")[0], {"a": WIDE[:, :3] @ SQUARE})


def test_complete_qr_of_a_tall_matrix_has_no_gradient_and_says_so():
    a = fg.to_tensor(TALL, stop_gradient=False)
    q, r = fg.linalg.qr(a, mode="complete")
    with pytest.raises(NotImplementedError, match=r"grad of op qr: mode='complete' .*shape \[5, 3\]"):
        fg.sum(q).backward()


def test_onnx_export_names_the_decomposition_it_cannot_write(tmp_path):
    import fluidgrad.onnx  # noqa: F401  (the exporter: ONNX has no SVD)
    with pytest.raises(Exception, match=r"op svd .*has no ONNX equivalent"):
        fg.onnx.export(lambda x: fg.linalg.matrix_norm(x, "nuc"), str(tmp_path / "norm.onnx"),
                       [fg.to_tensor(TALL.astype("float32"))])
