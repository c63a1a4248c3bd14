"""ops/outer.py: the K=1 matmul (batch-1 weight gradient) as a compiled outer loop agrees with
NumPy's einsum fallback, on contiguous and strided vectors, and the matmul gradient through it
agrees with PyTorch."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.ops import accel
from fluidgrad.ops.outer import outer


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_outer_product_equals_numpy(dtype):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(37).astype(dtype), rng.standard_normal(2 * 23).astype(dtype)[::2]  # y strided
    got = outer(x, y)
    with accel.use_numba(False):
        want = outer(x, y)
    assert got.dtype == want.dtype == dtype and got.shape == (37, 23)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, np.multiply.outer(x, y))


def test_outer_of_integers_takes_the_numpy_path():
    np.testing.assert_array_equal(outer(np.arange(3), np.arange(4)), np.multiply.outer(np.arange(3), np.arange(4)))


@pytest.mark.parametrize("numba_on", [True, False])
def test_batch_1_linear_weight_gradient_equals_torch(numba_on):
    rng = np.random.default_rng(1)
    x_np, w_np = rng.standard_normal((1, 20)).astype(np.float32), rng.standard_normal((20, 7)).astype(np.float32)
    with accel.use_numba(numba_on):
        x, w = fg.to_tensor(x_np), fg.to_tensor(w_np, stop_gradient=False)
        fg.sum(fg.tanh(fg.matmul(x, w))).backward()
    tw = torch.tensor(w_np, requires_grad=True)
    torch.tanh(torch.tensor(x_np) @ tw).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)
