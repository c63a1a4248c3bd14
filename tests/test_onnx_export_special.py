"""Exports of the ops ONNX has no single node for (export_special.py) and of the functions made of
other ops (diag, tensordot, kthvalue): onnxruntime against fluidgrad and the NumPy / PyTorch
answer, float32 and float64, at a batch other than the traced one; the exported file imports
back. The op-case round trips (tests/test_onnx_export.py) run every op case of these ops too."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import export, export_program, import_model  # noqa: E402
from fluidgrad.onnx.export_special import CUMPROD_OPSET  # noqa: E402


def _session(path):
    return ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])


def _static_export(tmp_path, fn, specs, opset=None):
    """fn over static inputs of `specs` (name -> (shape, dtype)) exported; (session, program, fetches)."""
    program = fg.Program()
    with fg.program_guard(program, fg.Program()):
        inputs = [fg.static.data(name, shape, dtype) for name, (shape, dtype) in specs.items()]
        outputs = fn(*inputs)
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    path = tmp_path / "model.onnx"
    export_program(path, inputs, outputs, program=program, scope=fg.Scope(), opset_version=opset)
    return _session(path), program, outputs, path


def _reimported(path, feeds):
    scope = fg.Scope()
    program, feed_names, fetches = import_model(path, scope)
    return fg.Executor().run(program, feed={n: feeds[n] for n in feed_names}, fetch_list=fetches, scope=scope)


# ---------------------------------------------------------------- atan2
_SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -1e-30, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_atan2_quadrants_signed_zeros_and_infinities(tmp_path, dtype):
    """Every pair of special values, and random points over 10 decades: NumPy's arctan2 to a few ulp."""
    session, _, _, path = _static_export(tmp_path, fg.atan2, {"x": ([None], dtype), "y": ([None], dtype)})
    x, y = (np.array(v, dtype) for v in zip(*[(a, b) for a in _SPECIAL for b in _SPECIAL]))
    rng = np.random.default_rng(0)
    x = np.concatenate([x, (rng.normal(size=2000) * 10.0 ** rng.uniform(-5, 5, 2000)).astype(dtype)])
    y = np.concatenate([y, (rng.normal(size=2000) * 10.0 ** rng.uniform(-5, 5, 2000)).astype(dtype)])
    want = np.arctan2(x, y)
    got = session.run(None, {"x": x, "y": y})[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))  # -0 stays -0
    tolerance = 4 * np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    close = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= tolerance
    assert np.all(close | (np.isnan(got) & np.isnan(want))), (x[~close], y[~close], got[~close], want[~close])
    again = _reimported(path, {"x": x, "y": y})[0]
    np.testing.assert_allclose(again, want, rtol=1e-6 if dtype != "float16" else 1e-3, atol=0)


def test_atan2_matches_torch_with_broadcasting_and_a_dynamic_batch(tmp_path):
    session, _, _, _ = _static_export(tmp_path, fg.atan2, {"x": ([None, 3], "float64"), "y": ([3], "float64")})
    rng = np.random.default_rng(1)
    for batch in (2, 7):
        x, y = rng.normal(size=(batch, 3)), rng.normal(size=3)
        want = torch.atan2(torch.from_numpy(x), torch.from_numpy(y)).numpy()
        np.testing.assert_allclose(session.run(None, {"x": x, "y": y})[0], want, rtol=1e-15, atol=1e-15)


# ---------------------------------------------------------------- erfinv
@pytest.mark.parametrize("dtype, ulps", [("float32", 8), ("float64", 16)])
def test_erfinv_accuracy(tmp_path, dtype, ulps):
    """Wichura's AS241: within a few ulp of PyTorch's erfinv in float32 and float64, also at
    1 - 2^-52 and at tiny inputs; +-inf at +-1, NaN outside [-1, 1]."""
    session, _, _, path = _static_export(tmp_path, fg.erfinv, {"x": ([None], dtype)})
    rng = np.random.default_rng(2)
    digits = np.finfo(dtype).precision
    y = np.concatenate([rng.uniform(-1, 1, 20000), 1 - 10.0 ** -rng.uniform(0, digits, 5000),
                        -(1 - 10.0 ** -rng.uniform(0, digits, 5000)), 10.0 ** -rng.uniform(0, 30, 2000),
                        [0.0, -0.0, 0.85, -0.85, 1 - np.finfo(dtype).epsneg]]).astype(dtype)
    y = y[np.abs(y) < 1]
    want = torch.special.erfinv(torch.from_numpy(y.astype(np.float64))).numpy()
    got = session.run(None, {"x": y})[0]
    assert got.dtype == np.dtype(dtype)
    error = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    assert error.max() <= ulps, (y[error.argmax()], got[error.argmax()], want[error.argmax()])
    edges = np.array([1.0, -1.0, 1.5, -2.0, np.nan, -0.0], dtype)
    got = session.run(None, {"x": edges})[0]
    np.testing.assert_array_equal(got, np.array([np.inf, -np.inf] + [np.nan] * 3 + [0.0]))
    assert np.signbit(got[-1])
    np.testing.assert_allclose(_reimported(path, {"x": y})[0], want, rtol=ulps * np.finfo(dtype).eps, atol=0)


