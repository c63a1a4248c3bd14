"""executor/plan.py schedule(): optimizer ops move up to right after what they depend on, and
never past it, even when what they depend on has itself moved. Checked on a program built for
the corner, on random programs (every read-after-write, write-after-read and write-after-write
pair keeps its order; fetched values equal those of the block's own order), and on real
training programs."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.executor import plan as plan_module
from fluidgrad.executor.plan import schedule
from fluidgrad.framework.emit import emit


def _order_violations(block, order):
    """Pairs of ops (by index) whose data dependence `order` reverses."""
    position = {op: i for i, op in enumerate(order)}
    ops, bad = block.ops, []
    for j, later in enumerate(ops):
        for i in range(j):
            reads_j, writes_j = set(later.input_arg_names), set(later.output_arg_names)
            writes_i = set(ops[i].output_arg_names)
            if (writes_i & reads_j or set(ops[i].input_arg_names) & writes_j or writes_i & writes_j) \
                    and position[i] > position[j]:
                bad.append((i, j))
    return bad


def _run(program, feed, fetch, reorder):
    saved, plan_module.REUSE_BUFFERS = plan_module.REUSE_BUFFERS, reorder
    try:
        return fg.Executor().run(program, feed=feed, fetch_list=fetch, scope=fg.Scope())
    finally:
        plan_module.REUSE_BUFFERS = saved


def test_an_op_behind_a_moved_op_still_waits_for_its_other_inputs():
    """`total` reads `clipped` (an optimizer op moved up behind g1's op) and g2, computed after
    g1: it must not follow `clipped` up past g2's op."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [3], "float64")
        g1 = x * 2.0
        g2 = x * 3.0
        other = x * 4.0
        block = main.global_block()
        clipped = emit(block, "scale", {"X": [g1]}, {"scale": 0.5})
        more = x * 5.0
        total = emit(block, "elementwise_add", {"X": [clipped], "Y": [g2]})
    order = schedule(block)
    assert _order_violations(block, order) == []
    assert order.index(1) < order.index(5)     # g2's op before `total`
    assert order.index(3) < order.index(1)     # `clipped` still moved up behind g1's op
    values = _run(main, {"x": np.array([1.0, -2.0, 0.5])}, [total, other, more], reorder=True)
    np.testing.assert_allclose(values[0], 4.0 * np.array([1.0, -2.0, 0.5]))


def test_a_chain_of_moved_ops_joins_the_latest_group():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2], "float64")
        g = [x * float(k + 1) for k in range(4)]
        block = main.global_block()
        x * 7.0
        acc = emit(block, "scale", {"X": [g[0]]}, {"scale": 1.0})   # moves up behind g[0]'s op
        for k in (2, 1, 3):               # each reads the previous moved op and a later gradient
            x * 7.0
            acc = emit(block, "elementwise_add", {"X": [acc], "Y": [g[k]]})
    order = schedule(block)
    assert _order_violations(block, order) == []
    assert order.index(5) < order.index(1)
    value, = _run(main, {"x": np.array([1.0, 2.0])}, [acc], reorder=True)
    np.testing.assert_allclose(value, 10.0 * np.array([1.0, 2.0]))


