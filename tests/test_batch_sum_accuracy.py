"""float32 sums over many images or pixels that used to run as one chain of additions, against
float64 truth with tests/test_reduce_accuracy.py's PyTorch-like bound (~eps * (log2(n) + 16) of
the sum of magnitudes; a chain of n additions is off by up to ~n * eps):

- the convolution filter gradient's sum over the images (im2col: cascade_sum over the batch axis;
  Winograd: its blocks of images summed pairwise, a block being one image for large images);
- average pooling over windows that tile the input (adaptive pooling's regular case, e.g.
  adaptive_avg_pool2d(x, 1)), which added one window offset after another.

PyTorch's own float32 conv weight gradient is off by 3e-6 to 1.5e-5 on these inputs (one GEMM
chain over the batch); here the bound is held instead. Inputs are 0.1 with a little jitter: a
nearly constant sum rounds the same way at every step, the hard case for a chain."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from fluidgrad.ops import accel, get_op_def, winograd
from fluidgrad.ops.cascade_sum import PairwiseSum
from fluidgrad.testing import OpCase, check_op

from test_reduce_accuracy import bound, nearly_constant, relative_error  # one float32 error bound for both files


def _filter_grad_truth(dout, x, w_shape, pad):
    """float64 dW (PyTorch) and the same over magnitudes (the scale of the error bound)."""
    def dw(d, a):
        return torch.nn.grad.conv2d_weight(torch.from_numpy(a.astype(np.float64)), w_shape,
                                           torch.from_numpy(d.astype(np.float64)), padding=pad).numpy()
    return dw(dout, x), dw(np.abs(dout), np.abs(x))


@pytest.mark.parametrize("n, c, o, size, k", [(65536, 1, 2, 3, 3), (65536, 2, 2, 2, 1)])
def test_conv_filter_grad_over_a_large_batch(n, c, o, size, k):
    """im2col (Winograd needs 8 channels or more; its blocks are the next test's)."""
    x, dout = nearly_constant((n, c, size, size), 1), nearly_constant((n, o, size, size), 2)
    w = np.zeros((o, c, k, k), np.float32)
    got = get_op_def("conv2d_filter_grad").kernel(dout, x, w, paddings=[k // 2] * 2)
    truth, magnitude = _filter_grad_truth(dout, x, w.shape, k // 2)
    assert got.dtype == np.float32
    assert relative_error(got, truth, magnitude) <= bound(n * size * size)


@pytest.mark.skipif(not accel.installed(), reason="numba (the `fast` extra) is not installed")
def test_winograd_filter_grad_with_one_image_per_block(monkeypatch):
    """Large images make Winograd's blocks one image each (its block budget is the L2 cache);
    a tiny budget does the same to small ones: the blocks' partial sums are summed pairwise."""
    monkeypatch.setattr(winograd, "_BLOCK_BYTES", 1)
    n, c, size = 8192, 8, 4
    x, dout = nearly_constant((n, c, size, size), 3), nearly_constant((n, c, size, size), 4)
    w = np.zeros((c, c, 3, 3), np.float32)
    geo_pads = ((1, 1), (1, 1))
    assert winograd._schedule(n, c, c, 4, 4)[0] == 1
    got = winograd.filter_grad(dout, x, geo_pads)
    truth, magnitude = _filter_grad_truth(dout, x, w.shape, 1)
    assert relative_error(got, truth, magnitude) <= bound(n * size * size)


def test_pairwise_sum_adds_like_a_tree():
    rng = np.random.default_rng(5)
    parts = [rng.random(3).astype(np.float32) + 0.1 for _ in range(1000)]
    total = PairwiseSum()
    buffer = np.empty(3, np.float32)
    for p in parts:
        buffer[:] = p
        total.add(buffer)                 # the caller's buffer is reused: read, never kept
        buffer[:] = np.nan
    truth = np.sum(np.array(parts, np.float64), axis=0)
    assert relative_error(total.total(), truth, truth) <= bound(len(parts))
    assert PairwiseSum().total() is None


@pytest.mark.parametrize("shape, out", [((4, 2, 256, 256), 1), ((2, 3, 240, 240), (2, 3)), ((3, 1, 4, 64, 64), 1)])
def test_adaptive_avg_pool_over_large_windows(shape, out):
    nd = len(shape) - 2
    x = nearly_constant(shape, 6)
    attrs = {"pooling_type": "avg", "ksize": [out] * nd if isinstance(out, int) else list(out), "adaptive": True}
    got = get_op_def(f"pool{nd}d").kernel(x, **attrs)
    truth = get_op_def(f"pool{nd}d").kernel(x.astype(np.float64), **attrs)
    torch_fn = {2: TF.adaptive_avg_pool2d, 3: TF.adaptive_avg_pool3d}[nd]
    np.testing.assert_allclose(truth, torch_fn(torch.from_numpy(x.astype(np.float64)), out).numpy(), rtol=1e-12)
    window = math.prod(shape[2:]) // truth[0, 0].size
    assert got.dtype == np.float32
    assert relative_error(got, truth, truth) <= bound(window)


def test_adaptive_avg_pool_float16_sums_in_float32():
    x = np.full((1, 1, 256, 256), 60.0, np.float16)           # the window's sum passes 65504
    got = get_op_def("pool2d").kernel(x, pooling_type="avg", ksize=[1, 1], adaptive=True)
    assert got.dtype == np.float16 and got.item() == 60.0


@pytest.mark.parametrize("case", [
    OpCase("pool2d", {"X": np.random.default_rng(8).random((2, 3, 10, 12))},
           {"pooling_type": "avg", "ksize": [2, 3], "adaptive": True},
           torch_fn=lambda X: TF.adaptive_avg_pool2d(X, (2, 3)), id="pool2d-adaptive-tiles-5x4"),
    OpCase("pool1d", {"X": np.random.default_rng(9).random((2, 2, 40))}, {"pooling_type": "avg", "ksize": [2],
                                                                          "adaptive": True},
           torch_fn=lambda X: TF.adaptive_avg_pool1d(X, 2), id="pool1d-adaptive-tiles-20"),
    OpCase("pool3d", {"X": np.random.default_rng(10).random((1, 2, 4, 6, 3))},
           {"pooling_type": "avg", "ksize": [1, 1, 1], "adaptive": True},
           torch_fn=lambda X: TF.adaptive_avg_pool3d(X, 1), id="pool3d-adaptive-one-tile"),
], ids=lambda case: case.id)
def test_tiled_average_pooling_op_cases(case):
    """The tiled path (windows above 16 elements) through every op-case check: forward and
    gradient against PyTorch and central differences, float32, grad of grad, eager = static."""
    check_op(case)
