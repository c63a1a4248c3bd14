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
