"""Differentiable control flow: `while` / `while_grad`, `conditional_block` / `conditional_block_grad`,
`select_input`, `increment`, and the builders `static.nn.while_loop`, `static.nn.cond`, `static.While`.

Gradients are compared with PyTorch running the same Python control flow (float64, 1e-6 relative).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import static
from fluidgrad.static.control_flow import assign, increment
from fluidgrad.testing import check_grad

RTOL = 1e-6


def _run(program, feed, fetch, scope=None):
    return fg.Executor().run(program, feed=feed, fetch_list=fetch, scope=scope or fg.Scope())


def _close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-12, err_msg=what)


def _torch(feed):
    return {k: torch.tensor(v, requires_grad=v.dtype.kind == "f") for k, v in feed.items()}


# ------------------------------------------------------------------ the RNN through while_loop
T, B, D, H = 6, 3, 4, 5


def _rnn_feed(rng, sizes=(T, B, D, H)):
    t, b, d, h = sizes
    return {"x": rng.normal(size=(t, b, d)), "h0": rng.normal(size=(b, h)),
            "W": rng.normal(size=(d, h)) / np.sqrt(d), "U": rng.normal(size=(h, h)) / np.sqrt(h)}


def _build_rnn(sizes=(T, B, D, H), dtype="float64"):
    """h = tanh(x_t W + h U) over T steps, x_t gathered by the loop counter; loss = mean(h_T^2)."""
    T, B, D, H = sizes
    x = static.data("x", [T, B, D], dtype)
    h0 = static.data("h0", [B, H], dtype)
    W = static.data("W", [D, H], dtype)
    U = static.data("U", [H, H], dtype)
    steps = fg.full([], T, "int64")

    def body(i, h):
        x_t = fg.gather(x, i)
        return increment(i, in_place=False), fg.tanh(fg.matmul(x_t, W) + fg.matmul(h, U))

    _, h_last = static.nn.while_loop(lambda i, h: i < steps, body, [fg.full([], 0, "int64"), h0])
    loss = fg.mean(h_last * h_last)
    return loss, [W, U, h0, x]


def _torch_rnn(feed):
    t = _torch(feed)
    h = t["h0"]
    for step in range(T):
        h = torch.tanh(t["x"][step] @ t["W"] + h @ t["U"])
    loss = (h * h).mean()
    loss.backward()
    return loss.item(), {k: t[k].grad.numpy() for k in ("W", "U", "h0", "x")}


def test_rnn_loss_and_gradients_match_pytorch(fresh_programs, rng):
    main, _ = fresh_programs
    loss, wrt = _build_rnn()
    grads = fg.gradients([loss], wrt)
    feed = _rnn_feed(rng)
    values = _run(main, feed, [loss] + grads)
    want_loss, want = _torch_rnn(feed)
    _close(values[0], want_loss, "loss")
    for var, got in zip(wrt, values[1:]):
        _close(got, want[var.name], f"gradient of {var.name}")


def test_rnn_gradients_repeat_exactly(fresh_programs, rng):
    main, _ = fresh_programs
    loss, wrt = _build_rnn()
    grads = fg.gradients([loss], wrt)
    feed = _rnn_feed(rng)
    scope = fg.Scope()
    first = _run(main, feed, grads, scope)
    second = _run(main, feed, grads, scope)
    for a, b, var in zip(first, second, wrt):
        np.testing.assert_array_equal(a, b, err_msg=f"gradient of {var.name} changed on the second run")


def test_while_loop_leaves_its_arguments_alone(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    start = fg.full([], 0, "int64")
    i, y = static.nn.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2.0), [start, x])
    assert i is not start and y is not x
    got_x, got_y, got_i, got_start = _run(main, {"x": np.array([1.0, -2.0])}, [x, y, i, start])
    np.testing.assert_array_equal(got_x, [1.0, -2.0])
    np.testing.assert_array_equal(got_y, [8.0, -16.0])
    assert int(got_i) == 3 and int(got_start) == 0


def test_loop_var_swap_and_coupled_carried_gradients(fresh_programs, rng):
    """`return b, a` swaps; the loss reads only `a`, yet `b`'s gradient flows through it."""
    main, _ = fresh_programs
    a0 = static.data("a", [3], "float64")
    b0 = static.data("b", [3], "float64")
    i, a, b = static.nn.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, b * a, a),
                                   [fg.full([], 0, "int64"), a0, b0])
    loss = fg.sum(a)
    grads = fg.gradients([loss], [a0, b0])
    feed = {"a": rng.uniform(0.5, 1.5, 3), "b": rng.uniform(0.5, 1.5, 3)}
    got = _run(main, feed, [loss] + grads)
    t = _torch(feed)
    ta, tb = t["a"], t["b"]
    for _ in range(3):
        ta, tb = tb * ta, ta
    ta.sum().backward()
    _close(got[0], ta.sum().item(), "loss")
    _close(got[1], t["a"].grad.numpy(), "gradient of a")
    _close(got[2], t["b"].grad.numpy(), "gradient of b")


