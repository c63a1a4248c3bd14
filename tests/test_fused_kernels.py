"""The numba-compiled one-pass kernels (ops/fused_*.py) against the NumPy versions they stand in
for: both paths of each op kernel on the same inputs, float32 and float64, odd shapes,
non-contiguous inputs, NaN and Inf. (The op cases in tests/op_cases check the compiled path
against PyTorch and central differences whenever numba is installed.)"""
from __future__ import annotations

import numpy as np
import pytest

from fluidgrad.ops import accel, fused_math, fused_norm, fused_softmax, get_op_def, norm

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


def test_layer_norm_takes_the_compiled_loop_for_float_and_float16_in_float32(monkeypatch):
    calls = []
    real = fused_norm.layer_norm_rows
    monkeypatch.setattr(fused_norm, "layer_norm_rows", lambda *a: calls.append(a[0].dtype) or real(*a))
    x = np.random.default_rng(1).standard_normal((4, 6))
    for dtype in (np.float32, np.float64, np.float16):
        y, _, _ = norm.layer_norm_kernel(x.astype(dtype))
        assert y.dtype == dtype
    assert calls == [np.float32, np.float64, np.float32]   # float16 rows summed in float32 (as PyTorch)
    with accel.use_numba(False):
        norm.layer_norm_kernel(x)
    assert len(calls) == 3


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


# ---------------------------------------------------------------- exp and row_max (fused_math)
@fused_math.jit
def _exp_into(x, out):
    for k in range(x.size):
        out[k] = fused_math.exp(x[k])


@fused_math.jit
def _row_maxima(x, out):
    for i in range(x.shape[0]):
        out[i] = fused_math.row_max(x, i)


@pytest.mark.parametrize("dtype, ulps", [(np.float32, 2), (np.float64, 2)])
def test_compiled_exp_within_two_ulp_of_numpy_keeping_nan_and_inf(dtype, ulps):
    tiny = np.finfo(dtype).tiny
    limit = float(np.log(np.finfo(dtype).max))
    x = np.concatenate([np.linspace(-limit, limit, 200_001), np.random.default_rng(4).standard_normal(1000) * 1e-3,
                        [0.0, -0.0, 1e-30, -1e-30]]).astype(dtype)
    got = np.empty_like(x)
    _exp_into(x, got)
    with np.errstate(over="ignore"):
        want = np.exp(x)
    normal = (want >= tiny) & np.isfinite(want)
    spacing = np.spacing(want[normal])
    assert np.max(np.abs(got[normal] - want[normal]) / spacing) <= ulps
    assert np.all(got[want < tiny] <= tiny)                   # subnormal results flush to 0
    assert np.all(got[want == np.inf] == np.inf)
    special = np.array([np.nan, np.inf, -np.inf, 1e6, -1e6], dtype)
    out = np.empty_like(special)
    _exp_into(special, out)
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == 0 and out[3] == np.inf and out[4] == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_row_max_orders_floats_as_numpy(dtype):
    x = np.random.default_rng(5).standard_normal((9, 37)).astype(dtype) * 10
    x[1] = -np.abs(x[1])                     # all negative
    x[2, 5], x[3, :], x[4, 7], x[5, :] = np.inf, -np.inf, np.nan, -0.0
    got = np.empty(9, dtype)
    _row_maxima(x, got)
    want = x.max(axis=1)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- softmax family (fused_softmax)
def kernel(op_type: str):
    return get_op_def(op_type).kernel


