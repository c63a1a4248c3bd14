"""onnx.export as torch.onnx.export and paddle.onnx.export are called (onnx/export_call.py), and
the graph's names: the user's, else the InputSpecs', else the function's argument names and
output_<i>, the same on every export. onnxruntime runs each model on a batch other than the
example's."""
import io
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fluidgrad as fg  # noqa: E402
import fluidgrad.framework.program as program_module  # noqa: E402
import fluidgrad.onnx  # noqa: E402,F401
from fluidgrad.static import InputSpec  # noqa: E402

R = np.random.default_rng(7)
X2, X5 = (R.standard_normal((n, 4)).astype("float32") for n in (2, 5))


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _model():
    return fg.nn.Sequential(fg.nn.Linear(4, 3), fg.nn.ReLU())


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def _check_runs(model, source, feeds, want):
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    got = session.run(None, feeds)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_torchs_call_with_names_and_named_dynamic_axes(tmp_path):
    model, path = _model(), str(tmp_path / "m.onnx")
    proto = fg.onnx.export(model, (fg.to_tensor(X2),), path, export_params=True, verbose=False,
                           input_names=["input"], output_names=["output"], opset_version=17,
                           do_constant_folding=True, dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    assert [i.name for i in proto.graph.input] == ["input"]
    assert [o.name for o in proto.graph.output] == ["output"]
    assert _dims(proto.graph.input[0]) == ["batch", 4] and _dims(proto.graph.output[0]) == ["batch", 3]
    assert proto.opset_import[0].version == 17
    _check_runs(model, path, {"input": X5}, [model(fg.to_tensor(X5)).numpy()])


def test_torchs_list_form_of_dynamic_axes_and_a_file_object(tmp_path):
    model, buffer = _model(), io.BytesIO()
    proto = fg.onnx.export(model, fg.to_tensor(X2), buffer, input_names=["features"], dynamic_axes={"features": [0]})
    assert isinstance(_dims(proto.graph.input[0])[0], str)
    _check_runs(model, buffer.getvalue(), {"features": X5}, [model(fg.to_tensor(X5)).numpy()])


def test_torchs_names_may_name_the_first_inputs_and_outputs(tmp_path):
    def two(x, y):
        return x + y, x * y

    path = str(tmp_path / "m.onnx")
    proto = fg.onnx.export(two, (fg.to_tensor(X2), fg.to_tensor(X2)), path, input_names=["a"], output_names=["sum"],
                           dynamic_axes={"a": {0: "n"}, "y": {0: "n"}})
    assert [i.name for i in proto.graph.input] == ["a", "y"]
    assert [o.name for o in proto.graph.output] == ["sum", "output_1"]
    _check_runs(two, path, {"a": X5, "y": X5}, [X5 + X5, X5 * X5])


@pytest.mark.parametrize("prefix, written", [("out/model", "out/model.onnx"), ("model.onnx", "model.onnx")])
def test_paddles_call_writes_the_prefix_dot_onnx(prefix, written, tmp_path):
    model = _model()
    proto = fg.onnx.export(model, str(tmp_path / prefix), input_spec=[InputSpec([None, 4], "float32", "image")],
                           opset_version=18)
    assert os.path.exists(tmp_path / written)
    assert [i.name for i in proto.graph.input] == ["image"]
    assert isinstance(_dims(proto.graph.input[0])[0], str)
    _check_runs(model, str(tmp_path / written), {"image": X5}, [model(fg.to_tensor(X5)).numpy()])


def test_paddles_input_spec_without_a_name_takes_the_argument_name(tmp_path):
    layer = fg.nn.Linear(4, 2)
    proto = fg.onnx.export(layer, str(tmp_path / "m"), input_spec=[InputSpec([None, 4])])
    assert [i.name for i in proto.graph.input] == ["x"]     # Linear.forward(self, x)


def test_fluidgrads_call_keeps_working_with_stable_names(tmp_path):
    def scaled(t):
        return t * 2.0

    names = []
    for k in range(2):   # a re-export in the same process names the graph the same
        path = str(tmp_path / f"m{k}.onnx")
        proto = fg.onnx.export(scaled, path, [fg.to_tensor(X2)], dynamic_axes={0: [0]})
        names.append(([i.name for i in proto.graph.input], [o.name for o in proto.graph.output]))
        _check_runs(scaled, path, {"t": X5}, [X5 * 2.0])
    assert names[0] == names[1] == (["t"], ["output_0"])


def test_re_exporting_a_layer_keeps_its_input_names(tmp_path):
    model = _model()
    first = fg.onnx.export(model, (fg.to_tensor(X2),), str(tmp_path / "a.onnx"))
    second = fg.onnx.export(model, (fg.to_tensor(X2),), str(tmp_path / "b.onnx"))
    assert [i.name for i in first.graph.input] == [i.name for i in second.graph.input] == ["x"]   # forward(x)
    assert [o.name for o in first.graph.output] == [o.name for o in second.graph.output]


def test_verbose_prints_the_graph(tmp_path, capsys):
    fg.onnx.export(_model(), (fg.to_tensor(X2),), str(tmp_path / "m.onnx"), verbose=True)
    assert capsys.readouterr().out.startswith("fluidgrad (float[")


@pytest.mark.parametrize("options, error, pattern", [
    (dict(export_params=False), ValueError, "export_params=False"),
    (dict(keep_initializers_as_inputs=True), ValueError, "keep_initializers_as_inputs"),
    (dict(training="TrainingMode.TRAINING"), ValueError, "eval mode"),
    (dict(opset=17), TypeError, r"unexpected keyword arguments \['opset'\]"),
    (dict(input_names=["a", "b"]), ValueError, "2 names given for the 1 inputs"),
    (dict(input_names=["a", "a"]), ValueError, "distinct"),
    (dict(input_spec=[InputSpec([None, 4])]), TypeError, "not both"),
])
def test_what_the_exporter_does_not_do_is_refused_by_name(options, error, pattern, tmp_path):
    with pytest.raises(error, match=pattern):
        fg.onnx.export(_model(), (fg.to_tensor(X2),), str(tmp_path / "m.onnx"), **options)


def test_no_inputs_at_all_is_refused(tmp_path):
    with pytest.raises(TypeError, match="give example inputs"):
        fg.onnx.export(_model(), str(tmp_path / "m.onnx"))
