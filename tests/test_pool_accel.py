"""The compiled max-pool gradient (fluidgrad/ops/pooling.py: one scatter pass from the saved argmax)
against the NumPy scatter / bincount and PyTorch: 1-3 spatial axes, disjoint and overlapping
windows, adaptive windows, float32 and float64; an index outside its plane is an error."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from fluidgrad.ops import accel, pooling

pytestmark = pytest.mark.skipif(not accel.installed(), reason="the compiled path needs numba (the `fast` extra)")

CASES = [  # (x shape, attrs, overlapping)
    ((2, 3, 8, 8), {"ksize": [2, 2], "strides": [2, 2]}, False),
    ((2, 3, 7, 9), {"ksize": [3, 3], "strides": [1, 2], "paddings": [1, 1]}, True),
    ((1, 2, 9, 6), {"ksize": [2, 3], "strides": [2, 2], "ceil_mode": True}, True),
    ((1, 2, 9, 7), {"ksize": [2, 2], "strides": [2, 2], "ceil_mode": True}, False),
    ((1, 1, 9, 9), {"ksize": [2, 2], "strides": [1, 1], "dilations": [2, 2]}, True),
    ((3, 2, 11), {"ksize": [3], "strides": [2], "paddings": [1], "dilations": [1]}, True),
    ((1, 2, 4, 5, 6), {"ksize": [2, 2, 2], "strides": [2, 2, 2], "dilations": [1, 1, 1], "paddings": [0, 0, 0]}, False),
    ((2, 2, 7, 5), {"ksize": [3, 2], "adaptive": True}, True),
]


def _grads(x, attrs, overlapping, dtype, numba_on):
    with accel.use_numba(numba_on):
        out, mask = pooling.max_pool_with_index_kernel(x, **attrs)
        dout = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
        return pooling.max_pool_index_grad_kernel(mask, dout, x, overlapping), mask, dout


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, attrs, overlapping", CASES)
def test_compiled_scatter_matches_numpy(shape, attrs, overlapping, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    fast, mask, _ = _grads(x, attrs, overlapping, dtype, True)
    slow, slow_mask, _ = _grads(x, attrs, overlapping, dtype, False)
    np.testing.assert_array_equal(mask, slow_mask)
    assert fast.dtype == slow.dtype == dtype and fast.shape == x.shape
    np.testing.assert_allclose(fast, slow, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-12)


def test_compiled_scatter_matches_pytorch_with_ties():
    x = np.zeros((2, 3, 6, 6), np.float32)   # every window tied: the first position takes it all
    x[0, 0, 1, 1] = 1.0
    fast, _, dout = _grads(x, {"ksize": [3, 3], "strides": [1, 1]}, True, np.float32, True)
    xt = torch.from_numpy(x).requires_grad_()
    TF.max_pool2d(xt, 3, 1).backward(torch.from_numpy(dout))
    np.testing.assert_allclose(fast, xt.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("bad", [-1, 16])
def test_an_index_outside_its_plane_is_an_error(bad):
    x = np.zeros((1, 2, 4, 4), np.float32)
    mask = np.zeros((1, 2, 2, 2), np.int64)
    mask[0, 1, 1, 0] = bad
    with accel.use_numba(True), pytest.raises(ValueError, match=r"max_pool_index_grad: Mask \[1, 2, 2, 2\].*16"):
        pooling.max_pool_index_grad_kernel(mask, np.ones((1, 2, 2, 2), np.float32), x, False)


def _forward(x, attrs, numba_on):
    with accel.use_numba(numba_on):
        return pooling.max_pool_with_index_kernel(x, **attrs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, attrs", [((3, 4, 8, 6), {}), ((2, 3, 7, 9), {}), ((1, 1, 2, 2), {}),
                                          ((2, 2, 7, 9), {"ceil_mode": True}),           # overhang: NumPy
                                          ((2, 2, 6, 6), {"paddings": [1, 1]})])         # padding: NumPy
def test_compiled_2x2_forward_matches_numpy_with_ties_and_infinities(shape, attrs, dtype):
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, shape).astype(dtype)          # many ties
    x.flat[::7] = -np.inf
    x.flat[3::11] = np.inf
    attrs = {"ksize": [2, 2], "strides": [2, 2], **attrs}
    (fast, fast_index), (slow, slow_index) = _forward(x, attrs, True), _forward(x, attrs, False)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast_index, slow_index)
    assert fast.dtype == dtype and fast_index.dtype == np.int64


def test_compiled_2x2_forward_leaves_nan_windows_to_numpy_and_matches_pytorch():
    x = np.random.default_rng(8).standard_normal((2, 3, 6, 8)).astype(np.float32)
    x[0, 1, 2, 3] = x[1, 2, 5, 7] = x[1, 2, 4, 6] = np.nan   # the NaN comes after a number in its window
    out, index = _forward(x, {"ksize": [2, 2], "strides": [2, 2]}, True)
    t_out, t_index = TF.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
    np.testing.assert_array_equal(out, t_out.numpy())
    assert np.isnan(out[0, 1, 1, 1]) and index[0, 1, 1, 1] == 2 * 8 + 3
    np.testing.assert_array_equal(index, _forward(x, {"ksize": [2, 2], "strides": [2, 2]}, False)[1])


@pytest.mark.parametrize("kernel, padding, ceil_mode", [(3, 1, False), (5, 2, False), (2, 1, True)])
@pytest.mark.parametrize("with_nan", [False, True])
def test_an_all_minus_inf_window_points_at_its_first_real_element_like_pytorch(kernel, padding, ceil_mode, with_nan):
    """-inf windows tie with the -inf padding: the index goes to the input (the per-offset, the
    many-offset (5x5) and the NaN search paths), as PyTorch's does."""
    x = np.full((1, 2, 6, 7), -np.inf)
    x[0, 1, 3:, 4:] = np.random.default_rng(2).standard_normal((3, 3))
    if with_nan:
        x[0, 1, 5, 6] = np.nan
    attrs = {"ksize": [kernel] * 2, "strides": [2, 2], "paddings": [padding] * 2, "ceil_mode": ceil_mode}
    _, mask = pooling.max_pool_with_index_kernel(x, **attrs)
    _, expected = TF.max_pool2d(torch.tensor(x), kernel, 2, padding, ceil_mode=ceil_mode, return_indices=True)
    np.testing.assert_array_equal(mask, expected.numpy())
