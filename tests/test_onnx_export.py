"""Export round trips: onnxruntime's outputs equal fluidgrad's, and importing the exported file
gives the same outputs again; for every registered op with an ONNX equivalent (the op-case
table, plus cases here for ops tested elsewhere), for while/cond, and for the demo CNN (the
other example models: tests/test_onnx_export_models.py)."""
from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fluidgrad as fg  # noqa: E402
from fluidgrad import demo  # noqa: E402
from fluidgrad.onnx import export, export_program, import_model  # noqa: E402
from fluidgrad.onnx.errors import OnnxExportError  # noqa: E402
from fluidgrad.onnx.export_table import EXPORTERS  # noqa: E402
from fluidgrad.ops import registered_ops  # noqa: E402
from fluidgrad.static.control_flow import increment  # noqa: E402
from fluidgrad.testing import OpCase, build_single_op  # noqa: E402
from test_ops import CASES  # noqa: E402

F = fg.nn.functional
EXPORTED_WITH_CONTROL_FLOW = {"while", "conditional_block", "select_input", "increment"}


def _float32(value):
    value = np.asarray(value)
    return value.astype("float32") if value.dtype == np.float64 else value


def round_trip(program, scope, feeds, fetch_vars, path, rtol=1e-4, atol=1e-5):
    """fluidgrad vs onnxruntime on the exported file vs fluidgrad on the re-imported file."""
    want = fg.Executor().run(program, feed=feeds, fetch_list=fetch_vars, scope=scope)
    model = export_program(path, list(feeds), fetch_vars, program=program, scope=scope)
    assert isinstance(model, onnx.ModelProto)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, feeds)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    imported_scope = fg.Scope()
    imported, feed_names, fetches = import_model(path, imported_scope)
    assert sorted(feed_names) == sorted(feeds)
    again = fg.Executor().run(imported, feed=feeds, fetch_list=fetches, scope=imported_scope)
    for w, a in zip(want, again):
        np.testing.assert_allclose(a, w, rtol=rtol, atol=atol)
    return model


def _op_program(case: OpCase):
    feeds = {}
    for slot, value in case.inputs.items():
        if isinstance(value, (list, tuple)):
            feeds.update({f"{slot}_{i}": _float32(v) for i, v in enumerate(value)})
        else:
            feeds[slot] = _float32(value)
    program = fg.Program()
    with fg.program_guard(program, fg.Program()):
        variables = {name: fg.static.data(name, list(v.shape), v.dtype.name) for name, v in feeds.items()}
        outputs = build_single_op(case.op, case.inputs, case.attrs, case.n_out)(variables)
    slots = fg.ops.get_op_def(case.op).outputs
    if case.use_outputs is not None:
        outputs = [outputs[i] for i in case.use_outputs]
    elif len(slots) > 1:
        outputs = outputs[:1]
    return program, feeds, outputs


def _extra_cases():
    """Ops whose cases live in other test files (nn, control flow), declared for export here."""
    rng = np.random.default_rng(0)
    image = rng.normal(size=(2, 3, 6, 6))
    return [
        OpCase("conv2d", {"Input": image, "Filter": rng.normal(size=(4, 3, 3, 3)), "Bias": rng.normal(size=4)},
               {"strides": [1, 2], "paddings": [1, 0, 2, 1], "dilations": [1, 1], "groups": 1}),
        OpCase("conv2d", {"Input": image[:, :2], "Filter": rng.normal(size=(4, 1, 3, 3))}, {"groups": 2},
               id="conv2d_groups"),
        OpCase("pool2d", {"X": image}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}),
        OpCase("pool2d", {"X": image}, {"pooling_type": "avg", "ksize": [3, 3], "strides": [1, 1],
                                        "paddings": [1, 1], "exclusive": True}, id="pool2d_avg"),
        OpCase("pool2d", {"X": image}, {"pooling_type": "avg", "global_pooling": True}, id="pool2d_global"),
        OpCase("batch_norm", {"X": image, "Scale": rng.normal(size=3), "Bias": rng.normal(size=3),
                              "Mean": rng.normal(size=3), "Variance": rng.uniform(0.5, 2, size=3)},
               {"is_test": True}),
        OpCase("layer_norm", {"X": rng.normal(size=(2, 3, 4)), "Scale": rng.normal(size=12),
                              "Bias": rng.normal(size=12)}, {"begin_norm_axis": 1}),
        OpCase("dropout", {"X": image}, {"is_test": True, "dropout_prob": 0.3}),
        OpCase("clip", {"X": image}, {"min": -0.5, "max": 0.7}),
        OpCase("log_softmax", {"X": image}, {"axis": 1}),
        OpCase("nonzero", {"X": np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])}),
        OpCase("arange", {"Start": np.array(2), "End": np.array(11), "Step": np.array(3)}),
        OpCase("arange", {"Start": np.array([5]), "End": np.array([-3]), "Step": np.array([-2])}, id="arange-down"),
        OpCase("arange", {"Start": np.array(0.5), "End": np.array(2.0), "Step": np.array(0.25)}, id="arange-float"),
    ]


