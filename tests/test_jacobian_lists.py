"""autograd.jacobian over lists of ys and xs (a tuple of Jacobians, as torch.autograd.functional)
and the identically zero cases: an input ys ignores, a ys that is a constant, a hessian of a
linear function."""
from __future__ import annotations

import numpy as np
import torch
from torch.autograd import functional as TF

import fluidgrad as fg

X0, Y0 = np.array([0.5, -1.0, 2.0]), np.array([[1.5], [-0.5]])


def test_lists_of_ys_and_xs_give_tuples_of_jacobians_as_torch():
    x, y = fg.to_tensor(X0, stop_gradient=False), fg.to_tensor(Y0, stop_gradient=False)
    unused = fg.to_tensor(np.ones(2), stop_gradient=False)
    got = fg.autograd.jacobian([fg.tanh(x) * fg.sum(y), y * 2.0], [x, y, unused])
    expected = TF.jacobian(lambda u, v, w: (torch.tanh(u) * v.sum(), v * 2.0),
                           (torch.tensor(X0), torch.tensor(Y0), torch.ones(2, dtype=torch.float64)))
    assert len(got) == 2 and all(len(row) == 3 for row in got)
    for got_row, expected_row in zip(got, expected):
        for g, e in zip(got_row, expected_row):
            assert tuple(g.shape) == tuple(e.shape)
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)


def test_one_ys_and_a_tuple_of_xs_and_a_constant_ys():
    x, y = fg.to_tensor(X0, stop_gradient=False), fg.to_tensor(Y0, stop_gradient=False)
    jx, jy = fg.autograd.jacobian(fg.to_tensor(np.ones((2, 2))), (x, y))
    assert list(jx.shape) == [2, 2, 3] and list(jy.shape) == [2, 2, 2, 1]
    assert not jx.numpy().any() and not jy.numpy().any()


def test_hessian_of_a_function_that_ignores_x_is_zero():
    x, y = fg.to_tensor(X0, stop_gradient=False), fg.to_tensor(Y0, stop_gradient=False)
    got = fg.autograd.hessian(fg.sum(y * y), x)
    np.testing.assert_array_equal(got.numpy(), np.zeros((3, 3)))
