"""PyTorch's forms of everyday Tensor methods (fluidgrad/tensor/torch_arithmetic.py,
torch_statistics.py, torch_methods.py): values against torch 2.13.0 in eager mode and in a static
program, gradients against central differences (float64), torch, and eager equal to static; the
in-place forms follow the in-place rules; Paddle's calls of the same names keep their meaning."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.testing import ProgramGradCheck, check_program_grad

X0 = np.random.default_rng(12).standard_normal((3, 5))
I_SCATTER = np.array([[0, 1, 0, 4, 4], [2, 2, 2, 0, 1], [3, 3, 3, 3, 3]])
I_ROWS = np.array([2, 0, 2])

TORCH = SimpleNamespace(t=torch.tensor, f64=torch.float64)
EAGER = SimpleNamespace(t=fg.to_tensor, f64="float64")
STATIC = SimpleNamespace(t=fg.assign, f64="float64")   # an array becomes a constant op in a program

# name -> call on x with k (a tensor maker); every one runs on Variables too
CASES = {
    "x.add(y, alpha=2)": lambda x, k: x.add(x * 3.0, alpha=2),
    "x.add(1.5, alpha=-2)": lambda x, k: x.add(1.5, alpha=-2),
    "x.sub(y, alpha=0.5)": lambda x, k: x.sub(x[0], alpha=0.5),
    "x.subtract(y, alpha=3)": lambda x, k: x.subtract(x.exp(), alpha=3),
    "x.var(dim=1, correction=0)": lambda x, k: x.var(dim=1, correction=0),
    "x.var(dim=0, correction=2, keepdim=True)": lambda x, k: x.var(dim=0, correction=2, keepdim=True),
    "x.var(correction=1.5)": lambda x, k: x.var(correction=1.5),
    "x.var(1, False)": lambda x, k: x.var(1, False),
    "x.std(dim=1, correction=0)": lambda x, k: x.std(dim=1, correction=0),
    "x.std(dim=(0, 1), correction=4)": lambda x, k: x.std(dim=(0, 1), correction=4),
    "x.mean(dtype=float64)": lambda x, k: x.mean(dtype=k.f64),
    "x.mean(dim=1, dtype=float64)": lambda x, k: (x > 0).long().mean(dim=1, dtype=k.f64),
    "x.mT": lambda x, k: x.mT,
    "x.reshape(1, 3, 5).mT": lambda x, k: x.reshape(1, 3, 5).mT,
    "x.mH": lambda x, k: x.mH,
    "x.H": lambda x, k: x.H,
    "x.adjoint()": lambda x, k: x.reshape(1, 3, 5).adjoint(),
    "x.T": lambda x, k: x.T,
    "x.count_nonzero()": lambda x, k: (x > 0).count_nonzero(),
    "x.count_nonzero(dim=1)": lambda x, k: (x > 0).count_nonzero(dim=1),
    "x.masked_select(x > 0)": lambda x, k: x.masked_select(x > 0),
    "x.masked_select(row mask)": lambda x, k: x.masked_select(x[0] > 0),
    "x.scatter_add(1, i, src)": lambda x, k: x.scatter_add(1, k.t(I_SCATTER), x * 2.0),
    "x.scatter_add(0, i, src)": lambda x, k: x.scatter_add(0, k.t(I_SCATTER[:2, :3] % 3), x[:2] * 2.0),
    "x.index_add(0, i, src)": lambda x, k: x.index_add(0, k.t(I_ROWS), x * 3.0),
    "x.index_add(1, i, src, alpha=0.5)": lambda x, k: x.index_add(1, k.t(I_ROWS[:2]), x[:, :2], alpha=0.5),
    "x.median(dim=1).values": lambda x, k: x.median(dim=1).values,
    "x.median(dim=0).indices": lambda x, k: x.median(dim=0).indices,
    "x.median(dim=1, keepdim=True)[0]": lambda x, k: x.median(dim=1, keepdim=True)[0],
    "x.round(decimals=2)": lambda x, k: (x * 7.0).round(decimals=2),
    "x.round(decimals=-1)": lambda x, k: (x * 70.0).round(decimals=-1),
    "x.round()": lambda x, k: (x * 7.0).round(),
    "x.add_(y, alpha=0.5)": lambda x, k: (x * 1.0).add_(x, alpha=0.5),
    "x.sub_(y, alpha=2)": lambda x, k: (x * 1.0).sub_(x.exp(), alpha=2),
    "x.pow_(3)": lambda x, k: (x * 1.0).pow_(3),
    "x.square_()": lambda x, k: (x * 1.0).square_(),
    "x.sigmoid_()": lambda x, k: (x * 1.0).sigmoid_(),
    "x.index_add_(0, i, src)": lambda x, k: (x * 1.0).index_add_(0, k.t(I_ROWS), x),
    "x.scatter_add_(1, i, src)": lambda x, k: (x * 1.0).scatter_add_(1, k.t(I_SCATTER), x),
}


def _torch(fn):
    return fn(torch.tensor(X0), TORCH).numpy()


def _check(got, expected):
    got = np.asarray(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch_in_eager_mode(case):
    _check(CASES[case](fg.to_tensor(X0), EAGER).numpy(), _torch(CASES[case]))


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch_in_a_static_program(case):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        out = CASES[case](fg.static.data("x", [3, 5], "float64"), STATIC)
    got, = fg.Executor().run(main, feed={"x": X0}, fetch_list=[out])
    _check(got, _torch(CASES[case]))


def test_statistics_of_a_batch_known_only_at_run_time():
    """var / std with torch's correction count the batch with ops when it is -1 in the program."""
    calls = [lambda x: x.var(dim=0, correction=2), lambda x: x.std(dim=0, correction=2.5),
             lambda x: x.var(correction=0), lambda x: x.median(dim=1).values]
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [-1, 5], "float64")
        outs = [call(x) for call in calls]
    got = fg.Executor().run(main, feed={"x": X0}, fetch_list=outs)
    for value, call in zip(got, calls):
        np.testing.assert_allclose(value, call(torch.tensor(X0)).numpy(), rtol=1e-12)


