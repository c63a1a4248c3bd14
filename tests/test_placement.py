"""Placement (executor/placement.py): producers write straight into the buffer a later op offers.

A test-only consumer, `test_pack`, copies its inputs (times `scale`) into a flat buffer of its
own, as c_bucket_allreduce packs gradients into its bucket, and records which inputs it found
already in place. Every plan is run with placement on and off: the bits must not change; the
plan-level checks say which variables were placed, and which were refused and why.
"""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.executor import compile_block, placement
from fluidgrad.framework import op_def as op_registry
from fluidgrad.ops import placement as op_placement
from fluidgrad.ops.registry import register_op

_BUFFERS: dict[str, np.ndarray] = {}
_SEEN: list[list[bool]] = []
_OFFERS = {"on": True, "destination": "good"}


def _flat(key: str, size: int, dtype: np.dtype) -> np.ndarray:
    flat = _BUFFERS.get(key)
    if flat is None or flat.size != size or flat.dtype != dtype:
        flat = _BUFFERS[key] = np.zeros(size + 1, dtype)[1:]  # one element in: not 16-byte aligned
    return flat


def _pack_kernel(xs, scale=0.0, key="", placed=None):
    arrays = [np.asarray(x) for x in xs]
    flat = _flat(key, sum(a.size for a in arrays), arrays[0].dtype)
    factor = None if scale == 0.0 else flat.dtype.type(scale)
    start, seen = 0, []
    for k, array in enumerate(arrays):
        part = flat[start:start + array.size]
        seen.append(placed is not None and op_placement.is_placed(placed[k], array, part))
        if not seen[-1]:
            np.copyto(part, array.reshape(-1)) if factor is None else np.multiply(array.reshape(-1), factor, out=part)
        start += array.size
    _SEEN.append(seen)
    return flat.copy()


def _pack_offer(shapes, dtypes, scale=0.0, key=""):
    if not _OFFERS["on"] or key == "declines":
        return None
    dtype = np.dtype(dtypes[0])
    size = sum(int(np.prod(s)) for s in shapes)
    factor = None if scale == 0.0 else dtype.type(scale)

    def offer():
        flat = _flat(key, size, dtype)
        if _OFFERS["destination"] == "none":
            return None
        if _OFFERS["destination"] == "read-only":
            flat = flat.copy()
            flat.flags.writeable = False
        return op_placement.pieces_of(flat, shapes, factor)
    return key, offer


def _pack_infer(ctx) -> None:
    shapes = ctx.shapes("X")
    ctx.set_output("Out", [sum(int(np.prod(s)) for s in shapes)], ctx.dtypes("X")[0])


@pytest.fixture(autouse=True)
def pack_op():
    register_op("test_pack", inputs="X*", outputs="Out", attrs={"scale": 0.0, "key": ""}, kernel=_pack_kernel,
                infer=_pack_infer, grad=op_registry.NO_GRADIENT, offer=_pack_offer)
    _OFFERS.update(on=True, destination="good")
    yield
    del op_registry._REGISTRY["test_pack"]
    _BUFFERS.clear()
    _SEEN.clear()


def pack(xs, scale=0.0, key="k"):
    block = fg.default_main_program().current_block()
    out = block.create_var(name=fg.framework.unique_name("pack"), shape=[-1], dtype=xs[0].dtype)
    block.append_op("test_pack", {"X": list(xs)}, {"Out": [out]}, {"scale": scale, "key": key})
    return out


def run(program, feed, fetch, enabled, scope=None):
    """Compile (placement on or off) and run twice (a buffer is offered from the first run on);
    the plan, the fetched values of the second run, and what the consumer found in place."""
    before, placement.ENABLED = placement.ENABLED, enabled
    try:
        plan = compile_block(program.global_block(), list(feed), [v.name if hasattr(v, "name") else v for v in fetch])
    finally:
        placement.ENABLED = before
    scope = scope if scope is not None else fg.Scope()
    _SEEN.clear()
    runtime = fg.Executor()._runtime   # for control-flow ops
    plan.fn(scope, dict(feed), runtime)
    values = [np.array(v) for v in plan.fn(scope, dict(feed), runtime)]
    return plan, values, list(_SEEN)


def same_bits(a, b):
    return all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scale", [0.0, 0.5, 1 / 3])
