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
    with pytest.raises(ValueError, match="jacobian: batch_axis must be None or 0"):
        fg.autograd.jacobian(x * 2.0, x, batch_axis=1)
    with pytest.raises(ValueError, match=r"jacobian: with batch_axis=0, ys and xs need one size on axis 0, got "
                                         r"shapes \[\[3\], \[2, 2\]\]"):
        fg.autograd.jacobian(fg.to_tensor(np.ones(3)) * fg.sum(x), x, batch_axis=0)
    with pytest.raises(ValueError, match=r"hessian: ys must be a Tensor of one element per sample, got shape \[2, 2\]"):
        fg.autograd.hessian(x * x, x, batch_axis=0)


def _per_sample(function, x0):
    """torch's per-sample Jacobian (or Hessian) of `function`, stacked: the batch_axis=0 answer."""
    return np.stack([function(torch.tensor(row)).numpy() for row in x0])


BATCH = np.random.default_rng(3).standard_normal((4, 3))


def test_batched_jacobian_is_each_samples_jacobian():
    w = np.random.default_rng(4).standard_normal((3, 2))
    x = fg.to_tensor(BATCH, stop_gradient=False)
    got = fg.autograd.jacobian(fg.tanh(fg.matmul(x, fg.to_tensor(w))), x, batch_axis=0)
    expected = _per_sample(lambda row: TF.jacobian(lambda v: torch.tanh(v @ torch.tensor(w)), row), BATCH)
    assert got.shape == (4, 2, 3)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-14)
    per_row = fg.autograd.jacobian(fg.sum(x * x, axis=1), x, batch_axis=0)     # ys [B]: one value per sample
    np.testing.assert_allclose(per_row.numpy(), 2 * BATCH, rtol=1e-12)


def test_batched_hessian_is_each_samples_hessian():
    x = fg.to_tensor(BATCH, stop_gradient=False)
    got = fg.autograd.hessian(fg.sum(fg.exp(x) * x * x, axis=1), x, batch_axis=0)
    expected = _per_sample(lambda row: TF.hessian(lambda v: (torch.exp(v) * v * v).sum(), row), BATCH)
    assert got.shape == (4, 3, 3)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-14)


def test_jacobian_of_several_inputs_and_identically_zero_derivatives():
    x0, y0 = BATCH[0], BATCH[1]
    x, y = fg.to_tensor(x0, stop_gradient=False), fg.to_tensor(y0, stop_gradient=False)
    got = fg.autograd.jacobian(x * y, [x, y])
    expected = TF.jacobian(lambda u, v: u * v, (torch.tensor(x0), torch.tensor(y0)))
    assert isinstance(got, tuple) and len(got) == 2
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(fg.autograd.hessian(fg.sum(x * 3.0), x).numpy(), np.zeros((3, 3)))
    np.testing.assert_array_equal(fg.autograd.jacobian(fg.to_tensor(np.ones(2)) * 2.0, x).numpy(), np.zeros((2, 3)))
