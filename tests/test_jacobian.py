"""autograd.jacobian / hessian of eager code against torch.autograd.functional: shapes
ys.shape + xs.shape, outputs that do not depend on xs (zero rows), a differentiable jacobian
(create_graph) and the refusals."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.autograd import functional as TF

import fluidgrad as fg

X0 = np.array([[0.5, -1.0], [2.0, 0.25]])


def test_jacobian_of_a_matrix_function_matches_torch():
    x = fg.to_tensor(X0, stop_gradient=False)
    got = fg.autograd.jacobian(fg.tanh(fg.matmul(x, x)), x)
    expected = TF.jacobian(lambda v: torch.tanh(v @ v), torch.tensor(X0))
    assert got.shape == expected.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-14)


def test_an_output_that_ignores_x_gives_zero_rows():
    x = fg.to_tensor(X0[0], stop_gradient=False)
    ys = fg.concat([x * 3.0, fg.to_tensor(np.ones(1))])
    np.testing.assert_array_equal(fg.autograd.jacobian(ys, x).numpy(), [[3, 0], [0, 3], [0, 0]])


def test_hessian_matches_torch_and_a_jacobian_can_be_differentiated():
    x = fg.to_tensor(X0.reshape(-1), stop_gradient=False)
    got = fg.autograd.hessian(fg.sum(fg.exp(x) * x * x), x)
    expected = TF.hessian(lambda v: (torch.exp(v) * v * v).sum(), torch.tensor(X0.reshape(-1)))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    jac = fg.autograd.jacobian(x ** 3, x, create_graph=True)
    fg.sum(jac).backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * X0.reshape(-1), rtol=1e-12)


def test_refusals_are_clear():
    x = fg.to_tensor(X0, stop_gradient=False)
    with pytest.raises(ValueError, match="hessian: ys must be a Tensor of one element, got shape \\[2, 2\\]"):
        fg.autograd.hessian(x * x, x)
    with pytest.raises(ValueError, match="jacobian: xs has stop_gradient=True"):
        fg.autograd.jacobian(x * 2.0, fg.to_tensor(X0))
    with pytest.raises(NotImplementedError, match="batch_axis"):
        fg.autograd.jacobian(x * 2.0, x, batch_axis=0)
