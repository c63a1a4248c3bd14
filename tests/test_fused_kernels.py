"""The numba-compiled one-pass kernels (ops/fused_*.py) against the NumPy versions they stand in
for: both paths of each op kernel on the same inputs, float32 and float64, odd shapes,
non-contiguous inputs, NaN and Inf. (The op cases in tests/op_cases check the compiled path
against PyTorch and central differences whenever numba is installed.)"""
from __future__ import annotations

import numpy as np
import pytest

from fluidgrad.ops import accel, fused_norm, norm

pytestmark = [pytest.mark.skipif(not accel.installed(), reason="numba (the `fast` extra) is not installed"),
              pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")]   # NaN/Inf inputs

TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-11, atol=1e-11)}


def both_paths(kernel, *args, **attrs):
    """The kernel's outputs with the compiled loops and with NumPy alone (as tuples)."""
    with accel.use_numba(True):
        compiled = kernel(*args, **attrs)
    with accel.use_numba(False):
        plain = kernel(*args, **attrs)
    as_tuple = (lambda r: r if isinstance(r, tuple) else (r,))
    return as_tuple(compiled), as_tuple(plain)


def assert_paths_agree(kernel, *args, **attrs):
    compiled, plain = both_paths(kernel, *args, **attrs)
    dtype = args[0].dtype.type
    assert len(compiled) == len(plain)
    for i, (a, b) in enumerate(zip(compiled, plain)):
        assert a.shape == b.shape and a.dtype == b.dtype, f"output {i}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        np.testing.assert_allclose(a, b, err_msg=f"output {i}", equal_nan=True, **TOL[dtype])
    return compiled


def non_contiguous(a: np.ndarray) -> np.ndarray:
    """The same values in a strided (every other element) view."""
    wide = np.empty(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    view = wide[..., ::2]
    assert a.shape[-1] == 1 or not view.flags.c_contiguous
    return view


def with_nan_and_inf(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    flat = a.reshape(-1)
    flat[min(1, flat.size - 1)], flat[-2 if flat.size > 2 else 0] = np.nan, np.inf
    return a


DTYPES = [np.float32, np.float64]
LAYOUTS = ["contiguous", "strided", "nan_inf"]


def arrange(a: np.ndarray, layout: str) -> np.ndarray:
    if layout == "strided":
        return non_contiguous(a)
    return with_nan_and_inf(a) if layout == "nan_inf" else a


# ---------------------------------------------------------------- layer_norm
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, axis", [((3, 7), 1), ((2, 3, 5), 1), ((2, 3, 33), 2), ((1, 1), 1), ((5, 1000), 1)])
@pytest.mark.parametrize("affine", ["both", "scale", "none"])
def test_layer_norm_forward_and_grad(dtype, layout, shape, axis, affine):
    rng = np.random.default_rng(0)
    x = arrange((rng.standard_normal(shape) * 3 + 1).astype(dtype), layout)
    width = int(np.prod(shape[axis:]))
    scale = rng.standard_normal(width).astype(dtype) if affine != "none" else None
    bias = rng.standard_normal(width).astype(dtype) if affine == "both" else None
    y, mean, var = assert_paths_agree(norm.layer_norm_kernel, x, scale, bias, begin_norm_axis=axis, epsilon=1e-5)
    dy = arrange(rng.standard_normal(shape).astype(dtype), layout)
    assert_paths_agree(norm.layer_norm_grad_kernel, x, scale, mean, var, dy, begin_norm_axis=axis, epsilon=1e-5)


def test_layer_norm_takes_the_compiled_loop_for_float_and_numpy_for_float16(monkeypatch):
    calls = []
    real = fused_norm.layer_norm_rows
    monkeypatch.setattr(fused_norm, "layer_norm_rows", lambda *a: calls.append(a[0].dtype) or real(*a))
    x = np.random.default_rng(1).standard_normal((4, 6))
    for dtype in (np.float32, np.float64, np.float16):
        y, _, _ = norm.layer_norm_kernel(x.astype(dtype))
        assert y.dtype == dtype
    assert calls == [np.float32, np.float64]
    with accel.use_numba(False):
        norm.layer_norm_kernel(x)
    assert len(calls) == 2


def test_layer_norm_float32_statistics_close_to_float64():
    """float32 accumulators: rows of large offset and spread stay close to the float64 answer."""
    x = np.random.default_rng(2).standard_normal((8, 4096)) * 50 + 1000
    y32, mean32, var32 = norm.layer_norm_kernel(x.astype(np.float32))
    y64, mean64, var64 = norm.layer_norm_kernel(x)
    np.testing.assert_allclose(mean32, mean64, rtol=1e-6)
    np.testing.assert_allclose(var32, var64, rtol=1e-4)
    np.testing.assert_allclose(y32, y64, atol=5e-4)


# ---------------------------------------------------------------- batch_norm
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(2, 3), (3, 5, 7), (4, 3, 5, 6), (2, 1, 3, 3, 3), (32, 4, 16, 16)])
@pytest.mark.parametrize("is_test", [False, True])
def test_batch_norm_forward_and_grad(dtype, layout, shape, is_test):
    rng = np.random.default_rng(3)
    x = arrange((rng.standard_normal(shape) * 2 - 1).astype(dtype), layout)
    c = shape[1]
    scale, bias = rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)
    running_mean, running_var = rng.standard_normal(c).astype(dtype), rng.random(c).astype(dtype) + 0.5
    out = assert_paths_agree(norm.batch_norm_kernel, x, scale, bias, running_mean, running_var, is_test=is_test)
    dy = arrange(rng.standard_normal(shape).astype(dtype), layout)
    assert_paths_agree(norm.batch_norm_grad_kernel, x, scale, out[3], out[4], dy, is_test=is_test)
