"""Export of cross_entropy on probabilities (`use_softmax=False`: the `cross_entropy` op, soft or
hard labels, ignore_index, classes on any axis, class weights, label smoothing) to ONNX: the file
run by onnxruntime and the file imported back into fluidgrad both give the Executor's values, and
the imported program's gradient is the original's. Label smoothing is checked against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F

from both_modes import compare_with_torch

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from fluidgrad.onnx import export_program, import_model  # noqa: E402

R = np.random.default_rng(31)


def _probabilities(shape, axis, dtype="float64"):
    p = R.uniform(0.1, 1.0, size=shape)
    return (p / p.sum(axis, keepdims=True)).astype(dtype)


def _round_trip(tmp_path, build, feeds: dict[str, np.ndarray], differentiate: str | None = None):
    """(Executor, onnxruntime, re-imported) values of build's fetches, and the gradients of the
    first fetch's sum with respect to `differentiate` in the original and the imported program."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        variables = {name: fg.static.data(name, [None] + list(v.shape[1:]), v.dtype.name) for name, v in feeds.items()}
        fetches = build(**variables)
    want = fg.Executor().run(main, feed=feeds, fetch_list=fetches, scope=fg.Scope())
    path = tmp_path / "loss.onnx"
    model = export_program(path, list(variables.values()), fetches, program=main, scope=fg.Scope())
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    by_ort = session.run(None, {i.name: feeds[i.name] for i in model.graph.input})
    scope = fg.Scope()
    imported, _, imported_fetches = import_model(path, scope)
    again = fg.Executor().run(imported, feed=feeds, fetch_list=imported_fetches, scope=scope)
    grads = []
    if differentiate:
        for program, outs, run_scope in ((main, fetches, fg.Scope()), (imported, imported_fetches, scope)):
            with fg.program_guard(program, fg.Program()):
                x = program.global_block().var(differentiate)
                x.stop_gradient = False
                grad, = fg.gradients([fg.sum(outs[0])], [x])
            grads.append(fg.Executor().run(program, feed=feeds, fetch_list=[grad], scope=run_scope)[0])
    return want, by_ort, again, grads


def _assert_all_close(want, *others, dtype="float64"):
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    for got in others:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, axis", [((6, 5), -1), ((2, 4, 3), 1), ((3, 2, 4), -1)])
def test_soft_labels(tmp_path, dtype, shape, axis):
    def build(p, t):
        return [F.cross_entropy(p, t, soft_label=True, use_softmax=False, axis=axis, reduction=r)
                for r in ("none", "mean", "sum")]
    feeds = {"p": _probabilities(shape, axis, dtype), "t": _probabilities(shape, axis, dtype)}
    want, by_ort, again, grads = _round_trip(tmp_path, build, feeds, differentiate="p")
    _assert_all_close(want, by_ort, again, dtype=dtype)
    _assert_all_close([grads[0]], [grads[1]], dtype=dtype)


@pytest.mark.parametrize("label_dtype", ["int64", "int32"])
@pytest.mark.parametrize("shape, axis, with_class_axis, ignore_index", [
    ((6, 5), -1, True, -100), ((6, 5), -1, False, 2), ((2, 4, 3), 1, False, -100), ((2, 4, 3), 1, True, 0),
    ((3, 2, 4), -1, False, -1)])
def test_hard_labels_with_ignored_entries_and_weights(tmp_path, label_dtype, shape, axis, with_class_axis,
                                                      ignore_index):
    axis %= len(shape)
    label_shape = shape[:axis] + ((1,) if with_class_axis else ()) + shape[axis + 1:]
    label = R.integers(0, shape[axis], size=label_shape).astype(label_dtype)
    label.flat[::3] = ignore_index
    weight = R.uniform(0.5, 2.0, size=shape[axis])

    def build(p, y, w):
        loss = [F.cross_entropy(p, y, use_softmax=False, axis=axis, ignore_index=ignore_index, reduction=r)
                for r in ("none", "mean", "sum")]
        return loss + [F.cross_entropy(p, y, w, use_softmax=False, axis=axis, ignore_index=ignore_index)]
    feeds = {"p": _probabilities(shape, axis), "y": label, "w": weight}
    want, by_ort, again, grads = _round_trip(tmp_path, build, feeds, differentiate="p")
    _assert_all_close(want, by_ort, again)
    _assert_all_close([grads[0]], [grads[1]])
    assert not by_ort[0][label == ignore_index].any()   # the unreduced loss has the labels' shape


@pytest.mark.parametrize("soft_label", [False, True])
def test_label_smoothing_on_probabilities_matches_torch_and_exports(tmp_path, soft_label):
    """use_softmax=False with label_smoothing: PyTorch's smoothing formula on log(p) (the value of
    TF.cross_entropy(log p, label_smoothing=e); the gradient is that of p itself, no softmax)."""
    p = _probabilities((5, 4), -1)
    label = _probabilities((5, 4), -1) if soft_label else R.integers(0, 4, size=5)

    def torch_smoothed(p, y, e=0.2):
        log_p = torch.log(p)
        target = y if soft_label else TF.one_hot(y, 4).to(p.dtype)
        return -(((1 - e) * target + e / 4) * log_p).sum(-1).mean()
    value = TF.cross_entropy(torch.log(torch.tensor(p)), torch.tensor(label), label_smoothing=0.2)
    np.testing.assert_allclose(torch_smoothed(torch.tensor(p), torch.tensor(label)).numpy(), value.numpy())
    compare_with_torch(lambda p, y: F.cross_entropy(p, y, soft_label=soft_label, use_softmax=False,
                                                    label_smoothing=0.2),
                       torch_smoothed, {"p": p, "y": label}, wrt=["p"])

    def build(p, y):
        return [F.cross_entropy(p, y, soft_label=soft_label, use_softmax=False, label_smoothing=0.2,
                                reduction=r) for r in ("none", "mean")]
    want, by_ort, again, grads = _round_trip(tmp_path, build, {"p": p, "y": label}, differentiate="p")
    _assert_all_close(want, by_ort, again)
    _assert_all_close([grads[0]], [grads[1]])


def test_the_exported_graph_is_gather_elements_not_a_softmax(tmp_path):
    """Probabilities are not passed through a softmax on export (no SoftmaxCrossEntropyLoss)."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        p, y = fg.static.data("p", [None, 5], "float32"), fg.static.data("y", [None, 1], "int64")
        loss = F.cross_entropy(p, y, use_softmax=False, reduction="none")
    model = export_program(tmp_path / "m.onnx", [p, y], [loss], program=main, scope=fg.Scope())
    types = {n.op_type for n in model.graph.node}
    assert "GatherElements" in types and "Log" in types
    assert not types & {"Softmax", "LogSoftmax", "SoftmaxCrossEntropyLoss"}
