"""Export of the cross-entropy ops to ONNX (fluidgrad/onnx/export_loss.py), run by onnxruntime
against the Executor: softmax_with_cross_entropy with hard labels (SoftmaxCrossEntropyLoss and its
ignore_index, classes on any axis, labels with or without the class axis) and soft labels, and
cross_entropy's mean over the labels not ignored (counted_mean)."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from fluidgrad.onnx import export_program  # noqa: E402

R = np.random.default_rng(21)


def _export_and_run(tmp_path, build, feeds: dict[str, np.ndarray], dtypes: dict[str, str], batch_dynamic=True):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        variables = {name: fg.static.data(name, [None if batch_dynamic and i == 0 else d
                                                 for i, d in enumerate(value.shape)], dtypes[name])
                     for name, value in feeds.items()}
        fetches = build(**variables)
    want = fg.Executor().run(main, feed=feeds, fetch_list=fetches)
    path = tmp_path / "loss.onnx"
    model = export_program(path, list(variables.values()), fetches, program=main, scope=fg.Scope())
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: feeds[i.name] for i in model.graph.input})
    return got, want


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, axis, label_shape, ignore_index", [
    ((6, 5), -1, (6, 1), -100), ((6, 5), -1, (6,), -100), ((6, 5), 1, (6, 1), 2),
    ((2, 4, 3), 1, (2, 3), -100), ((2, 4, 3), 1, (2, 1, 3), 0), ((3, 2, 4), -1, (3, 2), -1)])
def test_hard_labels_with_ignored_entries(tmp_path, dtype, shape, axis, label_shape, ignore_index):
    logits = R.normal(size=shape).astype(dtype)
    label = R.integers(0, shape[axis], size=label_shape)
    label.flat[::3] = ignore_index

    weight = R.uniform(0.5, 2.0, size=shape[axis]).astype(dtype)

    def build(x, y, w):
        loss, softmax = F.softmax_with_cross_entropy(x, y, ignore_index=ignore_index, return_softmax=True, axis=axis)
        return [loss, softmax, F.cross_entropy(x, y, ignore_index=ignore_index, axis=axis),
                F.cross_entropy(x, y, ignore_index=ignore_index, axis=axis, reduction="sum"),
                F.cross_entropy(x, y, w, ignore_index=ignore_index, axis=axis)]
    got, want = _export_and_run(tmp_path, build, {"x": logits, "y": label, "w": weight},
                                {"x": dtype, "y": "int64", "w": dtype})
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    for g, w, what in zip(got, want, ["loss", "softmax", "mean", "sum", "weighted mean"]):
        assert g.shape == w.shape and g.dtype == w.dtype, what
        np.testing.assert_allclose(g, w, err_msg=what, **tol)
    ignored = label == ignore_index
    if ignored.ndim < len(shape):
        ignored = np.expand_dims(ignored, axis % len(shape))
    assert not got[0][np.broadcast_to(ignored, got[0].shape)].any()


def test_soft_labels(tmp_path):
    logits = R.normal(size=(4, 5))
    target = R.uniform(0.1, 1.0, size=(4, 5))
    target /= target.sum(-1, keepdims=True)

    def build(x, y):
        loss, softmax = F.softmax_with_cross_entropy(x, y, soft_label=True, return_softmax=True)
        return [loss, softmax]
    got, want = _export_and_run(tmp_path, build, {"x": logits, "y": target}, {"x": "float64", "y": "float64"})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def test_mean_with_every_label_ignored_is_nan(tmp_path):
    def build(x, y):
        return [F.cross_entropy(x, y)]
    with np.errstate(invalid="ignore"):
        got, want = _export_and_run(tmp_path, build, {"x": R.normal(size=(3, 4)), "y": np.full(3, -100)},
                                    {"x": "float64", "y": "int64"})
    assert np.isnan(want[0]) and np.isnan(got[0])