def test_erfinv_float16_rounds_the_float32_answer(tmp_path):
    session, _, _, _ = _static_export(tmp_path, fg.erfinv, {"x": ([None], "float16")})
    y = np.linspace(-0.999, 0.999, 301).astype("float16")
    want = torch.special.erfinv(torch.from_numpy(y.astype(np.float32))).numpy().astype("float16")
    got = session.run(None, {"x": y})[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=0)


# ---------------------------------------------------------------- isin
@pytest.mark.parametrize("dtype", ["int64", "int8", "float32", "bool"])
def test_isin_with_a_dynamic_batch(tmp_path, dtype):
    for invert in (False, True):
        session, _, _, path = _static_export(
            tmp_path, lambda x, t: fg.isin(x, t, invert=invert), {"x": ([None, 4], dtype), "t": ([None], dtype)})
        rng = np.random.default_rng(3)
        for batch, tests in ((2, 5), (6, 1), (3, 0)):
            x, t = rng.integers(0, 4, (batch, 4)).astype(dtype), rng.integers(0, 4, tests).astype(dtype)
            want = np.isin(x, t, invert=invert)
            np.testing.assert_array_equal(session.run(None, {"x": x, "t": t})[0], want)
            np.testing.assert_array_equal(_reimported(path, {"x": x, "t": t})[0], want)


def test_isin_nan_is_in_nothing_and_negative_zero_is_zero(tmp_path):
    session, _, _, _ = _static_export(tmp_path, fg.isin, {"x": ([5], "float64"), "t": ([3], "float64")})
    x, t = np.array([np.nan, -0.0, 0.0, 1.5, np.inf]), np.array([np.nan, 0.0, np.inf])
    want = torch.isin(torch.from_numpy(x), torch.from_numpy(t)).numpy()
    np.testing.assert_array_equal(session.run(None, {"x": x, "t": t})[0], want)


# ---------------------------------------------------------------- eye
@pytest.mark.parametrize("rows, columns, dtype", [(3, 5, "float32"), (4, None, "int64"), (2, 3, "float16"),
                                                  (3, 3, "bool"), (3, 2, "int8"), (0, 2, "float64")])
def test_eye(tmp_path, rows, columns, dtype):
    session, _, _, path = _static_export(tmp_path, lambda x: x + fg.eye(rows, columns, dtype=x.dtype) if dtype != "bool"
                                         else fg.logical_or(x, fg.eye(rows, columns, dtype="bool")),
                                         {"x": ([rows, rows if columns is None else columns], dtype)})
    x = np.zeros([rows, rows if columns is None else columns], dtype)
    want = np.eye(rows, columns, dtype=dtype)
    got = session.run(None, {"x": x})[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    model = onnx.load(os.fspath(path))
    assert "EyeLike" in {n.op_type for n in model.graph.node}
    assert all(np.prod(t.dims) <= 2 for t in model.graph.initializer)   # no rows x columns constant
    np.testing.assert_array_equal(_reimported(path, {"x": x})[0], want)


# ---------------------------------------------------------------- cumprod
@pytest.mark.parametrize("opset", [18, CUMPROD_OPSET])
@pytest.mark.parametrize("axis, exclusive, reverse", [(1, False, False), (0, True, False), (0, False, True), (1, False, True),
                                                      (-1, True, True)])
def test_cumprod_with_a_dynamic_batch(tmp_path, opset, axis, exclusive, reverse):
    """A Scan before opset 26, CumProd from 26: both along a dynamic batch axis too, zeros kept exact."""
    session, _, _, path = _static_export(
        tmp_path, lambda x: fg.cumprod(x, axis, exclusive=exclusive, reverse=reverse),
        {"x": ([None, 5], "float64")}, opset=opset)
    kinds = {n.op_type for n in onnx.load(os.fspath(path)).graph.node}
    assert ("CumProd" in kinds) == (opset >= CUMPROD_OPSET) and ("Scan" in kinds) == (opset < CUMPROD_OPSET)
    rng = np.random.default_rng(4)
    for batch in (1, 4):
        x = rng.normal(size=(batch, 5)) * (rng.uniform(size=(batch, 5)) > 0.2)
        want = fg.cumprod(fg.to_tensor(x), axis, exclusive=exclusive, reverse=reverse).numpy()
        np.testing.assert_allclose(session.run(None, {"x": x})[0], want, rtol=1e-14, atol=0)
        if opset >= CUMPROD_OPSET or axis == 0:  # fluidgrad imports a Scan whose rows have known shapes
            np.testing.assert_allclose(_reimported(path, {"x": x})[0], want, rtol=1e-14, atol=0)


@pytest.mark.parametrize("opset", [18, CUMPROD_OPSET])
@pytest.mark.parametrize("dtype", ["int32", "int8", "bool"])
def test_cumprod_of_integers_is_int64(tmp_path, opset, dtype):
    session, _, _, _ = _static_export(tmp_path, lambda x: fg.cumprod(x, 0), {"x": ([None, 3], dtype)}, opset=opset)
    x = np.random.default_rng(5).integers(-3 if dtype != "bool" else 0, 4 if dtype != "bool" else 2, (6, 3)).astype(dtype)
    got = session.run(None, {"x": x})[0]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, torch.cumprod(torch.from_numpy(x.astype(np.int64)), 0).numpy())


