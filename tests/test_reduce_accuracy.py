"""float32 (and float16 / bfloat16) reductions against float64 truth, with an error bound like
PyTorch's cascade sum: ~eps * (log2(n) + 16) of sum |x|, where one float32 chain of n additions
(one BLAS pass, NumPy's sum over a strided axis) is off by up to ~n * eps. PyTorch is held to the
same bound in each case, so the bound is what the oracle achieves. Inputs are 0.1 with a little
jitter: a nearly constant sum rounds the same way at every step, the hard case for a chain."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.ops import accel, norm
from fluidgrad.ops.cascade_sum import cascade_sum, cascade_vecmat

EPS32 = float(np.finfo(np.float32).eps)


def bound(n: int) -> float:
    """The allowed error of a float32 sum of n values, relative to the sum of their magnitudes."""
    return EPS32 * (math.log2(max(n, 2)) + 16)


def nearly_constant(shape, seed=0, dtype=np.float32) -> np.ndarray:
    return (0.1 + 0.01 * np.random.default_rng(seed).random(shape)).astype(dtype)


def relative_error(got, truth, magnitude) -> float:
    return float(np.max(np.abs(np.asarray(got, np.float64) - truth) / magnitude))


def axes_of(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(a % ndim for a in (axis if isinstance(axis, list) else [axis])))


CASES = [   # (shape, axis): leading, trailing, middle, several, non-adjacent, size-1, negative, all
    ((1 << 16, 3), 0),
    ((3, 1 << 16), 1),
    ((4, 1 << 14, 5), 1),
    ((8, 1 << 13, 6), [0, 1]),
    ((64, 3, 32, 32), [0, 2, 3]),
    ((6, 300, 5, 40), [1, 3]),
    ((1 << 12, 1, 16), [0, 1]),
    ((7, 5003), -1),
    ((5003, 7), -2),
    ((37, 41, 43), None),
]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("kind", ["sum", "mean"])
@pytest.mark.parametrize("shape, axis", CASES)
def test_float32_sum_and_mean_meet_a_pytorch_like_bound(shape, axis, kind, keepdim):
    x = nearly_constant(shape)
    axes = axes_of(axis, len(shape))
    n = math.prod(shape[a] for a in axes)
    wide = x.astype(np.float64)
    truth, magnitude = wide.sum(axis=axes, keepdims=keepdim), np.abs(wide).sum(axis=axes, keepdims=keepdim)
    if kind == "mean":
        truth, magnitude = truth / n, magnitude / n
    got = getattr(fg, kind)(fg.to_tensor(x), axis=axis, keepdim=keepdim).numpy()
    t = torch.from_numpy(x)
    dims = list(axes)
    oracle = (t.sum(dims, keepdim=keepdim) if kind == "sum" else t.mean(dims, keepdim=keepdim)).numpy()
    assert got.dtype == np.float32 and got.shape == truth.shape
    assert relative_error(oracle, truth, magnitude) <= bound(n)     # the oracle meets the bound
    assert relative_error(got, truth, magnitude) <= bound(n)


SIZES = st.sampled_from([1, 2, 3, 5, 17, 64, 130, 257, 1000, 4099])


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(SIZES, min_size=1, max_size=4).filter(lambda s: math.prod(s) <= 1 << 18),
       picks=st.lists(st.booleans(), min_size=4, max_size=4), keepdim=st.booleans(), seed=st.integers(0, 99))
def test_float32_sum_over_any_axes_meets_the_bound(shape, picks, keepdim, seed):
    axes = [i for i in range(len(shape)) if picks[i]] or [0]
    x = nearly_constant(shape, seed) - np.float32(0.105)    # both signs: the bound is on sum |x|
    wide = x.astype(np.float64)
    got = fg.sum(fg.to_tensor(x), axis=axes, keepdim=keepdim).numpy()
    truth = wide.sum(axis=tuple(axes), keepdims=keepdim)
    assert got.dtype == np.float32 and got.shape == truth.shape
    magnitude = np.maximum(np.abs(wide).sum(axis=tuple(axes), keepdims=keepdim), np.finfo(np.float32).tiny)
    assert relative_error(got, truth, magnitude) <= bound(math.prod(shape[a] for a in axes))


@pytest.mark.parametrize("layout", ["transposed", "strided", "broadcast"])
def test_cascade_sum_of_non_contiguous_inputs(layout):
    base = nearly_constant((3000, 6), seed=3)
    x = {"transposed": base.T, "strided": base[::2, ::2], "broadcast": np.broadcast_to(base[:1], (3000, 6))}[layout]
    for axes in [(0,), (1,), (0, 1)]:
        truth = x.astype(np.float64).sum(axis=axes)
        got = cascade_sum(x, axes)
        assert got.shape == truth.shape and got.dtype == np.float32
        assert relative_error(got, truth, np.abs(truth)) <= bound(x.size)


def test_cascade_sum_leaves_float64_integers_and_empty_arrays_to_their_callers():
    assert cascade_sum(np.ones((4, 3)), (0,)) is None
    assert cascade_sum(np.ones((4, 3), np.int32), (0,)) is None
    assert cascade_sum(np.ones((0, 3), np.float32), (0,)) is None


def test_sum_over_only_size_one_axes_is_a_copy_not_a_view():
    x = np.arange(6, dtype=np.float32).reshape(3, 1, 2)
    out = cascade_sum(x, (1,))
    out[...] = -1
    np.testing.assert_array_equal(x.reshape(-1), np.arange(6))


def test_integer_and_float64_sums_are_exact_as_before():
    big = np.full((1 << 16, 2), 2 ** 20, np.int32)        # an int32 overflow unless summed in int64
    got = fg.sum(fg.to_tensor(big), axis=0).numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, torch.from_numpy(big).sum(0).numpy())
    x = nearly_constant((1 << 16, 3), dtype=np.float64)
    np.testing.assert_allclose(fg.sum(fg.to_tensor(x), axis=0).numpy(), x.sum(axis=0), rtol=1e-13)


def test_float16_sums_accumulate_in_float32_as_pytorch():
    x = nearly_constant((4096, 3), dtype=np.float16)
    got = fg.sum(fg.to_tensor(x), axis=0).numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, torch.from_numpy(x).sum(0).numpy())   # the float64 sum rounded once
    np.testing.assert_array_equal(got, x.astype(np.float64).sum(0).astype(np.float16))


def test_float16_mean_of_a_sum_past_the_float16_range_is_finite():
    x = np.full((20000, 2), 8.0, np.float16)      # the sum, 160000, is inf in float16; the mean is 8
    got = fg.mean(fg.to_tensor(x), axis=0).numpy()
    np.testing.assert_array_equal(got, torch.from_numpy(x).mean(0).numpy())
    np.testing.assert_array_equal(got, [8.0, 8.0])
    assert fg.mean(fg.to_tensor(x)).numpy() == 8.0


def test_bfloat16_sums_accumulate_in_float32():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = nearly_constant((4096, 3)).astype(ml_dtypes.bfloat16)
    got = fg.sum(fg.to_tensor(x), axis=0).numpy()
    assert got.dtype == x.dtype
    expected = torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16).sum(0).float().numpy()
    np.testing.assert_array_equal(got.astype(np.float32), expected)


@pytest.mark.parametrize("kind", ["logsumexp", "norm2", "norm3"])
def test_logsumexp_and_p_norm_over_a_long_leading_axis(kind):
    x = nearly_constant((1 << 16, 3), seed=10)
    wide, n = x.astype(np.float64), 1 << 16
    if kind == "logsumexp":
        got, truth = fg.logsumexp(fg.to_tensor(x), axis=0).numpy(), np.log(np.exp(wide).sum(axis=0))
        oracle = torch.logsumexp(torch.from_numpy(x), 0).numpy()
        assert relative_error(oracle, truth, truth) <= bound(n)
    else:
        p = 2 if kind == "norm2" else 3
        got, truth = fg.norm(fg.to_tensor(x), p=p, axis=0).numpy(), (wide ** p).sum(axis=0) ** (1 / p)
    assert got.dtype == np.float32
    assert relative_error(got, truth, truth) <= bound(n)


def test_broadcast_gradient_summed_back_over_many_rows_meets_the_bound():
    """reduce_as (the un-broadcasting of an elementwise op's gradient) over 2^16 rows."""
    x, upstream = nearly_constant((1 << 16, 8), seed=1), np.full((1 << 16, 8), 0.1, np.float32)
    bias = fg.to_tensor(np.zeros(8, np.float32), stop_gradient=False)
    fg.sum((fg.to_tensor(x) + bias) * fg.to_tensor(upstream)).backward()
    truth = upstream.astype(np.float64).sum(axis=0)
    assert relative_error(bias.grad.numpy(), truth, truth) <= bound(1 << 16)


@pytest.mark.parametrize("axis, keepdim", [(0, False), (1, True), ([0, 1], False), (None, False)])
def test_float32_var_and_std_of_an_offset_input(axis, keepdim):
    x = (1e4 + np.random.default_rng(5).standard_normal((4096, 64))).astype(np.float32)
    axes = axes_of(axis, 2)
    truth = x.astype(np.float64).var(axis=axes, ddof=1, keepdims=keepdim)
    oracle = torch.from_numpy(x).var(dim=list(axes), keepdim=keepdim).numpy()
    np.testing.assert_allclose(oracle, truth, rtol=1e-5)
    np.testing.assert_allclose(fg.var(fg.to_tensor(x), axis=axis, keepdim=keepdim).numpy(), truth, rtol=1e-5)
    np.testing.assert_allclose(fg.std(fg.to_tensor(x), axis=axis, keepdim=keepdim).numpy(), np.sqrt(truth),
                               rtol=1e-5)


def test_batch_norm_numpy_path_statistics_and_gradients_over_a_large_batch():
    x = nearly_constant((1 << 16, 4, 2, 2), seed=4) * np.float32(30)
    dy = nearly_constant(x.shape, seed=5)
    scale, bias = np.ones(4, np.float32), np.zeros(4, np.float32)
    with accel.use_numba(False):
        _, _, _, mean, inv_std = norm.batch_norm_kernel(x, scale, bias, np.zeros(4, np.float32), np.ones(4, np.float32))
        _, dscale, dbias = norm.batch_norm_grad_kernel(x, scale, mean, inv_std, dy)
    wide, n = x.astype(np.float64), x.size // 4
    truth_mean = wide.mean(axis=(0, 2, 3))
    assert relative_error(mean, truth_mean, truth_mean) <= bound(n)
    truth_dbias = dy.astype(np.float64).sum(axis=(0, 2, 3))
    assert relative_error(dbias, truth_dbias, truth_dbias) <= bound(n)
    centred = wide - truth_mean[None, :, None, None]
    truth_inv_std = 1 / np.sqrt((centred ** 2).mean(axis=(0, 2, 3)) + 1e-5)
    np.testing.assert_allclose(inv_std, truth_inv_std, rtol=20 * bound(n))
    terms = dy * centred * truth_inv_std[None, :, None, None]     # x - mean in float32 adds
    truth_dscale, magnitude = terms.sum(axis=(0, 2, 3)), np.abs(terms).sum(axis=(0, 2, 3))   # |x|/|x - mean| ulps
    assert relative_error(dscale, truth_dscale, magnitude) <= 4 * bound(n)


def test_layer_norm_numpy_path_parameter_gradients_over_many_rows():
    rows = (np.random.default_rng(6).standard_normal((1 << 16, 16))).astype(np.float32)
    dy = np.full(rows.shape, 0.1, np.float32)
    with accel.use_numba(False):
        _, mean, var = norm.layer_norm_kernel(rows, np.ones(16, np.float32), np.zeros(16, np.float32))
        _, dscale, dbias = norm.layer_norm_grad_kernel(rows, np.ones(16, np.float32), mean, var, dy)
    truth_dbias = dy.astype(np.float64).sum(axis=0)
    assert relative_error(dbias, truth_dbias, truth_dbias) <= bound(rows.shape[0])
    x_hat = (rows - mean[:, None]) / np.sqrt(var[:, None] + np.float32(1e-5))
    truth_dscale = (dy.astype(np.float64) * x_hat).sum(axis=0)
    magnitude = (np.abs(dy.astype(np.float64) * x_hat)).sum(axis=0)
    assert relative_error(dscale, truth_dscale, magnitude) <= bound(rows.shape[0])


def test_cascade_vecmat_is_a_weighted_column_sum():
    w, m = nearly_constant(5000, seed=8), nearly_constant((5000, 9), seed=9)
    truth = w.astype(np.float64) @ m.astype(np.float64)
    assert relative_error(cascade_vecmat(w, m), truth, truth) <= bound(5000)
    assert cascade_vecmat(w.astype(np.float64), m.astype(np.float64)) is None
