"""The in-place methods that change a Tensor's shape (unsqueeze_, squeeze_, reshape_) or follow
torch's names (mul_, sub_, div_, clamp_, masked_fill_): gradients through them match PyTorch,
a leaf that requires a gradient refuses outside no_grad, a node that saved the old value says
so in backward, and a Variable's handle moves to the new value."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

X0 = np.array([[0.25, -1.5, 0.75], [2.0, 0.5, -0.125]])


def _chain(t, lib):
    h = t * 2.0
    h.unsqueeze_(0)
    h.mul_(t)
    h.sub_(0.5)
    h.div_(3.0)
    h.clamp_(-0.6, 0.9)
    h.masked_fill_(h > 0.8, 0.0)
    h.squeeze_(0)
    if lib is torch:
        h.resize_(3, 2)   # torch's resize_ keeps no graph link; reshape_ is Paddle's
    else:
        h.reshape_([3, 2])
    return h


def test_gradients_through_in_place_reshaping_and_arithmetic_match_torch():
    x = fg.to_tensor(X0, stop_gradient=False)
    h = _chain(x, fg)
    fg.sum(h * fg.to_tensor(np.arange(6.0).reshape(3, 2))).backward()
    t = torch.tensor(X0, requires_grad=True)
    th = t * 2.0
    th = th.unsqueeze(0).mul(t).sub(0.5).div(3.0).clamp(-0.6, 0.9)
    th = th.masked_fill(th > 0.8, 0.0).squeeze(0).reshape(3, 2)
    (th * torch.arange(6.0, dtype=torch.float64).reshape(3, 2)).sum().backward()
    assert list(h.shape) == [3, 2]
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("update", [lambda w: w.unsqueeze_(0), lambda w: w.reshape_([3, 2]),
                                    lambda w: w.mul_(2.0), lambda w: w.masked_fill_(w > 0, 0.0)])
def test_a_leaf_that_requires_a_gradient_refuses_outside_no_grad(update):
    w = fg.to_tensor(X0, stop_gradient=False)
    with pytest.raises(RuntimeError, match="leaf Tensor that requires a gradient"):
        update(w)
    with fg.no_grad():
        assert update(w) is w
    assert not w.stop_gradient


def test_a_backward_reading_the_value_before_a_reshape_says_so():
    x = fg.to_tensor(X0, stop_gradient=False)
    h = x * 1.0
    y = h * h                      # saves h
    with fg.no_grad():
        h.reshape_([6])
    with pytest.raises(RuntimeError, match="modified in place"):
        fg.sum(y).backward()


def test_variables_move_their_handle_to_the_reshaped_value():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2, 3], "float64")
        y = x * 1.0
        before = y * 1.0
        alias = y
        y.unsqueeze_(0).mul_(2.0)
        assert alias is y and list(y.shape) == [1, 2, 3]
    got_before, got_y = fg.Executor().run(main, feed={"x": X0}, fetch_list=[before, y])
    np.testing.assert_array_equal(got_before, X0)
    np.testing.assert_array_equal(got_y, X0[None] * 2)
