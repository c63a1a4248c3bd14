"""fluidgrad.linalg against torch.linalg: the forms the functions add over their ops (a vector
right-hand side, the upper Cholesky factor, matrix powers 0 and negative, slogdet's sign), with
gradients, and the same values in a static program."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

A0 = np.array([[2.0, 0.5, 0.1], [0.3, -1.5, -0.2], [0.0, 0.4, 1.2]])
B0 = np.array([1.0, -2.0, 0.5])
_SPD = A0 @ A0.T + np.eye(3)

_CASES = {
    "solve with a vector": (lambda m, a, b: m.linalg.solve(a, b), A0),
    "upper cholesky": (lambda m, a, b: m.linalg.cholesky(a, upper=True), _SPD),
    "matrix_power 0": (lambda m, a, b: m.linalg.matrix_power(a, 0) * 2.0, A0),
    "matrix_power 5": (lambda m, a, b: m.linalg.matrix_power(a, 5), A0),
    "matrix_power -2": (lambda m, a, b: m.linalg.matrix_power(a, -2), A0),
    "slogdet sign": (lambda m, a, b: m.linalg.slogdet(a)[0], A0),
    "slogdet": (lambda m, a, b: m.linalg.slogdet(a)[1], A0),
    "pinv of a tall matrix": (lambda m, a, b: m.linalg.pinv(a[:, :2]), A0),
    "norm": (lambda m, a, b: m.linalg.norm(a), A0),
    "inv": (lambda m, a, b: m.linalg.inv(a), A0),
    "det": (lambda m, a, b: m.linalg.det(a), A0),
}


def _grad(tensor, like):
    """The gradient as an array; none (slogdet's sign) counts as zeros."""
    return np.zeros_like(like) if tensor.grad is None else tensor.grad.numpy()


@pytest.mark.parametrize("name", sorted(_CASES))
def test_values_and_gradients_match_torch(name):
    fn, a0 = _CASES[name]
    weights = np.random.default_rng(0).standard_normal(np.shape(fn(np, a0, B0)))
    at, bt = torch.tensor(a0, requires_grad=True), torch.tensor(B0, requires_grad=True)
    expected = fn(torch, at, bt)
    (expected * torch.tensor(weights)).sum().backward()
    a, b = fg.to_tensor(a0, stop_gradient=False), fg.to_tensor(B0, stop_gradient=False)
    got = fn(fg, a, b)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    if got.stop_gradient:                       # matrix_power(a, 0): a constant; torch's gradient is zero
        assert not at.grad.numpy().any()
    else:
        fg.sum(got * fg.to_tensor(weights)).backward()
        np.testing.assert_allclose(_grad(a, a0), _grad(at, a0), rtol=1e-8, atol=1e-12)
        if bt.grad is not None:
            np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-8, atol=1e-12)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        a_var, b_var = fg.static.data("a", [3, 3], "float64"), fg.static.data("b", [3], "float64")
        out = fn(fg, a_var, b_var)
    static, = fg.Executor().run(main, feed={"a": a0, "b": B0}, fetch_list=[out])
    np.testing.assert_allclose(static, got.numpy(), rtol=1e-12, atol=1e-14)


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match=r"matrix_power: expects square matrices in the last two axes, got shape \[3, 2\]"):
        fg.linalg.matrix_power(fg.to_tensor(A0[:, :2]), 2)
    with pytest.raises(Exception, match="op solve: .*X=.*shape \\[3, 3\\].*Y=.*shape \\[2, 1\\]"):
        fg.linalg.solve(fg.to_tensor(A0), fg.to_tensor(np.ones((2, 1))))
