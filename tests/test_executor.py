"""The Executor and Scope contract of DESIGN §6: feeds checked, fetches by Variable or name,
persistables kept across runs, intermediates freed, plans cached, errors that name the op."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad import static
from fluidgrad.dispatch import apply_op
from fluidgrad.executor import executor as executor_module
from fluidgrad.framework import ExecutionError, NanInfError


def _affine(main):
    x = static.data("x", [-1, 3], "float64")
    h = fg.tanh(static.nn.fc(x, 4, name="layer"))
    return x, h, fg.mean(h * h)


def _expected(scope, xs):
    h = np.tanh(xs @ scope["layer.w_0"] + scope["layer.b_0"])
    return h, np.mean(h * h)


# ------------------------------------------------------------------ Scope
def test_scope_is_a_mapping_with_children():
    parent = fg.Scope()
    parent["a"] = np.ones(2)
    child = parent.new_scope()
    child["b"] = np.zeros(3)
    assert "a" in child and "b" in child and "b" not in parent
    np.testing.assert_array_equal(child["a"], np.ones(2))
    assert child.get("missing") is None and child.get("missing", 5) == 5
    with pytest.raises(KeyError, match="missing"):
        child["missing"]
    child.assign("a", np.full(2, 7.0))   # writes where the name already lives
    np.testing.assert_array_equal(parent["a"], np.full(2, 7.0))
    assert "a" not in child.vars


def test_global_scope_is_used_by_default(fresh_programs):
    main, startup = fresh_programs
    _affine(main)
    fg.Executor().run(startup)
    assert "layer.w_0" in fg.global_scope() and fg.global_scope()["layer.w_0"].shape == (3, 4)


# ------------------------------------------------------------------ feeds and fetches
def test_fetch_by_variable_or_name_and_default_program(fresh_programs, rng):
    main, startup = fresh_programs
    x, h, loss = _affine(main)
    exe = fg.Executor()
    exe.run(startup)
    xs = rng.normal(size=(5, 3))
    by_var = exe.run(main, feed={"x": xs}, fetch_list=[h, loss])
    by_name = exe.run(feed={"x": xs}, fetch_list=[h.name, loss.name])   # program=None: the default main
    mixed = exe.run(main, feed={"x": xs}, fetch_list=[loss.name, h, x])
    want_h, want_loss = _expected(fg.global_scope(), xs)
    for values in (by_var, by_name):
        assert all(isinstance(v, np.ndarray) for v in values)
        np.testing.assert_allclose(values[0], want_h, rtol=1e-12)
        np.testing.assert_allclose(values[1], want_loss, rtol=1e-12)
    np.testing.assert_allclose(mixed[0], want_loss, rtol=1e-12)
    np.testing.assert_array_equal(mixed[2], xs)
    assert exe.run(main, feed={"x": xs}) == []


def test_feed_with_any_batch_size(fresh_programs, rng):
    main, startup = fresh_programs
    _x, h, _loss = _affine(main)
    exe = fg.Executor()
    exe.run(startup)
    for batch in (1, 4, 9):
        (value,) = exe.run(main, feed={"x": rng.normal(size=(batch, 3))}, fetch_list=[h])
        assert value.shape == (batch, 4)


def test_wrong_feed_shape_names_the_variable(fresh_programs, rng):
    main, startup = fresh_programs
    _x, h, _loss = _affine(main)
    exe = fg.Executor()
    exe.run(startup)
    with pytest.raises(ExecutionError, match=r"'x'.*\[5, 4\].*\[-1, 3\]"):
        exe.run(main, feed={"x": rng.normal(size=(5, 4))}, fetch_list=[h])
    with pytest.raises(ExecutionError, match=r"'x'.*\[3\]"):
        exe.run(main, feed={"x": rng.normal(size=3)}, fetch_list=[h])


def test_wrong_feed_dtype_names_the_variable(fresh_programs, rng):
    main, startup = fresh_programs
    _x, h, _loss = _affine(main)
    exe = fg.Executor()
    exe.run(startup)
    with pytest.raises(ExecutionError, match=r"'x'.*float32.*float64"):
        exe.run(main, feed={"x": rng.normal(size=(2, 3)).astype(np.float32)}, fetch_list=[h])
    labels = static.data("labels", [-1], "int64")
    with pytest.raises(ExecutionError, match=r"'labels'.*float64.*int64"):
        exe.run(main, feed={"labels": np.array([0.5, 1.5])}, fetch_list=[labels])


def test_feed_of_unknown_variable_is_an_error(fresh_programs, rng):
    main, _ = fresh_programs
    _affine(main)
    with pytest.raises(ExecutionError, match="'nope'"):
        fg.Executor().run(main, feed={"nope": np.zeros(2)})


def test_unknown_fetch_name_is_an_error(fresh_programs, rng):
    main, startup = fresh_programs
    _affine(main)
    exe = fg.Executor()
    exe.run(startup)
    with pytest.raises(ExecutionError, match="'no_such_var'"):
        exe.run(main, feed={"x": rng.normal(size=(2, 3))}, fetch_list=["no_such_var"])
    with pytest.raises(TypeError, match="fetch_list"):
        exe.run(main, feed={"x": rng.normal(size=(2, 3))}, fetch_list=[3])


def test_reading_an_unset_variable_names_it(fresh_programs):
    main, _ = fresh_programs
    _x, h, _loss = _affine(main)   # startup not run: the weight has no value
    with pytest.raises(ExecutionError, match="layer.w_0"):
        fg.Executor().run(main, feed={"x": np.zeros((2, 3))}, fetch_list=[h])


# ------------------------------------------------------------------ scope contents across runs
def test_persistables_stay_in_global_scope_and_intermediates_do_not(fresh_programs, rng):
    main, startup = fresh_programs
    _x, h, loss = _affine(main)
    counter = main.global_block().create_var("counter", (1,), "float64", persistable=True)
    startup.global_block().create_var("counter", (1,), "float64", persistable=True)
    startup.global_block().append_op("fill_constant", {}, {"Out": ["counter"]},
                                     {"shape": [1], "value": 0.0, "dtype": "float64"})
    main.global_block().append_op("scale", {"X": counter}, {"Out": counter}, {"scale": 1.0, "bias": 1.0})
    pairs = fg.append_backward(loss)
    exe = fg.Executor()
    exe.run(startup)
    scope = fg.global_scope()
    weights = np.array(scope["layer.w_0"])
    for step in range(1, 4):
        exe.run(main, feed={"x": rng.normal(size=(3, 3))}, fetch_list=[loss])
        np.testing.assert_array_equal(scope["counter"], [float(step)])
    np.testing.assert_array_equal(scope["layer.w_0"], weights)
    intermediates = [v.name for v in main.global_block().vars.values() if not v.persistable]
    assert h.name in intermediates and pairs[0][1].name in intermediates
    assert not [n for n in intermediates if n in scope], "intermediates must not be left in the scope"
    assert set(scope.keys()) == {"layer.w_0", "layer.b_0", "counter"}


def test_separate_scopes_are_independent(fresh_programs, rng):
    main, startup = fresh_programs
    _x, h, _loss = _affine(main)
    exe = fg.Executor()
    first, second = fg.Scope(), fg.Scope()
    fg.seed(1)
    exe.run(startup, scope=first)
    fg.seed(2)
    exe.run(startup, scope=second)
    assert not np.array_equal(first["layer.w_0"], second["layer.w_0"])
    assert "layer.w_0" not in fg.global_scope()
    xs = rng.normal(size=(2, 3))
    (a,) = exe.run(main, feed={"x": xs}, fetch_list=[h], scope=first)
    np.testing.assert_allclose(a, _expected(first, xs)[0], rtol=1e-12)


# ------------------------------------------------------------------ plan caching
@pytest.fixture
def compiled(monkeypatch):
    """Every plan the executor compiles, in order."""
    plans = []
    original = executor_module.compile_block

    def recording(*args, **kwargs):
        plan = original(*args, **kwargs)
        plans.append(plan)
        return plan
    monkeypatch.setattr(executor_module, "compile_block", recording)
    return plans


def test_plan_is_compiled_once_and_recompiled_after_a_change(fresh_programs, compiled, rng):
    main, startup = fresh_programs
    x, h, loss = _affine(main)
    exe = fg.Executor()
    exe.run(startup)
    xs = rng.normal(size=(2, 3))
    exe.run(main, feed={"x": xs}, fetch_list=[loss])
    n = len(compiled)
    for _ in range(3):
        exe.run(main, feed={"x": xs}, fetch_list=[loss])
    assert len(compiled) == n, "running the same program again must reuse its plan"
    exe.run(main, feed={"x": xs}, fetch_list=[h])   # another fetch list: another plan
    assert len(compiled) == n + 1
    doubled = fg.scale(loss, 2.0)   # append_op invalidates the cache
    (value,) = exe.run(main, feed={"x": xs}, fetch_list=[doubled])
    assert len(compiled) == n + 2
    np.testing.assert_allclose(value, 2 * _expected(fg.global_scope(), xs)[1], rtol=1e-12)
    exe.run(main, feed={"x": xs}, fetch_list=[doubled])
    assert len(compiled) == n + 2
    assert "tanh" in compiled[-1].source, "the plan's generated source is inspectable"


def test_plan_sees_attribute_changes(fresh_programs, rng):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    y = fg.scale(x, 2.0)
    exe = fg.Executor()
    xs = np.array([1.0, 2.0])
    np.testing.assert_array_equal(exe.run(main, feed={"x": xs}, fetch_list=[y])[0], [2.0, 4.0])
    main.global_block().ops[-1]._set_attr("scale", 3.0)
    np.testing.assert_array_equal(exe.run(main, feed={"x": xs}, fetch_list=[y])[0], [3.0, 6.0])


# ------------------------------------------------------------------ errors at run time
def test_kernel_error_names_the_op_and_executor_keeps_working(fresh_programs):
    main, _ = fresh_programs
    table = static.data("table", [4, 2], "float64")
    ids = static.data("ids", [-1], "int64")
    rows = fg.gather(table, ids)
    total = fg.sum(rows)
    exe = fg.Executor()
    tables = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ExecutionError, match=r"gather.*(out of range|index).*"):
        exe.run(main, feed={"table": tables, "ids": np.array([0, 7])}, fetch_list=[total])
    try:
        exe.run(main, feed={"table": tables, "ids": np.array([0, 7])}, fetch_list=[total])
    except ExecutionError as exc:
        assert "gather" in str(exc) and "ids" in str(exc)
    (value,) = exe.run(main, feed={"table": tables, "ids": np.array([1, 3])}, fetch_list=[total])
    assert value == 2 + 3 + 6 + 7
    with pytest.raises(ExecutionError):
        exe.run(main, feed={"table": tables, "ids": np.array([9])}, fetch_list=[total])
    (value,) = exe.run(main, feed={"table": tables, "ids": np.array([0])}, fetch_list=[total])
    assert value == 1


def test_executor_works_after_a_feed_error(fresh_programs, rng):
    main, startup = fresh_programs
    _x, h, _loss = _affine(main)
    exe = fg.Executor()
    exe.run(startup)
    with pytest.raises(ExecutionError):
        exe.run(main, feed={"x": rng.normal(size=(2, 5))}, fetch_list=[h])
    (value,) = exe.run(main, feed={"x": np.ones((2, 3))}, fetch_list=[h])
    np.testing.assert_allclose(value, _expected(fg.global_scope(), np.ones((2, 3)))[0], rtol=1e-12)


def test_check_nan_inf_names_the_first_bad_op(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    y = fg.log(x)
    z = fg.exp(y)
    feed = {"x": np.array([1.0, -1.0])}
    with np.errstate(invalid="ignore"):
        (value,) = fg.Executor().run(main, feed=feed, fetch_list=[z])
        assert np.isnan(value[1])
        with pytest.raises(NanInfError, match=r"NaN.*log"):
            fg.Executor(check_nan_inf=True).run(main, feed=feed, fetch_list=[z])


def test_run_rejects_a_non_program():
    with pytest.raises(TypeError, match="Program"):
        fg.Executor().run("main")


def test_fetch_list_that_is_not_a_list_is_a_clear_error(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    y = fg.exp(x)
    with pytest.raises(TypeError, match="fetch_list"):
        fg.Executor().run(main, feed={"x": np.ones(2)}, fetch_list=y)


def test_feed_that_is_not_a_dict_is_a_clear_error(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    y = fg.exp(x)
    with pytest.raises(TypeError, match="feed"):
        fg.Executor().run(main, feed=[("x", np.ones(2))], fetch_list=[y])


def test_a_failed_run_leaves_persistables_untouched(fresh_programs):
    main, startup = fresh_programs
    block = main.global_block()
    counter = block.create_var("counter", (1,), "float64", persistable=True)
    startup.global_block().create_var("counter", (1,), "float64", persistable=True)
    startup.global_block().append_op("fill_constant", {}, {"Out": ["counter"]},
                                     {"shape": [1], "value": 0.0, "dtype": "float64"})
    block.append_op("scale", {"X": counter}, {"Out": counter}, {"bias": 1.0})
    table = static.data("table", [3], "float64")
    ids = static.data("ids", [-1], "int64")
    picked = fg.gather(table, ids)
    exe = fg.Executor()
    exe.run(startup)
    exe.run(main, feed={"table": np.zeros(3), "ids": np.array([0])}, fetch_list=[picked])
    np.testing.assert_array_equal(fg.global_scope()["counter"], [1.0])
    with pytest.raises(ExecutionError, match="gather"):
        exe.run(main, feed={"table": np.zeros(3), "ids": np.array([5])}, fetch_list=[picked])
    np.testing.assert_array_equal(fg.global_scope()["counter"], [1.0])
    exe.run(main, feed={"table": np.zeros(3), "ids": np.array([2])}, fetch_list=[picked])
    np.testing.assert_array_equal(fg.global_scope()["counter"], [2.0])


def test_fetched_parameters_and_feeds_are_copies(fresh_programs):
    """Writing into a fetched array must not change the scope, nor the caller's feed."""
    main, startup = fresh_programs
    x = static.data("x", [3], "float64")
    w = static.create_parameter([3], "float64", name="w")
    y = x * w
    exe = fg.Executor()
    exe.run(startup)
    feed = np.ones(3)
    w_value, x_value, y_value = exe.run(main, feed={"x": feed}, fetch_list=[w, x, y])
    w_value[:] = 0.0
    x_value[:] = 5.0
    assert not np.all(fg.global_scope()["w"] == 0.0)
    np.testing.assert_array_equal(feed, np.ones(3))