def test_producers_write_into_the_offered_buffer_with_the_same_bits(dtype, scale):
    """A weight gradient (matmul, transpose_x), a transposed product, a K=1 outer product (the
    kernel, then a copy), a bias gradient (reduce_as) and an elementwise sum, all in place."""
    rng = np.random.default_rng(0)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [7, 5], dtype)
        dy = fg.static.data("dy", [7, 3], dtype)
        col = fg.static.data("col", [4, 1], dtype)
        row = fg.static.data("row", [1, 6], dtype)
        bias = fg.static.data("bias", [3], dtype)
        bias_grad = main.current_block().create_var(name="bias_grad", shape=[3], dtype=dtype)
        main.current_block().append_op("reduce_as", {"X": [dy], "Target": [bias]}, {"Out": [bias_grad]})
        grads = [fg.matmul(x, dy, transpose_x=True), fg.matmul(dy, x, transpose_x=True, transpose_y=False),
                 fg.matmul(x, x, transpose_y=True), fg.matmul(col, row), bias_grad]
        grads.append(fg.add(x, x))
        packed = pack(grads, scale)
    feed = {"x": rand(rng, (7, 5), dtype), "dy": rand(rng, (7, 3), dtype), "col": rand(rng, (4, 1), dtype),
            "row": rand(rng, (1, 6), dtype), "bias": rand(rng, (3,), dtype)}
    plan_on, on, seen_on = run(main, feed, [packed], True)
    plan_off, off, seen_off = run(main, feed, [packed], False)
    assert set(plan_on.placed) == {g.name for g in grads} and not plan_off.placed
    assert seen_on == [[True] * 6] * 2 and seen_off == [[False] * 6] * 2
    assert same_bits(on, off)
    f = feed
    expected = [f["x"].T @ f["dy"], f["dy"].T @ f["x"], f["x"] @ f["x"].T, f["col"] @ f["row"],
                f["dy"].sum(0), f["x"] + f["x"]]
    np.testing.assert_allclose(on[0], np.concatenate([e.reshape(-1) for e in expected]) * (scale or 1),
                               rtol=1e-5 if dtype == "float32" else 1e-12)
    assert "(into op" in plan_on.source and "placed=_place" in plan_on.source


def test_the_matmul_form_gives_the_kernels_bits_at_any_offset():
    from fluidgrad.ops.registry import get_op_def
    kernel = get_op_def("matmul").kernel
    rng = np.random.default_rng(1)
    for m, k, n in [(5, 64, 7), (512, 64, 10), (33, 17, 65), (128, 3, 128)]:
        for tx, ty in [(False, False), (True, False), (False, True), (True, True)]:
            x = rand(rng, (k, m) if tx else (m, k), "float32")
            y = rand(rng, (n, k) if ty else (k, n), "float32")
            form = placement.producer_form("matmul", kernel, {"transpose_x": tx, "transpose_y": ty})
            for offset in (0, 1, 3):
                flat = np.zeros(m * n + offset + 1, np.float32)[offset:offset + m * n]
                target = flat.reshape(m, n)
                result = form((target, np.float32(0.25)), x, y)
                assert result is target
                assert result.tobytes() == (kernel(x, y, transpose_x=tx, transpose_y=ty) * np.float32(0.25)).tobytes()


