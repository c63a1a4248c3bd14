"""nn Layers in static programs share their parameters with the executor's scope (session 10)."""
import numpy as np

import fluidgrad as fg


def _program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        layer = fg.nn.Linear(2, 1)
        x = fg.static.data("x", [None, 2], "float32")
        loss = fg.mean(layer(x) ** 2)
        fg.optimizer.SGD(0.1).minimize(loss)
    return main, startup, layer, loss


def test_set_state_dict_before_the_startup_run_reaches_the_program():
    main, startup, layer, loss = _program()
    with fg.scope_guard(fg.static.Scope()):
        layer.set_state_dict({"weight": np.zeros((2, 1), "float32"), "bias": np.zeros(1, "float32")})
        exe = fg.Executor()
        exe.run(startup)
        got, = exe.run(main, feed={"x": np.ones((3, 2), "float32")}, fetch_list=[loss])
    assert float(got) == 0.0


def test_eager_updates_after_a_run_are_kept_by_state_dict():
    main, startup, layer, loss = _program()
    exe = fg.Executor()
    exe.run(startup)
    exe.run(main, feed={"x": np.ones((3, 2), "float32")}, fetch_list=[loss])
    trained = layer.state_dict()["weight"].numpy().copy()
    layer.weight.set_value(np.full((2, 1), 7.0, "float32"))   # no run since: the eager value stands
    np.testing.assert_array_equal(layer.state_dict()["weight"].numpy(), np.full((2, 1), 7.0, "float32"))
    assert not np.array_equal(trained, np.full((2, 1), 7.0, "float32"))


def test_saved_state_dict_holds_the_trained_values(tmp_path):
    main, startup, layer, loss = _program()
    exe = fg.Executor()
    exe.run(startup)
    initial = layer.weight.numpy().copy()
    for _ in range(3):
        exe.run(main, feed={"x": np.ones((3, 2), "float32")}, fetch_list=[loss])
    fg.save(layer.state_dict(), str(tmp_path / "w.pdparams"))
    loaded = fg.load(str(tmp_path / "w.pdparams"))
    np.testing.assert_array_equal(np.asarray(loaded["weight"].numpy() if hasattr(loaded["weight"], "numpy")
                                             else loaded["weight"]), np.array(fg.global_scope()[layer.weight.name]))
    assert not np.array_equal(initial, np.array(fg.global_scope()[layer.weight.name]))


def test_batch_norm_layer_trains_in_a_static_program_as_in_torch():
    """Paddle's rule: minimize trains the scale and shift too; the running statistics are updated
    by the program (momentum 0.9 = torch's 0.1) and the test clone normalises with them."""
    import torch
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        norm = fg.nn.BatchNorm1D(3)
        x = fg.static.data("x", [None, 3], "float32")
        y = norm(x)
        test_program = main.clone(for_test=True)
        loss = fg.mean(y * y)
        fg.optimizer.SGD(0.1).minimize(loss)
    exe = fg.Executor()
    exe.run(startup)
    x0 = (np.random.default_rng(0).standard_normal((8, 3)) * 2 + 5).astype("float32")
    reference = torch.nn.BatchNorm1d(3, momentum=0.1)
    reference_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(3):
        exe.run(main, feed={"x": x0}, fetch_list=[loss])
        reference_opt.zero_grad()
        (reference(torch.tensor(x0)) ** 2).mean().backward()
        reference_opt.step()
    got, = exe.run(test_program, feed={"x": x0[:2]}, fetch_list=[test_program.global_block().var(y.name)])
    expected = reference.eval()(torch.tensor(x0[:2])).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    state = norm.state_dict()                       # the trained values, read from the scope
    np.testing.assert_allclose(state["_mean"].numpy(), reference.running_mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(state["_variance"].numpy(), reference.running_var.numpy(), rtol=1e-5)
    np.testing.assert_allclose(state["weight"].numpy(), reference.weight.detach().numpy(), rtol=1e-5)


def test_batch_norm_2d_layer_in_eval_mode_in_a_static_program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        norm = fg.nn.BatchNorm2D(2)
        norm.eval()
        x = fg.static.data("x", [None, 2, 3, 3], "float32")
        y = norm(x)
    exe = fg.Executor()
    exe.run(startup)
    x0 = np.random.default_rng(1).standard_normal((2, 2, 3, 3)).astype("float32")
    got, = exe.run(main, feed={"x": x0}, fetch_list=[y])
    np.testing.assert_allclose(got, x0 / np.sqrt(1.0 + 1e-5), rtol=1e-5)
    np.testing.assert_array_equal(norm.state_dict()["_mean"].numpy(), np.zeros(2, "float32"))


def test_find_var_is_still_the_array_and_get_tensor_set_checks_the_shape():
    scope = fg.static.Scope()
    scope["w"] = np.arange(3.0, dtype="float32")
    found = scope.find_var("w")
    np.testing.assert_array_equal(-found, -np.arange(3.0))       # existing callers use it as the array
    tensor = found.get_tensor()
    tensor.set([5, 6, 7], fg.CPUPlace())
    assert np.array(tensor).dtype == np.float32
    np.testing.assert_array_equal(np.array(scope.find_var("w")), [5.0, 6.0, 7.0])
    import pytest
    with pytest.raises(ValueError, match="shape"):
        tensor.set(np.ones(2), fg.CPUPlace())
    assert scope.find_var("missing") is None
