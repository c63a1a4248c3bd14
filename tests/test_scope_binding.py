"""A Layer trained by a static Program holds the trained values (fluidgrad/scope_binding.py).

Paddle 2 code builds a static model from `nn` Layers, trains it with the Executor, then reads or
evaluates the Layer; the values live in the scope, and the Layer's Tensors share them.
"""
import gc

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad import scope_binding

X = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")


def _static_model(parameters_of=None, lr=0.1):
    main, startup = fg.static.Program(), fg.static.Program()
    with fg.static.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        first, second = fg.nn.Linear(3, 4), fg.nn.Linear(4, 1)
        out = second(fg.nn.functional.relu(first(x)))
        loss = fg.mean(out ** 2)
        params = None if parameters_of is None else parameters_of(first, second)
        fg.optimizer.SGD(learning_rate=lr, parameters=params).minimize(loss)
    return main, startup, first, second, out, loss


@pytest.fixture
def scope():
    return fg.static.global_scope()   # a fresh one per test (conftest.py)


def test_layer_reads_the_values_its_program_trained(scope):
    main, startup, first, second, _, loss = _static_model()
    exe = fg.static.Executor()
    exe.run(startup)
    before = first.weight.numpy().copy()
    for _ in range(3):
        exe.run(main, feed={"x": X}, fetch_list=[loss])
    trained = np.asarray(scope.find_var(main.global_block().var(first.weight.name).name).get_tensor())
    assert not np.array_equal(trained, before)
    np.testing.assert_array_equal(first.weight.numpy(), trained)
    np.testing.assert_array_equal(first.state_dict()["weight"].numpy(), trained)


def test_eager_evaluation_after_static_training_uses_the_trained_weights(scope, monkeypatch):
    main, startup, first, second, out, loss = _static_model()
    exe = fg.static.Executor()
    exe.run(startup)
    for _ in range(2):
        exe.run(main, feed={"x": X}, fetch_list=[loss])
    test_program = main.clone(for_test=True)
    static_out, = exe.run(test_program, feed={"x": X}, fetch_list=[out.name])
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)   # eager from here on
    eager_out = second(fg.nn.functional.relu(first(fg.to_tensor(X))))
    assert isinstance(eager_out, fg.Tensor)
    np.testing.assert_allclose(eager_out.numpy(), static_out, rtol=1e-6)


def test_a_value_set_between_runs_is_the_one_the_next_run_trains(scope):
    main, startup, first, second, _, loss = _static_model(lr=0.0)
    exe = fg.static.Executor()
    exe.run(startup)
    exe.run(main, feed={"x": X}, fetch_list=[loss])
    zeros = np.zeros_like(second.weight.numpy())
    second.weight.set_value(zeros)
    value, = exe.run(main, feed={"x": X}, fetch_list=[loss])
    bias = second.bias.numpy()
    np.testing.assert_allclose(value, np.mean(bias ** 2), rtol=1e-6)


def test_a_value_set_before_the_startup_run_is_the_initial_value(scope):
    main, startup, first, second, _, loss = _static_model(lr=0.0)
    second.weight.set_value(np.zeros_like(second.weight.numpy()))
    second.bias.set_value(np.full_like(second.bias.numpy(), 2.0))
    exe = fg.static.Executor()
    exe.run(startup)
    value, = exe.run(main, feed={"x": X}, fetch_list=[loss])
    np.testing.assert_allclose(value, 4.0, rtol=1e-6)


def test_static_optimizer_takes_a_layers_parameters(scope):
    main, startup, first, second, _, loss = _static_model(parameters_of=lambda a, b: b.parameters())
    exe = fg.static.Executor()
    exe.run(startup)
    frozen, trained = first.weight.numpy().copy(), second.weight.numpy().copy()
    exe.run(main, feed={"x": X}, fetch_list=[loss])
    np.testing.assert_array_equal(first.weight.numpy(), frozen)
    assert not np.array_equal(second.weight.numpy(), trained)
    assert sum(op.type == "sgd" for op in main.global_block().ops) == 2


def test_a_parameter_groups_rate_follows_its_tensor_into_the_program(scope):
    def groups(a, b):
        return [{"params": a.parameters()}, {"params": b.parameters(), "learning_rate": 0.0}]
    main, startup, first, second, _, loss = _static_model(parameters_of=groups)
    exe = fg.static.Executor()
    exe.run(startup)
    kept, moved = second.weight.numpy().copy(), first.weight.numpy().copy()
    exe.run(main, feed={"x": X}, fetch_list=[loss])
    np.testing.assert_array_equal(second.weight.numpy(), kept)
    assert not np.array_equal(first.weight.numpy(), moved)


def test_param_attr_learning_rate_follows_the_tensor_into_the_program(scope):
    main, startup = fg.static.Program(), fg.static.Program()
    with fg.static.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        layer = fg.nn.Linear(3, 1, weight_attr=fg.ParamAttr(learning_rate=0.0))
        loss = fg.mean(layer(x) ** 2)
        fg.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fg.static.Executor()
    exe.run(startup)
    kept = layer.weight.numpy().copy()
    exe.run(main, feed={"x": X}, fetch_list=[loss])
    np.testing.assert_array_equal(layer.weight.numpy(), kept)


def test_bindings_go_with_their_layers(scope):
    gc.collect()
    held = len(scope_binding._bindings)
    for _ in range(3):
        _static_model()
    gc.collect()
    assert len(scope_binding._bindings) == held
