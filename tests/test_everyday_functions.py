"""The everyday functions composed of registered ops (fluidgrad/tensor/everyday.py) against
PyTorch: values and gradients in eager and static mode, ties and NaNs, other axes, refusals."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

from both_modes import compare_with_torch

RNG = np.random.default_rng(9)
A = RNG.uniform(-2, 2, (3, 4))
B = RNG.uniform(-2, 2, (3, 4))
TIES = np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [4.0, 4.0, 1.0, 4.0, 0.0]])

DIFFERENTIABLE = {
    "clone": (lambda x, y: fg.clone(x) * y, lambda x, y: torch.clone(x) * y, A, B),
    "neg": (lambda x, y: fg.neg(x) * y, lambda x, y: torch.neg(x) * y, A, B),
    "mm": (lambda x, y: fg.mm(x, fg.transpose(y, [1, 0])), lambda x, y: torch.mm(x, y.T), A, B),
    "logaddexp": (lambda x, y: fg.logaddexp(x * 40, y * 40), lambda x, y: torch.logaddexp(x * 40, y * 40), A, B),
    "logaddexp ties": (lambda x, y: fg.logaddexp(x, x[:1]), lambda x, y: torch.logaddexp(x, x[:1]), A, B),
    "hypot": (lambda x, y: fg.hypot(x, y), lambda x, y: torch.hypot(x, y), A, B),
    "nansum": (lambda x, y: fg.nansum(fg.log(x), axis=1), lambda x, y: torch.nansum(torch.log(x), dim=1), A, B),
    "nanmean": (lambda x, y: fg.nanmean(x, axis=0, keepdim=True),
                lambda x, y: torch.nanmean(x, dim=0, keepdim=True), A, B),
    "cummax axis 1": (lambda x, y: fg.cummax(x, axis=1)[0], lambda x, y: torch.cummax(x, 1)[0], A, B),
    "cummax axis 0": (lambda x, y: fg.cummax(x, axis=0)[0], lambda x, y: torch.cummax(x, 0)[0], A, B),
    "cummax ties": (lambda x, y: fg.cummax(x, axis=1)[0], lambda x, y: torch.cummax(x, 1)[0], TIES, TIES),
    "cummax flat": (lambda x, y: fg.cummax(x)[0], lambda x, y: torch.cummax(x.reshape(-1), 0)[0], A, B),
    "index_add axis 0": (lambda x, y, i: fg.index_add(x, i, 0, y), lambda x, y, i: torch.index_add(x, 0, i, y),
                         A, B, np.array([2, 0, 2])),
    "index_add axis 1": (lambda x, y, i: fg.index_add(x, i, 1, y[:, :2]),
                         lambda x, y, i: torch.index_add(x, 1, i, y[:, :2]), A, B, np.array([3, 3])),
}


_USES_Y = ("clone", "neg", "mm", "logaddexp", "hypot", "index_add")


@pytest.mark.parametrize("name", list(DIFFERENTIABLE))
def test_values_and_gradients_match_torch_in_both_modes(name):
    ours, theirs, x, y, *index = DIFFERENTIABLE[name]
    if name == "nansum":
        x = np.abs(x) * np.array([1, -1, 1, 1])   # log of a negative: NaNs to skip
    inputs = {"x": x, "y": y, **({"i": index[0]} if index else {})}
    uses_y = name.split()[0] in _USES_Y and name != "logaddexp ties"
    compare_with_torch(ours, theirs, inputs, wrt=["x", "y"] if uses_y else ["x"])


@pytest.mark.parametrize("values", [TIES, np.array([[1.0, np.nan, 3.0, np.nan, 0.5]]), np.array([[2, 7, 7, 1]])])
def test_cummax_indices_take_the_later_tie_and_keep_nan_as_torch(values):
    expected = torch.cummax(torch.tensor(values), 1)
    got_values, got_index = fg.cummax(fg.to_tensor(values), axis=1)
    np.testing.assert_array_equal(got_values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(got_index.numpy(), expected.indices.numpy())
    assert got_index.dtype == "int64" and fg.cummax(fg.to_tensor(values), 1, dtype="int32")[1].dtype == "int32"


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_one_and_several_sequences(right):
    seq = np.array([[1.0, 2.0, 2.0, 5.0], [0.0, 3.0, 4.0, 4.0]])
    values = np.array([[2.0, 6.0, 0.0], [4.0, -1.0, 3.5]])
    for s in (seq, seq[0]):
        expected = torch.searchsorted(torch.tensor(s), torch.tensor(values), right=right).numpy()
        got = fg.searchsorted(fg.to_tensor(s), fg.to_tensor(values), right=right)
        np.testing.assert_array_equal(got.numpy(), expected)
        assert got.dtype == "int64"
    with pytest.raises(ValueError, match="searchsorted"):
        fg.searchsorted(fg.to_tensor(seq), fg.to_tensor(values[:1]))


def test_bincount_counts_and_weights():
    x = np.array([3, 0, 3, 1])
    w = np.array([0.5, 1.0, 2.0, -1.0])
    np.testing.assert_array_equal(fg.bincount(fg.to_tensor(x), minlength=6).numpy(),
                                  torch.bincount(torch.tensor(x), minlength=6).numpy())
    weights = fg.to_tensor(w, stop_gradient=False)
    out = fg.bincount(fg.to_tensor(x), weights=weights)
    np.testing.assert_allclose(out.numpy(), torch.bincount(torch.tensor(x), torch.tensor(w)).numpy())
    (out * fg.to_tensor(np.arange(4.0))).sum().backward()
    np.testing.assert_allclose(weights.grad.numpy(), x.astype(float))
    with pytest.raises(ValueError, match="non-negative"):
        fg.bincount(fg.to_tensor(np.array([1, -1])))


def test_mm_refuses_batches_and_empty_like_takes_shape_and_dtype():
    x = fg.to_tensor(np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="mm: needs two matrices"):
        fg.mm(x, x)
    like = fg.empty_like(x, dtype="int32")
    assert like.shape == (2, 3, 3) and like.dtype == "int32"


def test_nanmean_skips_nans_and_sends_them_no_gradient():
    x0 = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 5.0]])
    x = fg.to_tensor(x0, stop_gradient=False)
    out = fg.nanmean(x, axis=1)
    np.testing.assert_allclose(out.numpy(), torch.nanmean(torch.tensor(x0), dim=1).numpy())
    fg.nanmean(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(np.isnan(x0), 0.0, 1 / 3))
    assert np.isnan(fg.nanmean(fg.to_tensor(x0), axis=0).numpy()[1])   # all NaN: NaN, as torch