def _exports_its_outputs(case: OpCase) -> bool:
    """The norm exporters write Y only, and export_program exports batch_norm for inference
    (clone(for_test=True)): cases reading the statistics or in training mode stay out."""
    if case.op == "batch_norm" and not (case.attrs.get("is_test") or case.attrs.get("use_global_stats")):
        return False
    return not (case.op in ("batch_norm", "layer_norm") and case.use_outputs not in (None, (0,)))


EXPORT_CASES = [c for c in CASES + _extra_cases() if c.op in EXPORTERS and _exports_its_outputs(c)]


def _refusal(case: OpCase) -> str | None:
    """Cases whose attributes have no ONNX equivalent: export refuses them, naming the op and why."""
    if case.attrs.get("adaptive") and any(k != 1 for k in np.atleast_1d(case.attrs.get("ksize", 1))):
        return "adaptive pooling"
    if case.attrs.get("ceil_mode") and case.attrs.get("pooling_type") == "avg" and not case.attrs.get("exclusive", True):
        return "ceil_mode with padding counted"
    if case.op == "scatter_nd" and case.attrs.get("batch_dims"):
        return "batch_dims"
    if getattr(case.inputs.get("X"), "ndim", None) == 0 and case.attrs.get("axis") not in (None, [], ()):
        return "0-D X along axis"
    return None


@pytest.mark.parametrize("case", EXPORT_CASES, ids=[c.id for c in EXPORT_CASES])
def test_op_round_trip(case, tmp_path):
    program, feeds, outputs = _op_program(case)
    refused = _refusal(case)
    if refused:
        with pytest.raises(OnnxExportError, match=f"op {case.op} .*{refused}"):
            export_program(tmp_path / "op.onnx", list(feeds), outputs, program=program, scope=fg.Scope())
        return
    round_trip(program, fg.Scope(), feeds, outputs, tmp_path / "op.onnx")


def test_every_exportable_op_has_a_round_trip():
    registered = set(registered_ops())
    covered = {c.op for c in EXPORT_CASES} | EXPORTED_WITH_CONTROL_FLOW
    missing = sorted(op for op in EXPORTERS if op in registered and op not in covered)
    assert not missing, f"ops with an ONNX exporter but no round-trip case: {missing}"


def test_while_and_cond_round_trip(tmp_path):
    program = fg.Program()
    with fg.program_guard(program, fg.Program()):
        x = fg.static.data("x", [None, 3], "float32")
        i = fg.full([], 0, "int64")
        _, y = fg.static.nn.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, fg.tanh(y) * 1.5), [i, x])
        z = fg.static.nn.cond(fg.sum(x) > 0, lambda: y * 2.0, lambda: -y)
        n = fg.full([], 0, "int64")
        counter = fg.static.nn.while_loop(lambda n: n < 3, lambda n: [increment(n, 2.0, in_place=False)],
                                          [n])[0]
    ops = {op.type for op in program.global_block().ops}
    assert {"while", "conditional_block", "select_input", "increment"} <= ops | {
        op.type for b in program.blocks for op in b.ops}
    for sign in (1.0, -1.0):
        feeds = {"x": (sign * np.random.default_rng(0).uniform(0.1, 1, (5, 3))).astype("float32")}
        model = round_trip(program, fg.Scope(), feeds, [z, counter], tmp_path / "flow.onnx")
    types = {node.op_type for node in model.graph.node}
    assert {"Loop", "If"} <= types


