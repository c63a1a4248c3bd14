"""paddle.geometric.segment_* (fluidgrad.geometric, fluidgrad.incubate): values and gradients against
torch's scatter_reduce, in eager mode and in a Program whose output length is unknown (-1) until it
runs; Paddle's tie rule for max/min; integer data; bad input named; ONNX export refused by name.
(The op cases in tests/op_cases/segment.py check the op with a fixed num_segments.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.framework.errors import DTypeError, ShapeError
from fluidgrad.testing import numeric_gradient

_FUNCS = {"sum": ("segment_sum", "sum"), "mean": ("segment_mean", "mean"), "max": ("segment_max", "amax"),
          "min": ("segment_min", "amin")}
_IDS = np.array([0, 0, 2, 2, 2, 3, 5])
_RNG = np.random.default_rng(14)


def _torch(kind, x, ids):
    x = torch.as_tensor(x)
    index = torch.as_tensor(ids).reshape((-1,) + (1,) * (x.dim() - 1)).expand(x.shape)
    zeros = torch.zeros((int(ids[-1]) + 1,) + tuple(x.shape[1:]), dtype=x.dtype)
    return zeros.scatter_reduce(0, index, x, _FUNCS[kind][1], include_self=False)


def _weights(rows):
    return np.arange(1.0, rows * 3 + 1).reshape(rows, 3) / 7


def _static(kind, x, ids):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        xv = fg.static.data("x", [None, 3], "float64")
        xv.stop_gradient = False
        iv = fg.static.data("ids", [None], "int64")
        out = getattr(fg.geometric, _FUNCS[kind][0])(xv, iv)
        assert list(out.shape) == [-1, 3] and out.dtype == "float64"
        weights = fg.static.data("w", [None, 3], "float64")
        loss = fg.sum(out * out * weights)
        (grad,) = fg.gradients([loss], [xv])
    w = _weights(int(ids[-1]) + 1)
    return fg.Executor().run(main, feed={"x": x, "ids": ids, "w": w}, fetch_list=[out, grad])


@pytest.mark.parametrize("kind", list(_FUNCS))
def test_values_and_gradients_match_torch_in_both_modes(kind, monkeypatch):
    x = _RNG.permutation(21).reshape(7, 3) * 0.25 + 0.125   # distinct and nonzero: no ties
    tx = torch.tensor(x, requires_grad=True)
    expected = _torch(kind, tx, _IDS)
    (expected * expected * torch.tensor(_weights(6))).sum().backward()
    got, grad = _static(kind, x, _IDS)
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=1e-12)

    def loss(feeds):
        out = getattr(fg.geometric, _FUNCS[kind][0])(fg.to_tensor(feeds["x"]), fg.to_tensor(_IDS)).numpy()
        return float((out * out * _weights(6)).sum())

    np.testing.assert_allclose(grad, numeric_gradient(loss, {"x": x}, "x"), rtol=1e-6, atol=1e-8)
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    ex = fg.to_tensor(x, stop_gradient=False)
    out = getattr(fg.incubate, _FUNCS[kind][0])(ex, fg.to_tensor(_IDS))
    fg.sum(out * out * fg.to_tensor(_weights(6))).backward()
    np.testing.assert_allclose(out.numpy(), got, rtol=1e-12)
    np.testing.assert_allclose(ex.grad.numpy(), grad, rtol=1e-12)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_ties_each_get_the_whole_gradient_as_in_paddle(kind, monkeypatch):
    """Paddle's SegmentPoolGradFunctor: (x == out[id]) * dout[id], every tie in full (torch would split)."""
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    x = np.array([[1.0, 2.0], [1.0, -2.0], [3.0, 3.0], [3.0, 3.0], [0.5, 3.0]])
    ids = np.array([0, 0, 1, 1, 1])
    ex = fg.to_tensor(x, stop_gradient=False)
    out = getattr(fg.geometric, _FUNCS[kind][0])(ex, fg.to_tensor(ids))
    dout = np.array([[10.0, 20.0], [30.0, 40.0]])
    out.backward(fg.to_tensor(dout))
    extreme = np.maximum if kind == "max" else np.minimum
    reference = extreme.reduceat(x, [0, 2])
    np.testing.assert_array_equal(out.numpy(), reference)
    np.testing.assert_array_equal(ex.grad.numpy(), (x == reference[ids]) * dout[ids])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_data_and_int32_ids(dtype, monkeypatch):
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    x = np.array([[-7, 4], [2, 5], [9, -1], [4, 4]], dtype)
    ids = np.array([0, 0, 0, 2], "int32")
    for kind in _FUNCS:
        out = getattr(fg.geometric, _FUNCS[kind][0])(fg.to_tensor(x), fg.to_tensor(ids))
        assert str(out.dtype) == dtype
        expected = _torch(kind, x.astype("int64"), ids.astype("int64"))
        if kind == "mean":   # Paddle's integer mean truncates toward zero; torch's floors
            expected = torch.trunc(_torch(kind, x.astype("float64"), ids.astype("int64")))
        np.testing.assert_array_equal(out.numpy(), expected.numpy().astype(dtype))


