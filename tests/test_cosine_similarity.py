"""cosine_similarity as PyTorch's: (x1 / max(|x1|, eps)) . (x2 / max(|x2|, eps)) along `axis`, norms
from the p_norm op (float16 squares summed in float32), so that
  * a zero vector gives 0, and the gradient torch gives there (x2 / (|x2| eps) for x1 = 0);
  * float16 rows too wide for a float16 |x|^2 give the right similarity.
tests/test_losses.py compares ordinary inputs (value and gradient, both modes)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from fluidgrad.nn import functional as F

from both_modes import compare_with_torch


def _with_zero_rows(shape, rows, seed):
    x = np.random.default_rng(seed).standard_normal(shape)
    x[rows] = 0.0
    return x


@pytest.mark.parametrize("zero_in", ["x1", "x2", "both"])
def test_gradient_at_a_zero_vector_is_torch_s(zero_in):
    x1 = _with_zero_rows((3, 4), [0] + ([2] if zero_in == "both" else []), 1) if zero_in != "x2" else \
        _with_zero_rows((3, 4), [], 1)
    x2 = _with_zero_rows((3, 4), [0] + ([2] if zero_in == "both" else []), 2) if zero_in != "x1" else \
        _with_zero_rows((3, 4), [], 2)
    compare_with_torch(lambda a, b: F.cosine_similarity(a, b, axis=1), lambda a, b: TF.cosine_similarity(a, b, dim=1),
                       {"a": x1, "b": x2}, wrt=["a", "b"], rtol=1e-10, atol=1e-6)


def test_broadcast_operands_and_a_custom_eps_match_torch():
    rng = np.random.default_rng(3)
    x1, x2 = rng.standard_normal((1, 5)), rng.standard_normal((4, 5))
    x2[1] = 0.0
    compare_with_torch(lambda a, b: F.cosine_similarity(a, b, axis=-1, eps=1e-3),
                       lambda a, b: TF.cosine_similarity(a, b, dim=-1, eps=1e-3),
                       {"a": x1, "b": x2}, wrt=["a", "b"], rtol=1e-10, atol=1e-10)


def test_second_derivative_matches_torch():
    rng = np.random.default_rng(4)
    x1, x2 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    t1, t2 = torch.tensor(x1, requires_grad=True), torch.tensor(x2)
    g1, = torch.autograd.grad(TF.cosine_similarity(t1, t2, dim=1).sum(), t1, create_graph=True)
    expected, = torch.autograd.grad((g1 * g1).sum(), t1)
    a, b = fg.to_tensor(x1, stop_gradient=False), fg.to_tensor(x2)
    ga, = fg.grad([fg.sum(F.cosine_similarity(a, b, axis=1))], [a], create_graph=True)
    got, = fg.grad([fg.sum(ga * ga)], [a])
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_low_precision_wide_rows_match_torch(dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 4000)) * 40).astype(dtype)
    y = (x.astype(np.float32) + rng.standard_normal((3, 4000)) * 40).astype(dtype)
    expected = TF.cosine_similarity(torch.tensor(x), torch.tensor(y), dim=1).numpy()
    got = F.cosine_similarity(fg.to_tensor(x), fg.to_tensor(y), axis=1).numpy()
    assert got.dtype == dtype
    rtol = 2e-3 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), rtol=rtol)
