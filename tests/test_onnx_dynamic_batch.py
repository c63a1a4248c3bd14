"""Common functions exported with a dynamic batch: shapes, counts and indices taken from the
example's batch at trace time become run-time reads (export_shapes.py). Each model runs in
onnxruntime at two batch sizes other than the example's, against fluidgrad on the same input,
and the exported file imports back and runs again."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import export, import_model  # noqa: E402

EXAMPLE = np.random.default_rng(0).standard_normal((2, 5, 8)).astype("float32")
FUNCTIONS = {
    "expand_as": lambda x: fg.expand_as(x[:, :1], x),
    "expand_as of a new leading axis": lambda x: fg.expand_as(x[0], x),
    "expand to the batch": lambda x: fg.expand(x[:1], [x.shape[0], 5, 8]),
    "expand with -1": lambda x: fg.expand(x[:1, :, :1], [x.shape[0], -1, 8]),
}


def _export(tmp_path, fn):
    path = os.fspath(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second trace ran: the shape reads were checked
        export(fn, path, [fg.to_tensor(EXAMPLE)], dynamic_axes={0: [0]})
    return path


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_exported_with_a_dynamic_batch(tmp_path, name):
    fn = FUNCTIONS[name]
    path = _export(tmp_path, fn)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    scope = fg.Scope()
    program, feed_names, fetches = import_model(path, scope)
    for batch in (1, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 5, 8)).astype("float32")
        expected = fn(fg.to_tensor(x)).numpy()
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        again, = fg.Executor().run(program, feed={feed_names[0]: x}, fetch_list=fetches[:1], scope=scope)
        assert again.shape == expected.shape
        np.testing.assert_allclose(again, expected, rtol=1e-5, atol=1e-6)
