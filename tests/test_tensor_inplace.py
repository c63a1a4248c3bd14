"""In-place updates against PyTorch: augmented assignment (`p *= 0.5`, `h += 1`) and the in-place
methods (zero_, fill_, add_, clip_, copy_, exp_, uniform_, ...) write into the Tensor (every
handle sees it), move its graph link so gradients stay right, refuse a leaf that requires a
gradient outside no_grad, and refuse a result of another shape or dtype; Variables rebind (`+=`)
or move their handle (methods)."""
from __future__ import annotations

import operator

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.framework import DTypeError

X0 = np.array([[0.25, -1.5, 0.75], [2.0, 0.5, -0.125]])
Y0 = np.array([0.5, 2.0, -4.0])
AUGMENTED = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
             "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow}


@pytest.mark.parametrize("symbol", list(AUGMENTED))
def test_augmented_assignment_writes_into_the_tensor_as_torch(symbol):
    fn = AUGMENTED[symbol]
    x, t = fg.to_tensor(X0.copy()), torch.tensor(X0.copy())
    alias, t_alias = x, t
    other = np.abs(Y0) if symbol == "**=" else Y0
    assert fn(x, fg.to_tensor(other)) is alias
    fn(t, torch.tensor(other))
    np.testing.assert_allclose(alias.numpy(), t_alias.numpy(), rtol=1e-12)
    assert fn(x, 2) is alias                           # a Python number too
    fn(t, 2)
    np.testing.assert_allclose(alias.numpy(), t_alias.numpy(), rtol=1e-12)


def test_gradients_through_an_in_place_update_of_an_intermediate_match_torch():
    x = fg.to_tensor(X0, stop_gradient=False)
    h = x * 2.0
    h *= x
    h += 1.0
    h.tanh_()
    fg.sum(h * h).backward()
    t = torch.tensor(X0, requires_grad=True)
    th = t * 2.0
    th *= t
    th += 1.0
    th.tanh_()
    (th * th).sum().backward()
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_a_leaf_that_requires_a_gradient_is_updated_only_under_no_grad():
    w = fg.to_tensor(X0, stop_gradient=False)
    with pytest.raises(RuntimeError, match="leaf Tensor that requires a gradient"):
        w *= 0.5
    with pytest.raises(RuntimeError, match="leaf Tensor that requires a gradient"):
        w.zero_()
    with fg.no_grad():
        w *= 0.5
        w.add_(fg.to_tensor(np.ones(3)))
    np.testing.assert_allclose(w.numpy(), X0 * 0.5 + 1)
    assert not w.stop_gradient and w.is_leaf


def test_a_result_of_another_shape_or_dtype_is_refused_as_torch():
    counts = fg.to_tensor(np.array([1, 2, 3]))
    with pytest.raises(DTypeError, match=r"x \+= y .*\[3\], int64.* float32"):
        counts += 0.5                                   # PyTorch: result type Float can't be cast to Long
    row = fg.to_tensor(Y0.copy())
    with pytest.raises(DTypeError, match=r"x \*= y .*shape \[3\].*shape \[2, 3\]"):
        row *= fg.to_tensor(X0)
    np.testing.assert_array_equal(row.numpy(), Y0)
    counts += 2                                          # an int keeps the dtype
    np.testing.assert_array_equal(counts.numpy(), [3, 4, 5])


METHODS = {
    "zero_": (lambda t: t.zero_(), lambda t: t.zero_()),
    "fill_": (lambda t: t.fill_(2.5), lambda t: t.fill_(2.5)),
    "add_": (lambda t: t.add_(fg.to_tensor(Y0)), lambda t: t.add_(torch.tensor(Y0))),
    "subtract_": (lambda t: t.subtract_(fg.to_tensor(Y0)), lambda t: t.subtract_(torch.tensor(Y0))),
    "multiply_": (lambda t: t.multiply_(fg.to_tensor(Y0)), lambda t: t.multiply_(torch.tensor(Y0))),
    "divide_": (lambda t: t.divide_(fg.to_tensor(Y0)), lambda t: t.divide_(torch.tensor(Y0))),
    "scale_": (lambda t: t.scale_(3.0, 0.5), lambda t: t.mul_(3.0).add_(0.5)),
    "clip_": (lambda t: t.clip_(-0.5, 0.5), lambda t: t.clamp_(-0.5, 0.5)),
    "copy_": (lambda t: t.copy_(fg.to_tensor(Y0)), lambda t: t.copy_(torch.tensor(Y0))),
    "exp_": (lambda t: t.exp_(), lambda t: t.exp_()),
    "tanh_": (lambda t: t.tanh_(), lambda t: t.tanh_()),
    "floor_": (lambda t: t.floor_(), lambda t: t.floor_()),
    "ceil_": (lambda t: t.ceil_(), lambda t: t.ceil_()),
    "round_": (lambda t: t.round_(), lambda t: t.round_()),
    "reciprocal_": (lambda t: t.reciprocal_(), lambda t: t.reciprocal_()),
    "abs_": (lambda t: t.abs_(), lambda t: t.abs_()),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_in_place_methods_match_torch(name):
    ours, theirs = METHODS[name]
    x, t = fg.to_tensor(X0.copy()), torch.tensor(X0.copy())
    assert ours(x) is x
    theirs(t)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-12)


def test_copy_casts_and_broadcasts_and_passes_the_gradient_as_torch():
    x = fg.to_tensor(np.zeros((2, 3), "float32"))
    src = fg.to_tensor(Y0, stop_gradient=False)
    x.copy_(src * 2.0)
    fg.sum(x * x).backward()
    t, tsrc = torch.zeros(2, 3), torch.tensor(Y0, requires_grad=True)
    t.copy_(tsrc * 2.0)
    (t * t).sum().backward()
    assert x.dtype == "float32"
    np.testing.assert_allclose(x.numpy(), t.detach().numpy())
    np.testing.assert_allclose(src.grad.numpy(), tsrc.grad.numpy(), rtol=1e-6)


def test_random_fills_keep_shape_and_dtype():
    fg.seed(3)
    w = fg.to_tensor(np.zeros((200, 50), "float32"))
    assert w.uniform_(-0.1, 0.1) is w and w.dtype == "float32"
    assert -0.1 <= w.numpy().min() < -0.09 and 0.09 < w.numpy().max() < 0.1
    w.normal_(1.0, 0.5)
    assert abs(w.numpy().mean() - 1.0) < 0.02 and abs(w.numpy().std() - 0.5) < 0.02
    with pytest.raises(ValueError, match="min .* must be less than max"):
        w.uniform_(1.0, 1.0)
    with pytest.raises(DTypeError, match="uniform_random: fills float tensors, got int64"):
        fg.to_tensor(np.zeros(3, "int64")).uniform_()


def test_variables_rebind_on_augmented_assignment_and_move_on_methods():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2, 3], "float64")
        before = x
        x += 1.0
        assert x is not before                          # rebound: ops appended before keep the old value
        y = x * 1.0
        alias = y
        y.clip_(0.0, 1.0)
        assert alias is y
    got_before, got_x, got_y = fg.Executor().run(main, feed={"x": X0}, fetch_list=[before, x, y])
    np.testing.assert_array_equal(got_before, X0)
    np.testing.assert_array_equal(got_x, X0 + 1)
    np.testing.assert_array_equal(got_y, np.clip(X0 + 1, 0, 1))