def test_demo_cnn_round_trip_with_dynamic_batch(tmp_path):
    net = demo.build_static("cnn", 0.01)
    scope = fg.Scope()
    fg.Executor().run(net["startup"], scope=scope)
    images = np.random.default_rng(0).normal(size=(7, 1, 8, 8)).astype("float32")
    model = round_trip(net["test"], scope, {"image": images}, [net["logits"].name], tmp_path / "cnn.onnx")
    batch = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert batch.dim_param and not batch.HasField("dim_value")  # -1 stays dynamic
    session = ort.InferenceSession(str(tmp_path / "cnn.onnx"), providers=["CPUExecutionProvider"])
    three = session.run(None, {"image": images[:3]})[0]
    want = fg.Executor().run(net["test"], feed={"image": images[:3]}, fetch_list=[net["logits"].name], scope=scope)[0]
    np.testing.assert_allclose(three, want, rtol=1e-4, atol=1e-5)


def test_eager_layer_export(tmp_path):
    fg.seed(0)
    layer = demo.eager_network("cnn")
    layer.eval()
    x = np.random.default_rng(1).normal(size=(2, 1, 8, 8)).astype("float32")
    path = tmp_path / "eager.onnx"
    model = export(layer, path, [fg.to_tensor(x)], dynamic_axes={0: [0]})
    onnx.checker.check_model(model, full_check=True)
    want = layer(fg.to_tensor(x)).numpy()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {model.graph.input[0].name: x})[0], want, rtol=1e-4, atol=1e-5)
    five = np.concatenate([x, x, x[:1]])
    np.testing.assert_allclose(session.run(None, {model.graph.input[0].name: five})[0][:2], want, rtol=1e-4, atol=1e-5)


def test_op_without_equivalent_is_refused_by_name(tmp_path):
    program = fg.Program()
    with fg.program_guard(program, fg.Program()):
        logits = fg.static.data("logits", [4, 3], "float32")
        label = fg.static.data("label", [4, 1], "int64")
        loss = F.unfold(fg.reshape(logits, [1, 1, 4, 3]), 2)     # unfold (im2col) has no ONNX op
    path = tmp_path / "refused.onnx"
    path.write_bytes(b"previous contents")
    with pytest.raises(OnnxExportError, match="op unfold"):
        export_program(path, [logits, label], [loss], program=program, scope=fg.Scope())
    assert path.read_bytes() == b"previous contents"  # untouched: written atomically or not at all
    assert os.listdir(tmp_path) == ["refused.onnx"]


def test_external_data_round_trip(tmp_path):
    program, startup = fg.Program(), fg.Program()
    with fg.program_guard(program, startup):
        x = fg.static.data("x", [None, 16], "float32")
        y = fg.static.nn.fc(fg.static.nn.fc(x, 32, activation="relu"), 4)
    scope = fg.Scope()
    fg.Executor().run(startup, scope=scope)
    path = tmp_path / "big" / "model.onnx"
    export_program(path, [x], [y], program=program, scope=scope, external_data=True)
    assert (path.parent / "model.onnx.data").stat().st_size >= 16 * 32 * 4  # the big weight; small ones inline
    feeds = {"x": np.ones((2, 16), "float32")}
    want = fg.Executor().run(program, feed=feeds, fetch_list=[y], scope=scope)[0]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, feeds)[0], want, rtol=1e-5, atol=1e-6)
    imported_scope = fg.Scope()
    imported, _, fetches = import_model(path, imported_scope)
    np.testing.assert_allclose(fg.Executor().run(imported, feed=feeds, fetch_list=fetches, scope=imported_scope)[0],
                               want, rtol=1e-5, atol=1e-6)