# differentiable: name -> call on (x, y, k), y another float64 input of x's shape
GRADIENTS = {
    "x.add(y, alpha=-2)": lambda x, y, k: x.add(y, alpha=-2),
    "x.sub(y, alpha=0.5)": lambda x, y, k: x.sub(y, alpha=0.5),
    "x.var(dim=1, correction=0)": lambda x, y, k: x.var(dim=1, correction=0),
    "x.var(dim=0, correction=2)": lambda x, y, k: x.var(dim=0, correction=2),
    "x.std(correction=3)": lambda x, y, k: x.std(correction=3),
    "x.mean(dim=1, dtype=float64)": lambda x, y, k: x.mean(dim=1, dtype=k.f64),
    "x.mT @ y": lambda x, y, k: x.mT @ y,
    "x.mH": lambda x, y, k: x.mH,
    "x.masked_select(y > 0)": lambda x, y, k: (x.masked_select(y > 0) ** 2).sum(),   # (a known shape)
    "x.masked_select(row mask)": lambda x, y, k: (x.masked_select(y[1] > 0) ** 2).sum(),
    "x.scatter_add(1, i, y)": lambda x, y, k: x.scatter_add(1, k.t(I_SCATTER), y),
    "x.index_add(0, i, y, alpha=3)": lambda x, y, k: x.index_add(0, k.t(I_ROWS), y, alpha=3),
    "x.median(dim=1).values": lambda x, y, k: x.median(dim=1).values,
    "x.median(dim=0, keepdim=True).values * y": lambda x, y, k: x.median(dim=0, keepdim=True).values * y,
    "(x * y).round(decimals=1) + x": lambda x, y, k: (x * y).round(decimals=1) + x,
    "(x * 1).add_(y, alpha=0.5)": lambda x, y, k: (x * 1.0).add_(y, alpha=0.5),
    "(x * 1).sub_(y * y, alpha=2)": lambda x, y, k: (x * 1.0).sub_(y * y, alpha=2),
    "(x * y).pow_(3)": lambda x, y, k: (x * y).pow_(3),
    "(x * 1).index_add_(1, i, y[:, :3])": lambda x, y, k: (x * 1.0).index_add_(1, k.t(I_ROWS), y[:, :3]),
    "(x * 1).scatter_add_(1, i, y)": lambda x, y, k: (x * 1.0).scatter_add_(1, k.t(I_SCATTER), y),
}
Y0 = np.random.default_rng(13).standard_normal((3, 5))


@pytest.mark.parametrize("case", sorted(GRADIENTS))
def test_gradients_match_central_differences_torch_and_static(case):
    fn = GRADIENTS[case]
    feeds = {"x": X0, "y": Y0}
    static = check_program_grad(lambda v: fn(v["x"], v["y"], STATIC), feeds)
    cotangent = ProgramGradCheck(lambda v: fn(v["x"], v["y"], STATIC), feeds).feeds["cotangent_0"]
    x, y = fg.to_tensor(X0, stop_gradient=False), fg.to_tensor(Y0, stop_gradient=False)
    (fn(x, y, EAGER) * fg.to_tensor(cotangent)).sum().backward()
    tx, ty = torch.tensor(X0, requires_grad=True), torch.tensor(Y0, requires_grad=True)
    (fn(tx, ty, TORCH) * torch.tensor(cotangent)).sum().backward()
    for eager, torch_leaf, name in ((x, tx, "x"), (y, ty, "y")):
        expected = np.zeros_like(X0) if torch_leaf.grad is None else torch_leaf.grad.numpy()
        got = np.zeros_like(X0) if eager.grad is None else eager.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, err_msg=f"eager d/d{name} vs torch")
        np.testing.assert_allclose(got, static[name], rtol=1e-10, atol=1e-12, err_msg=f"eager d/d{name} vs static")


