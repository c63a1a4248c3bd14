"""Reductions and scans of bool and integer tensors through ONNX. Export: fluidgrad's result dtype
(sums and products of bool and integers are int64, max / min keep the dtype) is kept, with Casts
where ONNX or onnxruntime has no kernel; onnxruntime runs the file and the import runs it again.
Import: an ONNX Reduce* keeps its input's dtype, as onnxruntime computes it."""
from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import export, import_model  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32"]
REDUCTIONS = {
    "sum": lambda t: fg.sum(t, axis=1),
    "sum of all": lambda t: fg.sum(t),
    "prod": lambda t: fg.prod(t, axis=0, keepdim=True),
    "max": lambda t: fg.max(t, axis=1),
    "min of all": lambda t: fg.min(t),
    "cumsum": lambda t: fg.cumsum(t, 1),
    "cumsum reversed": lambda t: fg.flip(fg.cumsum(fg.flip(t, [0]), 0), [0]),
    "argmax": lambda t: fg.argmax(t, axis=1),
    "argmin of all": lambda t: fg.argmin(t),
    "add_n": lambda t: fg.add_n([t, t, t]),
}


def _values(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == "bool":
        return rng.random((3, 4)) > 0.5
    if dtype.startswith("float"):
        return rng.standard_normal((3, 4)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -9), min(info.max, 9), size=(3, 4)).astype(dtype)


def _runs_in_fluidgrad(fn, value):
    try:
        return fn(fg.to_tensor(value)).numpy()
    except (TypeError, ValueError):  # e.g. add_n of bools: nothing to export
        return None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_exported_reductions_keep_fluidgrads_dtype(tmp_path, name, dtype):
    fn, value = REDUCTIONS[name], _values(dtype)
    expected = _runs_in_fluidgrad(fn, value)
    if expected is None:
        pytest.skip(f"fluidgrad has no {name} of {dtype}")
    path = os.fspath(tmp_path / "reduce.onnx")
    export(fn, path, [fg.to_tensor(value)])
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: value})[0]
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got.astype("float64"), expected.astype("float64"), rtol=1e-3)
    scope = fg.Scope()
    program, feed_names, fetches = import_model(path, scope)
    again, = fg.Executor().run(program, feed={feed_names[0]: value}, fetch_list=fetches, scope=scope)
    assert again.dtype == expected.dtype
    np.testing.assert_allclose(again.astype("float64"), expected.astype("float64"), rtol=1e-3)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceProd", "ReduceMean", "ReduceMax", "ReduceL1", "ReduceL2",
                                     "ReduceSumSquare"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_imported_reductions_keep_the_onnx_dtype(op_type, dtype, keepdims):
    """Negative integers too: onnxruntime's integer mean and L2 truncate toward zero."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=keepdims)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, [2, 3, 2])],
                              [helper.make_tensor_value_info("y", elem, ["a", "b", "c"][:3 - 2 * (1 - keepdims)])],
                              initializer=[numpy_helper.from_array(np.array([0, 2], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.array([[[-1, 2], [3, -4], [5, 6]], [[7, -8], [9, 1], [-2, 3]]]).astype(dtype)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    scope = fg.Scope()
    program, feed_names, fetches = import_model(model, scope)
    got, = fg.Executor().run(program, feed={feed_names[0]: x}, fetch_list=fetches, scope=scope)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12)