def test_zero_trip_loop_passes_values_and_gradients_through(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    x.stop_gradient = False
    n = static.data("n", [], "int64")
    _, y = static.nn.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 3.0), [fg.full([], 0, "int64"), x])
    loss = fg.sum(y * y)
    (dx,) = fg.gradients([loss], [x])
    for trips in (0, 2):
        got_y, got_dx = _run(main, {"x": np.array([1.0, 2.0]), "n": np.array(trips)}, [y, dx])
        factor = 3.0 ** trips
        _close(got_y, np.array([1.0, 2.0]) * factor, f"y after {trips} steps")
        _close(got_dx, 2 * np.array([1.0, 2.0]) * factor ** 2, f"dx after {trips} steps")


def test_scalar_loop_var_and_scalar_read_only_var(fresh_programs):
    """0-d values (which NumPy turns into scalars) carry and accumulate gradients like arrays."""
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    total, average = fg.sum(x), fg.mean(x)
    _, y = static.nn.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * average + total),
                                [fg.full([], 0, "int64"), total])
    (dx,) = fg.gradients([y], [x])
    feed = {"x": np.array([1.0, 2.0, 3.0])}
    got_y, got_dx = _run(main, feed, [y, dx])
    t = _torch(feed)
    ty = t["x"].sum()
    for _ in range(3):
        ty = ty * t["x"].mean() + t["x"].sum()
    ty.backward()
    _close(got_y, ty.item(), "y")
    _close(got_dx, t["x"].grad.numpy(), "dy/dx")


# ------------------------------------------------------------------ cond
def _build_branchy():
    x = static.data("x", [3], "float64")
    w = static.data("w", [3], "float64")
    pred = fg.sum(x) > 0.0
    out = static.nn.cond(pred, lambda: fg.exp(x) * w, lambda: fg.sin(x) * w * w)
    return fg.sum(out), [x, w]


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true-branch", "false-branch"])
def test_cond_gradient_follows_the_branch_that_ran(fresh_programs, rng, sign):
    main, _ = fresh_programs
    loss, wrt = _build_branchy()
    grads = fg.gradients([loss], wrt)
    feed = {"x": sign * rng.uniform(0.1, 1.0, 3), "w": rng.normal(size=3)}
    got = _run(main, feed, [loss] + grads)
    t = _torch(feed)
    out = torch.exp(t["x"]) * t["w"] if sign > 0 else torch.sin(t["x"]) * t["w"] * t["w"]
    out.sum().backward()
    _close(got[0], out.sum().item(), "loss")
    _close(got[1], t["x"].grad.numpy(), "gradient of x")
    _close(got[2], t["w"].grad.numpy(), "gradient of w")


