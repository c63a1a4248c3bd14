"""jit.save / jit.load (Paddle 2's deployment path): the traced inference program and its
parameters go to files; loading needs no Python class and gives the layer's outputs back."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.jit import InputSpec

_RNG = np.random.default_rng(0)


class _Net(fg.nn.Layer):
    """Conv, batch norm and dropout (whose train and eval modes differ), two outputs."""

    def __init__(self):
        super().__init__()
        self.conv = fg.nn.Conv2D(2, 3, 3, padding=1)
        self.norm = fg.nn.BatchNorm2D(3)
        self.drop = fg.nn.Dropout(0.5)
        self.head = fg.nn.Linear(3 * 4 * 4, 5)

    def forward(self, image, scale):
        h = self.drop(fg.nn.functional.relu(self.norm(self.conv(image))))
        logits = self.head(fg.flatten(h, 1)) * scale
        return logits, fg.nn.functional.softmax(logits)


def _inputs(batch):
    return (fg.to_tensor(_RNG.standard_normal((batch, 2, 4, 4)).astype("float32")),
            fg.to_tensor(_RNG.uniform(0.5, 2.0, (batch, 1)).astype("float32")))


def _specs():
    return [InputSpec([None, 2, 4, 4], "float32", name="image"), InputSpec([None, 1], "float32")]


def test_round_trip_of_a_layer_with_an_unknown_batch(tmp_path):
    layer = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 2))
    fg.jit.save(layer, str(tmp_path / "mlp"), input_spec=[InputSpec([None, 4], "float32")])
    assert sorted(os.listdir(tmp_path)) == ["mlp.pdmodel.json", "mlp.pdparams.safetensors"]
    loaded = fg.jit.load(str(tmp_path / "mlp"))
    assert isinstance(loaded, fg.jit.TranslatedLayer) and isinstance(loaded, fg.nn.Layer)
    for batch in (1, 3, 7):
        x = fg.to_tensor(_RNG.standard_normal((batch, 4)).astype("float32"))
        np.testing.assert_array_equal(loaded(x).numpy(), layer(x).numpy())
    assert [tuple(p.shape) for p in loaded.parameters()] == [tuple(p.shape) for p in layer.parameters()]


def test_saved_program_is_the_inference_program_and_the_layer_keeps_its_mode(tmp_path):
    fg.seed(1)
    net = _Net()
    net.train()
    image, scale = _inputs(6)
    net(image, scale)  # moves the running statistics away from their initial values
    fg.jit.save(net, str(tmp_path / "net"), input_spec=_specs())
    assert net.training and net.drop.training  # tracing in eval mode left the modes as they were
    loaded = fg.jit.load(str(tmp_path / "net"))
    net.eval()
    expected = net(image, scale)
    got = loaded(image, scale)
    assert isinstance(got, tuple) and len(got) == 2  # as forward returned them
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    dropouts = [op for op in loaded.program().global_block().ops if op.type == "dropout"]
    assert dropouts and all(op.attr("is_test") for op in dropouts)
    assert "image" in [v.name for v in loaded.program().global_block().vars.values()]


def test_loading_needs_no_python_class(tmp_path):
    net = _Net()
    net.eval()
    image, scale = _inputs(2)
    fg.jit.save(net, str(tmp_path / "net"), input_spec=_specs())
    np.save(tmp_path / "image.npy", image.numpy())
    np.save(tmp_path / "scale.npy", scale.numpy())
    script = ("import sys, numpy as np, fluidgrad as fg\n"
              "d = sys.argv[1]\n"
              "out = fg.jit.load(d + '/net')(np.load(d + '/image.npy'), np.load(d + '/scale.npy'))\n"
              "np.save(d + '/out.npy', out[0].numpy())\n")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, env=env, timeout=120)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), net(image, scale)[0].numpy(), rtol=1e-6)


def test_gradients_flow_into_the_loaded_parameters(tmp_path):
    layer = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Tanh(), fg.nn.Linear(4, 1))
    fg.jit.save(layer, str(tmp_path / "m"), input_spec=[InputSpec([None, 3])])
    loaded = fg.jit.load(str(tmp_path / "m"))
    x = fg.to_tensor(_RNG.standard_normal((5, 3)).astype("float32"), stop_gradient=False)
    fg.mean(loaded(x) ** 2).backward()
    x_grad = x.grad.numpy().copy()
    x.clear_grad()
    fg.mean(layer(x) ** 2).backward()
    np.testing.assert_allclose(x_grad, x.grad.numpy(), rtol=1e-5)
    for got, want in zip(loaded.parameters(), layer.parameters()):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_to_static_function_saves_with_its_last_signature(tmp_path):
    layer = fg.nn.Linear(3, 2)
    fg.jit.to_static(layer)
    x = fg.to_tensor(np.ones((2, 3), "float32"))
    with pytest.raises(ValueError, match="input_spec"):
        fg.jit.save(layer, str(tmp_path / "early"))
    expected = layer(x).numpy()
    fg.jit.save(layer, str(tmp_path / "late"))
    np.testing.assert_allclose(fg.jit.load(str(tmp_path / "late"))(x).numpy(), expected, rtol=1e-6)

    def double(v):
        return v * 2.0

    fg.jit.save(double, str(tmp_path / "fn"), input_spec=[x])  # an example Tensor as the spec
    np.testing.assert_array_equal(fg.jit.load(str(tmp_path / "fn"))(x).numpy(), 2 * x.numpy())


def test_a_second_save_replaces_the_pair(tmp_path):
    layer = fg.nn.Linear(2, 2)
    fg.jit.save(layer, str(tmp_path / "m"), input_spec=[InputSpec([None, 2])])
    layer.weight.set_value(np.eye(2, dtype="float32"))
    fg.jit.save(layer, str(tmp_path / "m"), input_spec=[InputSpec([None, 2])])
    assert sorted(os.listdir(tmp_path)) == ["m.pdmodel.json", "m.pdparams.safetensors"]
    x = fg.to_tensor(np.array([[1.0, 2.0]], "float32"))
    np.testing.assert_allclose(fg.jit.load(str(tmp_path / "m"))(x).numpy(), layer(x).numpy())


def test_bad_calls_are_clear_errors(tmp_path):
    layer = fg.nn.Linear(4, 2)
    with pytest.raises(TypeError, match=r"input_spec\[0\] must be an InputSpec"):
        fg.jit.save(layer, str(tmp_path / "m"), input_spec=[[None, 4]])
    with pytest.raises(TypeError, match="expected a Layer or a function"):
        fg.jit.save(3, str(tmp_path / "m"), input_spec=[InputSpec([None, 4])])
    fg.jit.save(layer, str(tmp_path / "m"), input_spec=[InputSpec([None, 4])])
    loaded = fg.jit.load(str(tmp_path / "m"))
    with pytest.raises(TypeError, match="takes 1 input"):
        loaded(np.ones((1, 4), "float32"), np.ones((1, 4), "float32"))
    with pytest.raises(Exception, match=r"\[1, 5\]"):
        loaded(np.ones((1, 5), "float32"))
    with pytest.raises(fg.io.ModelFileError, match="does not exist"):
        fg.jit.load(str(tmp_path / "missing"))
    with pytest.raises(TypeError, match="shape must be a list"):
        InputSpec(4)


def test_input_spec_of_tensors_and_arrays():
    x = fg.to_tensor(np.zeros((2, 3), "float64"))
    assert InputSpec.from_tensor(x, "x") == InputSpec([2, 3], "float64", "x")
    assert InputSpec.from_numpy(np.zeros((5,), "int64")).shape == (5,)
    assert InputSpec([None, 3]).shape == (-1, 3)
    assert "shape=[-1, 3]" in repr(InputSpec([None, 3]))
    assert fg.static.InputSpec is InputSpec


def test_a_loaded_layer_in_train_mode_trains_as_the_eager_one(tmp_path, monkeypatch):
    """loaded.train(): batch norm on the batch's statistics with its running ones updated, as the
    eager layer in train mode; eval() goes back to the inference program."""
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    rng = np.random.default_rng(0)
    eager_model = fg.nn.Sequential(fg.nn.Linear(4, 3), fg.nn.BatchNorm1D(3))
    eager_model.eval()
    fg.jit.save(eager_model, str(tmp_path / "m"), input_spec=[fg.static.InputSpec([None, 4], "float32")])
    loaded = fg.jit.load(str(tmp_path / "m"))
    x = (rng.standard_normal((8, 4)) * 3 + 5).astype("float32")
    eval_out = loaded(fg.to_tensor(x)).numpy()
    loaded.train()
    eager_model.train()
    out = loaded(fg.to_tensor(x))
    expected = eager_model(fg.to_tensor(x))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
    running = sorted(b.numpy().sum() for b in loaded.buffers())
    np.testing.assert_allclose(running, sorted([eager_model[1]._mean.numpy().sum(),
                                                eager_model[1]._variance.numpy().sum()]), rtol=1e-5)
    out.sum().backward()
    assert all(p.grad is not None for p in loaded.parameters())
    loaded.eval()
    eager_model.eval()
    np.testing.assert_allclose(loaded(fg.to_tensor(x)).numpy(), eager_model(fg.to_tensor(x)).numpy(), rtol=1e-5,
                               atol=1e-5)
    assert not np.allclose(eval_out, loaded(fg.to_tensor(x)).numpy())   # the running statistics moved
