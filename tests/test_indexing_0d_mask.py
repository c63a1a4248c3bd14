"""x[mask] and x[mask] = v with a 0-D boolean mask (a Tensor, Variable or NumPy bool, alone or
as `(mask,)`): all of x as x[None] when it holds, an empty copy when not, as NumPy and PyTorch;
values and gradients against PyTorch in eager and static mode. Combined with other indices a
0-D mask is still refused with a clear IndexError."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

from both_modes import compare_with_torch

X = np.random.default_rng(3).uniform(-1, 1, (2, 3))


@pytest.mark.parametrize("value", [True, False])
def test_reading_matches_torch_in_both_modes(value):
    fn = lambda x, m: (x[m] * x[m]).sum(0)          # noqa: E731  (a known static shape, [2, 3])
    compare_with_torch(fn, fn, {"x": X, "m": np.array(value)}, wrt=["x"])


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("item", ["tensor", "numpy", "tuple"])
def test_reading_with_any_spelling_of_the_mask(value, item):
    mask = {"tensor": fg.to_tensor(np.array(value)), "numpy": np.array(value), "tuple": (np.array(value),)}[item]
    np.testing.assert_array_equal(fg.to_tensor(X)[mask].numpy(), X[np.array(value)])


def _write(x, m, v):
    y = x * 1.0
    y[m] = v
    return y


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("v_shape", [(), (3,), (1, 2, 3)])
def test_writing_matches_torch_in_both_modes(value, v_shape):
    v = np.random.default_rng(4).uniform(-1, 1, v_shape)
    compare_with_torch(_write, _write, {"x": X, "m": np.array(value), "v": v}, wrt=["x", "v"])


def test_a_value_that_does_not_fit_is_refused():
    x = fg.to_tensor(X.copy())
    with pytest.raises(ValueError, match=r"value of shape \[4\] cannot be broadcast .*\[2, 3\]"):
        x[np.array(True)] = np.ones(4)


def test_a_0d_mask_among_other_indices_is_refused_clearly():
    x = fg.to_tensor(X)
    with pytest.raises(IndexError, match="0-D boolean index"):
        x[np.array(True), 0]
    assert torch.tensor(X)[torch.tensor(True), 0].shape == (1, 3)   # what PyTorch gives; not supported here