def test_cond_returns_the_structure_of_the_branches(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    pair = static.nn.cond(fg.sum(x) > 0.0, lambda: (x + 1.0, x * 2.0), lambda: (x - 1.0, x * 3.0))
    assert isinstance(pair, tuple) and len(pair) == 2
    as_list = static.nn.cond(fg.sum(x) > 0.0, lambda: [x], lambda: [x * 0.0])
    assert isinstance(as_list, list)
    got = _run(main, {"x": np.array([-1.0, -2.0])}, list(pair) + as_list)
    _close(got[0], [-2.0, -3.0], "first output")
    _close(got[1], [-3.0, -6.0], "second output")
    _close(got[2], [0.0, 0.0], "list output")


def test_cond_inside_while(fresh_programs, rng):
    """Each step halves a positive value and squares a negative one's sine: branch per step."""
    main, _ = fresh_programs
    x = static.data("x", [1], "float64")
    x.stop_gradient = False

    def body(i, y):
        y_new = static.nn.cond(fg.sum(y) > 0.5, lambda: y * y, lambda: fg.exp(y) * 0.8)
        return i + 1, y_new

    _, y = static.nn.while_loop(lambda i, y: i < 5, body, [fg.full([], 0, "int64"), x])
    (dx,) = fg.gradients([fg.sum(y)], [x])
    for start in (0.9, 0.3, -1.0):
        got_y, got_dx = _run(main, {"x": np.array([start])}, [y, dx])
        t = torch.tensor([start], dtype=torch.float64, requires_grad=True)
        ty = t
        for _ in range(5):
            ty = ty * ty if ty.sum().item() > 0.5 else torch.exp(ty) * 0.8
        ty.sum().backward()
        _close(got_y, ty.detach().numpy(), f"y from {start}")
        _close(got_dx, t.grad.numpy(), f"dy/dx from {start}")


def test_nested_cond(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [1], "float64")
    x.stop_gradient = False
    inner = lambda: static.nn.cond(fg.sum(x) > 2.0, lambda: x * x * x, lambda: x * x)  # noqa: E731
    y = static.nn.cond(fg.sum(x) > 0.0, inner, lambda: -x)
    (dx,) = fg.gradients([fg.sum(y)], [x])
    for value, want_y, want_dx in ((3.0, 27.0, 27.0), (1.5, 2.25, 3.0), (-2.0, 2.0, -1.0)):
        got_y, got_dx = _run(main, {"x": np.array([value])}, [y, dx])
        _close(got_y, [want_y], f"y at {value}")
        _close(got_dx, [want_dx], f"dy/dx at {value}")


# ------------------------------------------------------------------ nesting and data-dependent trip counts
def test_nested_while_loops_give_x_to_the_sixth(fresh_programs):
    """y = 1; 3 times { 2 times { y = y * x } }: y = x^6, dy/dx = 6 x^5."""
    main, _ = fresh_programs
    x = static.data("x", [4], "float64")
    x.stop_gradient = False

    def outer_body(i, y):
        _, y = static.nn.while_loop(lambda j, y: j < 2, lambda j, y: (j + 1, y * x),
                                    [fg.full([], 0, "int64"), y])
        return i + 1, y

    _, y = static.nn.while_loop(lambda i, y: i < 3, outer_body, [fg.full([], 0, "int64"), fg.ones_like(x)])
    (dx,) = fg.gradients([fg.sum(y)], [x])
    values = np.array([0.5, -1.2, 1.1, 2.0])
    got_y, got_dx = _run(main, {"x": values}, [y, dx])
    _close(got_y, values ** 6, "x^6")
    _close(got_dx, 6 * values ** 5, "6 x^5")


def test_inner_loop_reading_the_outer_loop_var(fresh_programs):
    """The inner loop only reads `a` (its gradient sums over inner steps); the outer loop carries it."""
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    x.stop_gradient = False

    def outer_body(i, a):
        _, b = static.nn.while_loop(lambda j, b: j < 2, lambda j, b: (j + 1, fg.sin(b * a)),
                                    [fg.full([], 0, "int64"), a])
        return i + 1, b + a

    _, a = static.nn.while_loop(lambda i, a: i < 3, outer_body, [fg.full([], 0, "int64"), x])
    (dx,) = fg.gradients([fg.sum(a)], [x])
    feed = {"x": np.array([0.3, -0.7])}
    got_a, got_dx = _run(main, feed, [a, dx])
    t = _torch(feed)
    ta = t["x"]
    for _ in range(3):
        b = ta
        for _ in range(2):
            b = torch.sin(b * ta)
        ta = b + ta
    ta.sum().backward()
    _close(got_a, ta.detach().numpy(), "a")
    _close(got_dx, t["x"].grad.numpy(), "da/dx")


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["loop-branch", "square-branch"])
def test_while_inside_cond(fresh_programs, sign):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    x.stop_gradient = False

    def cube():
        _, y = static.nn.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x),
                                    [fg.full([], 0, "int64"), fg.ones_like(x)])
        return y

    y = static.nn.cond(fg.sum(x) > 0.0, cube, lambda: x * x)
    (dx,) = fg.gradients([fg.sum(y)], [x])
    values = sign * np.array([1.0, 2.0])
    got_y, got_dx = _run(main, {"x": values}, [y, dx])
    _close(got_y, values ** 3 if sign > 0 else values ** 2, "y")
    _close(got_dx, 3 * values ** 2 if sign > 0 else 2 * values, "dy/dx")


