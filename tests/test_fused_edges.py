"""The compiled kernels (ops/fused_*.py) on edge inputs, against their NumPy fallback
(`accel.use_numba(False)`) and PyTorch: a single score row with each kind of mask, exp at 0
and across its range (ulp error, monotonicity), the sign of log-probabilities, huge finite
inputs (no NaN that NumPy does not make), NaN in -> NaN out, and layer norm's parameter
gradients summed over a million rows. (Review session 5, bugs 1-3.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from fluidgrad.ops import accel, fused_math, get_op_def, norm

pytestmark = [pytest.mark.skipif(not accel.installed(), reason="numba (the `fast` extra) is not installed"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]   # NaN / Inf / overflow inputs

DTYPES = [np.float32, np.float64]


def kernel(op_type: str):
    return get_op_def(op_type).kernel


def both_paths(fn, *args, **attrs):
    """fn's outputs (a tuple) with the compiled loops, and with NumPy alone."""
    as_tuple = (lambda r: r if isinstance(r, tuple) else (r,))
    with accel.use_numba(True):
        compiled = as_tuple(fn(*args, **attrs))
    with accel.use_numba(False):
        plain = as_tuple(fn(*args, **attrs))
    return compiled, plain


# ---------------------------------------------------------------- attention: one score row
def _torch_attention_softmax(x, mask, scale, causal):
    scores = torch.tensor(x) * scale
    if mask is not None:
        t = torch.tensor(mask)
        scores = scores.masked_fill(~t, float("-inf")) if t.dtype == torch.bool else scores + t
    if causal:
        scores = scores.masked_fill(torch.ones(x.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, -1).numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "float batched"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("keys", [1, 2, 5, 70])
def test_attention_softmax_of_a_single_score_row(dtype, mask_kind, causal, keys):
    """rows == 1 (batch 1, one head, one query): the no-mask placeholders must not be read."""
    rng = np.random.default_rng(keys)
    x = rng.standard_normal((1, 1, 1, keys)).astype(dtype)
    mask = {"none": None, "bool": rng.random((1, keys)) > 0.4, "float": rng.standard_normal((1, keys)).astype(dtype),
            "float batched": rng.standard_normal((1, 1, 1, keys)).astype(dtype)}[mask_kind]
    if mask_kind == "bool":
        mask[0, 0] = True   # the query sees a key (else a NaN row on every path)
    expected = _torch_attention_softmax(x, mask, 0.37, causal)
    for _ in range(3):      # whatever lies past a placeholder varies from call to call
        (compiled,), (plain,) = both_paths(kernel("attention_softmax"), x, mask, scale=0.37, causal=causal)
        tol = dict(rtol=2e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(compiled, plain, **tol)
        np.testing.assert_allclose(compiled, expected, **tol)


# ---------------------------------------------------------------- exp (fused_math)
@fused_math.jit
def _exp_into(x, out):
    for k in range(x.size):
        out[k] = fused_math.exp(x[k])


def _compiled_exp(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    _exp_into(x, out)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_exp_is_exactly_one_at_zero_and_keeps_the_side_of_one(dtype):
    tiny = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-12, -1e-12], dtype)
    got = _compiled_exp(np.concatenate([tiny, np.geomspace(1e-20, 1, 400).astype(dtype)]))
    assert got[0] == 1 and got[1] == 1
    x = np.concatenate([tiny, np.geomspace(1e-20, 1, 400).astype(dtype)])
    assert np.all(got[x < 0] <= 1) and np.all(got[x > 0] >= 1)
    negative = _compiled_exp(-np.geomspace(1e-20, 1, 400).astype(dtype))
    assert np.all(negative <= 1)


@pytest.mark.parametrize("dtype, max_ulp", [(np.float32, 1.1), (np.float64, 2.0)])
def test_compiled_exp_ulp_error_against_a_wider_exp(dtype, max_ulp):
    """Error in units of the last place against exp in a wider float (float64 for float32;
    x87 long double for float64) over the whole range of normal results."""
    wide = np.float64 if dtype == np.float32 else np.longdouble
    if np.finfo(wide).nmant <= np.finfo(dtype).nmant:
        pytest.skip("no wider float than float64 here")
    limit = float(np.log(np.finfo(dtype).max))
    x = np.concatenate([np.linspace(-limit, limit, 400_001), np.linspace(-1, 1, 100_001)]).astype(dtype)
    got = _compiled_exp(x)
    exact = np.exp(x.astype(wide))
    rounded = exact.astype(dtype)
    normal = (rounded >= np.finfo(dtype).tiny) & np.isfinite(rounded)
    ulps = np.abs(got[normal].astype(wide) - exact[normal]) / np.spacing(rounded[normal]).astype(wide)
    assert float(ulps.max()) <= max_ulp


def test_compiled_float32_exp_is_monotone_around_every_reduction_step():
    """Every float32 within 1000 ulp of each multiple of ln2 / 2 (where the reduction switches
    its power of two, or the old one did) and every float within 2^20 ulp of 0."""
    centres = np.arange(-254, 257) * np.log(2) / 2
    offsets = np.arange(-1000, 1000)
    x = [np.float32(c) + offsets * np.spacing(np.float32(abs(c) or 1e-30)) for c in centres]
    x.append(np.arange(-2 ** 20, 2 ** 20) * np.spacing(np.float32(1)) / 2)
    x = np.unique(np.concatenate(x).astype(np.float32))
    x = x[(x > -88) & (x < 88.7)]
    got = _compiled_exp(x)
    assert np.all(np.diff(got) >= 0)
    assert np.array_equal(np.isinf(got), np.isinf(np.exp(x)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_exp_keeps_nan_and_inf(dtype):
    got = _compiled_exp(np.array([np.nan, np.inf, -np.inf, 1e6, -1e6, 710.0, -750.0], dtype))
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0 and got[3] == np.inf and got[4] == 0
    assert got[5] == np.inf and got[6] == 0


# ---------------------------------------------------------------- the sign of log-probabilities
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [4, 63, 64, 300])
def test_log_softmax_and_cross_entropy_keep_their_sign(dtype, width):
    """A row's largest entry has exp(0) = 1 exactly: its log-probability is <= 0 and its loss >= 0,
    also when every other entry underflows (log-probability exactly 0, as PyTorch's)."""
    rng = np.random.default_rng(width)
    x = (rng.standard_normal((6, width)) * 5).astype(dtype)
    x[0] = -1000
    x[0, 1] = 0.0                                                   # the rest underflow: log p = 0
    x[1, :], x[1, 2] = np.finfo(dtype).min / 2, np.finfo(dtype).max / 2
    x[2, 0] = 1e30                                                  # dominant
    label = np.argmax(x, axis=1)[:, None]
    (log_p,), (plain,) = both_paths(kernel("log_softmax"), x, axis=-1)
    expected = torch.log_softmax(torch.tensor(x), -1).numpy()
    assert log_p.max() <= 0
    np.testing.assert_array_equal(log_p[np.arange(6), label[:, 0]] == 0, expected[np.arange(6), label[:, 0]] == 0)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(log_p, plain, **tol)
    np.testing.assert_allclose(log_p, expected, **tol)
    (_, loss), (_, plain_loss) = both_paths(kernel("softmax_with_cross_entropy"), x, label, soft_label=False, axis=-1)
    assert loss.min() >= 0
    torch_loss = TF.cross_entropy(torch.tensor(x), torch.tensor(label[:, 0]), reduction="none").numpy()
    np.testing.assert_allclose(loss[:, 0], plain_loss[:, 0], **tol)
    np.testing.assert_allclose(loss[:, 0], torch_loss, **tol)


# ---------------------------------------------------------------- GELU at huge inputs
HUGE = [1e3, 1e4, 5e13, 1e15, 1e19, 1e30]


def _huge_inputs(dtype) -> np.ndarray:
    big = HUGE + [float(np.finfo(dtype).max) / 2] + ([1e200] if dtype == np.float64 else [])
    return np.array(big + [-v for v in big] + [0.5, -0.5, 3.0, -3.0], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_compiled_gelu_and_its_gradient_at_huge_finite_inputs(dtype, approximate):
    """GELU(x) is x (and -0 for x < 0), its slope 1 (and 0), however large |x| is: the compiled
    path's x u'(x) must not overflow into inf * 0 = NaN. PyTorch and NumPy agree up to 1e19
    (past sqrt(max), their own x^2 overflows: NaN slope, inf output)."""
    x = _huge_inputs(dtype)
    (out,), (plain_out,) = both_paths(kernel("gelu"), x, approximate=approximate)
    (slope,), (plain_slope,) = both_paths(kernel("gelu_grad"), x, np.ones_like(x), approximate=approximate)
    huge = np.abs(x) >= 1e3
    np.testing.assert_array_equal(out[huge], np.where(x[huge] > 0, x[huge], 0))
    np.testing.assert_array_equal(slope[huge], np.where(x[huge] > 0, 1, 0))
    tx = torch.tensor(x, requires_grad=True)
    TF.gelu(tx, approximate="tanh" if approximate else "none").backward(torch.ones_like(tx))
    shared = np.abs(x) <= 1e19
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(slope[shared], tx.grad.numpy()[shared], **tol)
    np.testing.assert_allclose(slope[shared], plain_slope[shared], **tol)
    np.testing.assert_allclose(out[shared], plain_out[shared], **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_compiled_gelu_nan_and_inf_as_numpy(dtype, approximate):
    x = np.array([np.nan, np.inf, -np.inf, 1.0] * 20, dtype)   # long enough for the vector loop
    (out,), (plain_out,) = both_paths(kernel("gelu"), x, approximate=approximate)
    (slope,), (plain_slope,) = both_paths(kernel("gelu_grad"), x, np.ones_like(x), approximate=approximate)
    np.testing.assert_allclose(out, plain_out, rtol=1e-6)      # NaN and +-inf where NumPy's are
    np.testing.assert_allclose(slope, plain_slope, rtol=1e-6)  # (and PyTorch's)
    assert np.all(np.isnan(slope[0::4])) and np.all(np.isnan(out[0::4]))


# ---------------------------------------------------------------- rows of huge values
def _rows_of_edges(dtype, width: int) -> np.ndarray:
    big = np.finfo(dtype).max / 4
    rows = np.array([[big, -big, 0, 1], [big] * 4, [-big] * 4, [1e30, 1e-30, -1e30, 0], [np.nan, 0, 1, 2],
                     [np.inf, 0, 1, 2], [-np.inf, 0, 1, 2], [3.0, -1.0, 2.0, 0.5]], dtype)
    return np.tile(rows, (1, width // 4))


ROW_KERNELS = {
    "softmax": lambda x: kernel("softmax")(x, axis=-1),
    "log_softmax": lambda x: kernel("log_softmax")(x, axis=-1),
    "softmax_with_cross_entropy": lambda x: kernel("softmax_with_cross_entropy")(
        x, np.zeros((x.shape[0], 1), np.int64), soft_label=False, axis=-1),
    "attention_softmax": lambda x: kernel("attention_softmax")(x[None], None, scale=2.0, causal=True),
    "layer_norm": lambda x: norm.layer_norm_kernel(x, np.ones(x.shape[1], x.dtype), np.zeros(x.shape[1], x.dtype)),
    "layer_norm_grad": lambda x: norm.layer_norm_grad_kernel(
        x, np.ones(x.shape[1], x.dtype), *norm.layer_norm_kernel(x)[1:], np.ones_like(x)),
    "batch_norm": lambda x: norm.batch_norm_kernel(x.reshape(2, 4, -1), *[np.ones(4, x.dtype)] * 4)[0],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [4, 80])
@pytest.mark.parametrize("name", sorted(ROW_KERNELS))
def test_compiled_row_kernels_make_nan_exactly_where_numpy_does(dtype, width, name):
    """Huge finite values, NaN and +-inf in rows: the compiled loops' reassociated sums and
    products make no NaN that NumPy's passes do not (a NaN in a row still spreads over it)."""
    compiled, plain = both_paths(ROW_KERNELS[name], _rows_of_edges(dtype, width))
    for a, b in zip(compiled, plain):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        finite = np.isfinite(a) & np.isfinite(b) & (np.abs(b) < 1e20)
        np.testing.assert_allclose(a[finite], b[finite], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- layer norm: DScale, DBias over many rows
def test_compiled_layer_norm_parameter_gradients_over_a_million_rows():
    """One float32 sum per column over 2^20 rows lost 1e-4 (more on other data); block sums
    added in float64 are within 1e-5 of the float64 answer (PyTorch's float32: 5e-5)."""
    rng = np.random.default_rng(8)
    rows, width = 1 << 20, 4
    x = (rng.standard_normal((rows, width)) + 3).astype(np.float32)
    dy = rng.random((rows, width), dtype=np.float32)
    scale = rng.standard_normal(width).astype(np.float32)
    _, mean, variance = norm.layer_norm_kernel(x, scale)
    with accel.use_numba(True):
        _, dscale, dbias = norm.layer_norm_grad_kernel(x, scale, mean, variance, dy)
    x_hat = (x - mean[:, None].astype(np.float64)) / np.sqrt(variance[:, None].astype(np.float64) + 1e-5)
    np.testing.assert_allclose(dscale, (dy * x_hat).sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(dbias, dy.sum(axis=0, dtype=np.float64), rtol=1e-5)
    with accel.use_numba(False):
        _, plain_dscale, plain_dbias = norm.layer_norm_grad_kernel(x, scale, mean, variance, dy)
    np.testing.assert_allclose(dscale, plain_dscale, rtol=1e-4)
    np.testing.assert_allclose(dbias, plain_dbias, rtol=1e-4)
