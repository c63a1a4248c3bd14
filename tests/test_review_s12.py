"""Session-12 review: what a PyTorch or Paddle 2 user meets in their first hours with fluidgrad, each
finding a strict xfail until its fix lands (then the mark goes and the test stays as a regression
test). PyTorch 2.13.0 is the oracle; where Paddle 2 documents another rule and fluidgrad follows it
(F.pad's order when every axis is padded, AvgPool's `exclusive`, F.embedding's zero padding row,
`x.max(1)` a tensor, two tensors of different dtypes refused) the Paddle choice is left alone.

Found by sweeping forward values and gradients of ~500 functions, methods and layers against torch
on float64 inputs (broadcasting, negative axes, keepdim, empty axes, integer and bool inputs, NaN,
large offsets), grad of grad of ~60 functions, static programs with a -1 batch against eager, the
static optimizers against the eager ones, autograd (hooks, retain_grad, create_graph, in-place on
saved tensors), torch's optimizers and clip_grad_norm_, layers with torch's weights copied in (conv
groups / dilation / transposed, LSTM / GRU with states and lengths), ONNX export through
onnxruntime, jit.save / load_inference_model round trips, and by porting a torch CNN training
script and a Paddle 2 LeNet script (DataLoader, Adam, schedulers, save/load, jit.to_static,
InputSpec, hapi) line by line. Values and gradients matched torch nearly everywhere; the wrong
answers left are silent ones around the numbers: writes through torch's views that vanish, an
int-and-list index ordered as NumPy orders it, sizes that are not sizes, batch norm on one value,
optimizer options that are ignored or applied twice, no_grad that misses a generator's body. The
rest is API torch and Paddle code reaches for in its first hours."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import fluidgrad as fg

_RNG = np.random.default_rng(12)
_X = _RNG.standard_normal((3, 4))
_Y = _RNG.standard_normal((3, 4))
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(fg.__file__)))


@pytest.fixture
def eager(monkeypatch):
    """Eager mode inside a test (the suite's conftest guards every test with a program, where
    functions without tensor inputs such as `zeros` append ops)."""
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _np(value):
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _marked(cases, mark, fixed=()):
    """The parametrize list of sorted(cases) with `mark` on each case still open; the cases in `fixed`
    were fixed while this review was written and stay as unmarked regression tests."""
    return [case if case in fixed else pytest.param(case, marks=mark) for case in sorted(cases)]


# ================================================================ wrong answers
_VIEW_WRITES = {
    "x.view(3, 2)[0, 0] = 100": lambda x: x.view(3, 2).__setitem__((0, 0), 100.0),
    "x.reshape(-1)[2] = -1": lambda x: x.reshape(-1).__setitem__(2, -1.0),
    "x.flatten()[0] = -5": lambda x: x.flatten().__setitem__(0, -5.0),
    "x.t().mul_(2)": lambda x: x.t().mul_(2),
    "x.T[0, 1] = -5": lambda x: x.T.__setitem__((0, 1), -5.0),
    "x.transpose(0, 1)[0, 1] = 9": lambda x: x.transpose(0, 1).__setitem__((0, 1), 9.0),
    "x.unsqueeze(0).add_(1)": lambda x: x.unsqueeze(0).add_(1),
    "x.detach().add_(1)": lambda x: x.detach().add_(1),
    "x.narrow(1, 1, 2).fill_(0)": lambda x: x.narrow(1, 1, 2).fill_(0),
    "x.unbind(0)[1].fill_(0)": lambda x: x.unbind(0)[1].fill_(0),
    "x.chunk(2, 0)[0].add_(1)": lambda x: x.chunk(2, 0)[0].add_(1),
    "x.diagonal().fill_(0)": lambda x: x.diagonal().fill_(0),
}


@pytest.mark.parametrize("write", sorted(_VIEW_WRITES))
def test_in_place_writes_through_torch_views_reach_the_base(write):
    base = np.arange(6.0).reshape(2, 3)
    expected, got = torch.tensor(base), fg.to_tensor(base)
    _VIEW_WRITES[write](expected)
    try:
        _VIEW_WRITES[write](got)
    except RuntimeError:
        return   # a refusal is a fix too: the write is not silently lost
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


_INT_THEN_LIST = {
    "x[0, :, [1, 3]]": lambda x, index: x[0, :, index([1, 3])],
    "x[0, ..., [1, 3]]": lambda x, index: x[0, ..., index([1, 3])],
    "x[-1, :, [-1, 0]]": lambda x, index: x[-1, :, index([-1, 0])],
    "x[None, 0, :, [1, 3]]": lambda x, index: x[None, 0, :, index([1, 3])],
    "x[0, :, [1, 3]] = v (v of torch's shape [3, 2])": lambda x, index: _written(x, (0, slice(None), index([1, 3]))),
}


def _written(x, item):
    value = np.arange(6.0).reshape(3, 2) + 100
    x[item] = torch.tensor(value) if isinstance(x, torch.Tensor) else fg.to_tensor(value)
    return x


@pytest.mark.parametrize("item", sorted(_INT_THEN_LIST))
def test_int_and_list_index_split_by_a_slice_follow_torch(item):
    a = np.arange(24.0).reshape(2, 3, 4)
    expected = _INT_THEN_LIST[item](torch.tensor(a), lambda v: torch.tensor(np.array(v)))
    got = _INT_THEN_LIST[item](fg.to_tensor(a), lambda v: fg.to_tensor(np.array(v)))
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


_BAD_SIZES = {
    "zeros([2.5])": lambda: fg.zeros([2.5]),
    "ones([7 / 2, 2])": lambda: fg.ones([7 / 2, 2]),
    "full([3.9], 1.0)": lambda: fg.full([3.9], 1.0),
    "x.reshape([2.5, -1])": lambda: fg.to_tensor(np.ones(6)).reshape([2.5, -1]),
    "x.reshape([-2, 3])": lambda: fg.to_tensor(np.ones(6)).reshape([-2, 3]),
}


@pytest.mark.parametrize("call", sorted(_BAD_SIZES))
def test_sizes_that_are_not_sizes_are_refused(call, eager):
    with pytest.raises((TypeError, ValueError, fg.framework.errors.ShapeError)):
        _BAD_SIZES[call]()


_ONE_PER_CHANNEL = {"BatchNorm1D(3) on [1, 3]": (lambda: fg.nn.BatchNorm1D(3), (1, 3)),
                    "BatchNorm2D(3) on [1, 3, 1, 1]": (lambda: fg.nn.BatchNorm2D(3), (1, 3, 1, 1))}


@pytest.mark.parametrize("case", sorted(_ONE_PER_CHANNEL))
def test_batch_norm_in_training_refuses_one_value_per_channel(case):
    make, shape = _ONE_PER_CHANNEL[case]
    with pytest.raises(ValueError, match="(?i)channel"):
        make()(fg.to_tensor(np.arange(3.0, dtype="float32").reshape(shape)))


_GROUP_WRITES = {
    "AdamW: group['weight_decay'] = 0.5": ("AdamW", {"lr": 0.01}, "weight_decay", 0.5),
    "Adam: group['betas'] = (0.5, 0.6)": ("Adam", {"lr": 0.01}, "betas", (0.5, 0.6)),
    "SGD: group['momentum'] = 0.1": ("SGD", {"lr": 0.1, "momentum": 0.9}, "momentum", 0.1),
}


@pytest.mark.parametrize("write", sorted(_GROUP_WRITES))
def test_writes_into_param_groups_take_effect(write):
    name, kwargs, key, value = _GROUP_WRITES[write]
    w0, x0 = _RNG.standard_normal((3, 2)), _RNG.standard_normal((5, 3))
    layer = fg.nn.Linear(3, 2, bias_attr=False).to(dtype="float64")
    layer.weight.set_value(w0.copy())
    opt = getattr(fg.optimizer, name)(layer.parameters(), **kwargs)
    reference = torch.nn.Parameter(torch.tensor(w0.copy()))
    reference_opt = getattr(torch.optim, name)([reference], **kwargs)
    for group in reference_opt.param_groups:
        group[key] = value
    try:
        for group in opt.param_groups:
            group[key] = value
    except (KeyError, TypeError, ValueError):
        return   # a refusal is a fix too: the write is not silently lost
    _three_steps_beside_torch(layer, opt, reference, reference_opt, x0)
    np.testing.assert_allclose(layer.weight.numpy(), reference.detach().numpy(), rtol=1e-10, atol=1e-12)


def _three_steps_beside_torch(layer, opt, reference, reference_opt, x0):
    """Three steps of sum(tanh(x0 @ W)^2) with fluidgrad's optimizer and torch's, on the same weight."""
    for _ in range(3):
        opt.clear_grad()
        fg.sum(fg.tanh(layer(fg.to_tensor(x0))) ** 2).backward()
        opt.step()
        reference_opt.zero_grad()
        (torch.tanh(torch.tensor(x0) @ reference) ** 2).sum().backward()
        reference_opt.step()


@pytest.mark.parametrize("name", ["Adam", "SGD"])
def test_a_parameter_listed_twice_is_not_silently_updated_twice(name):
    import warnings
    w = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            opt = getattr(fg.optimizer, name)([w, w], lr=0.1)
        except ValueError:
            return   # refused: fine
    if any(word in str(warning.message) for warning in caught for word in ("duplicate", "twice")):
        return   # warned as torch does: fine
    (w * w).sum().backward()
    opt.step()
    once = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    single = getattr(fg.optimizer, name)([once], lr=0.1)
    (once * once).sum().backward()
    single.step()
    np.testing.assert_allclose(w.numpy(), once.numpy(), rtol=1e-12)


def test_no_grad_decorates_a_generator_function(eager):
    x = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)

    @fg.no_grad()
    def doubles(a):
        for _ in range(2):
            a = a * 2
            yield a

    assert [step.stop_gradient for step in doubles(x)] == [True, True]


# ================================================================ crashes with unclear errors
def test_group_norm_takes_torchs_positional_weight_and_bias():
    x, w, b = _RNG.standard_normal((2, 6, 3)), _RNG.standard_normal(6), _RNG.standard_normal(6)
    expected = torch.nn.functional.group_norm(torch.tensor(x), 2, torch.tensor(w), torch.tensor(b))
    got = fg.nn.functional.group_norm(fg.to_tensor(x), 2, fg.to_tensor(w), fg.to_tensor(b))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


_NOT_TENSOR_DATA = {"ragged [[1.0, 2.0], [3.0]]": [[1.0, 2.0], [3.0]], "None": None, "a dict": {"a": 1}}


@pytest.mark.parametrize("data", sorted(_NOT_TENSOR_DATA))
def test_to_tensor_errors_name_to_tensor(data):
    with pytest.raises((TypeError, ValueError), match="to_tensor"):
        fg.to_tensor(_NOT_TENSOR_DATA[data])


def test_cross_entropy_weight_of_the_wrong_size_is_named():
    with pytest.raises((ValueError, fg.framework.errors.ShapeError), match=r"(?s)cross_entropy.*weight"):
        fg.nn.functional.cross_entropy(fg.to_tensor(np.ones((2, 3), "float32")), fg.to_tensor(np.array([0, 1])),
                                       weight=fg.to_tensor(np.ones(4, "float32")))


_CE_TARGETS = {
    "F.cross_entropy([N, C, d] logits, [N, d] labels)": (
        lambda m, x, y: m.nn.functional.cross_entropy(x, y), (2, 4, 3), lambda: _RNG.integers(0, 4, (2, 3))),
    "nn.CrossEntropyLoss()([N, C, H, W] logits, [N, H, W] labels)": (
        lambda m, x, y: m.nn.CrossEntropyLoss()(x, y), (2, 4, 3, 2), lambda: _RNG.integers(0, 4, (2, 3, 2))),
    "F.cross_entropy(logits, probabilities)": (
        lambda m, x, y: m.nn.functional.cross_entropy(x, y), (5, 4),
        lambda: np.abs(_RNG.standard_normal((5, 4))) / np.abs(_RNG.standard_normal((5, 4))).sum(1, keepdims=True)),
}


@pytest.mark.parametrize("call", sorted(_CE_TARGETS))
def test_cross_entropy_takes_torchs_target_forms(call):
    fn, shape, make_target = _CE_TARGETS[call]
    logits, target = _RNG.standard_normal(shape), make_target()
    reference = torch.tensor(logits, requires_grad=True)
    expected = fn(torch, reference, torch.tensor(target))
    expected.backward()
    ours = fg.to_tensor(logits, stop_gradient=False)
    got = fn(fg, ours, fg.to_tensor(target))
    got.backward()
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.grad.numpy(), reference.grad.numpy(), rtol=1e-8, atol=1e-12)


# ================================================================ missing everyday API
# ---------------------------------------------------------------- the first lines of a torch script
def _device_line(m):
    return "cpu" in str(m.device("cuda" if m.cuda.is_available() else "cpu")).lower()


_FIRST_LINES = {
    "torch.optim.Adam(params, lr=1e-3)": lambda m: type(m.optim.Adam(m.nn.Linear(2, 2).parameters(), lr=1e-3)).__name__,
    "torch.utils.data.DataLoader(TensorDataset(x, y))": lambda m: len(m.utils.data.DataLoader(
        m.utils.data.TensorDataset(m.ones([4, 2]), m.zeros([4])), batch_size=2)),
    "torch.device('cuda' if torch.cuda.is_available() else 'cpu')": _device_line,
    "x.to(torch.long) / torch.float": lambda m: (str(m.ones([2]).to(m.long).dtype).split(".")[-1],
                                                 str(m.ones([2]).to(m.float).dtype).split(".")[-1]),
}


@pytest.mark.parametrize("line", sorted(_FIRST_LINES))
def test_first_lines_of_a_torch_script(line, eager):
    assert _FIRST_LINES[line](fg) == _FIRST_LINES[line](torch)


def test_load_takes_torchs_map_location_and_weights_only(tmp_path, eager):
    layer = fg.nn.Linear(3, 2)
    path = str(tmp_path / "model.pt")
    fg.save(layer.state_dict(), path)
    for kwargs in ({"map_location": "cpu"}, {"weights_only": True}):
        state = fg.load(path, **kwargs)
        np.testing.assert_array_equal(_np(state["weight"]), layer.weight.numpy())


_NAMED_PAIRS = {
    "x.topk(2)": (lambda x: x.topk(2), lambda x: x.topk(2)),
    "fg.topk(x, 2)": (lambda x: fg.topk(x, 2), lambda x: torch.topk(x, 2)),
    "x.kthvalue(2, 1)": (lambda x: x.kthvalue(2, 1), lambda x: x.kthvalue(2, 1)),
    "fg.cummax(x, 1)": (lambda x: fg.cummax(x, 1), lambda x: torch.cummax(x, 1)),
}


@pytest.mark.parametrize("call", sorted(_NAMED_PAIRS))
def test_value_index_pairs_have_values_and_indices(call):
    ours, theirs = _NAMED_PAIRS[call]
    got, expected = ours(fg.to_tensor(_X)), theirs(torch.tensor(_X))
    np.testing.assert_array_equal(got.values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())


_TOP_LEVEL = {
    "softmax(x, dim=1)": lambda m, x, y: m.softmax(x, dim=1),
    "log_softmax(x, dim=1)": lambda m, x, y: m.log_softmax(x, dim=1),
    "permute(x, (1, 0))": lambda m, x, y: m.permute(x, (1, 0)),
    "mul(x, y)": lambda m, x, y: m.mul(x, y),
    "sub(x, y)": lambda m, x, y: m.sub(x, y),
    "div(x, y)": lambda m, x, y: m.div(x, y),
    "eq(x, y)": lambda m, x, y: m.eq(x, x * 1),
    "gt(x, y)": lambda m, x, y: m.gt(x, y),
    "narrow(x, 1, 1, 2)": lambda m, x, y: m.narrow(x, 1, 1, 2),
    "movedim(x, 0, 1)": lambda m, x, y: m.movedim(x, 0, 1),
}


@pytest.mark.parametrize("call", sorted(_TOP_LEVEL))
def test_torch_top_level_functions(call):
    expected = _np(_TOP_LEVEL[call](torch, torch.tensor(_X), torch.tensor(_Y)))
    got = _np(_TOP_LEVEL[call](fg, fg.to_tensor(_X), fg.to_tensor(_Y)))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


_V = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 1.0])
_BOTH_HAVE = {
    "unique_consecutive(v)": (lambda: fg.unique_consecutive(fg.to_tensor(_V)),
                              lambda: torch.unique_consecutive(torch.tensor(_V))),
    "cartesian_prod(a, b)": (lambda: fg.cartesian_prod(fg.to_tensor(_X[0]), fg.to_tensor(_Y[0])),
                             lambda: torch.cartesian_prod(torch.tensor(_X[0]), torch.tensor(_Y[0]))),
    "block_diag(a, b)": (lambda: fg.block_diag(fg.to_tensor(_X[:2, :2]), fg.to_tensor(_Y[:1])),
                         lambda: torch.block_diag(torch.tensor(_X[:2, :2]), torch.tensor(_Y[:1]))),
    "trapezoid(y, dx=0.5)": (lambda: fg.trapezoid(fg.to_tensor(_X), dx=0.5),
                             lambda: torch.trapezoid(torch.tensor(_X), dx=0.5)),
    "cumulative_trapezoid(y)": (lambda: fg.cumulative_trapezoid(fg.to_tensor(_X)),
                                lambda: torch.cumulative_trapezoid(torch.tensor(_X))),
    "renorm(x, 2, 0, 1.0)": (lambda: fg.renorm(fg.to_tensor(_X), 2, 0, 1.0),
                             lambda: torch.renorm(torch.tensor(_X), 2, 0, 1.0)),
    "vander(v, 3)": (lambda: fg.vander(fg.to_tensor(_X[0]), 3), lambda: torch.vander(torch.tensor(_X[0]), 3)),
    "nanquantile(v, 0.5)": (lambda: fg.nanquantile(fg.to_tensor(np.array([1.0, np.nan, 3.0, 2.0])), 0.5),
                            lambda: torch.nanquantile(torch.tensor([1.0, np.nan, 3.0, 2.0], dtype=torch.float64), 0.5)),
    "quantile(x, 0.4, interpolation='lower')": (
        lambda: fg.quantile(fg.to_tensor(_X.ravel()), 0.4, interpolation="lower"),
        lambda: torch.quantile(torch.tensor(_X.ravel()), 0.4, interpolation="lower")),
    "linalg.cov(x) / torch.cov(x)": (lambda: fg.linalg.cov(fg.to_tensor(_X)), lambda: torch.cov(torch.tensor(_X))),
    "linalg.corrcoef(x) / torch.corrcoef(x)": (lambda: fg.linalg.corrcoef(fg.to_tensor(_X)),
                                               lambda: torch.corrcoef(torch.tensor(_X))),
}


@pytest.mark.parametrize("call", sorted(_BOTH_HAVE))
def test_functions_torch_and_paddle_both_have(call):
    ours, theirs = _BOTH_HAVE[call]
    np.testing.assert_allclose(_np(ours()), _np(theirs()), rtol=1e-10, atol=1e-12)


def _dist_tensor(m, values):
    return torch.tensor(np.array(values, dtype=float)) if m is torch else fg.to_tensor(np.array(values, dtype=float))


def _dist(m):
    return fg.distribution if m is fg else torch.distributions


_DISTRIBUTIONS = {
    "Independent(Normal, 1)": lambda m, t: _dist(m).Independent(
        _dist(m).Normal(t([[0.0, 1.0]]), t([[1.0, 2.0]])), 1).log_prob(t([[0.5, 0.2]])),
    "MultivariateNormal(loc, cov)": lambda m, t: _dist(m).MultivariateNormal(
        t([0.0, 1.0]), t([[2.0, 0.5], [0.5, 1.0]])).log_prob(t([[0.3, 0.2], [1.0, -1.0]])),
    "Beta(2, 3)": lambda m, t: _dist(m).Beta(t([2.0]), t([3.0])).log_prob(t([0.3, 0.6])),
    "Dirichlet(alpha)": lambda m, t: _dist(m).Dirichlet(t([1.0, 2.0, 3.0])).log_prob(t([0.2, 0.3, 0.5])),
    "Laplace(0, 2)": lambda m, t: _dist(m).Laplace(t([0.0]), t([2.0])).log_prob(t([0.3, -1.2])),
    "LogNormal(0, 1)": lambda m, t: _dist(m).LogNormal(t([0.0]), t([1.0])).log_prob(t([0.5, 2.0])),
    "Exponential(2)": lambda m, t: _dist(m).Exponential(t([2.0])).log_prob(t([0.5, 1.0])),
    "Gamma(2, 3)": lambda m, t: _dist(m).Gamma(t([2.0]), t([3.0])).log_prob(t([0.3, 1.6])),
}


@pytest.mark.parametrize("call", sorted(_DISTRIBUTIONS))
def test_distributions_torch_and_paddle_both_have(call, eager):
    expected = _DISTRIBUTIONS[call](torch, lambda v: _dist_tensor(torch, v))
    got = _DISTRIBUTIONS[call](fg, lambda v: _dist_tensor(fg, v))
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-10)


# ---------------------------------------------------------------- Tensor methods
_METHODS = {
    "x.diff()": lambda x, y: x.diff(),
    "x.kron(y)": lambda x, y: x.kron(y),
    "x.hypot(y)": lambda x, y: x.hypot(y),
    "x.logaddexp(y)": lambda x, y: x.logaddexp(y),
    "x.logcumsumexp(1)": lambda x, y: x.logcumsumexp(1),
    "x.cummax(1)[0]": lambda x, y: x.cummax(1)[0],
    "x.nansum()": lambda x, y: x.nansum(),
    "x.quantile(0.3)": lambda x, y: x.quantile(0.3),
    "x.rot90(1, [0, 1])": lambda x, y: x.rot90(1, [0, 1]),
    "x.tensor_split(3, dim=1)[2]": lambda x, y: x.tensor_split(3, dim=1)[2],
    "x.frac()": lambda x, y: x.frac(),
    "x.lgamma()": lambda x, y: x.lgamma(),
    "x.addmm(a, b)": lambda x, y: x[:, :3].addmm(y[:, :2], y[:2, :3]),
    "x.addcmul(y, y, value=0.5)": lambda x, y: x.addcmul(y, y, value=0.5),
    "x.addcdiv(y, y.exp(), value=0.5)": lambda x, y: x.addcdiv(y, y.exp(), value=0.5),
    "x.inner(y)": lambda x, y: x.inner(y),
    "(x > 0).argwhere()": lambda x, y: (x > 0).argwhere(),
    "x.to(other)": lambda x, y: x.to(y.float()),
}


@pytest.mark.parametrize("call", sorted(_METHODS))
def test_torch_tensor_methods_with_fluidgrad_functions(call):
    """Methods torch code calls whose functions fluidgrad has (x.diff(), x.kron(y), x.quantile(q), ...),
    x.addcmul / addcdiv / argwhere and x.to(other). Written as a finding; tensor12's landing fixed it
    this session."""
    expected = _np(_METHODS[call](torch.tensor(_X), torch.tensor(_Y)))
    got = _np(_METHODS[call](fg.to_tensor(_X), fg.to_tensor(_Y)))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


_IN_PLACE = {
    "x.sigmoid_()": lambda x, y: x.sigmoid_(),
    "x.abs().log_()": lambda x, y: x.abs_().log_(),
    "x.neg_()": lambda x, y: x.neg_(),
    "x.square_()": lambda x, y: x.square_(),
    "x.t_()": lambda x, y: x.t_(),
    "x.transpose_(0, 1)": lambda x, y: x.transpose_(0, 1),
    "x.tril_()": lambda x, y: x.tril_(),
    "x.triu_(1)": lambda x, y: x.triu_(1),
    "x.lerp_(y, 0.25)": lambda x, y: x.lerp_(y, 0.25),
    "x.cumsum_(1)": lambda x, y: x.cumsum_(1),
    "x.addcmul_(y, y, value=0.5)": lambda x, y: x.addcmul_(y, y, value=0.5),
    "x.addcdiv_(y, y.exp(), value=-0.1)": lambda x, y: x.addcdiv_(y, y.exp(), value=-0.1),
    "x.detach_()": lambda x, y: x.detach_(),
}


@pytest.mark.parametrize("call", sorted(_IN_PLACE))
def test_torch_in_place_methods(call):
    """torch's in-place methods (addcmul_ / addcdiv_ of hand-written optimizers, lerp_ of EMA updates,
    t_, tril_, cumsum_, detach_, ...) give torch's values. Written as a finding; tensor12's landings
    fixed it this session."""
    expected, got = torch.tensor(_X.copy()), fg.to_tensor(_X.copy())
    _IN_PLACE[call](expected, torch.tensor(_Y))
    _IN_PLACE[call](got, fg.to_tensor(_Y))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


_ATTRIBUTES = {
    "x.is_cuda": lambda x: x.is_cuda,
    "x.grad_fn is None (a leaf)": lambda x: x.grad_fn is None,
    "(x * 2).grad_fn is not None": lambda x: (x * 2).grad_fn is not None,
    "x.nelement()": lambda x: x.nelement(),
    "x.element_size()": lambda x: x.element_size(),
}


@pytest.mark.parametrize("what", sorted(_ATTRIBUTES))
def test_torch_tensor_attributes(what):
    """x.is_cuda, x.grad_fn, x.nelement(), x.element_size(). Written as a finding; tensor12's landing
    fixed it this session."""
    expected = _ATTRIBUTES[what](torch.tensor(_X, requires_grad=True))
    got = _ATTRIBUTES[what](fg.to_tensor(_X, stop_gradient=False))
    assert got == expected


_X3 = _RNG.standard_normal(3)


def _cubic(x):
    return (x ** 3).sum() * x


def _wavy(x):
    return (x.sin() * x).sum()


def _functional_call(m, name):
    functional = torch.autograd.functional if m is torch else fg.autograd.functional
    x, v = _tensor(m, _X3), _tensor(m, np.ones(3))
    return {"jacobian(f, x)": lambda: functional.jacobian(_cubic, x),
            "hessian(f, x)": lambda: functional.hessian(_wavy, x),
            "vjp(f, x, v)[1]": lambda: functional.vjp(_cubic, x, v)[1],
            "jvp(f, x, v)[1]": lambda: functional.jvp(_cubic, x, v)[1],
            "hvp(f, x, v)[1]": lambda: functional.hvp(_wavy, x, v)[1]}[name]()


@pytest.mark.parametrize("call", ["hessian(f, x)", "hvp(f, x, v)[1]", "jacobian(f, x)", "jvp(f, x, v)[1]",
                                  "vjp(f, x, v)[1]"])
def test_torch_autograd_functional(call, eager):
    np.testing.assert_allclose(_np(_functional_call(fg, call)), _np(_functional_call(torch, call)), rtol=1e-10)


# ---------------------------------------------------------------- nn.functional and nn under torch's names
_W_T = _RNG.standard_normal((3, 2, 3, 3))
_FUNCTIONAL = {
    "F.conv_transpose2d(x, w, stride=2, padding=1)": lambda m, x: m.nn.functional.conv_transpose2d(
        x.reshape([1, 3, 2, 2]), _tensor(m, _W_T), stride=2, padding=1),
    "F.logsigmoid(x)": lambda m, x: m.nn.functional.logsigmoid(x),
    "F.softmin(x, dim=1)": lambda m, x: m.nn.functional.softmin(x, dim=1),
    "F.threshold(x, 0.1, 20.0)": lambda m, x: m.nn.functional.threshold(x, 0.1, 20.0),
    "F.one_hot(labels)": lambda m, x: m.nn.functional.one_hot(_tensor(m, np.array([0, 3, 1]))),
    "F.unfold(x, 2, padding=1, stride=2)": lambda m, x: m.nn.functional.unfold(
        x.reshape([1, 1, 3, 4]), 2, padding=1, stride=2),
    "F.pdist(x)": lambda m, x: m.nn.functional.pdist(x),
}


def _tensor(m, a):
    return torch.tensor(a) if m is torch else fg.to_tensor(a)


@pytest.mark.parametrize("call", sorted(_FUNCTIONAL))
def test_torch_functional_names(call):
    expected = _np(_FUNCTIONAL[call](torch, torch.tensor(_X)))
    got = _np(_FUNCTIONAL[call](fg, fg.to_tensor(_X)))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


_LAYERS = {
    "nn.Softmin(dim=1)": lambda nn: nn.Softmin(dim=1),
    "nn.Threshold(0.1, 20.0)": lambda nn: nn.Threshold(0.1, 20.0),
    "nn.RReLU() in eval": lambda nn: nn.RReLU().eval(),
    "nn.ReflectionPad2d(1)": lambda nn: nn.ReflectionPad2d(1),
    "nn.ReplicationPad2d((1, 0, 2, 1))": lambda nn: nn.ReplicationPad2d((1, 0, 2, 1)),
    "nn.ConstantPad1d(2, 3.5)": lambda nn: nn.ConstantPad1d(2, 3.5),
}


_LAYERS_MISSING = pytest.mark.xfail(strict=True, reason="torch layers without a fluidgrad class under any case "
                                    "spelling are AttributeErrors: nn.Threshold, nn.RReLU and nn.ConstantPad1d "
                                    "(fluidgrad has Paddle's Pad1D(mode='constant', value=)); each should give "
                                    "torch's values")


# nn.Softmin(dim=1) (seq12), nn.ReflectionPad2d and nn.ReplicationPad2d (nn12) were fixed while this review
# was written; nn.Threshold, nn.RReLU and nn.ConstantPad1d in session 13 (nnf13)
@pytest.mark.parametrize("call", _marked(_LAYERS, _LAYERS_MISSING, fixed=(
    "nn.Softmin(dim=1)", "nn.ReflectionPad2d(1)", "nn.ReplicationPad2d((1, 0, 2, 1))", "nn.Threshold(0.1, 20.0)",
    "nn.RReLU() in eval", "nn.ConstantPad1d(2, 3.5)")))
def test_torch_layers_without_a_paddle_twin(call):
    x = _RNG.standard_normal((1, 2, 3, 4))
    expected = _LAYERS[call](torch.nn)(torch.tensor(x)).numpy()
    got = _LAYERS[call](fg.nn)(fg.to_tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_torch_multihead_attention_keeps_torchs_conventions(eager):
    """nn.MultiheadAttention is torch's layer, not an alias of Paddle's MultiHeadAttention: [seq, batch,
    embed] inputs, (output, head-averaged weights) returned, True in a bool attn_mask / key_padding_mask
    masks a key (Paddle's True attends). Written as a finding; fixed this session (nn12 / seq12)."""
    x = fg.to_tensor(_RNG.standard_normal((4, 2, 8)).astype("float32"))   # [seq, batch, embed]
    attention = fg.nn.MultiheadAttention(8, 2)
    masked = np.ones((4, 4), bool)
    masked[:, 0] = False                                                   # torch: every query sees key 0 only
    out, weights = attention(x, x, x, attn_mask=fg.to_tensor(masked))
    only_first, _ = attention(x, x[:1], x[:1])
    assert tuple(out.shape) == (4, 2, 8) and tuple(weights.shape) == (2, 4, 4)
    np.testing.assert_allclose(out.numpy(), only_first.numpy(), rtol=1e-5, atol=1e-6)
    padding = np.zeros((2, 4), bool)
    padding[:, 1:] = True                                                  # torch: keys 1.. are padding
    padded, _ = attention(x, x, x, key_padding_mask=fg.to_tensor(padding))
    np.testing.assert_allclose(padded.numpy(), only_first.numpy(), rtol=1e-5, atol=1e-6)


def _padded(m):
    rows = [np.arange(3.0), np.arange(1.0), np.arange(2.0) + 5]
    sequences = [torch.tensor(r) if m is torch else fg.to_tensor(r) for r in rows]
    return m.nn.utils.rnn.pad_sequence(sequences, batch_first=True, padding_value=-1.0)


def _weight_normed_keeps_output(m):
    layer = m.nn.Linear(3, 4)
    x = torch.tensor(_X[:, :3]) if m is torch else fg.to_tensor(_X[:, :3].astype("float32"))
    x = x.float() if m is torch else x
    before = _np(layer(x))
    layer = m.nn.utils.weight_norm(layer)
    names = sorted(name for name, _ in layer.named_parameters())
    return names, bool(np.allclose(_np(layer(x)), before, rtol=1e-5, atol=1e-6))


_NN_UTILS = {"nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=-1)": _padded,
             "nn.utils.weight_norm(Linear)": _weight_normed_keeps_output}


@pytest.mark.parametrize("call", sorted(_NN_UTILS))
def test_nn_utils_of_everyday_code(call, eager):
    got, expected = _NN_UTILS[call](fg), _NN_UTILS[call](torch)
    if isinstance(expected, tuple):
        assert got == expected
    else:
        np.testing.assert_array_equal(_np(got), _np(expected))


# ---------------------------------------------------------------- Paddle 2's top-level names
_PADDLE_TOP = {
    "paddle.shape(x)": lambda: list(fg.shape(fg.to_tensor(_X)).numpy()) == [3, 4],
    "paddle.rank(x)": lambda: int(fg.rank(fg.to_tensor(_X))) == 2,
    "paddle.create_parameter(shape, dtype)": lambda: not fg.create_parameter([3, 2], "float32").stop_gradient,
}


@pytest.mark.parametrize("call", sorted(_PADDLE_TOP))
def test_paddle_top_level_names(call, eager):
    assert _PADDLE_TOP[call]()


_P = _RNG.standard_normal((6, 4)).astype("float32")
_L = np.array([[0], [1], [2], [3], [0], [1]])


def _static_run(build):
    """Build with fluidgrad.static (as a Paddle 2 static script does) and run the main program."""
    main, startup = fg.static.Program(), fg.static.Program()
    with fg.static.program_guard(main, startup):
        x = fg.static.data("x", [-1, 4], "float32")
        label = fg.static.data("label", [-1, 1], "int64")
        fetch, program = build(x, label, main)
    exe = fg.static.Executor()
    exe.run(startup)
    return exe.run(program, feed={"x": _P, "label": _L}, fetch_list=[fetch])[0]


_STATIC_NAMES = {
    "static.accuracy(input, label, k=2)": (lambda x, label, main: (fg.static.accuracy(input=x, label=label, k=2), main),
                                           np.mean([_L[i, 0] in np.argsort(-_P[i])[:2] for i in range(6)])),
    "with static.name_scope('block')": (lambda x, label, main: _in_name_scope(x, main), _P * 2),
    "static.Print(x)": (lambda x, label, main: (fg.static.Print(x), main), _P),
    "static.create_global_var([1], 3.0, 'float32')": (
        lambda x, label, main: (fg.static.create_global_var([1], 3.0, "float32", persistable=True), main), [3.0]),
    "static.CompiledProgram(main)": (lambda x, label, main: (x * 2, fg.static.CompiledProgram(main)), _P * 2),
}


def _in_name_scope(x, main):
    with fg.static.name_scope("block"):
        return x * 2, main


@pytest.mark.parametrize("call", sorted(_STATIC_NAMES))
def test_paddle_static_names_of_training_scripts(call):
    build, expected = _STATIC_NAMES[call]
    np.testing.assert_allclose(np.asarray(_static_run(build), dtype="float64").reshape(np.shape(expected)),
                               expected, rtol=1e-6)


# ---------------------------------------------------------------- exporting recurrent models
def _rnn_by_jit_save(layer, x, tmp_path):
    path = str(tmp_path / "rnn" / "model")
    fg.jit.save(layer, path, input_spec=[fg.static.InputSpec([None, None, 4], "float32")])
    return fg.jit.load(path)(fg.to_tensor(x))[0].numpy()


def _rnn_in_a_static_program(layer, x, tmp_path):
    import fluidgrad.framework.program as program_module
    main, startup = fg.Program(), fg.Program()
    depth = program_module._guard_depth
    program_module._guard_depth = 1
    try:
        with fg.program_guard(main, startup):
            out, _ = layer(fg.static.data("x", [-1, -1, 4], "float32"))
    finally:
        program_module._guard_depth = depth
    exe = fg.Executor()
    exe.run(startup)   # initialises the program's parameters with the layer's values
    return exe.run(main, feed={"x": x}, fetch_list=[out])[0]


_RNN_EXPORTS = {"jit.save(LSTM, input_spec=[InputSpec([None, None, 4])])": _rnn_by_jit_save,
                "LSTM on static.data([-1, -1, 4])": _rnn_in_a_static_program}


@pytest.mark.parametrize("how", sorted(_RNN_EXPORTS))
def test_recurrent_layers_export_with_a_dynamic_sequence_length(how, tmp_path, eager):
    layer = fg.nn.LSTM(4, 5)
    layer.eval()
    x = _RNG.standard_normal((2, 7, 4)).astype("float32")
    got = _RNN_EXPORTS[how](layer, x, tmp_path)
    np.testing.assert_allclose(got, layer(fg.to_tensor(x))[0].numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- ONNX
def test_onnx_is_reachable_after_import_fluidgrad():
    code = "import fluidgrad; print(callable(fluidgrad.onnx.export))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=_REPO))
    assert proc.stdout.strip() == "True", proc.stderr[-500:]


def _exported_by_torchs_call(model, x, path):
    fg.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"],
                   dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    return "input"


def _exported_by_paddles_call(model, x, path):
    prefix = path[:-len(".onnx")]
    fg.onnx.export(model, prefix, input_spec=[fg.static.InputSpec([None, 4], "float32", "input")])
    return "input"


_EXPORT_CALLS = {"torch.onnx.export(model, args, f, input_names=, output_names=, dynamic_axes=)":
                 _exported_by_torchs_call,
                 "paddle.onnx.export(layer, path_prefix, input_spec=[InputSpec])": _exported_by_paddles_call}


@pytest.mark.parametrize("call", sorted(_EXPORT_CALLS))
def test_onnx_export_takes_torchs_and_paddles_calls(call, tmp_path, eager):
    import onnxruntime
    import fluidgrad.onnx  # noqa: F401  (see test_onnx_is_reachable_after_import_fluidgrad)
    model = fg.nn.Sequential(fg.nn.Linear(4, 3), fg.nn.ReLU())
    path = str(tmp_path / "model.onnx")
    name = _EXPORT_CALLS[call](model, fg.to_tensor(_RNG.standard_normal((2, 4)).astype("float32")), path)
    x5 = _RNG.standard_normal((5, 4)).astype("float32")
    out = onnxruntime.InferenceSession(path).run(None, {name: x5})[0]
    np.testing.assert_allclose(out, model(fg.to_tensor(x5)).numpy(), rtol=1e-5, atol=1e-6)