def test_parameters_created_in_the_body_train_with_an_optimizer(fresh_programs, rng):
    from fluidgrad.optimizer import SGD
    main, startup = fresh_programs
    x = static.data("x", [4, 3], "float64")
    cell = lambda i, h: (i + 1, static.nn.fc(h, 3, activation="tanh", name="cell"))  # noqa: E731
    _, h = static.nn.while_loop(lambda i, h: i < 3, cell, [fg.full([], 0, "int64"), x])
    loss = fg.mean(fg.square(h - 0.5))
    _, params_grads = SGD(0.5).minimize(loss)
    assert sorted(p.name for p, _ in params_grads) == ["cell.b_0", "cell.w_0"]
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    feed = {"x": rng.normal(size=(4, 3))}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]) for _ in range(30)]
    assert losses[-1] < 0.1 * losses[0]


def test_loop_with_data_dependent_trip_count(fresh_programs):
    """Keep doubling until the norm passes 10: y = x * 2^k with k chosen by the data."""
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    w = static.data("w", [3], "float64")
    x.stop_gradient = False
    w.stop_gradient = False
    (y,) = static.nn.while_loop(lambda y: fg.sqrt(fg.sum(y * y)) < 10.0, lambda y: [y * 2.0 + w * 0.1], [x])
    loss = fg.sum(y * y * w)
    grads = fg.gradients([loss], [x, w])
    for scale in (0.05, 1.0, 20.0):
        feed = {"x": np.array([0.3, -0.4, 0.5]) * scale, "w": np.array([0.2, 0.7, -0.3])}
        got = _run(main, feed, [loss] + grads)
        t = _torch(feed)
        ty = t["x"]
        while torch.sqrt((ty * ty).sum()).item() < 10.0:
            ty = ty * 2.0 + t["w"] * 0.1
        tloss = (ty * ty * t["w"]).sum()
        tloss.backward()
        _close(got[0], tloss.item(), f"loss at scale {scale}")
        _close(got[1], t["x"].grad.numpy(), f"gradient of x at scale {scale}")
        _close(got[2], t["w"].grad.numpy(), f"gradient of w at scale {scale}")