WIDTHS = [1, 5, 27, 63, 64, 65, 300]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("width", WIDTHS)
def test_softmax_log_softmax_and_their_gradient(dtype, layout, width):
    rng = np.random.default_rng(width)
    x = arrange((rng.standard_normal((3, 7, width)) * 4).astype(dtype), layout)
    out, = assert_paths_agree(kernel("softmax"), x, axis=-1)
    dout = arrange(rng.standard_normal(x.shape).astype(dtype), layout)
    assert_paths_agree(kernel("softmax_grad"), out, dout, axis=-1)
    assert_paths_agree(kernel("log_softmax"), x, axis=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("label_rank", ["keepdim", "squeezed"])
def test_softmax_with_cross_entropy_hard_labels(dtype, layout, width, label_rank):
    rng = np.random.default_rng(width + 1)
    logits = arrange((rng.standard_normal((5, 3, width)) * 4).astype(dtype), layout)
    label = rng.integers(0, width, (5, 3, 1) if label_rank == "keepdim" else (5, 3))
    assert_paths_agree(kernel("softmax_with_cross_entropy"), logits, label, soft_label=False, axis=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mask", ["none", "bool", "float", "float batched", "bool, a query sees nothing",
                                  "float, a query sees nothing"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("queries, keys", [(1, 1), (5, 5), (7, 3), (3, 70), (33, 33)])
def test_attention_softmax(dtype, layout, mask, causal, queries, keys):
    rng = np.random.default_rng(queries * keys)
    x = arrange(rng.standard_normal((2, 3, queries, keys)).astype(dtype), layout)
    m = {"none": None, "bool": rng.random((queries, keys)) > 0.3,
         "float": rng.standard_normal((queries, keys)).astype(dtype),
         "float batched": rng.standard_normal((2, 1, queries, keys)).astype(dtype)}.get(mask)
    if mask == "bool":
        m[:, 0] = True   # every query sees a key
    sees_nothing = mask.endswith("a query sees nothing")
    if sees_nothing:   # the last query's row of weights is 0 on both paths (PyTorch's SDPA), not NaN
        m = rng.random((queries, keys)) > 0.3
        m[:, 0], m[-1] = True, False
        m = m if mask.startswith("bool") else np.where(m, rng.standard_normal(m.shape), -np.inf).astype(dtype)
    assert_paths_agree(kernel("attention_softmax"), x, m, scale=0.37, causal=causal)
    if sees_nothing and layout != "nan_inf":
        weights = kernel("attention_softmax")(x, m, scale=0.37, causal=causal)
        np.testing.assert_array_equal(weights[..., -1, :], 0)
        assert np.isfinite(weights).all()


def test_softmax_off_the_last_axis_stays_on_numpy_and_float16_computes_in_float32(monkeypatch):
    calls = []
    real = fused_softmax.softmax_rows
    monkeypatch.setattr(fused_softmax, "softmax_rows", lambda *a: calls.append(a[0].shape) or real(*a))
    x = np.random.default_rng(6).standard_normal((4, 6))
    kernel("softmax")(x, axis=0)
    kernel("softmax")(np.empty((0, 6)), axis=-1)
    assert calls == []
    kernel("softmax")(x, axis=1)
    assert calls == [(4, 6)]
    half = x.astype(np.float16)
    out = kernel("softmax")(half, axis=-1)   # float16 is computed in float32 and rounded once
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, kernel("softmax")(half.astype(np.float32), axis=-1).astype(np.float16))


# ---------------------------------------------------------------- gelu (fused_activation)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(1,), (7, 13), (2, 3, 65)])
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_and_its_gradient(dtype, layout, shape, approximate):
    rng = np.random.default_rng(len(shape))
    x = arrange((rng.standard_normal(shape) * 4).astype(dtype), layout)
    assert_paths_agree(kernel("gelu"), x, approximate=approximate)
    dout = arrange(rng.standard_normal(shape).astype(dtype), layout)
    assert_paths_agree(kernel("gelu_grad"), x, dout, approximate=approximate)


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_float32_tails_close_to_float64(approximate):
    """The sigmoid form keeps the tanh form's relative accuracy far into the negative tail (the
    exact form's float32 erf polynomial is accurate to absolute 1e-7 there, as on NumPy's path)."""
    x = np.linspace(-12, 12, 2001)
    want = kernel("gelu")(x, approximate=approximate)
    got = kernel("gelu")(x.astype(np.float32), approximate=approximate)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6 if not approximate else 1e-30)
    dout = np.ones_like(x)
    np.testing.assert_allclose(kernel("gelu_grad")(x.astype(np.float32), dout.astype(np.float32),
                                                   approximate=approximate),
                               kernel("gelu_grad")(x, dout, approximate=approximate), rtol=2e-4, atol=1e-6)


def test_without_numba_every_hooked_kernel_runs_its_numpy_version(monkeypatch):
    """A NumPy-only install (no `fast` extra): the hooks fall through, nothing tries to compile."""
    monkeypatch.setattr(accel, "_numba", lambda: None)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    label = rng.integers(0, 5, (4, 3, 1))
    outputs = [kernel("softmax")(x), kernel("log_softmax")(x), kernel("gelu")(x, approximate=True),
               kernel("attention_softmax")(x, None, 0.5, True), kernel("softmax_with_cross_entropy")(x, label)[1],
               norm.layer_norm_kernel(x, begin_norm_axis=2)[0], norm.batch_norm_kernel(
                   x, np.ones(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32),
                   np.ones(3, np.float32))[0]]
    assert all(np.all(np.isfinite(o)) and o.dtype == np.float32 for o in outputs)