def test_a_moved_writer_waits_for_every_earlier_reader():
    """`acc` is read by a forward op, then by an optimizer op that moves up to the front: the
    optimizer op writing `acc` after both must still follow the forward reader."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2], "float64")
        block = main.global_block()
        acc = block.create_var("acc", (2,), "float64", persistable=True)
        block.append_op("elementwise_add", {"X": [acc], "Y": [x]}, {"Out": [acc]}, {"op_role": fg.framework.OPTIMIZE})
        x * 2.0
        read = x + acc                                        # the forward reader
        x * 3.0
        early = emit(block, "elementwise_add", {"X": [x], "Y": [acc]})   # moves up behind the first write
        block.append_op("elementwise_add", {"X": [acc], "Y": [x]}, {"Out": [acc]}, {"op_role": fg.framework.OPTIMIZE})
    order = schedule(block)
    assert _order_violations(block, order) == []
    scope = fg.Scope()
    scope["acc"] = np.ones(2)
    saved, plan_module.REUSE_BUFFERS = plan_module.REUSE_BUFFERS, True
    try:
        values = fg.Executor().run(main, feed={"x": np.array([1.0, 2.0])}, fetch_list=[read, early], scope=scope)
    finally:
        plan_module.REUSE_BUFFERS = saved
    np.testing.assert_array_equal(values[0], [3.0, 5.0])     # x + (1 + x), before the second write
    np.testing.assert_array_equal(values[1], [3.0, 5.0])
    np.testing.assert_array_equal(scope["acc"], [3.0, 5.0])  # 1 + x + x


@st.composite
def _programs(draw):
    """Random blocks of forward ops and optimizer ops over earlier values and a few persistable
    accumulators that optimizer ops read and overwrite in place (write-after-read, write-after-write)."""
    return draw(st.lists(st.tuples(st.booleans(), st.integers(0, 10 ** 6), st.integers(0, 10 ** 6),
                                   st.sampled_from(["add", "scale", "write"])), min_size=2, max_size=14))


@settings(max_examples=80, deadline=None)
@given(_programs())
def test_random_programs_keep_every_dependence_and_every_value(steps):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [2], "float64")
        block = main.global_block()
        accumulators = [block.create_var(f"acc{k}", (2,), "float64", persistable=True) for k in range(2)]
        values = [x]
        for optimize, a, b, kind in steps:
            left, right = values[a % len(values)], values[b % len(values)]
            if kind == "write" and optimize:
                target = accumulators[a % 2]
                block.append_op("elementwise_add", {"X": [target], "Y": [right]}, {"Out": [target]},
                                {"op_role": fg.framework.OPTIMIZE})
                values.append(target)
            elif optimize:
                values.append(emit(block, "elementwise_add" if kind == "add" else "scale",
                                   {"X": [left], "Y": [right]} if kind == "add" else {"X": [left]},
                                   {} if kind == "add" else {"scale": 0.5}))
            else:
                values.append(left + right if kind == "add" else left * 1.5)
    assert _order_violations(block, schedule(block)) == []
    feed = {"x": np.array([0.25, -1.5])}
    fetch = [v for v in values[1:] if not v.persistable] + accumulators
    results = []
    for reorder in (False, True):
        scope = fg.Scope()  # accumulators start at one each run
        for acc in accumulators:
            scope[acc.name] = np.ones(2)
        saved, plan_module.REUSE_BUFFERS = plan_module.REUSE_BUFFERS, reorder
        try:
            results.append(fg.Executor().run(main, feed=feed, fetch_list=fetch, scope=scope))
        finally:
            plan_module.REUSE_BUFFERS = saved
    for plain, scheduled in zip(*results):
        np.testing.assert_array_equal(scheduled, plain)


@pytest.mark.parametrize("clip", [None, "global", "norm"])
@pytest.mark.parametrize("optimizer", ["SGD", "Momentum", "Adam"])
def test_training_programs_keep_every_dependence(optimizer, clip):
    grad_clip = {None: None, "global": fg.nn.ClipGradByGlobalNorm(1.0), "norm": fg.nn.ClipGradByNorm(1.0)}[clip]
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 4], "float64")
        h = fg.static.nn.fc(fg.static.nn.fc(x, 8, activation="relu"), 8, activation="relu")
        loss = fg.mean(fg.static.nn.fc(h, 1))
        getattr(fg.optimizer, optimizer)(0.1, grad_clip=grad_clip, weight_decay=0.01).minimize(loss)
    block = main.global_block()
    order = schedule(block)
    assert order != list(range(len(block.ops)))   # updates did move up
    assert _order_violations(block, order) == []