def test_fluid_style_while_block(fresh_programs):
    """static.While: the body writes outer variables in place, and the gradient still flows."""
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    x.stop_gradient = False
    i = fg.full([], 0, "int64")
    y = assign(x)
    cond_var = i < 3
    loop = static.While(cond_var)
    with loop.block():
        assign(fg.sin(y) + x, output=y)
        increment(i, in_place=True)
        assign(i < 3, output=cond_var)
    (dx,) = fg.gradients([fg.sum(y)], [x])
    feed = {"x": np.array([0.3, -1.1])}
    got_y, got_i, got_dx = _run(main, feed, [y, i, dx])
    t = _torch(feed)
    ty = t["x"]
    for _ in range(3):
        ty = torch.sin(ty) + t["x"]
    ty.sum().backward()
    assert int(got_i) == 3
    _close(got_y, ty.detach().numpy(), "y")
    _close(got_dx, t["x"].grad.numpy(), "dy/dx")


def test_builders_run_eagerly_on_tensors():
    """With Tensors the loop and the branch are plain Python, recorded by eager autograd."""
    from fluidgrad.eager import to_tensor
    x = to_tensor(np.array([1.0, -2.0]), stop_gradient=False)
    counter, y = static.nn.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x),
                                      [to_tensor(np.array(0)), fg.ones_like(x)])
    z = static.nn.cond(fg.sum(y) > 0.0, lambda: y * 2.0, lambda: y * 0.5)
    fg.sum(z).backward()
    assert int(counter) == 3
    _close(y.numpy(), [1.0, -8.0], "x^3")
    _close(x.grad.numpy(), 0.5 * 3 * np.array([1.0, 4.0]), "d(x^3 / 2)/dx")


def test_program_with_loops_clones_and_runs(fresh_programs, rng):
    main, _ = fresh_programs
    loss, wrt = _build_rnn()
    grads = fg.gradients([loss], wrt)
    feed = _rnn_feed(rng)
    copy = main.clone()
    want = _run(main, feed, [loss] + grads)
    got = _run(copy, feed, [loss.name] + [g.name for g in grads])
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    test_copy = main.clone(for_test=True)
    np.testing.assert_array_equal(_run(test_copy, feed, [loss.name])[0], want[0])


# ------------------------------------------------------------------ errors
def _loop(body, loop_vars=None):
    x = static.data("x", [2, 3], "float64")
    loop_vars = loop_vars or [fg.full([], 0, "int64"), x]
    return static.nn.while_loop(lambda i, y: i < 3, body, loop_vars)


def test_body_returning_a_wrong_shape_is_named(fresh_programs):
    with pytest.raises(ValueError, match=r"loop var 1 .*shape \[2, 3\].*must stay \[2, 3\]|shape must stay"):
        _loop(lambda i, y: (i + 1, fg.sum(y, axis=0)))


def test_body_returning_a_wrong_dtype_is_named(fresh_programs):
    with pytest.raises(TypeError, match=r"loop var 1 .*float64.*dtype must stay float64"):
        _loop(lambda i, y: (i + 1, fg.cast(y, "float32")))


def test_body_returning_a_wrong_count_is_named(fresh_programs):
    with pytest.raises(ValueError, match=r"body returned 1 values for 2 loop vars"):
        _loop(lambda i, y: [i + 1])


def test_loop_condition_must_be_a_one_element_bool(fresh_programs):
    x = static.data("x", [2], "float64")
    with pytest.raises(TypeError, match="one-element bool"):
        static.nn.while_loop(lambda y: y > 0.0, lambda y: [y * 2.0], [x])
    with pytest.raises(TypeError, match="non-empty list"):
        static.nn.while_loop(lambda y: fg.sum(y) > 0.0, lambda y: [y], x)


