"""t, diagonal and trace (functions and Tensor methods) against PyTorch: values and gradients in
eager and static mode, offsets above, below and past the matrix, other axis pairs, batches; and
the Tensor methods numel(), dim() and reshape(4, 2) (sizes as arguments)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

from both_modes import compare_with_torch

RNG = np.random.default_rng(11)
M34 = RNG.uniform(-1, 1, (3, 4))
B234 = RNG.uniform(-1, 1, (2, 3, 4))


@pytest.mark.parametrize("offset", [0, 1, 3, -1, -2, 5, -4])
def test_diagonal_and_trace_of_a_matrix(offset):
    compare_with_torch(lambda x: fg.diagonal(x, offset), lambda x: torch.diagonal(x, offset), {"x": M34}, wrt=["x"])
    compare_with_torch(lambda x: fg.trace(x, offset), lambda x: torch.diagonal(x, offset).sum(-1), {"x": M34},
                       wrt=["x"])


@pytest.mark.parametrize("offset,axis1,axis2", [(0, 1, 2), (1, 0, 2), (-1, 2, 0), (0, -1, -3)])
def test_diagonal_of_a_batch_on_any_axes(offset, axis1, axis2):
    compare_with_torch(lambda x: x.diagonal(offset, axis1, axis2), lambda x: x.diagonal(offset, axis1, axis2),
                       {"x": B234}, wrt=["x"])
    compare_with_torch(lambda x: x.trace(offset, axis1, axis2), lambda x: x.diagonal(offset, axis1, axis2).sum(-1),
                       {"x": B234}, wrt=["x"])


def test_the_trace_of_integers_is_int64_as_torch():
    got = fg.to_tensor(np.arange(9, dtype="int32").reshape(3, 3)).trace()
    expected = torch.arange(9, dtype=torch.int32).reshape(3, 3).trace()
    assert got.dtype == str(expected.numpy().dtype) and got.item() == expected.item()


@pytest.mark.parametrize("shape", [(3, 4), (4,), ()])
def test_t_transposes_a_matrix_and_keeps_vectors(shape):
    x = RNG.uniform(-1, 1, shape)
    compare_with_torch(lambda x: x.t() * 2.0, lambda x: x.t() * 2.0, {"x": x}, wrt=["x"])


def test_bad_axes_are_refused_clearly():
    with pytest.raises(ValueError, match=r"t: expects a tensor of at most 2 dimensions, got shape \[2, 3, 4\]"):
        fg.t(fg.to_tensor(B234))
    with pytest.raises(ValueError, match="diagonal: axis1=1 and axis2=-2 must be two different axes"):
        fg.diagonal(fg.to_tensor(B234), 0, 1, -2)
    with pytest.raises(ValueError, match=r"diagonal: expects at least 2 dimensions, got shape \[4\]"):
        fg.diagonal(fg.to_tensor(np.ones(4)))


def test_numel_dim_and_reshape_with_sizes():
    x, tx = fg.to_tensor(B234), torch.tensor(B234)
    assert x.numel() == tx.numel() == 24 and x.dim() == tx.dim() == 3 and x.ndimension() == 3
    np.testing.assert_array_equal(x.reshape(4, 6).numpy(), tx.reshape(4, 6).numpy())
    np.testing.assert_array_equal(x.reshape([6, -1]).numpy(), tx.reshape([6, -1]).numpy())
    np.testing.assert_array_equal(x.reshape((2, 12)).numpy(), tx.reshape((2, 12)).numpy())
    with fg.program_guard(fg.Program(), fg.Program()):
        v = fg.static.data("v", [2, 3, 4], "float64")
        assert v.numel() == 24 and v.dim() == 3 and v.reshape(4, 6).shape == (4, 6)
