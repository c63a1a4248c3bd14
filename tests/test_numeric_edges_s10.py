"""Numeric edge cases fixed in session 10: where's scalar promotion (both modes), NaN in median /
quantile, to_tensor of float64 Tensors, atan2's gradient at the origin, logaddexp and hypot at the
ends of the range; PyTorch is the oracle."""
import numpy as np
import pytest
import torch

import fluidgrad as fg


def _static(build, feeds):
    """Run build(*data variables) in a static program and return the fetched result."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        data = [fg.static.data(f"in{i}", list(v.shape), str(v.dtype)) for i, v in enumerate(feeds)]
        out = build(*data)
    got, = fg.Executor().run(main, feed={f"in{i}": v for i, v in enumerate(feeds)}, fetch_list=[out])
    return got


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
@pytest.mark.parametrize("side", ["x", "y"])
def test_where_with_a_float_scalar_promotes_in_a_static_program(dtype, side):
    cond0, value0 = np.array([True, False, True]), np.array([3, 0, 1]).astype(dtype)
    pick = (lambda m, c, v: m.where(c, v, 0.25)) if side == "x" else (lambda m, c, v: m.where(c, 0.25, v))
    expected = pick(torch, torch.tensor(cond0), torch.tensor(value0)).numpy()
    got = _static(lambda c, v: pick(fg, c, v), [cond0, value0])
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_where_with_an_int_scalar_keeps_the_integer_dtype():
    got = fg.where(fg.to_tensor(np.array([True, False])), fg.to_tensor(np.array([5, 6])), 2).numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [5, 2])


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_median_and_quantile_propagate_nan_in_a_static_program(axis):
    x0 = np.array([[1.0, 2.0, 3.0], [np.nan, 0.5, 2.0]])
    expected_median = torch.tensor(np.median(x0, axis=axis)).numpy()
    expected_quantile = np.quantile(x0, 0.3, axis=axis)
    np.testing.assert_array_equal(_static(lambda x: fg.median(x, axis=axis), [x0]), expected_median)
    np.testing.assert_allclose(_static(lambda x: fg.quantile(x, 0.3, axis=axis), [x0]), expected_quantile)


def test_median_gradient_without_nan_is_unchanged():
    x0 = np.array([[1.0, 4.0, 3.0, 2.0]])
    x = fg.to_tensor(x0, stop_gradient=False)
    fg.median(x, axis=1).sum().backward()
    xt = torch.tensor(x0, requires_grad=True)
    torch.quantile(xt, 0.5, dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_to_tensor_of_nested_float64_tensors_and_floats():
    nested = [[fg.to_tensor(np.array(0.1)), 0.5], [fg.to_tensor(np.array(0.2)), 0.25]]
    got = fg.to_tensor(nested)
    assert got.numpy().dtype == np.float64
    np.testing.assert_array_equal(got.numpy(), [[0.1, 0.5], [0.2, 0.25]])
    assert fg.to_tensor([0.1, 0.2]).numpy().dtype == np.float32      # Python floats: the default dtype
    assert fg.to_tensor([fg.to_tensor(np.float32(0.1))]).numpy().dtype == np.float32


def test_atan2_gradient_and_second_gradient_at_the_origin_and_away():
    y0, x0 = np.array([0.0, 1.0, -2.0]), np.array([0.0, 2.0, 0.5])
    y, x = fg.to_tensor(y0, stop_gradient=False), fg.to_tensor(x0, stop_gradient=False)
    dy, dx = fg.grad(fg.sum(fg.atan2(y, x)), [y, x], create_graph=True)
    yt, xt = torch.tensor(y0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    dyt, dxt = torch.autograd.grad(torch.atan2(yt, xt).sum(), [yt, xt], create_graph=True)
    np.testing.assert_allclose(dy.numpy(), dyt.detach().numpy())
    np.testing.assert_allclose(dx.numpy(), dxt.detach().numpy())
    second, = fg.grad(fg.sum(dy), [x])
    np.testing.assert_allclose(second.numpy()[1:], torch.autograd.grad(dyt.sum(), [xt])[0].numpy()[1:])


def test_logaddexp_at_infinities_and_its_gradient():
    a0, b0 = np.array([-np.inf, 0.0, np.inf, 1.0]), np.array([-np.inf, -np.inf, np.inf, 2.0])
    np.testing.assert_array_equal(fg.logaddexp(fg.to_tensor(a0), fg.to_tensor(b0)).numpy(),
                                  torch.logaddexp(torch.tensor(a0), torch.tensor(b0)).numpy())
    a = fg.to_tensor(a0[1:], stop_gradient=False)
    fg.sum(fg.logaddexp(a, fg.to_tensor(b0[1:]))).backward()
    at = torch.tensor(a0[1:], requires_grad=True)
    torch.logaddexp(at, torch.tensor(b0[1:])).sum().backward()
    np.testing.assert_allclose(a.grad.numpy()[[0, 2]], at.grad.numpy()[[0, 2]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hypot_without_overflow_or_underflow_and_its_gradient(dtype):
    big = 1e30 if dtype == "float32" else 1e300
    tiny = 1e-30 if dtype == "float32" else 1e-300
    a0 = np.array([3 * big, 3 * tiny, 0.0, np.inf, -3.0, 1.0], dtype)
    b0 = np.array([4 * big, 4 * tiny, 0.0, 1.0, 4.0, -np.inf], dtype)
    np.testing.assert_allclose(fg.hypot(fg.to_tensor(a0), fg.to_tensor(b0)).numpy(),
                               torch.hypot(torch.tensor(a0), torch.tensor(b0)).numpy(), rtol=1e-6)
    a = fg.to_tensor(a0[[0, 4]], stop_gradient=False)
    b = fg.to_tensor(b0[[0, 4]], stop_gradient=False)
    fg.sum(fg.hypot(a, b)).backward()
    at = torch.tensor(a0[[0, 4]], requires_grad=True)
    bt = torch.tensor(b0[[0, 4]], requires_grad=True)
    torch.hypot(at, bt).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("p", [1, -1, np.inf, -np.inf, "fro", 2, -2, "nuc"])  # 2, -2, nuc: by singular values
@pytest.mark.parametrize("axis, keepdim", [((0, 1), False), ((2, 0), True), ((-1, -2), False)])
def test_linalg_norm_over_two_axes_matches_torch_with_its_gradient(p, axis, keepdim):
    x0 = np.random.default_rng(1).standard_normal((3, 4, 5))
    x = fg.to_tensor(x0, stop_gradient=False)
    got = fg.linalg.norm(x, p, axis=list(axis), keepdim=keepdim)
    xt = torch.tensor(x0, requires_grad=True)
    expected = torch.linalg.norm(xt, p, dim=axis, keepdim=keepdim)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-12)
    fg.sum(got).backward()
    expected.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