def test_cond_branches_must_agree(fresh_programs):
    x = static.data("x", [2], "float64")
    pred = fg.sum(x) > 0.0
    with pytest.raises(ValueError, match=r"output 0 differs between branches.*\[2\].*\[\]"):
        static.nn.cond(pred, lambda: x * 2.0, lambda: fg.sum(x))
    with pytest.raises(ValueError, match="true_fn returned 2 values, false_fn 1"):
        static.nn.cond(pred, lambda: (x, x), lambda: [x])
    with pytest.raises(ValueError, match="returned None"):
        static.nn.cond(pred, lambda: x, lambda: None)
    with pytest.raises(TypeError, match="one-element bool"):
        static.nn.cond(x, lambda: x, lambda: x)


def test_while_block_must_update_its_condition(fresh_programs):
    i = fg.full([], 0, "int64")
    loop = static.While(i < 3)
    with pytest.raises(ValueError, match="never writes the condition"):
        with loop.block():
            increment(i, in_place=True)


# ------------------------------------------------------------------ the small ops loops use
def test_increment_keeps_the_counter_dtype(fresh_programs):
    main, _ = fresh_programs
    i = fg.full([], 4, "int64")
    out = increment(i, value=2.0, in_place=False)
    assert out.dtype == "int64"
    (got,) = _run(main, {}, [out])
    assert got.dtype == np.int64 and int(got) == 6
    check_grad("increment", {"X": np.array([0.5, 1.5])}, {"step": 2.0}, torch_fn=lambda X: X + 2.0)


@pytest.mark.parametrize("mask", [0, 1])
def test_select_input_and_its_transpose(mask):
    a, b = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    check_grad("select_input", {"X": [a, b], "Mask": np.array([mask], dtype=np.int32)},
               torch_fn=lambda X, Mask: X[int(Mask[0])])
    check_grad("select_input_grad", {"X": a, "Mask": np.array([bool(mask)])}, {"n": 2}, n_out=2,
               torch_fn=lambda X, Mask: (X * (1 - int(Mask[0])), X * int(Mask[0])))


# ------------------------------------------------------------------ memory stays flat
def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_rss_stays_flat_over_training_steps(fresh_programs, rng):
    """200 SGD steps of the RNN: step scopes are released, so memory does not grow."""
    main, _ = fresh_programs
    sizes = (20, 64, 64, 64)  # each run keeps ~4 MB of step scopes: a leak would show at once
    loss, wrt = _build_rnn(sizes)
    W, U = wrt[0], wrt[1]
    grads = fg.gradients([loss], [W, U])
    feed = _rnn_feed(rng, sizes)
    scope, exe = fg.Scope(), fg.Executor()
    losses, rss = [], {}
    for step in range(1, 201):
        value, dW, dU = exe.run(main, feed=feed, fetch_list=[loss] + grads, scope=scope)
        feed["W"] = feed["W"] - 0.5 * dW
        feed["U"] = feed["U"] - 0.5 * dU
        losses.append(float(value))
        if step in (20, 200):
            rss[step] = _rss_bytes()
    assert losses[-1] < losses[0], "SGD through the loop should lower the loss"
    assert rss[200] <= rss[20] * 1.10, f"RSS grew from {rss[20]} to {rss[200]} bytes"


def test_loop_variable_that_never_reaches_the_loss_gets_no_grad_ops(fresh_programs):
    """Only carried variables whose gradient can be non-zero are differentiated, step by step."""
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    i, n = fg.full([1], 0, "int64"), fg.full([1], 3, "int64")
    _, a, _ = static.nn.while_loop(lambda i, a, b: i < n,
                                   lambda i, a, b: [i + 1, fg.tanh(a), fg.exp(fg.sin(b * x))], [i, x, x])
    (dx,) = fg.gradients([fg.sum(a)], [x])
    grad_blocks = [b for b in main.blocks if b.forward_block_idx >= 0]
    assert {op.type for b in grad_blocks for op in b.ops} <= {"assign", "tanh_grad"}
    values = np.array([0.1, -0.5, 0.9])
    (got,) = _run(main, {"x": values}, [dx])
    t = torch.tensor(values, requires_grad=True)
    h = t
    for _ in range(3):
        h = torch.tanh(h)
    (want,) = torch.autograd.grad(h.sum(), t)
    _close(got, want.numpy(), "dx")


