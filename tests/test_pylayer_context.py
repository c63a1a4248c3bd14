"""PyLayer's context as Paddle 2's PyLayerContext and torch.autograd.Function's ctx:
mark_non_differentiable (the output gets stop_gradient and no gradient) and
set_materialize_grads (an output without a gradient hands backward zeros, or None), each run
beside the same Function in PyTorch, eagerly and under jit.to_static."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg


def _make(framework, materialize: bool, seen: list):
    """A layer returning (2 x, x > 0 as floats marked non-differentiable, x^2), recording what
    backward is handed per output: 'zeros', 'none', 'grad' (or 'traced': a Variable standing in)."""
    base = torch.autograd.Function if framework is torch else fg.autograd.Function

    class Layer(base):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            ctx.save_for_backward(x)
            positive = (x > 0).to(x.dtype) if framework is torch else fg.cast(x > 0, x.dtype)
            ctx.mark_non_differentiable(positive)
            return x * 2.0, positive, x * x

        @staticmethod
        def backward(ctx, d_double, d_positive, d_square):
            x, = ctx.saved_tensors
            for g in (d_double, d_positive, d_square):
                seen.append("none" if g is None else "traced" if isinstance(g, fg.framework.Variable)
                            else "zeros" if not np.asarray(g.numpy()).any() else "grad")
            total = 0.0
            if d_double is not None:
                total = total + d_double * 2.0
            if d_square is not None:
                total = total + d_square * 2.0 * x
            return total

    return Layer


# which outputs the loss reads: the marked one's reading adds nothing
_LOSSES = {
    "double": lambda m, outs: m.sum(outs[0]),
    "double + marked": lambda m, outs: m.sum(outs[0] * 3.0) + m.sum(outs[1]) if m is torch else
    fg.sum(outs[0] * 3.0) + fg.sum(outs[1]),
    "square": lambda m, outs: m.sum(outs[2] * outs[2]),
}


@pytest.mark.parametrize("materialize", [True, False])
@pytest.mark.parametrize("loss", sorted(_LOSSES))
def test_marked_outputs_and_materialized_grads_match_torch(loss, materialize):
    x0 = np.array([1.5, -2.0, 0.5])
    torch_seen, seen = [], []
    tx = torch.tensor(x0, requires_grad=True)
    touts = _make(torch, materialize, torch_seen).apply(tx)
    assert not touts[1].requires_grad
    if loss == "double + marked":
        (torch.sum(touts[0] * 3.0) + torch.sum(touts[1])).backward()
    else:
        _LOSSES[loss](torch, touts).backward()
    x = fg.to_tensor(x0, stop_gradient=False)
    outs = _make(fg, materialize, seen).apply(x)
    assert outs[1].stop_gradient and not outs[0].stop_gradient
    np.testing.assert_array_equal(outs[1].numpy(), [1.0, 0.0, 1.0])
    _LOSSES[loss](fg, outs).backward()
    assert seen == torch_seen
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_the_review_example_an_argmax_and_a_double():
    class ArgmaxAndDouble(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            index = fg.argmax(x)
            ctx.mark_non_differentiable(index)
            ctx.set_materialize_grads(False)
            return x * 2.0, index

        @staticmethod
        def backward(ctx, grad, grad_index):
            assert grad_index is None
            return grad * 2.0

    x = fg.to_tensor(np.array([1.0, 3.0]), stop_gradient=False)
    doubled, index = ArgmaxAndDouble.apply(x)
    assert index.stop_gradient and int(index) == 1
    fg.sum(doubled).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    assert fg.autograd.Function is fg.autograd.PyLayer and fg.autograd.FunctionCtx is fg.autograd.PyLayerContext


@pytest.mark.parametrize("materialize", [True, False])
def test_under_jit_to_static_the_marked_output_gets_no_gradient(materialize):
    seen: list = []
    layer = _make(fg, materialize, seen)

    @fg.jit.to_static
    def run(x):
        double, positive, square = layer.apply(x)
        return fg.sum(double * 3.0) + fg.sum(positive * positive), positive

    x0 = np.array([1.5, -2.0, 0.5])
    x = fg.to_tensor(x0, stop_gradient=False)
    loss, positive = run(x)
    assert positive.stop_gradient
    np.testing.assert_array_equal(positive.numpy(), [1.0, 0.0, 1.0])
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 6.0))
    # traced once, on stand-ins for the gradients; the marked output's is None without materialising
    assert seen == ["traced", "traced" if materialize else "none", "traced"]