def test_empty_data_gives_no_segments(monkeypatch):
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    out = fg.geometric.segment_sum(fg.to_tensor(np.zeros((0, 2))), fg.to_tensor(np.zeros(0, "int64")))
    assert list(out.shape) == [0, 2]


def test_bad_segment_ids_are_refused_by_name(monkeypatch):
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    x = fg.to_tensor(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"segment_pool: SegmentIds must be sorted.*SegmentIds\[1\] = 2 > "
                                         r"SegmentIds\[2\] = 1"):
        fg.geometric.segment_sum(x, fg.to_tensor(np.array([0, 2, 1])))
    with pytest.raises(ValueError, match="segment_pool: SegmentIds must be non-negative, got -1"):
        fg.geometric.segment_max(x, fg.to_tensor(np.array([-1, 0, 0])))
    with pytest.raises(DTypeError, match=r"segment_pool: SegmentIds must be int32 or int64.*float64"):
        fg.geometric.segment_mean(x, fg.to_tensor(np.array([0.0, 0.0, 1.0])))
    with pytest.raises(DTypeError, match=r"segment_pool: segments of bool values are not supported"):
        fg.geometric.segment_min(fg.to_tensor(np.ones((3, 2), bool)), fg.to_tensor(np.array([0, 0, 1])))
    with pytest.raises(ShapeError, match=r"segment_pool: SegmentIds must be 1-D with one id per row of X.*"
                                         r"shape \[2\].*shape \[3, 2\]"):
        fg.geometric.segment_sum(x, fg.to_tensor(np.array([0, 1])))


def test_static_length_mismatch_is_a_build_error():
    x = fg.static.data("x", [4, 3], "float32")
    ids = fg.static.data("ids", [5], "int64")
    with pytest.raises(ShapeError, match="segment_pool"):
        fg.geometric.segment_sum(x, ids)


def test_onnx_export_refuses_the_op_by_name(tmp_path):
    x = fg.static.data("x", [4, 3], "float32")
    ids = fg.static.data("ids", [4], "int64")
    out = fg.geometric.segment_sum(x, ids)
    with pytest.raises(Exception, match="op segment_pool .*has no ONNX equivalent"):
        fg.onnx.export_program(str(tmp_path / "m.onnx"), [x, ids], [out])


@pytest.mark.parametrize("kind", ["max", "min"])
def test_split_ties_attribute_shares_the_gradient_as_torch_scatter_reduce(kind, monkeypatch):
    """split_ties=True (embedding_bag's max): tied rows share the gradient, as torch's amax / amin."""
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    x = np.array([[1.0, 2.0], [1.0, -2.0], [3.0, 3.0], [3.0, 3.0], [0.5, 3.0]])
    ids = np.array([0, 0, 1, 1, 1])
    dout = np.array([[10.0, 20.0], [30.0, 40.0]])
    tx = torch.tensor(x, requires_grad=True)
    index = torch.tensor(ids)[:, None].expand(5, 2)
    start = torch.full((2, 2), -np.inf if kind == "max" else np.inf, dtype=torch.float64)
    expected = start.scatter_reduce(0, index, tx, _FUNCS[kind][1], include_self=False)
    expected.backward(torch.tensor(dout))
    ex = fg.to_tensor(x, stop_gradient=False)
    out, _ = fg.dispatch.apply_op("segment_pool", {"X": ex, "SegmentIds": fg.to_tensor(ids)},
                                  {"pooltype": kind.upper(), "split_ties": True})
    out.backward(fg.to_tensor(dout))
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