# ------------------------------------------------------------------ outputs that do not reach the loss
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true_branch", "false_branch"])
def test_cond_with_an_output_that_does_not_reach_the_loss(sign):
    x_np = sign * np.array([1.0, 2.0, 3.0])
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = static.data("x", [3], "float64")
        x.stop_gradient = False
        a, _unused = static.nn.cond(fg.sum(x) > 0, lambda: (x * x, x * 3.0), lambda: (x * 4.0, x * x))
        (dx,) = fg.gradients([fg.sum(a)], [x])
    (got,) = _run(main, {"x": x_np}, [dx])
    xt = torch.tensor(x_np, requires_grad=True)
    at = xt * xt if xt.sum() > 0 else xt * 4.0
    (want,) = torch.autograd.grad(at.sum(), [xt])
    _close(got, want.numpy(), "d sum(a) / dx")


def test_cond_inside_a_while_body_with_an_output_that_does_not_reach_the_loss():
    x_np = np.array([1.0, 2.0, 3.0])
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = static.data("x", [3], "float64")
        x.stop_gradient = False

        def body(i, y):
            a, _unused = static.nn.cond(fg.sum(y) > 10.0, lambda: (y * 2.0, y * x), lambda: (y * x, y * 3.0))
            return i + 1, a

        _, y = static.nn.while_loop(lambda i, y: i < 4, body, [fg.full([], 0, "int64"), fg.ones_like(x)])
        (dx,) = fg.gradients([fg.sum(y)], [x])
    (got,) = _run(main, {"x": x_np}, [dx])
    xt = torch.tensor(x_np, requires_grad=True)
    yt = torch.ones(3, dtype=torch.float64)
    for _ in range(4):
        yt = yt * 2.0 if yt.sum() > 10.0 else yt * xt
    (want,) = torch.autograd.grad(yt.sum(), [xt])
    _close(got, want.numpy(), "d sum(y) / dx")


def test_while_with_a_loop_variable_that_does_not_reach_the_loss():
    x_np = np.array([0.5, 2.0, -1.0])
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = static.data("x", [3], "float64")
        x.stop_gradient = False
        loop = static.nn.while_loop(lambda i, y, z: i < 3, lambda i, y, z: (i + 1, y * x, z + y * x),
                                    [fg.full([], 0, "int64"), fg.ones_like(x), fg.zeros_like(x)])
        (dx,) = fg.gradients([fg.sum(loop[1])], [x])
        (dx_z,) = fg.gradients([fg.sum(loop[2])], [x])
    got, got_z = _run(main, {"x": x_np}, [dx, dx_z])
    _close(got, 3 * x_np ** 2, "d sum(y) / dx")
    _close(got_z, 1 + 2 * x_np + 3 * x_np ** 2, "d sum(z) / dx")


def test_grad_of_grad_through_while_raises_the_no_gradient_error_naming_while():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = static.data("x", [3], "float64")
        x.stop_gradient = False
        _, y = static.nn.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x),
                                    [fg.full([], 0, "int64"), fg.ones_like(x)])
        (dx,) = fg.gradients([fg.sum(y)], [x])
        ops_before = len(main.global_block().ops)
        with pytest.raises(fg.framework.NoGradientError, match=r"op while_grad has no gradient, but one was asked for.*gradient of op while"):
            fg.gradients([fg.sum(dx)], [x])
    assert len(main.global_block().ops) == ops_before + 1  # only the fg.sum: the failed pass left nothing
    (first,) = _run(main, {"x": np.array([1.0, 2.0, 3.0])}, [dx])
    _close(first, 3 * np.array([1.0, 2.0, 3.0]) ** 2, "the first derivative still runs")


