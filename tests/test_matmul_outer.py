"""The K=1 matmul (a batch-1 weight gradient) takes BLAS ger when SciPy is there, einsum else:
both must give NumPy's outer product exactly, C-ordered, in the inputs' dtype."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.ops import math as fg_math


@pytest.mark.parametrize("use_ger", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(300, 200), (40, 30)])  # above and below the size where ger starts
def test_outer_product_matmul_is_exact(monkeypatch, use_ger, dtype, shape):
    if not use_ger:
        monkeypatch.setattr(fg_math, "_ger", lambda dt: None)
    rng = np.random.default_rng(0)
    m, n = shape
    x, y = rng.standard_normal((m, 1)).astype(dtype), rng.standard_normal((1, n)).astype(dtype)
    x[3, 0], y[0, 5] = np.inf, np.nan
    out = fg.matmul(fg.to_tensor(x), fg.to_tensor(y)).numpy()
    assert out.dtype == np.dtype(dtype) and out.shape == (m, n) and out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.multiply.outer(x[:, 0], y[0]))


@pytest.mark.parametrize("use_ger", [True, False])
def test_batch_one_linear_weight_gradient_matches_torch(monkeypatch, use_ger):
    if not use_ger:
        monkeypatch.setattr(fg_math, "_ger", lambda dt: None)
    rng = np.random.default_rng(1)
    x0, w0 = rng.standard_normal((1, 784)).astype(np.float32), rng.standard_normal((784, 64)).astype(np.float32)
    w = fg.to_tensor(w0, stop_gradient=False)
    fg.sum(fg.tanh(fg.matmul(fg.to_tensor(x0), w))).backward()
    tw = torch.tensor(w0, requires_grad=True)
    torch.tanh(torch.tensor(x0) @ tw).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)
