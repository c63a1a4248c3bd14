"""Failures the gradient fuzzer found, shrunk and kept as ordinary tests.

Each test names what was wrong and checks the fixed behaviour against a value computed by
hand (or PyTorch), independent of the fuzzer's machinery.
"""
from __future__ import annotations

import numpy as np

import fluidgrad as fg
from fluidgrad.static import data


def _run(main, feed, fetch):
    return fg.Executor().run(main, feed=feed, fetch_list=fetch, scope=fg.Scope())


def test_concat_of_one_variable_twice_sums_both_gradient_parts(fresh_programs):
    """concat([x, x]): the grad op (a split) wrote x@GRAD twice in one op; the repeated-gradient
    sum renamed both slots to one @RENAME@ name and then read a name nobody wrote."""
    main, _ = fresh_programs
    x = data("x", [1], "float64")
    x.stop_gradient = False
    stopped = fg.exp(fg.tanh(x))
    stopped.stop_gradient = True
    loss = fg.add_n([fg.sum(x), fg.sum(fg.concat([x, x], 0)), fg.sum(stopped)])
    grad, = fg.gradients([loss], [x])
    value, = _run(main, {"x": np.ones(1)}, [grad])
    np.testing.assert_allclose(value, [3.0])


def test_concat_of_one_variable_three_times_with_append_backward(fresh_programs):
    main, _ = fresh_programs
    x = data("x", [2], "float64")
    x.stop_gradient = False
    loss = fg.sum(fg.square(fg.concat([x, x, x], 0)))
    fg.append_backward(loss)
    value, = _run(main, {"x": np.array([1.0, -2.0])}, ["x@GRAD"])
    np.testing.assert_allclose(value, 3 * 2 * np.array([1.0, -2.0]))


def test_while_gradient_of_a_0d_outer_variable_read_in_every_step(fresh_programs):
    """while_grad summed the per-step gradients of a 0-d outer variable with `out=`, but adding
    two 0-d arrays gives a NumPy scalar, which `out=` rejects: TypeError at the third step."""
    main, _ = fresh_programs
    w = data("w", [], "float64")
    x = data("x", [1], "float64")
    w.stop_gradient = x.stop_gradient = False
    i = fg.full([1], 0, "int64")
    limit = fg.full([1], 3, "int64")
    _, y = fg.static.nn.while_loop(lambda i, v: fg.less_than(i, limit),
                                   lambda i, v: [i + 1, fg.multiply(v, w)], [i, x])
    loss = fg.sum(y)
    gw, gx = fg.gradients([loss], [w, x])
    w_value, x_value = 0.7, np.array([1.3])
    got_w, got_x = _run(main, {"w": np.array(w_value), "x": x_value}, [gw, gx])
    np.testing.assert_allclose(got_w, 3 * w_value ** 2 * x_value[0])  # y = x w^3
    np.testing.assert_allclose(got_x, [w_value ** 3])


def test_grad_of_grad_through_concat_with_a_constant_input(fresh_programs):
    """Found by the second-order fuzzer: d/dx sum((d/dx sum(concat([x, c])^2))^2) = 8x."""
    main, _ = fresh_programs
    x = data("x", [1], "float64")
    x.stop_gradient = False
    c = data("c", [1], "float64")
    loss = fg.sum(fg.square(fg.concat([x, c], 0)))
    g, = fg.gradients([loss], [x])
    h, = fg.gradients([fg.sum(fg.multiply(g, g))], [x])
    value, = _run(main, {"x": np.array([1.5]), "c": np.array([2.0])}, [h])
    np.testing.assert_allclose(value, [12.0])


def test_cond_gradient_of_a_0d_outer_variable_read_in_one_branch(fresh_programs):
    """A 0-d outer value (a NumPy scalar at run time) read by a cond branch got a None gradient
    (not recognised as a float array), and the sum with its other gradient failed."""
    main, _ = fresh_programs
    x = data("x", [1], "float64")
    s = data("s", [], "float64")
    b = data("b", [1], "float64")
    x.stop_gradient = s.stop_gradient = b.stop_gradient = False
    a = fg.exp(s)
    pred = fg.greater_than(fg.sum(x), fg.full([], 0.0, "float64"))
    y = fg.static.nn.cond(pred, lambda: fg.multiply(x, fg.tanh(a)), lambda: fg.multiply(x, fg.tanh(b)))
    gs, gx, gb = fg.gradients([fg.add_n([fg.sum(y), fg.sum(a)])], [s, x, b])
    s_value, b_value = 0.3, 0.5
    for x_value in (1.0, -1.0):
        got_s, got_x, got_b = _run(main, {"x": np.array([x_value]), "s": np.array(s_value),
                                          "b": np.array([b_value])}, [gs, gx, gb])
        a_value = np.exp(s_value)
        if x_value > 0:  # loss = x tanh(e^s) + e^s
            np.testing.assert_allclose(got_s, x_value * (1 - np.tanh(a_value) ** 2) * a_value + a_value)
            np.testing.assert_allclose(got_x, [np.tanh(a_value)])
            np.testing.assert_allclose(got_b, [0.0])
        else:  # loss = x tanh(b) + e^s
            np.testing.assert_allclose(got_s, a_value)
            np.testing.assert_allclose(got_x, [np.tanh(b_value)])
            np.testing.assert_allclose(got_b, [x_value * (1 - np.tanh(b_value) ** 2)])