def test_cond_with_a_constant_branch_saves_loads_and_exports(fresh_programs, tmp_path):
    """A branch reading no outer variable gives a conditional_block with an empty Input list:
    it survives save_inference_model / load_inference_model and runs the same in onnxruntime."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = static.data("x", [3], "float64")
        z = static.nn.cond(fg.sum(x) > 0, lambda: fg.full([3], 7.0, "float64"), lambda: x * 3)
    fg.static.save_inference_model(str(tmp_path / "cond"), [x], [z], program=main)
    loaded, feeds, fetches = fg.static.load_inference_model(str(tmp_path / "cond"))
    ort = pytest.importorskip("onnxruntime")
    from fluidgrad.onnx import export_program
    export_program(tmp_path / "cond.onnx", [x], [z], main)
    session = ort.InferenceSession(str(tmp_path / "cond.onnx"), providers=["CPUExecutionProvider"])
    for value, want in [(np.ones(3), np.full(3, 7.0)), (-np.ones(3), -3 * np.ones(3))]:
        np.testing.assert_array_equal(_run(main, {"x": value}, [z])[0], want)
        np.testing.assert_array_equal(_run(loaded, {feeds[0]: value}, fetches)[0], want)
        np.testing.assert_array_equal(session.run(None, {"x": value})[0], want)


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true-branch", "false-branch"])
def test_cond_gradients_with_an_unknown_batch_axis_match_torch(fresh_programs, rng, sign):
    """Branch outputs of shape [-1, 3] (a batch), one branch broadcasting a weight over it, and a
    cond nested in a while loop: select_input's gradient is never reduced to the untaken
    branch's output (which has no value at run time); the gradients are PyTorch's."""
    main, _ = fresh_programs
    x = static.data("x", [None, 3], "float64")
    w = static.data("w", [3], "float64")
    x.stop_gradient = w.stop_gradient = False
    y = static.nn.cond(fg.sum(x) > 0.0, lambda: fg.exp(x) * w, lambda: x * x)

    def body(i, h):
        return i + 1, static.nn.cond(fg.sum(h) > 0.0, lambda: h * 0.5 + w, lambda: fg.tanh(h))

    _, z = static.nn.while_loop(lambda i, h: i < 3, body, [fg.full([], 0, "int64"), y])
    loss = fg.mean(z * z)
    grads = fg.gradients([loss], [x, w])
    feed = {"x": sign * rng.uniform(0.1, 1.0, (4, 3)), "w": rng.normal(size=3)}
    got = _run(main, feed, [loss] + grads)
    t = _torch(feed)
    h = torch.exp(t["x"]) * t["w"] if sign > 0 else t["x"] * t["x"]
    for _ in range(3):
        h = h * 0.5 + t["w"] if h.sum().item() > 0 else torch.tanh(h)
    (h * h).mean().backward()
    _close(got[0], (h * h).mean().item(), "loss")
    _close(got[1], t["x"].grad.numpy(), "gradient of x")
    _close(got[2], t["w"].grad.numpy(), "gradient of w")


def test_cond_gradient_when_one_branch_has_a_known_batch_size(fresh_programs):
    """Branches of shapes [-1, 2] and [3, 2] merge into [-1, 2]; either way the gradient fits x."""
    main, _ = fresh_programs
    x = static.data("x", [None, 2], "float64")
    x.stop_gradient = False
    c = fg.full([3, 2], 1.0, "float64")
    y = static.nn.cond(fg.sum(x) > 0.0, lambda: x * 2.0, lambda: c * 1.0)
    (dx,) = fg.gradients([fg.sum(y)], [x])
    got_y, got_dx = _run(main, {"x": np.ones((3, 2))}, [y, dx])
    _close(got_dx, np.full((3, 2), 2.0), "gradient through the true branch")
    got_y, got_dx = _run(main, {"x": -np.ones((3, 2))}, [y, dx])
    _close(got_y, np.ones((3, 2)), "the constant branch")
    _close(got_dx, np.zeros((3, 2)), "no gradient through the constant branch")
