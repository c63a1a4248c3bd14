"""Placement of values other ops read too (executor/placement.py, `OpDef.offer_reads`): the case
of the split weight gradients, whose op publishes the layers' activations in shared memory.

A test-only consumer, `test_publish`, copies its inputs into a buffer of its own, as
c_split_sgd publishes X and Y, and offers that buffer to their producers at the shapes of its
last run (batch dimensions unknown when the plan is compiled). Every plan runs with placement on
and off: fetched values, including those of the other ops reading a placed value, must be the
same bits.
"""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.executor import compile_block, placement
from fluidgrad.framework import op_def as op_registry
from fluidgrad.ops import placement as op_placement
from fluidgrad.ops.registry import register_op

_LAST: dict[str, list[np.ndarray]] = {}   # key -> the buffer's regions, shaped as at the last run
_SEEN: list[list[bool]] = []


def _publish_kernel(xs, key="", placed=None):
    arrays = [np.asarray(x) for x in xs]
    regions = _LAST.get(key)
    if regions is None or [r.shape for r in regions] != [a.shape for a in arrays]:
        regions = _LAST[key] = [np.zeros(a.shape, a.dtype) for a in arrays]
    seen = []
    for k, (array, region) in enumerate(zip(arrays, regions)):
        seen.append(placed is not None and op_placement.is_placed(placed[k], array, region))
        if not seen[-1]:
            np.copyto(region, array)
    _SEEN.append(seen)
    return np.concatenate([r.reshape(-1) for r in regions])


def _publish_offer(shapes, dtypes, key=""):
    def offer():
        regions = _LAST.get(key)
        if regions is None:
            return None
        return [op_placement.Destination(r, None, r.__array_interface__["data"][0]) for r in regions]
    return key, offer


def _publish_infer(ctx) -> None:
    ctx.set_output("Out", [-1], ctx.dtypes("X")[0])


@pytest.fixture(autouse=True)
def publish_op():
    register_op("test_publish", inputs="X*", outputs="Out", attrs={"key": ""}, kernel=_publish_kernel,
                infer=_publish_infer, grad=op_registry.NO_GRADIENT, offer=_publish_offer, offer_reads=("X",))
    yield
    del op_registry._REGISTRY["test_publish"]
    _LAST.clear()
    _SEEN.clear()


def publish(xs, key="k"):
    block = fg.default_main_program().current_block()
    out = block.create_var(name=fg.framework.unique_name("published"), shape=[-1], dtype=xs[0].dtype)
    block.append_op("test_publish", {"X": list(xs)}, {"Out": [out]}, {"key": key})
    return out


def run(program, feeds, fetch, enabled):
    """Compile (placement on or off), run once per feed; the plan, the last run's fetches, what
    the consumer found in place at each run."""
    before, placement.ENABLED = placement.ENABLED, enabled
    try:
        plan = compile_block(program.global_block(), list(feeds[0]), [v.name for v in fetch])
    finally:
        placement.ENABLED = before
    _LAST.clear()
    _SEEN.clear()
    scope, runtime = fg.Scope(), fg.Executor()._runtime
    for feed in feeds:
        values = [np.array(v) for v in plan.fn(scope, dict(feed), runtime)]
    return plan, values, list(_SEEN)


def same_bits(a, b):
    return all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def feeds(*rows):
    rng = np.random.default_rng(3)
    return [{"x": rng.standard_normal((n, 6)).astype("float32")} for n in rows]