# ---------------------------------------------------------------- composed: diag, tensordot, kthvalue
EXAMPLE = np.random.default_rng(6).standard_normal((3, 4, 5)).astype("float32")
COMPOSED = {
    "diag of a row": (lambda x: fg.diag(x[0, 0], offset=1) + 0 * fg.sum(x), lambda x: torch.diag(x[0, 0], 1)),
    "diag of a row, padded": (lambda x: fg.diag(x[0, 1], offset=-2, padding_value=7.0) + 0 * fg.sum(x),
                              lambda x: torch.diag(x[0, 1], -2) + 7 * (1 - torch.from_numpy(np.eye(7, k=-2, dtype=np.float32)))),
    "diag of a matrix": (lambda x: fg.diag(x[0], offset=1) * fg.sum(x[:, :1, :1]),
                         lambda x: torch.diag(x[0], 1) * torch.sum(x[:, :1, :1])),
    "tensordot over two axes": (lambda x: fg.tensordot(x, fg.ones([4, 5, 2]) * fg.arange(2.0), 2),
                                lambda x: torch.tensordot(x, torch.ones(4, 5, 2) * torch.arange(2.0), 2)),
    "tensordot over listed axes": (lambda x: fg.tensordot(x, x[0], axes=[[1], [0]]),
                                   lambda x: torch.tensordot(x, x[0], dims=([1], [0]))),
    "kthvalue": (lambda x: fg.kthvalue(x, 2, axis=2), lambda x: tuple(torch.kthvalue(x, 2, dim=2))),
    "kthvalue kept": (lambda x: fg.kthvalue(x, 3, axis=1, keepdim=True),
                      lambda x: tuple(torch.kthvalue(x, 3, dim=1, keepdim=True))),
    "eye times the batch": (lambda x: fg.matmul(x, fg.eye(5, 3)), lambda x: x @ torch.eye(5, 3)),
    "cumprod along the batch": (lambda x: fg.cumprod(x, 0), lambda x: torch.cumprod(x, 0)),
    "isin of the batch": (lambda x: fg.isin(fg.round(x), fg.to_tensor(np.array([0.0, 1.0], "float32"))),
                          lambda x: torch.isin(torch.round(x), torch.tensor([0.0, 1.0]))),
    "atan2 over the batch": (lambda x: fg.atan2(x, x[:1]), lambda x: torch.atan2(x, x[:1])),
    "erfinv of the batch": (lambda x: fg.erfinv(fg.tanh(x)), lambda x: torch.erfinv(torch.tanh(x))),
}


@pytest.mark.parametrize("name", list(COMPOSED))
def test_traced_with_a_dynamic_batch(tmp_path, name):
    fn, torch_fn = COMPOSED[name]
    path = os.fspath(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second trace ran: the shape reads were checked
        export(fn, path, [fg.to_tensor(EXAMPLE)], dynamic_axes={0: [0]})
    session = _session(path)
    for batch in (2, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 4, 5)).astype("float32")
        want = torch_fn(torch.from_numpy(x))
        want = [w.numpy() for w in want] if isinstance(want, tuple) else [want.numpy()]
        got = session.run(None, {session.get_inputs()[0].name: x})
        again = _reimported(path, {session.get_inputs()[0].name: x})
        assert len(got) == len(want) == len(again)
        for w, g, a in zip(want, got, again):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-5)
