"""Winograd F(2x2, 3x3) (fluidgrad/ops/winograd.py) against the im2col path and PyTorch: forward,
input and filter gradients, float32 and float64, odd sizes, paddings 0 / 1 / 2 / asymmetric,
batch 1, one channel, several image blocks; the conv ops choose it only where it applies."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.nn import functional as F
from fluidgrad.ops import accel, conv, winograd

pytestmark = pytest.mark.skipif(not accel.installed(), reason="Winograd runs compiled: numba (the `fast` extra)")

# (N, C, H, W, O, ((top, bottom), (left, right)))
SHAPES = [
    (2, 3, 7, 5, 4, ((1, 1), (1, 1))),
    (1, 1, 4, 4, 1, ((0, 0), (0, 0))),
    (3, 5, 9, 8, 6, ((0, 1), (2, 1))),
    (2, 4, 3, 3, 2, ((2, 2), (1, 0))),
    (1, 2, 6, 11, 3, ((1, 0), (0, 2))),
    (4, 9, 5, 6, 10, ((1, 1), (1, 1))),
]


def _torch_conv(x, w, b, pads):
    (top, bottom), (left, right) = pads
    return TF.conv2d(TF.pad(x, (left, right, top, bottom)), w, b)


def _arrays(shape, dtype, seed=0):
    n, c, h, w, o, pads = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    f = rng.standard_normal((o, c, 3, 3)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    out_shape = (n, o, h + sum(pads[0]) - 2, w + sum(pads[1]) - 2)
    return x, f, b, rng.standard_normal(out_shape).astype(dtype)


def _im2col_attrs(pads):
    return {"paddings": [pads[0][0], pads[0][1], pads[1][0], pads[1][1]]}


def _tolerance(dtype, reference):
    scale = float(np.abs(reference).max()) or 1.0
    return {"rtol": 0, "atol": (2e-5 if dtype == np.float32 else 1e-12) * scale}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:5])) + f"-pad{s[5]}")
def test_forward_and_gradients_match_im2col_and_pytorch(shape, dtype):
    x, w, b, dy = _arrays(shape, dtype)
    pads = shape[5]
    y = winograd.conv2d(x, w, b, pads)
    dw = winograd.filter_grad(dy, x, pads)
    xt, wt = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    yt = _torch_conv(xt, wt, torch.from_numpy(b), pads)
    (yt * torch.from_numpy(dy)).sum().backward()
    np.testing.assert_allclose(y, yt.detach().numpy(), **_tolerance(dtype, y))
    np.testing.assert_allclose(dw, wt.grad.numpy(), **_tolerance(dtype, dw))
    with accel.use_numba(False):   # the im2col path
        attrs = _im2col_attrs(pads)
        y_ref = conv.conv_kernel(x, w, b, **attrs)
        dx_ref = conv.conv_input_grad_kernel(dy, w, x, **attrs)
        dw_ref = conv.conv_filter_grad_kernel(dy, x, w, **attrs)
    np.testing.assert_allclose(y, y_ref, **_tolerance(dtype, y_ref))
    np.testing.assert_allclose(dw, dw_ref, **_tolerance(dtype, dw_ref))
    assert y.dtype == dw.dtype == dtype
    if winograd.flipped_pads(pads) is not None:
        dx = winograd.input_grad(dy, w, pads)
        np.testing.assert_allclose(dx, xt.grad.numpy(), **_tolerance(dtype, dx))
        np.testing.assert_allclose(dx, dx_ref, **_tolerance(dtype, dx_ref))
        assert dx.dtype == dtype


def test_padding_beyond_two_has_no_flipped_form():
    assert winograd.flipped_pads([(3, 1), (1, 1)]) is None
    assert winograd.flipped_pads([(2, 0), (1, 2)]) == [(0, 2), (1, 0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_many_image_blocks_with_a_partial_last_one(monkeypatch, dtype):
    shape = (5, 3, 6, 7, 4, ((1, 1), (0, 1)))   # 3x3 tiles per image
    x, w, b, dy = _arrays(shape, dtype, seed=3)
    per_image = 16 * (3 + 4) * 9 * np.dtype(dtype).itemsize
    monkeypatch.setattr(winograd, "_BLOCK_BYTES", 2 * per_image)   # blocks of 2, 2, 1 images
    assert winograd._block(5, 3, 4, 9, np.dtype(dtype).itemsize) == 2
    blocked = winograd.conv2d(x, w, b, shape[5]), winograd.filter_grad(dy, x, shape[5])
    monkeypatch.setattr(winograd, "_BLOCK_BYTES", 1 << 30)   # all at once
    whole = winograd.conv2d(x, w, b, shape[5]), winograd.filter_grad(dy, x, shape[5])
    for a, c in zip(blocked, whole):
        np.testing.assert_allclose(a, c, **_tolerance(dtype, c))


def _conv_ops(x, w, dy, attrs):
    return (conv.conv_kernel(x, w, **attrs), conv.conv_input_grad_kernel(dy, w, x, **attrs),
            conv.conv_filter_grad_kernel(dy, x, w, **attrs))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("attrs", [{"paddings": [1, 1]}, {"paddings": [0, 1, 2, 0]},
                                   {"paddings": [0, 0], "padding_algorithm": "SAME"}])
def test_conv_ops_take_winograd_with_enough_channels_and_agree_with_im2col(dtype, attrs, monkeypatch):
    x, w, _, _ = _arrays((3, 8, 7, 6, 5, ((0, 0), (0, 0))), dtype, seed=1)
    geo = conv._windows(x.shape, w.shape, 1, attrs["paddings"], 1, attrs.get("padding_algorithm", "EXPLICIT"))
    dy = np.random.default_rng(2).standard_normal((3, 5) + tuple(geo.out)).astype(dtype)
    calls = []
    for name in ("conv2d", "input_grad", "filter_grad"):
        original = getattr(winograd, name)
        monkeypatch.setattr(winograd, name, lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    taken = ["conv2d", "input_grad", "conv2d", "filter_grad"]   # input_grad is a conv2d of dOut
    fast = _conv_ops(x, w, dy, attrs)
    assert calls == taken
    with accel.use_numba(False):
        slow = _conv_ops(x, w, dy, attrs)
    assert calls == taken   # numba off: im2col only
    for a, c in zip(fast, slow):
        np.testing.assert_allclose(a, c, **_tolerance(dtype, c))


@pytest.mark.parametrize("attrs, channels", [({"paddings": [1, 1], "strides": [2, 2]}, 8),
                                             ({"paddings": [2, 2], "dilations": [2, 2]}, 8),
                                             ({"paddings": [1, 1], "groups": 2}, 8),
                                             ({"paddings": [1, 1]}, 3)])
def test_conv_ops_keep_im2col_where_winograd_does_not_apply_or_pay(attrs, channels, monkeypatch):
    monkeypatch.setattr(winograd, "conv2d", None)
    monkeypatch.setattr(winograd, "filter_grad", None)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, channels, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, channels // attrs.get("groups", 1), 3, 3)).astype(np.float32)
    y = conv.conv_kernel(x, w, **attrs)
    conv.conv_filter_grad_kernel(np.ones_like(y), x, w, **attrs)
    xt = torch.from_numpy(x)
    expected = TF.conv2d(xt, torch.from_numpy(w), None, attrs.get("strides", 1), attrs["paddings"][0],
                         attrs.get("dilations", 1), attrs.get("groups", 1))
    np.testing.assert_allclose(y, expected.numpy(), rtol=1e-4, atol=1e-4)


def test_float16_and_mixed_dtypes_keep_im2col(monkeypatch):
    monkeypatch.setattr(winograd, "conv2d", None)
    x = np.random.default_rng(5).standard_normal((1, 8, 5, 5)).astype(np.float16)
    w = np.ones((2, 8, 3, 3), np.float16)
    assert conv.conv_kernel(x, w, paddings=[1, 1]).dtype == np.float16


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_transforms_agree_with_their_python_form(dtype):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 5, 4)).astype(dtype)
    th, tw = 3, 2
    compiled, plain = winograd._stack(3, 2 * th * tw, dtype)[0], winograd._stack(3, 2 * th * tw, dtype)[0]
    winograd._input_tiles_compiled(x, 1, 0, th, tw, compiled)
    winograd._input_tiles_compiled.py_func(x, 1, 0, th, tw, plain)
    np.testing.assert_allclose(compiled[:, :18 * 2], plain[:, :18 * 2], rtol=1e-6)
    dy = rng.standard_normal((2, 4, 5, 3)).astype(dtype)
    compiled, plain = winograd._stack(4, 2 * th * tw, dtype)[0], winograd._stack(4, 2 * th * tw, dtype)[0]
    winograd._output_grad_tiles_compiled(dy, th, tw, compiled)
    winograd._output_grad_tiles_compiled.py_func(dy, th, tw, plain)
    np.testing.assert_allclose(compiled[:, :48], plain[:, :48], rtol=1e-6)
    m = rng.standard_normal((16, 4 * 2 * th * tw + 5)).astype(dtype)
    bias = rng.standard_normal(4).astype(dtype)
    y_c, y_p = np.empty((2, 4, 5, 3), dtype), np.empty((2, 4, 5, 3), dtype)
    winograd._output_tiles_compiled(m, th, tw, bias, True, y_c)
    winograd._output_tiles_compiled.py_func(m, th, tw, bias, True, y_p)
    np.testing.assert_allclose(y_c, y_p, rtol=1e-5, atol=1e-6)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 3), c=st.integers(1, 6), o=st.integers(1, 6), h=st.integers(1, 9), w=st.integers(1, 9),
       pads=st.tuples(*[st.integers(0, 2)] * 4))
def test_random_geometries_match_pytorch_in_float64(n, c, o, h, w, pads):
    pairs = ((pads[0], pads[1]), (pads[2], pads[3]))
    if h + pads[0] + pads[1] < 3 or w + pads[2] + pads[3] < 3:
        return
    x, f, b, dy = _arrays((n, c, h, w, o, pairs), np.float64, seed=n * 100 + c * 10 + o)
    xt, ft = torch.from_numpy(x).requires_grad_(), torch.from_numpy(f).requires_grad_()
    yt = _torch_conv(xt, ft, torch.from_numpy(b), pairs)
    (yt * torch.from_numpy(dy)).sum().backward()
    np.testing.assert_allclose(winograd.conv2d(x, f, b, pairs), yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(winograd.input_grad(dy, f, pairs), xt.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(winograd.filter_grad(dy, x, pairs), ft.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("operand", ["x", "w", "dy"])
def test_conv_ops_with_an_infinite_operand_give_im2col_results(operand):
    """Winograd's transforms give NaN (inf - inf) where im2col gives inf: the conv ops notice the
    non-finite result and recompute it by im2col."""
    x, w, _, _ = _arrays((2, 8, 6, 6, 4, ((0, 0), (0, 0))), np.float32, seed=3)
    dy = np.ones((2, 4, 6, 6), np.float32)
    arrays = {"x": np.abs(x), "w": np.abs(w), "dy": dy}
    arrays[operand][(0, 1, 2, 2)] = np.inf
    got = _conv_ops(arrays["x"], arrays["w"], arrays["dy"], {"paddings": [1, 1]})
    with accel.use_numba(False):
        expected = _conv_ops(arrays["x"], arrays["w"], arrays["dy"], {"paddings": [1, 1]})
    assert any(np.isinf(e).any() for e in expected)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-4)


@pytest.mark.parametrize("numba_on", [False, True])
@pytest.mark.parametrize("kw, channels", [({"padding": 1}, 8), ({"padding": 1}, 2), ({"stride": 2, "padding": 1}, 8),
                                          ({"groups": 2, "padding": 1}, 8), ({"dilation": 2, "padding": 2}, 8)])
def test_conv2d_of_an_empty_batch_is_empty_with_zero_gradients_like_pytorch(numba_on, kw, channels):
    """N = 0 on every path (Winograd, im2col, flat col2im, strided col2im): no reshape of an empty
    array may need to infer a size."""
    w_shape = (4, channels // kw.get("groups", 1), 3, 3)
    expected = TF.conv2d(torch.zeros(0, channels, 5, 5), torch.ones(w_shape), **kw)
    with accel.use_numba(numba_on):
        x = fg.to_tensor(np.zeros((0, channels, 5, 5), np.float32), stop_gradient=False)
        w = fg.to_tensor(np.ones(w_shape, np.float32), stop_gradient=False)
        y = F.conv2d(x, w, **kw)
        assert tuple(y.shape) == tuple(expected.shape)
        y.sum().backward()
    assert tuple(x.grad.shape) == (0, channels, 5, 5)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros(w_shape, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("workers", [2, 3])
def test_images_split_over_threads_give_the_one_thread_results(monkeypatch, dtype, workers):
    """With BLAS at several threads the blocks of images are drawn by as many threads
    (threads.py); each writes its own images (forward, input gradient) or sums its own dU
    (filter gradient), so the results equal one thread's to rounding."""
    shape = (9, 8, 6, 7, 5, ((1, 1), (0, 1)))
    x, w, b, dy = _arrays(shape, dtype, seed=7)
    pads = shape[5]
    one = winograd.conv2d(x, w, b, pads), winograd.input_grad(dy, w, pads), winograd.filter_grad(dy, x, pads)
    monkeypatch.setattr(winograd, "_SPLIT_MACS", 0)
    monkeypatch.setattr(winograd.threads, "blas_threads", lambda: workers)
    assert winograd._schedule(9, 8, 5, 12, np.dtype(dtype).itemsize) == (1, workers)   # four blocks a thread at least: one image each
    drawn = []
    original = winograd.threads.run_blocks
    monkeypatch.setattr(winograd.threads, "run_blocks", lambda *a: drawn.append(a[1:]) or original(*a))
    split = winograd.conv2d(x, w, b, pads), winograd.input_grad(dy, w, pads), winograd.filter_grad(dy, x, pads)
    assert drawn == [(9, 1, workers)] * 3
    for a, c in zip(split, one):
        np.testing.assert_allclose(a, c, **_tolerance(dtype, c))
