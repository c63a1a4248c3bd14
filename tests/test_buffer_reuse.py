"""Buffer reuse in the executor (executor/inplace.py, plan.py): elementwise ops write into inputs
that die there, values read only for their shape are freed early; results are bit for bit those
of a plan without reuse, and nothing anyone else can see is ever written."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.dispatch import apply_op
from fluidgrad.executor import plan as plan_module


def _run(build, feed, fetch, reuse, scope=None):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        fetch_vars = build()
    scope = scope if scope is not None else fg.Scope()
    exe = fg.Executor()
    fg.seed(3)
    exe.run(startup, scope=scope)
    saved, plan_module.REUSE_BUFFERS = plan_module.REUSE_BUFFERS, reuse
    try:
        values, stats = exe.run(main, feed=feed, fetch_list=fetch(fetch_vars), scope=scope, return_stats=True)
        source = exe._plan(main.global_block(), feed.keys(), [v.name for v in fetch(fetch_vars)]).source
    finally:
        plan_module.REUSE_BUFFERS = saved
    return values, stats, source, scope


def _mlp():
    x = fg.static.data("x", [None, 256])
    label = fg.static.data("label", [None, 1], "int64")
    h = fg.static.nn.fc(x, 256, activation="relu")
    h = fg.static.nn.fc(h, 256, activation="relu")
    loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(fg.static.nn.fc(h, 10), label))
    params_grads = fg.optimizer.SGD(0.1).minimize(loss)[1]
    return [loss] + [g for _, g in params_grads]


def test_training_step_is_bit_identical_with_less_memory():
    rng = np.random.default_rng(0)
    feed = {"x": rng.random((8, 256), dtype=np.float32), "label": rng.integers(0, 10, (8, 1))}
    fetch = lambda vs: vs  # noqa: E731
    plain, plain_stats, plain_source, plain_scope = _run(_mlp, feed, fetch, reuse=False)
    reused, stats, source, scope = _run(_mlp, feed, fetch, reuse=True)
    assert "(into " in source and "(into " not in plain_source
    assert "_meta(" in source
    for got, want in zip(reused, plain):
        np.testing.assert_array_equal(got, want)
    for name in plain_scope.vars:  # the parameters after the sgd step too
        np.testing.assert_array_equal(scope[name], plain_scope[name])
    # fetching only the loss, gradients die at their update: less memory, same parameters
    _, plain_stats, _, plain_scope = _run(_mlp, feed, lambda vs: vs[:1], reuse=False)
    _, stats, _, scope = _run(_mlp, feed, lambda vs: vs[:1], reuse=True)
    for name in plain_scope.vars:
        np.testing.assert_array_equal(scope[name], plain_scope[name])
    assert stats.peak_live_bytes < 0.8 * plain_stats.peak_live_bytes


def test_a_value_seen_under_another_name_is_not_written():
    """`assign` aliases (the same array under two names): the alias is fetched, the original dies
    at an elementwise op that may write in place; the run-time check must refuse."""
    a = np.arange(64 * 32, dtype=np.float64).reshape(64, 32)

    def build():
        x = fg.static.data("x", [64, 32], "float64")
        t = x + x
        alias = apply_op("assign", {"X": t})
        out = t * x  # t dies here; its array is also `alias`
        return alias, out
    values, _, source, _ = _run(build, {"x": a}, lambda vs: list(vs), reuse=True)
    assert "(into " in source  # planned in place, refused at run time
    np.testing.assert_array_equal(values[0], a + a)
    np.testing.assert_array_equal(values[1], (a + a) * a)


def test_feeds_scope_and_fetches_never_share_memory():
    rng = np.random.default_rng(1)
    feed = {"x": rng.random((8, 256), dtype=np.float32), "label": rng.integers(0, 10, (8, 1))}
    x_before = feed["x"].copy()
    values, _, _, scope = _run(_mlp, feed, lambda vs: vs, reuse=True)
    np.testing.assert_array_equal(feed["x"], x_before)
    stored = [scope[name] for name in scope.vars]
    for value in values:
        assert not any(np.shares_memory(value, s) for s in stored)
        assert not np.shares_memory(value, feed["x"])


@pytest.mark.parametrize("reuse", [False, True])
def test_loop_body_values_are_not_written(reuse):
    """Values a while loop's step scopes keep are read again by its gradient."""
    def build():
        x = fg.static.data("x", [32, 32], "float64")
        x.stop_gradient = False
        i = fg.full([], 0, "int64")
        _, y = fg.static.nn.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, fg.tanh(y * x) + y), [i, x])
        z = y * y + x
        return z, fg.gradients([fg.sum(z)], [x])[0]
    a = np.random.default_rng(2).standard_normal((32, 32)) * 0.1
    plain, *_ = _run(build, {"x": a}, lambda vs: list(vs), reuse=False)
    values, *_ = _run(build, {"x": a}, lambda vs: list(vs), reuse=reuse)
    for got, want in zip(values, plain):
        np.testing.assert_array_equal(got, want)
