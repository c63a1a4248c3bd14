"""The static grad builder sums a broadcast gradient back to its input's shape (`reduce_as`) only
where the forward op may have broadcast it: an unknown (-1) dimension can still hide a
broadcast, so it is skipped only when no other input of the op could have expanded it."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg


def _grads(build, feed):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        out, inputs = build()
        grads = fg.gradients([fg.sum(out)], inputs)
    n_reduce = sum(op.type == "reduce_as" for op in main.global_block().ops)
    values = fg.Executor().run(main, feed=feed, fetch_list=grads, scope=fg.Scope())
    return values, n_reduce


def _data(name, shape):
    var = fg.static.data(name, shape, "float64")
    var.stop_gradient = False
    return var


@pytest.mark.parametrize("x_rows, y_rows", [(1, 4), (4, 1), (4, 4)])
def test_two_unknown_batch_dims_may_broadcast(x_rows, y_rows):
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((x_rows, 3)), "y": rng.standard_normal((y_rows, 3))}

    def build():
        x, y = _data("x", [-1, 3]), _data("y", [-1, 3])
        return fg.tanh(x * y), [x, y]
    (dx, dy), n_reduce = _grads(build, feed)
    assert n_reduce == 2  # both kept: either batch may be 1
    x, y = feed["x"], feed["y"]
    d = (1 - np.tanh(x * y) ** 2)
    np.testing.assert_allclose(dx, (d * y).sum(axis=0, keepdims=True) if x_rows == 1 < y_rows else d * y)
    np.testing.assert_allclose(dy, (d * x).sum(axis=0, keepdims=True) if y_rows == 1 < x_rows else d * x)


def test_a_bias_cannot_broadcast_the_batch():
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((5, 3)), "b": rng.standard_normal(3)}

    def build():
        x, b = _data("x", [-1, 3]), _data("b", [3])
        return fg.nn.functional.relu(x + b), [x, b]
    (dx, db), n_reduce = _grads(build, feed)
    assert n_reduce == 1  # only the bias gradient is summed; relu's and x's pass as they are
    mask = (feed["x"] + feed["b"] > 0).astype(np.float64)
    np.testing.assert_allclose(dx, mask)
    np.testing.assert_allclose(db, mask.sum(axis=0))


def test_a_non_operator_op_keeps_the_sum():
    """matmul is not an operator expression: its unknown batch keeps the reduce_as."""
    rng = np.random.default_rng(2)
    feed = {"x": rng.standard_normal((5, 3)), "w": rng.standard_normal((3, 3))}

    def build():
        x, w = _data("x", [-1, 3]), _data("w", [3, 3])
        return fg.matmul(x, w), [x]
    (dx,), n_reduce = _grads(build, feed)
    assert n_reduce == 1
    np.testing.assert_allclose(dx, np.ones((5, 3)) @ feed["w"].T)