def _chain(dtype="float32"):
    """x -> matmul -> g, g packed; returns (program, x, g, packed)."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [6, 4], dtype)
        g = fg.matmul(x, x, transpose_x=True)
    return main, x, g


def _feed():
    return {"x": np.random.default_rng(2).standard_normal((6, 4)).astype("float32")}


def _check_refused(main, fetch, name):
    plan_on, on, seen = run(main, _feed(), fetch, True)
    _, off, _ = run(main, _feed(), fetch, False)
    assert name not in plan_on.placed
    assert not any(any(s) for s in seen)
    assert same_bits(on, off)
    return plan_on


def test_a_fetched_value_is_not_placed():
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        packed = pack([g])
    _check_refused(main, [packed, g], g.name)


def test_a_value_read_by_another_op_before_the_consumer_is_not_placed():
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        other = fg.scale(g, 2.0)
        packed = pack([g])
    _check_refused(main, [packed, other], g.name)


def test_a_value_read_after_the_consumer_is_not_placed():
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        packed = pack([g])
        later = fg.scale(g, 2.0)
    _check_refused(main, [packed, later], g.name)


def test_a_value_packed_twice_or_fed_is_not_placed():
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        packed = pack([g, g, x])
    plan = _check_refused(main, [packed], g.name)
    assert not plan.placed


def test_a_persistable_value_is_not_placed():
    main, x, g = _chain()
    g.persistable = True
    with fg.program_guard(main, fg.Program()):
        packed = pack([g])
    _check_refused(main, [packed], g.name)


def test_a_value_read_in_a_sub_block_is_not_placed():
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        packed = pack([g])
        branch = fg.static.nn.cond(fg.sum(x) > -1e9, lambda: fg.sum(g), lambda: fg.sum(x))
    _check_refused(main, [packed, branch], g.name)


def _two_producers_around(between):
    """g = x^T x, then `between`, then h = x x^T; both packed into buffer "k"."""
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        if between == "communication":
            other = main.current_block().create_var(name="reduced", shape=[6, 4], dtype="float32")
            main.current_block().append_op("c_allreduce_sum", {"X": [x]}, {"Out": [other]})
        elif between == "a sub-block":
            other = fg.static.nn.cond(fg.sum(x) > -1e9, lambda: fg.sum(x), lambda: fg.sum(x) * 2.0)
        elif between == "a declining offer":
            other = pack([fg.scale(x, 3.0)], key="declines")
        else:
            other = pack([fg.scale(x, 3.0)], key="k" if between == "an offer of the same buffer" else "other")
        h = fg.matmul(x, x, transpose_y=True)
        packed = pack([g, h])
    plan, on, seen = run(main, _feed(), [packed, other], True)
    _, off, _ = run(main, _feed(), [packed, other], False)
    assert same_bits(on, off)
    return plan, g, h


@pytest.mark.parametrize("between", ["an offer of the same buffer", "a declining offer", "a sub-block"])
def test_nothing_is_placed_across_an_op_that_may_use_the_buffer(between):
    plan, g, h = _two_producers_around(between)
    assert g.name not in plan.placed and h.name in plan.placed


@pytest.mark.parametrize("between", ["communication", "an offer of another buffer"])
def test_placement_spans_other_ops_communication_and_buffers(between):
    plan, g, h = _two_producers_around(between)
    assert g.name in plan.placed and h.name in plan.placed


def test_a_consumer_that_writes_a_persistable_output_or_has_unknown_shapes_gets_nothing():
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        packed = pack([g])
    packed.persistable = True
    _check_refused(main, [packed], g.name)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 4], "float32")
        g = fg.matmul(x, x, transpose_y=True)   # [-1, -1]
        packed = pack([g])
    _check_refused(main, [packed], g.name)


@pytest.mark.parametrize("destination", ["none", "read-only"])
def test_a_run_time_refusal_falls_back_to_the_consumers_copy(destination):
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        packed = pack([g], scale=0.5)
    _OFFERS["destination"] = destination
    plan, on, seen = run(main, _feed(), [packed], True)
    _, off, _ = run(main, _feed(), [packed], False)
    assert g.name in plan.placed and seen == [[False], [False]] and same_bits(on, off)


def test_a_consumer_that_declines_at_compile_time_costs_nothing():
    main, x, g = _chain()
    with fg.program_guard(main, fg.Program()):
        packed = pack([g])
    _OFFERS["on"] = False
    plan_on, on, _ = run(main, _feed(), [packed], True)
    plan_off, off, _ = run(main, _feed(), [packed], False)
    assert plan_on.source == plan_off.source and same_bits(on, off)


def test_data_parallel_programs_in_a_world_of_one_compile_as_before():
    """c_bucket_allreduce offers nothing without other ranks: the plan is the one without placement."""
    import fluidgrad.distributed as dist
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 8], "float32")
        loss = fg.mean(fg.static.nn.fc(fg.static.nn.fc(x, 16, activation="relu"), 4))
        dist.DistributedOptimizer(fg.optimizer.SGD(0.1)).minimize(loss)
    sources = []
    for enabled in (True, False):
        before, placement.ENABLED = placement.ENABLED, enabled
        try:
            sources.append(compile_block(main.global_block(), ["x"], [loss.name]).source)
        finally:
            placement.ENABLED = before
    assert sources[0] == sources[1] and "placed=" not in sources[0]