def _layers():
    """x -> relu(x W0) -> tanh(. W1) (through an assign) -> . W2; the activations published, and
    read by the next layer's matmul and by a sum fetched beside them."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 6], "float32")
        w0, w1, w2 = (fg.static.create_parameter(s, "float32") for s in ([6, 5], [5, 4], [4, 3]))
        h0 = fg.nn.functional.relu(fg.matmul(x, w0))
        h1 = fg.tanh(fg.matmul(h0, w1))
        alias = fg.assign(h1)
        out = fg.matmul(alias, w2)
        d = fg.add(out, out)
        published = publish([h0, alias, d])
        check = fg.sum(h0) + fg.sum(alias)
    return main, (h0, h1, d), [published, out, check]


def _init(main):
    scope_values = {p.name: np.random.default_rng(5).standard_normal(p.shape).astype("float32")
                    for p in main.all_parameters()}
    for p in main.all_parameters():
        p.persistable = True
    return scope_values


def test_producers_write_values_other_ops_read_into_the_offered_buffer():
    """relu, tanh (a ufunc, reached through an assign) and an elementwise add write straight into
    the buffer; the next layers read them there; a batch of another size than the last run's is
    copied as before."""
    main, (h0, h1, d), fetch = _layers()
    values = _init(main)
    runs = feeds(4, 4, 7, 7)
    for feed in runs:
        feed.update(values)
    plan_on, on, seen_on = run(main, runs, fetch, True)
    plan_off, off, seen_off = run(main, runs, fetch, False)
    assert set(plan_on.placed) == {h0.name, h1.name, d.name} and not plan_off.placed
    assert seen_on == [[False] * 3, [True] * 3, [False] * 3, [True] * 3]
    assert not any(any(s) for s in seen_off)
    assert same_bits(on, off)
    f = runs[-1]
    h0_value = np.maximum(f["x"] @ values[main.all_parameters()[0].name], 0)
    np.testing.assert_allclose(on[0][:h0_value.size], h0_value.reshape(-1), rtol=1e-6)


def _check_refused(main, fetch, name, extra_feed=None):
    runs = feeds(4, 4)
    for feed in runs:
        feed.update(_init(main))
        feed.update(extra_feed or {})
    plan_on, on, seen = run(main, runs, fetch, True)
    _, off, _ = run(main, runs, fetch, False)
    assert name not in plan_on.placed
    assert same_bits(on, off)
    return plan_on


def test_a_fetched_value_is_not_placed():
    main, (h0, _, _), fetch = _layers()
    _check_refused(main, fetch + [h0], h0.name)


def test_a_value_read_by_an_op_that_stores_a_persistable_is_not_placed():
    """Such an op might keep a view of the buffer past the run."""
    main, (h0, _, _), fetch = _layers()
    with fg.program_guard(main, fg.Program()):
        kept = main.global_block().create_var(name="kept", shape=[-1, 5], dtype="float32", persistable=True)
        main.global_block().append_op("reshape", {"X": [h0]}, {"Out": [kept]}, {"shape": [-1, 5]})
    _check_refused(main, fetch, h0.name)


def test_a_value_written_twice_fed_or_published_twice_is_not_placed():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 6], "float32")
        h = fg.nn.functional.relu(x)
        published = publish([h, h, x])
    plan = _check_refused(main, [published], h.name)
    assert not plan.placed


def test_a_value_read_in_a_sub_block_is_not_placed():
    main, (h0, _, _), fetch = _layers()
    with fg.program_guard(main, fg.Program()):
        branch = fg.static.nn.cond(fg.sum(h0) > -1e9, lambda: fg.sum(h0), lambda: fg.sum(h0) * 2.0)
    _check_refused(main, fetch + [branch], h0.name)


@pytest.mark.parametrize("op_type", ["relu", "relu_grad", "elementwise_add", "elementwise_mul", "exp"])
def test_the_out_forms_give_the_kernels_bits(op_type):
    from fluidgrad.ops.registry import get_op_def
    rng = np.random.default_rng(4)
    args = [rng.standard_normal((33, 17)).astype("float32") for _ in get_op_def(op_type).inputs]
    if op_type == "elementwise_add":
        args[1] = args[1][0]  # broadcast
    kernel = get_op_def(op_type).kernel
    form = placement.producer_form(op_type, kernel, {})
    expected = kernel(*args)
    for scale in (None, np.float32(0.5)):
        target = np.zeros(expected.size + 1, np.float32)[1:].reshape(expected.shape)
        result = form((target, scale), *args)
        assert result is target
        assert result.tobytes() == (expected if scale is None else expected * scale).tobytes()
    wrong = np.zeros((3, 17), np.float32)  # another shape: the kernel's value, untouched destination
    assert form((wrong, None), *args).tobytes() == expected.tobytes() and not wrong.any()
