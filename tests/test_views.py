"""Writes into the result of basic indexing (PyTorch's views) reach the indexed tensor, with
PyTorch's values and gradients; a view sees its tensor's changes; advanced indexing stays a copy."""
import numpy as np
import pytest
import torch

import fluidgrad as fg


def _pair(a, requires_grad=False):
    t = torch.tensor(a, requires_grad=requires_grad)
    f = fg.to_tensor(a, stop_gradient=not requires_grad)
    return f, t


# each write as (fluidgrad, torch): the same idiom on each side
_WRITES = {
    "x[0][1] = w": lambda x, w: x[0].__setitem__(1, w[0]),
    "x[:, 1:].mul_(w)": lambda x, w: x[:, 1:].mul_(w[:2]),
    "x[1].add_(w)": lambda x, w: x[1].add_(w),
    "x[1][::2] = w": lambda x, w: x[1].__setitem__(slice(None, None, 2), w[:2]),
    "x[None, 1][0, :2] *= w": lambda x, w: x[None, 1][0, :2].__imul__(w[:2]),
    "x[..., 2].copy_(w)": lambda x, w: x[..., 2].copy_(w[:2]),
}


@pytest.mark.parametrize("write", sorted(_WRITES))
def test_write_through_a_view_matches_torch_values_and_gradients(write):
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(2, 3)), rng.normal(size=3), rng.normal(size=(2, 3))
    fx, tx = _pair(a, True)
    fw, tw = _pair(b, True)
    fy, ty = fx * 2.0, tx * 2.0          # not a leaf, so writes into it are allowed with gradients on
    _WRITES[write](fy, fw * 3.0)
    _WRITES[write](ty, tw * 3.0)
    np.testing.assert_allclose(fy.numpy(), ty.detach().numpy(), rtol=1e-12)
    ((fy * fg.to_tensor(c)).sum()).backward()
    ((ty * torch.tensor(c)).sum()).backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_several_writes_through_one_view_all_reach_the_tensor():
    x = fg.to_tensor(np.zeros((2, 3)))
    row = x[1]
    row[0] = 1.0
    row[2] = 3.0
    row.add_(fg.to_tensor(np.ones(3)))
    np.testing.assert_array_equal(x.numpy(), [[0, 0, 0], [2, 1, 4]])


def test_a_view_sees_the_changes_of_its_tensor_as_in_torch():
    x, tx = fg.to_tensor(np.zeros((2, 3))), torch.zeros(2, 3, dtype=torch.float64)
    row, trow = x[1], tx[1]
    x[1, 1], tx[1, 1] = 5.0, 5.0         # (the session-10 views held the older value and refused writes)
    np.testing.assert_array_equal(row.numpy(), trow.numpy())
    row[0], trow[0] = 7.0, 7.0
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_a_view_of_a_leaf_that_requires_grad_refuses_as_torch():
    x = fg.to_tensor(np.zeros((2, 3)), stop_gradient=False)
    with pytest.raises(RuntimeError, match="leaf"):
        x[0].zero_()
    with fg.no_grad():
        x[0].fill_(2.0)
    np.testing.assert_array_equal(x.numpy(), [[2, 2, 2], [0, 0, 0]])


def test_advanced_indexing_is_a_copy_as_in_torch():
    x = fg.to_tensor(np.zeros((2, 3)))
    x[[0, 1]].fill_(1.0)
    x[x > -1].fill_(1.0)
    np.testing.assert_array_equal(x.numpy(), np.zeros((2, 3)))


def test_an_in_place_reshape_of_a_view_refuses():
    x = fg.to_tensor(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="view"):
        x[0].unsqueeze_(0)


class _Counter(fg.nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", fg.to_tensor(np.array([0.0, 0.0])))

    def forward(self, x):
        with fg.no_grad():
            self.count += 1.0
            self.count[1] = self.count[0] * 10.0     # reads the value written just before
        return x * self.count


def test_in_place_buffer_updates_inside_to_static_match_eager():
    traced_layer, eager_layer = _Counter(), _Counter()
    traced = fg.jit.to_static(traced_layer)
    for _ in range(3):
        got = traced(fg.to_tensor(np.ones(2)))
        want = eager_layer(fg.to_tensor(np.ones(2)))
    np.testing.assert_array_equal(traced_layer.count.numpy(), eager_layer.count.numpy())
    np.testing.assert_array_equal(got.numpy(), want.numpy())
