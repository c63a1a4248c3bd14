"""nn Layers called on static Variables: their parameters join the Program as static Parameters
initialised by the startup program to the Layers' values, and minimize + Executor train them
exactly as eager training of the same layers does (Paddle 2 static mode with nn layers)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.framework.program as program_module


def _mlp():
    fg.seed(3)
    return fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.Tanh(), fg.nn.Linear(8, 8), fg.nn.ReLU(), fg.nn.Linear(8, 1))


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((6, 4)), rng.standard_normal((6, 1))


def _eager_losses(model, x0, y0, steps, monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)   # eager mode inside the test
    opt = fg.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    losses = []
    for _ in range(steps):
        loss = fg.mean((model(fg.to_tensor(x0)) - fg.to_tensor(y0)) ** 2)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses


def test_an_mlp_of_nn_layers_trains_statically_as_eagerly(monkeypatch):
    fg.set_default_dtype("float64")
    try:
        model = _mlp()
        twin = copy.deepcopy(model)
    finally:
        fg.set_default_dtype("float32")
    x0, y0 = _data()
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 4], "float64")
        y = fg.static.data("y", [None, 1], "float64")
        loss = fg.mean((model(x) - y) ** 2)
        fg.optimizer.SGD(learning_rate=0.1).minimize(loss)
    assert sorted(p.name for p in main.global_block().all_parameters()) == sorted(
        p.name for p in model.parameters())
    exe = fg.Executor()
    exe.run(startup)
    static = [float(exe.run(main, feed={"x": x0, "y": y0}, fetch_list=[loss])[0]) for _ in range(4)]
    eager = _eager_losses(twin, x0, y0, 4, monkeypatch)
    np.testing.assert_allclose(static, eager, rtol=1e-12)
    assert static[-1] < static[0]


def test_a_layer_used_twice_in_one_program_shares_one_parameter():
    layer = fg.nn.Linear(3, 3)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 3], "float32")
        layer(layer(x))
    assert [p.name for p in main.global_block().all_parameters()] == [layer.weight.name, layer.bias.name]


def test_a_non_parameter_tensor_that_needs_a_gradient_is_still_refused():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 3], "float32")
        w = fg.to_tensor(np.ones((3, 3), "float32"), stop_gradient=False) * 2.0   # not a leaf
        with pytest.raises(TypeError, match="requires a gradient, mixed with the static Variable x"):
            fg.matmul(x, w)