def test_in_place_forms_write_into_x_and_keep_the_in_place_rules():
    x = fg.to_tensor(X0)
    alias = x
    assert x.add_(fg.to_tensor(Y0), alpha=0.5) is x
    np.testing.assert_allclose(alias.numpy(), X0 + 0.5 * Y0, rtol=1e-15)
    weight = fg.to_tensor(X0, stop_gradient=False)
    with pytest.raises(RuntimeError, match="leaf Tensor that requires a gradient"):
        weight.sub_(fg.to_tensor(Y0), alpha=0.1)
    with fg.no_grad():                     # the hand-written SGD step of torch code
        weight.sub_(fg.to_tensor(Y0), alpha=0.1)
    np.testing.assert_allclose(weight.numpy(), X0 - 0.1 * Y0, rtol=1e-15)
    with pytest.raises(fg.framework.DTypeError, match=r"add_\(\) writes into x in place"):   # x's shape stays
        fg.to_tensor(X0[:1]).add_(fg.to_tensor(Y0), alpha=2)


def test_median_with_torchs_dim_is_torchs_pair_nan_included():
    a = X0.copy()
    a[1, 3] = a[1, 1] = np.nan
    got, expected = fg.to_tensor(a).median(dim=1), torch.tensor(a).median(dim=1)
    values, indices = got
    assert type(got).__name__ == "median" and got.values is values and got.indices is indices
    np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())


def test_paddle_calls_keep_their_meaning():
    x = fg.to_tensor(X0[:, :4])
    np.testing.assert_allclose(x.median().numpy(), np.median(X0[:, :4]), rtol=1e-15)   # mean of the middle two
    np.testing.assert_allclose(x.median(axis=1).numpy(), np.median(X0[:, :4], axis=1), rtol=1e-15)
    np.testing.assert_allclose(x.var(1, False).numpy(), X0[:, :4].var(1), rtol=1e-12)
    rows = fg.to_tensor(np.array([0, 0]))
    expected = X0[:, :4].copy()
    np.add.at(expected, [0, 0], X0[:2, :4])
    np.testing.assert_allclose(x.index_add(rows, 0, x[:2]).numpy(), expected, rtol=1e-15)   # (index, axis, value)
    np.testing.assert_allclose(x.add(x).numpy(), 2 * X0[:, :4], rtol=1e-15)
    assert x.is_floating_point() and not x.is_complex() and not (x > 0).is_floating_point()
    with fg.program_guard(fg.Program()):
        v = fg.static.data("v", [2, 4], "int32")
        assert not v.is_floating_point() and not v.is_complex()


_REFUSED = {
    "1-D x.mT": (lambda x, i: x[0].mT, ValueError, r"x.mT is the transpose of a matrix"),
    "3-D x.H": (lambda x, i: x.reshape(1, 3, 5).H, ValueError, r"x.H is the conjugate transpose of a matrix \(2-D\)"),
    "int add alpha=0.5": (lambda x, i: i.add(i, alpha=0.5), TypeError, "alpha=0.5 is fractional"),
    "var unbiased and correction": (lambda x, i: x.var(unbiased=True, correction=0), TypeError,
                                    "unbiased= or correction="),
    "median axis and dim": (lambda x, i: x.median(axis=0, dim=0), TypeError, "axis=.*or dim="),
    "round(decimals=1) of ints": (lambda x, i: i.round(decimals=1), TypeError, "round: decimals=1 needs a floating"),
    "round(decimals=0.5)": (lambda x, i: x.round(decimals=0.5), TypeError, "decimals must be an integer"),
    "index_add(1, list, x)": (lambda x, i: x.index_add(1, [0, 1], x), TypeError, r"index_add\(dim, index, source\)"),
    "scatter_add(1, i, 2.0)": (lambda x, i: x.scatter_add(1, i, 2.0), TypeError, "scatter_add: src must be a tensor"),
    "masked_select(mask of 4)": (lambda x, i: x.masked_select(x[:, :4] > 0), ValueError, "does not broadcast"),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_wrong_calls_say_what_is_wrong(case):
    fn, error, words = _REFUSED[case]
    with pytest.raises(error, match=words):
        fn(fg.to_tensor(X0), fg.to_tensor(I_SCATTER))
