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
from fluidgrad.onnx import export, export_program, import_model  # noqa: E402
from fluidgrad.onnx.errors import OnnxExportError  # noqa: E402

EXAMPLE = np.random.default_rng(0).standard_normal((2, 5, 8)).astype("float32")
FUNCTIONS = {
    "expand_as": lambda x: fg.expand_as(x[:, :1], x),
    "expand_as of a new leading axis": lambda x: fg.expand_as(x[0], x),
    "expand to the batch": lambda x: fg.expand(x[:1], [x.shape[0], 5, 8]),
    "expand with -1": lambda x: fg.expand(x[:1, :, :1], [x.shape[0], -1, 8]),
    "std over all axes": lambda x: fg.std(x),
    "var over all axes": lambda x: fg.var(x),
    "biased var over all axes, kept": lambda x: fg.var(x, unbiased=False, keepdim=True),
    "var over the batch": lambda x: fg.var(x, axis=0),
    "std over batch and features": lambda x: fg.std(x, axis=[0, 2]),
    "a scale by the batch less one": lambda x: x * float(x.shape[0] - 1),
    "a mean over the batch by hand": lambda x: fg.sum(x, axis=0) * (1.0 / x.shape[0]),
    "x[-1]": lambda x: x[-1],
    "x[-1] of a column": lambda x: x[-1, :, 2],
    "x[-2:] and x[-1:]": lambda x: (x[-2:], x[-1:]),
    "chunk along the batch": lambda x: tuple(fg.chunk(x, 2, axis=0)),
    "flip": lambda x: fg.flip(x, [0]),
    "flip two axes": lambda x: fg.flip(x, [0, 2]),
    "every other row backwards": lambda x: x[::-2],
    "a mean over a batch-by-batch matrix (1 / n**2)": lambda x: fg.sum(fg.matmul(
        fg.reshape(x, [x.shape[0], -1]), fg.reshape(x, [x.shape[0], -1]), transpose_y=True)) * (
        1.0 / (x.shape[0] * x.shape[0])),
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
    for batch in (3, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 5, 8)).astype("float32")
        expected = _as_list(fn(fg.to_tensor(x)))
        got = session.run(None, {session.get_inputs()[0].name: x})
        again = fg.Executor().run(program, feed={feed_names[0]: x}, fetch_list=fetches, scope=scope)
        assert len(got) == len(again) == len(expected)
        for want, by_onnxruntime, reimported in zip(expected, got, again):
            assert by_onnxruntime.shape == reimported.shape == want.shape
            np.testing.assert_allclose(by_onnxruntime, want, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(reimported, want, rtol=1e-5, atol=1e-6)


def _as_list(result):
    return [t.numpy() for t in result] if isinstance(result, (list, tuple)) else [result.numpy()]


def test_a_count_that_is_not_linear_in_the_batch_is_refused(tmp_path):
    """A mean over a batch-by-batch matrix scales by 1 / n**2: two traces fit 1 / (5 n - 6) as
    well, the third does not. (Computed through float(), the count is a plain number in each
    trace; `1.0 / (x.shape[0] * x.shape[0])` itself is computed at run time: FUNCTIONS.)"""
    def mean_similarity(x):
        flat = fg.reshape(x, [x.shape[0], -1])
        return fg.sum(fg.matmul(flat, flat, transpose_y=True)) * (1.0 / float(x.shape[0] * x.shape[0]))

    with pytest.raises(OnnxExportError, match="op scale .* scales by"):
        _export(tmp_path, mean_similarity)


def test_a_batch_of_one_takes_its_last_row_and_flips(tmp_path):
    path = _export(tmp_path, lambda x: (x[-1], fg.flip(x, [0]), fg.var(x, axis=[1, 2])))
    x = np.random.default_rng(1).standard_normal((1, 5, 8)).astype("float32")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    last, flipped, spread = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_array_equal(last, x[0])
    np.testing.assert_array_equal(flipped, x)
    np.testing.assert_allclose(spread, x.reshape(1, -1).var(axis=1, ddof=1), rtol=1e-5)


SPLITS = {
    "split in two along the batch": lambda x: tuple(fg.split(x, 2)),
    "split in three along the batch": lambda x: tuple(fg.split(x, 3, axis=0)),
    "split with -1 along the batch": lambda x: tuple(fg.split(x, [-1, 1])),
    "split with -1 in the middle": lambda x: tuple(fg.split(x, [1, -1, 2], axis=0)),
    "split with -1 first and an empty part": lambda x: tuple(fg.split(x, [-1, 2, 0])),
    "chunk in three along the batch": lambda x: tuple(fg.chunk(x, 3)),
    "split of a feature axis beside the batch": lambda x: tuple(fg.split(x, [3, -1], axis=2)),
}


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("name", list(SPLITS))
def test_split_sizes_follow_the_batch(tmp_path, name, opset):
    """split(x, 2) cannot run one longer than an even example: the second trace doubles the batch,
    and the Split's sizes are read at run time (num_outputs at opset 18, computed from the Shape
    before, sections with a -1 as the Shape less the others): batches other than the traced 6."""
    fn = SPLITS[name]
    path = os.fspath(tmp_path / "model.onnx")
    example = np.random.default_rng(0).standard_normal((6, 5, 8)).astype("float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second trace ran
        export(fn, path, [fg.to_tensor(example)], dynamic_axes={0: [0]}, opset_version=opset)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    computed_sizes = "Shape" in {node.op_type for node in onnx.load(path).graph.node}  # a chunk before opset 18
    assert computed_sizes == (name.startswith("chunk") and opset < 18)
    scope = fg.Scope()
    # fluidgrad imports a Split whose sizes are computed from a Shape only as num_outputs (opset 18)
    program, feed_names, fetches = (None, None, None) if computed_sizes else import_model(path, scope)
    for batch in (12, 3 * 4 + 5, 24):
        x = np.random.default_rng(batch).standard_normal((batch, 5, 8)).astype("float32")
        try:
            expected = _as_list(fn(fg.to_tensor(x)))
        except ValueError:  # 17 rows do not split into equal parts
            continue
        got = session.run(None, {session.get_inputs()[0].name: x})
        again = got if computed_sizes else fg.Executor().run(program, feed={feed_names[0]: x}, fetch_list=fetches,
                                                             scope=scope)
        assert [g.shape for g in got] == [a.shape for a in again] == [w.shape for w in expected]
        for want, by_onnxruntime, reimported in zip(expected, got, again):
            np.testing.assert_array_equal(by_onnxruntime, want)
            np.testing.assert_array_equal(reimported, want)


@pytest.mark.parametrize("opset", [13, 18])
def test_static_split_with_a_minus_one_along_an_unknown_batch(tmp_path, opset):
    program = fg.Program()
    with fg.program_guard(program, fg.Program()):
        x = fg.static.data("x", [None, 3], "float32")
        parts = fg.split(x, [2, -1], axis=0) + fg.split(x, 2, axis=0)
    path = tmp_path / "split.onnx"
    export_program(path, [x], parts, program=program, scope=fg.Scope(), opset_version=opset)
    session = ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
    for batch in (4, 10):
        value = np.arange(batch * 3, dtype="float32").reshape(batch, 3)
        got = session.run(None, {"x": value})
        for g, w in zip(got, [value[:2], value[2:], value[:batch // 2], value[batch // 2:]]):
            np.testing.assert_array_equal(g, w)
