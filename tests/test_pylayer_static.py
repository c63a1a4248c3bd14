"""PyLayer under jit.to_static, and static.nn.static_pylayer: the forward's ops run, the
hand-written backward (the `pylayer` op's recorded backward block, copied into the backward
program) gives the gradients, exactly as the eager PyLayer does."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad import static


class RoundThrough(fg.autograd.PyLayer):
    """A straight-through estimator: round's true gradient is zero, the hand-written one is not."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return fg.round(x * scale)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale


class Cube(fg.autograd.PyLayer):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensor()
        return dy * 3.0 * x * x


class SplitSigns(fg.autograd.PyLayer):
    """Two outputs, two inputs, a None gradient for the second input."""

    @staticmethod
    def forward(ctx, x, y):
        return fg.nn.functional.relu(x) + y, -fg.nn.functional.relu(-x)

    @staticmethod
    def backward(ctx, d_pos, d_neg):
        return d_pos * 0.5 + d_neg * 2.0, None


def _loss(a, b, w):
    pos, neg = SplitSigns.apply(a, b)
    return fg.sum(RoundThrough.apply(a, 3.0) * w) + fg.sum(Cube.apply(w) * pos) + fg.sum(neg * neg)


def _grads(fn, a0, b0, w):
    a = fg.to_tensor(a0, stop_gradient=False)
    b = fg.to_tensor(b0, stop_gradient=False)
    w.clear_grad()
    out = fn(a, b, w)
    out.backward()
    return out.numpy(), a.grad.numpy(), None if b.grad is None else b.grad.numpy(), w.grad.numpy()


def test_pylayers_traced_by_to_static_give_the_eager_gradients():
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal(4), rng.standard_normal(4)
    w = fg.to_tensor(rng.standard_normal(4), stop_gradient=False)  # captured by the trace: a parameter
    traced = fg.jit.to_static(_loss)
    eager = _grads(_loss, a0, b0, w)
    got = _grads(traced, a0, b0, w)
    assert got[2] is None and eager[2] is None  # SplitSigns gives y no gradient, and nothing else reads b
    for g, e in zip(got[:2] + got[3:], eager[:2] + eager[3:]):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    program = traced.main_program
    assert [op.type for op in program.global_block().ops].count("pylayer") == 3
    backward_ops = [op.type for op in traced.backward_program.global_block().ops]
    assert "round" in backward_ops and "round_grad" not in backward_ops  # the forward's own gradient never runs
    expected_a = 3.0 * w.numpy() + 0.5 * w.numpy() ** 3 + 2.0 * 2 * np.minimum(a0, 0)  # the hand-written rules
    np.testing.assert_allclose(got[1], expected_a, rtol=1e-12)


def test_static_pylayer_in_a_program_and_its_gradient_of_gradient(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [None, 3], "float64")
    x.stop_gradient = False
    y = static.nn.static_pylayer(lambda v: v * v * v, [x], lambda dy: dy * 3.0 * x * x)
    dx, = fg.gradients([fg.sum(y)], [x])
    ddx, = fg.gradients([fg.sum(dx)], [x])  # the recorded backward is ordinary ops: 6 x
    x0 = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]])
    got_y, got_dx, got_ddx = fg.Executor().run(main, feed={"x": x0}, fetch_list=[y, dx, ddx])
    np.testing.assert_allclose(got_y, x0 ** 3)
    np.testing.assert_allclose(got_dx, 3 * x0 ** 2)
    np.testing.assert_allclose(got_ddx, 6 * x0)


def test_pylayer_apply_while_building_a_program(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    x.stop_gradient = False
    dx, = fg.gradients([fg.sum(RoundThrough.apply(x, 2.0))], [x])
    got, = fg.Executor().run(main, feed={"x": np.array([0.2, 0.7])}, fetch_list=[dx])
    np.testing.assert_allclose(got, [2.0, 2.0])


def test_without_backward_no_gradient_flows(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2], "float64")
    x.stop_gradient = False
    y = static.nn.static_pylayer(lambda v: fg.exp(v), [x])
    assert y.stop_gradient
    z = static.nn.static_pylayer(lambda v: fg.exp(v), [x], lambda dy: None)  # a None gradient: zero
    assert fg.gradients([fg.sum(z)], [x]) == [None]
    got, = fg.Executor().run(main, feed={"x": np.zeros(2)}, fetch_list=[y])
    np.testing.assert_allclose(got, [1.0, 1.0])


def test_bad_backwards_are_clear_errors(fresh_programs):
    x = static.data("x", [3], "float64")
    with pytest.raises(ValueError, match="backward returned 2 gradients, but forward took 1 inputs"):
        static.nn.static_pylayer(lambda v: v * 2.0, [x], lambda dy: (dy, dy))
    with pytest.raises(ValueError, match=r"gradient 0 .* shape \[2\], which does not fit input x of shape \[3\]"):
        static.nn.static_pylayer(lambda v: v * 2.0, [x], lambda dy: fg.full([2], 1.0, "float64"))
    with pytest.raises(NotImplementedError, match="control flow"):
        static.nn.static_pylayer(lambda v: v * 2.0, [x],
                                 lambda dy: static.nn.cond(fg.sum(dy) > 0, lambda: dy, lambda: -dy))
    with pytest.raises(TypeError, match="forward's results must be Variables"):
        static.nn.static_pylayer(lambda v: 3.0, [x], lambda dy: dy)

    class Short(fg.autograd.PyLayer):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(ValueError, match="Short.backward returned 1 gradients, but forward took 2"):
        Short.apply(x, x)


def test_a_traced_pylayer_saves_and_loads(tmp_path):
    fg.jit.save(lambda v: Cube.apply(v) + 1.0, str(tmp_path / "cube"),
                input_spec=[fg.jit.InputSpec([None, 2], "float64")])
    loaded = fg.jit.load(str(tmp_path / "cube"))
    x = np.array([[1.0, 2.0], [-1.0, 0.5]])
    np.testing.assert_allclose(loaded(x).numpy(), x ** 3 + 1.0)
