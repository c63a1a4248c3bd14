"""More of torch's everyday Tensor methods (fluidgrad/tensor/torch_everyday.py) against torch
2.13.0: values in eager mode and in a static program, gradients against central differences
(float64), torch and eager equal to static, the in-place forms written into x."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.testing import ProgramGradCheck, check_program_grad

X0 = np.random.default_rng(21).uniform(0.2, 0.9, (4, 4))
Y0 = np.random.default_rng(22).uniform(0.2, 0.9, (4, 4))
IDX = np.array([[2, 0], [1, 3], [0, 0], [3, 1]])

TORCH = SimpleNamespace(t=torch.tensor)
EAGER = SimpleNamespace(t=fg.to_tensor)
STATIC = SimpleNamespace(t=fg.assign)

# name -> call on (x, k); each also runs on a Variable
CASES = {
    "x.addcmul(y, y, value=0.1)": lambda x, k: x.addcmul(x * 2.0, x, value=0.1),
    "x.addcdiv(y, z, value=-0.5)": lambda x, k: x.addcdiv(x * 2.0, x + 1.0, value=-0.5),
    "x.select(1, -1)": lambda x, k: x.select(1, -1),
    "x.select(0, 2)": lambda x, k: x.select(0, 2),
    "x.unflatten(1, (2, 2))": lambda x, k: x.unflatten(1, (2, 2)),
    "x.unflatten(0, (-1, 2))": lambda x, k: x.unflatten(0, (-1, 2)),
    "x.ravel()": lambda x, k: x.ravel(),
    "x.unfold(1, 2, 1)": lambda x, k: x.unfold(1, 2, 1),
    "x.unfold(0, 3, 2)": lambda x, k: x.unfold(0, 3, 2),
    "x.sum_to_size(1, 4)": lambda x, k: x.sum_to_size(1, 4),
    "x.sum_to_size((4, 1))": lambda x, k: x.sum_to_size((4, 1)),
    "x.sum_to_size(4)": lambda x, k: x.sum_to_size(4),
    "x.aminmax(dim=1).min": lambda x, k: x.aminmax(dim=1).min,
    "x.aminmax().max": lambda x, k: x.aminmax().max,
    "x.take_along_dim(i, 1)": lambda x, k: x.take_along_dim(k.t(IDX), 1),
    "x.take_along_dim(i)": lambda x, k: x.take_along_dim(k.t(IDX)),
    "x.msort()": lambda x, k: x.msort(),
    "x.index_copy(1, i, src)": lambda x, k: x.index_copy(1, k.t(IDX[:, 0]), x[:, :4] * 3.0),
    "x.index_fill(0, i, -1)": lambda x, k: x.index_fill(0, k.t(IDX[:2, 1]), -1.0),
    "x.index_fill_(1, i, 2)": lambda x, k: (x * 1.0).index_fill_(1, k.t(IDX[:, 1]), 2.0),
    "x.index_copy_(0, i, src)": lambda x, k: (x * 1.0).index_copy_(0, k.t(IDX[:2, 0]), x[2:] * 5.0),
    "x.mv(v)": lambda x, k: x.mv(x[0]),
    "x.float_power(2.5)": lambda x, k: x.float_power(2.5),
    "x.exp2()": lambda x, k: x.exp2(),
    "x.fix()": lambda x, k: (x * 5.0 - 2.0).fix(),
    "x.absolute()": lambda x, k: (x - 0.5).absolute(),
    "x.sgn()": lambda x, k: (x - 0.5).sgn(),
    "x.arccos()": lambda x, k: x.arccos(),
    "x.arctan2(y)": lambda x, k: x.arctan2(x - 0.5),
    "x.fliplr()": lambda x, k: x.fliplr(),
    "x.flipud()": lambda x, k: x.flipud(),
    "x.argwhere()": lambda x, k: (x > 0.5).argwhere(),
    "x.short()": lambda x, k: (x * 10.0).short(),
    "x.addmm(a, b, beta=0.5)": lambda x, k: x.addmm(x, x * 2.0, beta=0.5),
    "x.logaddexp(y)": lambda x, k: x.logaddexp(x * 3.0),
    "x.hypot(y)": lambda x, k: x.hypot(x * 3.0),
    "x.nansum(dim=1)": lambda x, k: x.nansum(dim=1),
    "x.nanmean(dim=0, keepdim=True)": lambda x, k: x.nanmean(dim=0, keepdim=True),
    "x.cummax(dim=1).values": lambda x, k: x.cummax(dim=1)[0],
    "x.logcumsumexp(dim=0)": lambda x, k: x.logcumsumexp(dim=0),
    "x.quantile(0.3, dim=1)": lambda x, k: x.quantile(0.3, dim=1),
    "x.rot90(1, dims=(0, 1))": lambda x, k: x.rot90(1, dims=(0, 1)),
    "x.diff(dim=0)": lambda x, k: x.diff(dim=0),
    "x.kron(y)": lambda x, k: x[:2, :2].kron(x[2:, 2:]),
    "x.lgamma()": lambda x, k: x.lgamma(),
    "x.frac()": lambda x, k: (x * 7.0).frac(),
    "x.isposinf()": lambda x, k: (x - 0.5).log().isposinf(),
    "x.isneginf()": lambda x, k: ((x - 0.5) * 0.0).log().isneginf(),
    "x.addcmul_(y, y, value=0.1)": lambda x, k: (x * 1.0).addcmul_(x, x, value=0.1),
    "x.addcdiv_(y, z, value=-2)": lambda x, k: (x * 1.0).addcdiv_(x, x + 1.0, value=-2),
    "x.lerp_(y, 0.25)": lambda x, k: (x * 1.0).lerp_(x * 2.0, 0.25),
    "x.fill_diagonal_(0)": lambda x, k: (x * 1.0).fill_diagonal_(0),
    "x[:, :2].fill_diagonal_(5, wrap=True)": lambda x, k: (x * 1.0).reshape(8, 2).fill_diagonal_(5.0, wrap=True),
    "x.nan_to_num_(0.5)": lambda x, k: ((x - 0.5) * 0.0).log().nan_to_num_(0.5, posinf=1.0, neginf=-1.0),
    "x.log_()": lambda x, k: (x * 1.0).log_(),
    "x.neg_()": lambda x, k: (x * 1.0).neg_(),
    "x.cos_()": lambda x, k: (x * 1.0).cos_(),
    "x.tril_(-1)": lambda x, k: (x * 1.0).tril_(-1),
    "x.cumsum_(1)": lambda x, k: (x * 1.0).cumsum_(1),
    "x.addmm_(a, b, alpha=2)": lambda x, k: (x * 1.0).addmm_(x, x, alpha=2),
    "x.t_()": lambda x, k: (x[:2] * 1.0).t_(),
    "x.transpose_(0, 1)": lambda x, k: (x[:2] * 1.0).transpose_(0, 1),
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
        out = CASES[case](fg.static.data("x", [4, 4], "float64"), STATIC)
    got, = fg.Executor().run(main, feed={"x": X0}, fetch_list=[out])
    _check(got, _torch(CASES[case]))


GRADIENTS = {
    "x.addcmul(y, x, value=0.3)": lambda x, y: x.addcmul(y, x, value=0.3),
    "x.addcdiv(y, x + 1, value=-2)": lambda x, y: x.addcdiv(y, x + 1.0, value=-2),
    "(x * 1).addcdiv_(y, x + 1, value=-2)": lambda x, y: (x * 1.0).addcdiv_(y, x + 1.0, value=-2),
    "(x * 1).lerp_(y, 0.3)": lambda x, y: (x * 1.0).lerp_(y, 0.3),
    "(x * y).fill_diagonal_(0)": lambda x, y: (x * y).fill_diagonal_(0),
    "x.unfold(1, 2, 1) * 2": lambda x, y: x.unfold(1, 2, 1) * 2.0,
    "x.select(1, 2) * y[0]": lambda x, y: x.select(1, 2) * y[0],
    "x.sum_to_size(1, 4) * y": lambda x, y: x.sum_to_size(1, 4) * y,
    "x.take_along_dim(i, 1)": lambda x, y: x.take_along_dim(fg.to_tensor(IDX) if not isinstance(x, fg.Variable)
                                                            else fg.assign(IDX), 1),
    "x.mv(y[0])": lambda x, y: x.mv(y[0]),
    "x.index_copy(0, i, y[:2])": lambda x, y: x.index_copy(0, (fg.to_tensor if not isinstance(x, fg.Variable)
                                                              else fg.assign)(np.array([3, 1])), y[:2]),
    "x.index_fill(1, i, y[0, 0])": lambda x, y: x.index_fill(1, (fg.to_tensor if not isinstance(x, fg.Variable)
                                                                else fg.assign)(np.array([0, 2])), y[0, 0]),
    "x.float_power(y)": lambda x, y: x.float_power(y),
    "x.addmm(x, y, beta=0.5, alpha=2)": lambda x, y: x.addmm(x, y, beta=0.5, alpha=2),
    "(x * 1).log_() * y": lambda x, y: (x * 1.0).log_() * y,
}


@pytest.mark.parametrize("case", sorted(GRADIENTS))
def test_gradients_match_central_differences_torch_and_static(case):
    fn = GRADIENTS[case]
    feeds = {"x": X0, "y": Y0}
    static = check_program_grad(lambda v: fn(v["x"], v["y"]), feeds)
    cotangent = ProgramGradCheck(lambda v: fn(v["x"], v["y"]), feeds).feeds["cotangent_0"]
    x, y = fg.to_tensor(X0, stop_gradient=False), fg.to_tensor(Y0, stop_gradient=False)
    (fn(x, y) * fg.to_tensor(cotangent)).sum().backward()
    tx, ty = torch.tensor(X0, requires_grad=True), torch.tensor(Y0, requires_grad=True)
    torch_fn = {"x.take_along_dim(i, 1)": lambda a, b: a.take_along_dim(torch.tensor(IDX), 1),
                "x.index_copy(0, i, y[:2])": lambda a, b: a.index_copy(0, torch.tensor([3, 1]), b[:2]),
                "x.index_fill(1, i, y[0, 0])": lambda a, b: a.index_fill(1, torch.tensor([0, 2]), b[0, 0])}.get(case, fn)
    (torch_fn(tx, ty) * torch.tensor(cotangent)).sum().backward()
    for eager, torch_leaf, name in ((x, tx, "x"), (y, ty, "y")):
        expected = np.zeros_like(X0) if torch_leaf.grad is None else torch_leaf.grad.numpy()
        got = np.zeros_like(X0) if eager.grad is None else eager.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, err_msg=f"eager d/d{name} vs torch")
        np.testing.assert_allclose(got, static[name], rtol=1e-10, atol=1e-12, err_msg=f"eager d/d{name} vs static")


def test_sizes_of_elements_as_torch():
    for dtype, torch_dtype in (("float32", torch.float32), ("float64", torch.float64), ("int16", torch.int16),
                               ("bool", torch.bool), ("uint8", torch.uint8)):
        x, t = fg.to_tensor(np.zeros((2, 3), dtype)), torch.zeros((2, 3), dtype=torch_dtype)
        assert (x.element_size(), x.itemsize, x.nbytes, x.nelement()) == \
            (t.element_size(), t.itemsize, t.nbytes, t.nelement()), dtype
        assert x.is_signed() == t.is_signed(), dtype
    assert fg.to_tensor(np.zeros(2)).is_same_size(fg.to_tensor(np.ones(2)))
    with fg.program_guard(fg.Program(), fg.Program()):
        v = fg.static.data("v", [-1, 3], "float32")
        assert v.element_size() == 4 and v.itemsize == 4
        with pytest.raises(ValueError, match="x.nbytes: .* known only at run time"):
            _ = v.nbytes


def test_in_place_forms_keep_the_in_place_rules():
    x = fg.to_tensor(X0)
    alias = x
    assert x.addcmul_(fg.to_tensor(Y0), fg.to_tensor(Y0), value=0.5) is x
    np.testing.assert_allclose(alias.numpy(), X0 + 0.5 * Y0 * Y0, rtol=1e-15)
    ema = fg.to_tensor(X0, stop_gradient=False)
    with pytest.raises(RuntimeError, match="leaf Tensor that requires a gradient"):
        ema.lerp_(fg.to_tensor(Y0), 0.1)
    with fg.no_grad():
        ema.lerp_(fg.to_tensor(Y0), 0.1)
    np.testing.assert_allclose(ema.numpy(), X0 + 0.1 * (Y0 - X0), rtol=1e-15)
    square = fg.to_tensor(X0[:2])
    assert square.t_() is square and square.shape == (4, 2)


_REFUSED = {
    "x.select(1, 4)": (lambda x: x.select(1, 4), IndexError, "select: index 4 is out of range"),
    "x.select(2, 0)": (lambda x: x.select(2, 0), IndexError, "select: dim 2 is out of range"),
    "x.unfold(1, 5, 1)": (lambda x: x.unfold(1, 5, 1), ValueError, "unfold: size 5 and step 1"),
    "x.sum_to_size(3)": (lambda x: x.sum_to_size(3), ValueError, "does not expand from size \\[3\\]"),
    "x.mv(x)": (lambda x: x.mv(x), ValueError, "mv: needs a matrix and a vector"),
    "x[0].fill_diagonal_(1)": (lambda x: x[0].fill_diagonal_(1.0), ValueError, "fill_diagonal_: needs a matrix"),
    "x.fill_diagonal_ on a leaf": (lambda x: fg.to_tensor(X0, stop_gradient=False).fill_diagonal_(0.0),
                                   RuntimeError, "leaf Tensor"),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_wrong_calls_say_what_is_wrong(case):
    fn, error, words = _REFUSED[case]
    with pytest.raises(error, match=words):
        fn(fg.to_tensor(X0))


def test_graph_questions_of_eager_tensors_as_torch():
    x = fg.to_tensor(X0, stop_gradient=False)
    y = x * 2.0
    assert x.grad_fn is None and y.grad_fn is not None and not y.retains_grad
    y.retain_grads()
    assert y.retains_grad
    z = y * 3.0
    assert z.detach_() is z and z.grad_fn is None and z.stop_gradient and z.is_leaf
    (y * 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(X0.shape, 2.0))
    assert x.detach_() is x and not x.requires_grad      # as torch: a leaf may be detached in place too
