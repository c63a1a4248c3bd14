"""`fluidgrad export MODEL -o model.onnx`, and `fluidgrad show|draw model.onnx`."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fluidgrad as fg  # noqa: E402
from fluidgrad import demo  # noqa: E402
from fluidgrad.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def saved_cnn(tmp_path_factory):
    net = demo.build_static("cnn", 0.01)
    scope = fg.Scope()
    fg.Executor().run(net["startup"], scope=scope)
    prefix = tmp_path_factory.mktemp("cnn") / "digits"
    fg.io.save_inference_model(prefix, [net["image"]], [net["logits"]], program=net["test"], scope=scope)
    return net, scope, prefix


def test_export_writes_a_model_onnxruntime_runs(saved_cnn, tmp_path, capsys):
    net, scope, prefix = saved_cnn
    out = tmp_path / "digits.onnx"
    assert main(["export", str(prefix), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    images = np.random.default_rng(0).normal(size=(3, 1, 8, 8)).astype("float32")
    want = fg.Executor().run(net["test"], feed={"image": images}, fetch_list=[net["logits"]], scope=scope)[0]
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"image": images})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_show_and_draw_read_onnx_files(saved_cnn, tmp_path, capsys):
    _, _, prefix = saved_cnn
    out = tmp_path / "digits.onnx"
    main(["export", str(prefix), "-o", str(out)])
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    text = capsys.readouterr().out
    assert "# feeds: image" in text and "conv2d" in text and "pool2d" in text
    picture = tmp_path / "digits.dot"
    assert main(["draw", str(out), "-o", str(picture)]) == 0
    assert "conv2d" in picture.read_text()


def test_show_of_a_file_that_is_not_onnx_fails_cleanly(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model")
    assert main(["show", str(bad)]) == 1
    assert "not an ONNX model" in capsys.readouterr().err
