"""The bincount op in both modes: counts and weighted sums against torch.bincount, in eager mode
and in a Program whose input and output lengths are unknown (-1) until it runs; the gradient of
the weights against torch's and central differences; bad input raises naming the op."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.testing import numeric_gradient

CASES = [(np.array([3, 0, 3, 1]), 0), (np.array([3, 0, 3, 1]), 7), (np.array([2]), 0), (np.zeros(0, "int64"), 3),
         (np.random.default_rng(2).integers(0, 9, 40), 4)]


def _static_program(minlength, weighted):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None], "int64")
        w = fg.static.data("w", [None], "float64") if weighted else None
        if weighted:
            w.stop_gradient = False
        out = fg.bincount(x, w, minlength=minlength)
        if not weighted:
            return main, out, []
        loss = fg.sum(fg.square(out)) + out[0]
        return main, out, fg.gradients([loss], [w])


@pytest.mark.parametrize("x,minlength", CASES, ids=["counts", "minlength", "one", "empty", "random"])
def test_counts_in_both_modes_match_torch(x, minlength):
    expected = torch.bincount(torch.tensor(x), minlength=minlength).numpy()
    eager = fg.bincount(fg.to_tensor(x), minlength=minlength)
    assert str(eager.dtype) == "int64"
    np.testing.assert_array_equal(eager.numpy(), expected)
    main, out, _ = _static_program(minlength, weighted=False)
    assert list(out.shape) == [-1] and out.dtype == "int64"
    got, = fg.Executor().run(main, feed={"x": x}, fetch_list=[out])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("x,minlength", CASES[:2] + CASES[4:], ids=["counts", "minlength", "random"])
def test_weighted_sums_and_their_gradient_match_torch_and_central_differences(x, minlength):
    w = np.random.default_rng(len(x)).normal(size=x.shape)
    tw = torch.tensor(w, requires_grad=True)
    expected = torch.bincount(torch.tensor(x), tw.detach(), minlength=minlength)
    summed = torch.zeros(len(expected), dtype=tw.dtype).index_add(0, torch.tensor(x), tw)   # torch's bincount has
    np.testing.assert_allclose(summed.detach().numpy(), expected.numpy(), rtol=1e-12)      # no gradient
    expected = summed
    (expected.square().sum() + expected[0]).backward()
    main, out, (grad,) = _static_program(minlength, weighted=True)
    exe = fg.Executor()
    got, got_grad = exe.run(main, feed={"x": x, "w": w}, fetch_list=[out, grad])
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_grad, tw.grad.numpy(), rtol=1e-12)

    def loss(feeds):
        sums = fg.bincount(fg.to_tensor(feeds["x"]), fg.to_tensor(feeds["w"]), minlength=minlength).numpy()
        return float(np.square(sums).sum() + sums[0])

    np.testing.assert_allclose(got_grad, numeric_gradient(loss, {"x": x, "w": w}, "w"), rtol=1e-6, atol=1e-8)
    weights = fg.to_tensor(w, stop_gradient=False)                      # eager: the same gradient
    eager = fg.bincount(fg.to_tensor(x), weights, minlength=minlength)
    (fg.sum(fg.square(eager)) + eager[0]).backward()
    np.testing.assert_allclose(weights.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_float32_weights_keep_their_dtype():   # (as torch's)
    out = fg.bincount(fg.to_tensor(np.array([1, 1])), fg.to_tensor(np.array([0.5, 0.25], "float32")))
    assert str(out.dtype) == "float32"
    np.testing.assert_array_equal(out.numpy(), np.array([0.0, 0.75], "float32"))


def test_bad_input_names_the_op():
    with pytest.raises(ValueError, match="bincount: X must be non-negative, got the value -1"):
        fg.bincount(fg.to_tensor(np.array([1, -1])))
    with pytest.raises(ValueError, match="bincount: X must be a 1-D integer tensor"):
        fg.bincount(fg.to_tensor(np.array([[1, 2]])))
    with pytest.raises(ValueError, match="bincount: X must be a 1-D integer tensor"):
        fg.bincount(fg.to_tensor(np.array([1.0, 2.0])))
    with pytest.raises(ValueError, match=r"bincount: Weights .* must have X's shape \[3\]"):
        fg.bincount(fg.to_tensor(np.array([1, 2, 0])), fg.to_tensor(np.ones(2)))
    main, out, _ = _static_program(0, weighted=False)
    with pytest.raises(ValueError, match="bincount: X must be non-negative"):
        fg.Executor().run(main, feed={"x": np.array([0, -3])}, fetch_list=[out])


def test_float16_weights_sum_in_float64_as_torch_and_get_a_float16_gradient():
    weights = fg.to_tensor(np.array([0.5, 0.25, 2.0], "float16"), stop_gradient=False)
    out = fg.bincount(fg.to_tensor(np.array([1, 1, 0])), weights)
    assert str(out.dtype) == "float64"
    np.testing.assert_array_equal(out.numpy(), [2.0, 0.75])
    fg.sum(out * fg.to_tensor(np.array([3.0, 5.0]))).backward()
    assert str(weights.grad.dtype) == "float16"
    np.testing.assert_array_equal(weights.grad.numpy(), np.array([5.0, 5.0, 3.0], "float16"))


def test_grad_of_grad_matches_torch():
    x, w = np.array([2, 0, 2, 1]), np.array([0.5, -1.0, 2.0, 0.25])
    weights, probe = fg.to_tensor(w, stop_gradient=False), np.array([1.0, -2.0, 0.5, 3.0])
    out = fg.bincount(fg.to_tensor(x), weights)
    (first,) = fg.grad([fg.sum(out * out * out)], [weights], create_graph=True)
    (second,) = fg.grad([fg.sum(first * fg.to_tensor(probe))], [weights])
    tw = torch.tensor(w, requires_grad=True)
    summed = torch.zeros(3, dtype=tw.dtype).index_add(0, torch.tensor(x), tw)
    (tfirst,) = torch.autograd.grad((summed ** 3).sum(), [tw], create_graph=True)
    (tsecond,) = torch.autograd.grad((tfirst * torch.tensor(probe)).sum(), [tw])
    np.testing.assert_allclose(first.numpy(), tfirst.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(second.numpy(), tsecond.numpy(), rtol=1e-12)