def test_making_a_variable_persistable_after_a_run_takes_effect(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    h = fg.exp(x)
    exe = fg.Executor()
    exe.run(main, feed={"x": np.zeros(2)}, fetch_list=[h])
    assert h.name not in fg.global_scope()
    h.persistable = True
    exe.run(main, feed={"x": np.zeros(2)}, fetch_list=[h])
    np.testing.assert_array_equal(fg.global_scope()[h.name], np.ones(2))


def test_feeding_a_variable_that_an_op_writes_first_is_an_error(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    h = fg.exp(x)
    with pytest.raises(fg.framework.ExecutionError, match=f"feed '{h.name}' would be ignored: op #0 \\(exp\\)"):
        fg.Executor().run(main, feed={"x": np.zeros(2), h.name: np.full(2, 100.0)}, fetch_list=[h])


# ---------------------------------------------------------------- fetched arrays are the caller's own
@pytest.mark.parametrize("make", [lambda w: fg.reshape(w, [6]), lambda w: apply_op("assign", {"X": w}),
                                  lambda w: fg.transpose(w, [1, 0]), lambda w: fg.squeeze(fg.unsqueeze(w, [0]), [0]),
                                  lambda w: fg.flatten(w), lambda w: w[0]],
                         ids=["reshape", "assign", "transpose", "unsqueeze_squeeze", "flatten", "getitem"])
def test_writing_into_a_fetched_view_of_a_parameter_leaves_the_parameter_alone(make):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        w = fg.static.create_parameter([2, 3], "float64", name="w_alias")
        out = make(w)
    scope = fg.Scope()
    exe = fg.Executor()
    with fg.scope_guard(scope):
        exe.run(startup)
        before = np.array(scope["w_alias"])
        (got,) = exe.run(main, fetch_list=[out])
        got[...] = 123.0
        np.testing.assert_array_equal(scope["w_alias"], before)
        (again,) = exe.run(main, fetch_list=[out])
        assert not np.shares_memory(again, scope["w_alias"])


def test_writing_into_a_fetched_view_of_a_feed_leaves_the_feed_alone():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x_alias", [2, 3], "float64")
        outs = [fg.reshape(x, [3, 2]), apply_op("assign", {"X": x}), fg.transpose(x, [1, 0])]
    feed = np.arange(6.0).reshape(2, 3)
    fetched = fg.Executor().run(main, feed={"x_alias": feed}, fetch_list=outs)
    for array in fetched:
        array[...] = -1.0
    np.testing.assert_array_equal(feed, np.arange(6.0).reshape(2, 3))


def test_a_fetched_fresh_result_is_not_copied_and_shares_nothing():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        w = fg.static.create_parameter([4], "float64", name="w_alias2")
        y = fg.scale(w, 2.0)
    scope = fg.Scope()
    with fg.scope_guard(scope):
        fg.Executor().run(startup)
        (got,) = fg.Executor().run(main, fetch_list=[y])
        assert got.base is None and not np.shares_memory(got, scope["w_alias2"])
