"""Right answers at special points (issue 10 items 3 and 10), in static and eager mode.

PyTorch (float64) is the oracle: gradients at points where a naive formula computes 0 * inf
or the log of an underflowed value, and reductions over axes that hold no elements.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.framework import ShapeError
from fluidgrad.nn import functional as F


def _static_grads(build, arrays):
    """Gradients of sum(build(*vars)) w.r.t. every input, through append_backward."""
    inputs = [fg.static.data(f"in{i}", list(a.shape), "float64") for i, a in enumerate(arrays)]
    for v in inputs:
        v.stop_gradient = False
    grads = fg.gradients([fg.sum(build(*inputs))], inputs)
    return fg.Executor().run(feed={f"in{i}": a for i, a in enumerate(arrays)}, fetch_list=grads)


def _eager_grads(build, arrays):
    tensors = [fg.to_tensor(a, stop_gradient=False) for a in arrays]
    fg.sum(build(*tensors)).backward()
    return [t.grad.numpy() for t in tensors]


def _torch_grads(build, arrays):
    tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    build(*tensors).sum().backward()
    return [t.grad.numpy() for t in tensors]


SPECIAL_POINTS = {
    "x ** 0 at 0": ([np.array([0.0, 1.0, -2.0])], lambda x: x ** 0, lambda x: x ** 0),
    "pow(x, 0.0) at 0": ([np.array([0.0, 3.0])], lambda x: fg.pow(x, 0.0), lambda x: torch.pow(x, 0.0)),
    "pow(x, y) with y = 0 at x = 0": ([np.array([0.0, 0.0, 2.0]), np.array([0.0, 1.0, 0.0])],
                                      fg.pow, torch.pow),
    "pow(x, y) with y = 1 at x = 0": ([np.array([0.0, 0.0]), np.array([1.0, 2.0])], fg.pow, torch.pow),
    "soft-label cross-entropy at logits +-1000": (
        [np.array([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 3.0]]), np.array([[0.2, 0.3, 0.5], [0.5, 0.25, 0.25]])],
        lambda logits, label: F.softmax_with_cross_entropy(logits, label, soft_label=True),
        lambda logits, label: -(label * torch.log_softmax(logits, -1)).sum(-1)),
}


@pytest.mark.parametrize("mode", ["static", "eager"])
@pytest.mark.parametrize("name", list(SPECIAL_POINTS))
def test_gradient_at_special_point_equals_pytorch(name, mode):
    arrays, build, torch_build = SPECIAL_POINTS[name]
    got = (_static_grads if mode == "static" else _eager_grads)(build, arrays)
    for g, expected in zip(got, _torch_grads(torch_build, arrays)):
        assert np.all(np.isfinite(g)), f"{name}: {g}"
        np.testing.assert_allclose(g, expected, rtol=1e-12, atol=0)


def test_second_derivative_of_pow_at_zero_is_finite():
    x = fg.to_tensor(np.array([0.0, 1.5]), stop_gradient=False)
    y = fg.to_tensor(np.array([1.0, 1.0]), stop_gradient=False)
    (dx,) = fg.grad([fg.sum(fg.pow(x, y))], [x], create_graph=True)
    (ddx,) = fg.grad([fg.sum(dx)], [x])
    tx = torch.tensor([0.0, 1.5], dtype=torch.float64, requires_grad=True)
    (tdx,) = torch.autograd.grad(torch.pow(tx, torch.tensor([1.0, 1.0], dtype=torch.float64)).sum(), [tx],
                                 create_graph=True)
    (tddx,) = torch.autograd.grad(tdx.sum(), [tx])
    np.testing.assert_allclose(ddx.numpy(), tddx.numpy())


# ------------------------------------------------------------------ empty reductions
@pytest.mark.parametrize("fn", [fg.max, fg.min])
def test_max_min_over_a_zero_size_axis_fail_at_build_time(fn):
    x = fg.static.data("x", [0, 3], "float64")
    with pytest.raises(ShapeError, match=r"op reduce_m(ax|in): cannot reduce X \(shape \[0, 3\]\) over axes \[0\]"):
        fn(x, axis=0)
    assert fn(x, axis=1).shape == (0,)  # reducing the non-empty axis is fine


@pytest.mark.parametrize("fn", [fg.max, fg.min])
def test_max_min_over_a_zero_size_axis_fail_at_run_time_with_the_same_error(fn):
    x = fg.static.data("x", [-1, 3], "float64")
    out = fn(x, axis=0)
    with pytest.raises(ShapeError, match=r"cannot reduce X \(shape \[0, 3\]\) over axes \[0\]"):
        fg.Executor().run(feed={"x": np.zeros((0, 3))}, fetch_list=[out])
    with pytest.raises(ShapeError, match=r"cannot reduce X \(shape \[0, 3\]\) over axes \[0\]"):
        fn(fg.to_tensor(np.zeros((0, 3))), axis=0)
    with pytest.raises(IndexError, match="non-zero size"):  # PyTorch refuses too
        torch.amax(torch.zeros(0, 3), 0)


def test_sum_and_mean_of_nothing_match_pytorch():
    empty = np.zeros((0, 3))
    x = fg.static.data("x", [-1, 3], "float64")
    outs = [fg.sum(x, axis=0), fg.mean(x, axis=0)]
    static = fg.Executor().run(feed={"x": empty}, fetch_list=outs)
    eager = [fg.sum(fg.to_tensor(empty), axis=0).numpy(), fg.mean(fg.to_tensor(empty), axis=0).numpy()]
    expected = [torch.zeros(0, 3, dtype=torch.float64).sum(0).numpy(),
                torch.zeros(0, 3, dtype=torch.float64).mean(0).numpy()]
    for got in (static, eager):
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("name, torch_fn", [("softmax", torch.softmax), ("log_softmax", torch.log_softmax)])
def test_softmax_over_a_zero_size_axis_is_empty_in_both_modes(name, torch_fn):
    """The shape rule accepts an empty input, so the kernel must too (it used to raise in x.max)."""
    fn = getattr(F, name)
    expected = torch_fn(torch.zeros(0, 3, dtype=torch.float64), 0).numpy()
    x = fg.static.data("x", [-1, 3], "float64")
    (static,) = fg.Executor().run(feed={"x": np.zeros((0, 3))}, fetch_list=[fn(x, axis=0)])
    eager = fn(fg.to_tensor(np.zeros((0, 3))), axis=0).numpy()
    for got in (static, eager):
        assert got.shape == expected.shape == (0, 3)
