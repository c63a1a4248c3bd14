"""Export round trips of the example models through `fluidgrad.onnx.export` (eager code traced
by jit.to_static): onnxruntime's outputs equal fluidgrad's to float32 tolerance, and importing
the exported file gives the same outputs again. The GPT of examples/char_gpt.py, the ResNet of
examples/digits_resnet.py, the U-Net of examples/digits_unet.py and an nn.LSTM model."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fluidgrad as fg  # noqa: E402
from fluidgrad import nn  # noqa: E402
from fluidgrad.onnx import export, import_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import char_gpt  # noqa: E402
import digits_resnet  # noqa: E402
import digits_unet  # noqa: E402


class LSTMTagger(nn.Layer):
    """Two stacked LSTM layers and a linear head per time step."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


def _gpt():
    model = char_gpt.CharGPT(char_gpt.Config(vocab_size=20, block_size=8, n_embd=16, n_head=2, n_layer=2))
    return model, np.random.default_rng(0).integers(0, 20, (2, 8)).astype("int64")


def _resnet():
    return digits_resnet.DigitsResNet(width=8), np.random.default_rng(0).normal(size=(3, 1, 8, 8)).astype("float32")


def _unet():
    return digits_unet.DigitsUNet(), np.random.default_rng(0).normal(size=(2, 1, 8, 8)).astype("float32")


def _lstm():
    return LSTMTagger(), np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")


MODELS = {"gpt": _gpt, "resnet": _resnet, "unet": _unet, "lstm": _lstm}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_example_model_round_trip(name, tmp_path):
    fg.seed(0)
    model, x = MODELS[name]()
    model.eval()
    want = model(fg.to_tensor(x)).numpy()
    path = tmp_path / f"{name}.onnx"
    exported = export(model, path, [fg.to_tensor(x)])
    onnx.checker.check_model(exported, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {exported.graph.input[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    scope = fg.Scope()
    program, feeds, fetches = import_model(path, scope)
    again, = fg.Executor().run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
    np.testing.assert_allclose(again, want, rtol=1e-4, atol=1e-5)


def test_lstm_with_its_nested_state_outputs_and_a_dynamic_batch(tmp_path):
    """nn.LSTM returns (out, (h, c)): exported as three outputs (flattened as torch.onnx.export
    does), each following the dynamic batch in onnxruntime and after importing the file back."""
    fg.seed(0)
    lstm = nn.LSTM(4, 3, num_layers=2)
    lstm.eval()
    rng = np.random.default_rng(0)
    example, batch3 = rng.normal(size=(2, 5, 4)).astype("float32"), rng.normal(size=(3, 5, 4)).astype("float32")
    out, (h, c) = lstm(fg.to_tensor(batch3))
    want = [out.numpy(), h.numpy(), c.numpy()]
    path = tmp_path / "lstm.onnx"
    exported = export(lstm, path, [fg.to_tensor(example)], dynamic_axes={0: [0]})
    assert len(exported.graph.output) == 3
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    scope = fg.Scope()
    program, feeds, fetches = import_model(path, scope)
    imported = fg.Executor().run(program, feed={feeds[0]: batch3}, fetch_list=fetches, scope=scope)
    for got in [session.run(None, {exported.graph.input[0].name: batch3}), imported]:
        for value, expected in zip(got, want):
            np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5)
