"""torch's and Paddle 2's top-level names, end to end: torch.optim / torch.utils.data / torch.cuda /
torch.device / torch's dtype names, torch.load's keywords, the named (values, indices) pairs, torch's
top-level function names, paddle.shape / rank / create_parameter, and fluidgrad.onnx after a plain
`import fluidgrad` (review findings of session 12; PyTorch 2.13 is the oracle)."""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.framework.dtypes import TORCH_DTYPE_NAMES
from fluidgrad.serialization import CheckpointError
from fluidgrad.tensor import torch_names

_RNG = np.random.default_rng(13)
_X = _RNG.standard_normal((3, 5))
_Y = _RNG.standard_normal((3, 5))
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(fg.__file__)))


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _np(value):
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


# ---------------------------------------------------------------- torch.optim
def test_optim_is_fluidgrads_optimizers_under_torchs_names():
    assert fg.optim.Adam is fg.optimizer.Adam and fg.optim.Optimizer is fg.optimizer.Optimizer
    from fluidgrad.optim.lr_scheduler import StepLR
    assert StepLR is fg.optimizer.lr_scheduler.StepLR
    assert set(fg.optim.__all__) <= set(dir(torch.optim))


def test_optim_sgd_with_momentum_and_step_lr_train_as_torchs(eager):
    weight = _RNG.standard_normal((2, 3)).astype("float32")
    x = _RNG.standard_normal((4, 3)).astype("float32")
    results = []
    for m in (fg, torch):
        layer = m.nn.Linear(3, 2)
        with (torch.no_grad() if m is torch else fg.no_grad()):
            layer.weight.copy_(m.tensor(weight.T if m is fg else weight))   # Paddle's Linear weight is [in, out]
            layer.bias.zero_()
        opt = m.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
        sched = m.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        for _ in range(4):
            opt.zero_grad()
            loss = (layer(m.tensor(x)) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
        results.append(_np(layer.weight).T if m is fg else _np(layer.weight))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- torch.utils.data
def test_utils_data_names_are_fluidgrad_io():
    data = fg.utils.data
    assert data.DataLoader is fg.io.DataLoader and data.TensorDataset is fg.io.TensorDataset
    assert data.SequentialSampler is fg.io.SequenceSampler and data.default_collate is fg.io.default_collate_fn
    assert set(data.__all__) <= set(dir(torch.utils.data))
    from fluidgrad.utils.data import DataLoader, TensorDataset  # noqa: F401  (as torch scripts import them)


def test_dataloader_over_a_tensor_dataset_gives_torchs_batches(eager):
    x, y = np.arange(20.0).reshape(10, 2), np.arange(10)
    batches = {}
    for m in (fg, torch):
        loader = m.utils.data.DataLoader(m.utils.data.TensorDataset(m.tensor(x), m.tensor(y)), batch_size=4,
                                         shuffle=False, drop_last=False)
        batches[m] = [(_np(a), _np(b)) for a, b in loader]
    assert len(batches[fg]) == len(batches[torch]) == 3
    for (a, b), (ta, tb) in zip(batches[fg], batches[torch]):
        np.testing.assert_array_equal(a, ta)
        np.testing.assert_array_equal(b, tb)


@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_takes_torchs_arguments(drop_last):
    for sampler in (range(10), [5, 3, 1, 0, 9]):
        ours = list(fg.utils.data.BatchSampler(sampler, 3, drop_last))
        theirs = list(torch.utils.data.BatchSampler(sampler, 3, drop_last))
        assert ours == theirs
    ours = fg.utils.data.BatchSampler(fg.utils.data.SequentialSampler(range(7)), batch_size=2, drop_last=drop_last)
    theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(7)), 2, drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_samplers_subsets_and_splits(eager):
    data = fg.utils.data
    assert list(data.SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert sorted(data.RandomSampler(range(6))) == list(range(6))
    parts = data.random_split(data.TensorDataset(fg.ones([10, 2])), [7, 3])
    assert [len(p) for p in parts] == [7, 3]
    both = data.ConcatDataset([data.Subset(range(10), [1, 2]), data.Subset(range(10), [5])])
    assert [both[i] for i in range(len(both))] == [1, 2, 5]
    first, second = data.random_split(range(6), [0.5, 0.5], generator=np.random.default_rng(3))
    again = data.random_split(range(6), [0.5, 0.5], generator=np.random.default_rng(3))
    assert sorted(list(first) + list(second)) == list(range(6)) and list(first) == list(again[0])
    with pytest.raises(TypeError, match="random_split: generator must be a NumPy Generator"):
        data.random_split(range(6), [3, 3], generator=torch.Generator())
    batch = data.default_collate([np.array([1.0, 2.0]), np.array([3.0, 4.0])])
    np.testing.assert_array_equal(_np(batch), [[1.0, 2.0], [3.0, 4.0]])


# ---------------------------------------------------------------- torch.cuda and torch.device
def test_cuda_answers_as_a_machine_without_a_gpu():
    assert fg.cuda.is_available() is False and fg.cuda.device_count() == 0 and fg.cuda.is_initialized() is False
    assert fg.cuda.manual_seed(0) is None and fg.cuda.manual_seed_all(1) is None
    assert fg.cuda.synchronize() is None and fg.cuda.empty_cache() is None
    assert set(fg.cuda.__all__) <= set(dir(torch.cuda))


@pytest.mark.parametrize("call", [lambda: fg.cuda.current_device(), lambda: fg.cuda.get_device_name(0),
                                  lambda: fg.cuda.set_device(0), lambda: fg.cuda.get_device_properties(0)])
def test_cuda_calls_that_need_a_gpu_say_so(call):
    with pytest.raises(RuntimeError, match="CPU only"):
        call()


def test_cuda_names_it_lacks_are_refused_with_the_reason():
    with pytest.raises(AttributeError, match="fluidgrad.amp"):
        fg.cuda.amp.GradScaler()
    with pytest.raises(AttributeError, match="CPU only"):
        fg.cuda.Stream()
    with pytest.raises(TypeError, match="manual_seed"):
        fg.cuda.manual_seed("0")


def test_device_is_callable_as_torch_device(eager):
    x = fg.ones([2])
    for args in (("cpu",), ("cpu:0",), ("cpu", 0)):
        assert fg.device(*args) == x.device and str(fg.device(*args)) == "cpu"
    assert fg.device(type="cpu") == fg.CPUPlace() and fg.device(torch.device("cpu")) == "cpu"
    assert isinstance(x.device, fg.device) and not isinstance("cpu", fg.device)
    assert fg.device.get_device() == "cpu" and fg.device.set_device("cpu") == "cpu"   # Paddle's module still
    np.testing.assert_array_equal(fg.nn.Linear(2, 2).to(fg.device("cpu"))(x).shape, [2])
    for name in ("cuda", "cuda:1", 0):
        with pytest.raises(ValueError, match="CPU only"):
            fg.device(name)


# ---------------------------------------------------------------- torch's dtype names
@pytest.mark.parametrize("name", sorted(TORCH_DTYPE_NAMES))
def test_torch_dtype_names_mean_torchs_dtypes(name):
    assert getattr(fg, name) == str(getattr(torch, name)).split(".")[-1]


def test_torch_distributions_is_fluidgrad_distribution():
    from fluidgrad.distributions import Normal, kl_divergence
    assert Normal is fg.distribution.Normal and kl_divergence is fg.distribution.kl_divergence
    assert fg.distributions.Categorical is fg.distribution.Categorical
    assert set(fg.distributions.__all__) == set(fg.distribution.__all__)


def test_torch_dtype_names_cast_and_create(eager):
    x = fg.to_tensor([1.5, -2.5])
    assert x.to(fg.long).dtype == "int64" and x.to(fg.int).dtype == "int32" and x.to(fg.short).dtype == "int16"
    assert x.to(fg.double).dtype == "float64" and x.to(fg.half).dtype == "float16"
    assert fg.zeros(2, dtype=fg.float).dtype == "float32" and fg.ones([2], dtype=fg.cfloat).dtype == "complex64"
    np.testing.assert_array_equal(x.to(fg.long).numpy(), torch.tensor([1.5, -2.5]).to(torch.long).numpy())
    assert fg.float32 == "float32" and fg.bool == "bool" and fg.uint8 == "uint8"   # Paddle's names unchanged


# ---------------------------------------------------------------- torch.load's keywords
@pytest.fixture
def checkpoint(tmp_path, eager):
    layer = fg.nn.Linear(3, 2)
    path = str(tmp_path / "model.pt")
    fg.save({"model": layer.state_dict(), "step": 7}, path)
    return path, layer


@pytest.mark.parametrize("kwargs", [
    {"map_location": "cpu"}, {"map_location": "cpu:0"}, {"map_location": torch.device("cpu")},
    {"map_location": fg.CPUPlace()}, {"map_location": {"cuda:0": "cpu", "cuda:1": "cpu"}},
    {"map_location": lambda storage, loc: storage}, {"map_location": lambda storage, loc: None, "weights_only": None},
    {"weights_only": True}, {"weights_only": False}, {"map_location": "cpu", "weights_only": True}],
    ids=lambda kwargs: ",".join(f"{k}={'callable' if callable(v) else v!r}"[:40] for k, v in kwargs.items()))
def test_load_takes_torchs_keywords(checkpoint, kwargs):
    path, layer = checkpoint
    state = fg.load(path, **kwargs)
    assert state["step"] == 7
    np.testing.assert_array_equal(state["model"]["weight"].numpy(), layer.weight.numpy())


def test_load_takes_map_location_as_the_second_argument(checkpoint):
    path, layer = checkpoint
    state = fg.load(path, "cpu")
    assert isinstance(state["model"]["weight"], fg.Tensor)
    assert isinstance(fg.load(path, True)["model"]["weight"], np.ndarray)   # Paddle's return_numpy still
    with pytest.raises(TypeError, match="twice"):
        fg.load(path, "cpu", map_location="cpu")


def test_load_runs_a_map_location_callable_on_each_tensor(checkpoint):
    path, layer = checkpoint
    seen = []
    state = fg.load(path, map_location=lambda t, loc: seen.append(loc) or t * 2)
    assert seen == ["cpu", "cpu"]
    np.testing.assert_allclose(state["model"]["weight"].numpy(), 2 * layer.weight.numpy())
    with pytest.raises(CheckpointError, match="map_location returned a str"):
        fg.load(path, map_location=lambda t, loc: "cuda")


@pytest.mark.parametrize("location", ["cuda", "cuda:0", torch.device("cuda", 1), {"cpu": "cuda:0"}])
def test_load_to_a_gpu_is_refused(checkpoint, location):
    with pytest.raises(ValueError, match="CPU only"):
        fg.load(checkpoint[0], map_location=location)


def test_load_refuses_a_weights_only_that_is_not_a_flag(checkpoint):
    with pytest.raises(TypeError, match="weights_only"):
        fg.load(checkpoint[0], weights_only="yes")


# ---------------------------------------------------------------- named (values, indices) pairs
_NAN_X = np.array([[1.0, np.nan, 3.0, 2.0, 0.5], [4.0, 1.0, np.nan, np.nan, 2.0], [3.0, 3.0, 1.0, 2.0, 2.0]])
_PAIRS = {  # name: (fluidgrad call, torch call, torch's return type)
    "topk(x, 2)": (lambda x: fg.topk(x, 2), lambda x: torch.topk(x, 2)),
    "x.topk(3, dim=0, largest=False)": (lambda x: x.topk(3, dim=0, largest=False),
                                        lambda x: x.topk(3, dim=0, largest=False)),
    "kthvalue(x, 2, 1)": (lambda x: fg.kthvalue(x, 2, 1), lambda x: torch.kthvalue(x, 2, 1)),
    "x.kthvalue(1, dim=0, keepdim=True)": (lambda x: x.kthvalue(1, dim=0, keepdim=True),
                                           lambda x: x.kthvalue(1, dim=0, keepdim=True)),
    "cummax(x, 1)": (lambda x: fg.cummax(x, 1), lambda x: torch.cummax(x, 1)),
    "x.cummax(0)": (lambda x: x.cummax(0), lambda x: x.cummax(0)),
    "cummin(x, dim=1)": (lambda x: fg.cummin(x, dim=1), lambda x: torch.cummin(x, dim=1)),
    "x.cummin(0)": (lambda x: x.cummin(0), lambda x: x.cummin(0)),
    "sort(x, dim=1)": (lambda x: fg.sort(x, dim=1), lambda x: torch.sort(x, dim=1)),
    "max(x, dim=1)": (lambda x: fg.max(x, dim=1), lambda x: torch.max(x, dim=1)),
    "x.min(dim=0)": (lambda x: x.min(dim=0), lambda x: x.min(dim=0)),
    "median(x, dim=1)": (lambda x: fg.median(x, dim=1), lambda x: torch.median(x, dim=1)),
    "nanmedian(x, dim=1) with NaN": (lambda x: fg.nanmedian(fg.to_tensor(_NAN_X), dim=1),
                                     lambda x: torch.nanmedian(torch.tensor(_NAN_X), dim=1)),
    "x.nanmedian(dim=0, keepdim=True)": (lambda x: x.nanmedian(dim=0, keepdim=True),
                                         lambda x: x.nanmedian(dim=0, keepdim=True)),
}


@pytest.mark.parametrize("call", sorted(_PAIRS))
def test_value_index_pairs_are_torchs_named_tuples(call):
    ours, theirs = _PAIRS[call]
    x = np.round(_X * 2) / 2 if "cum" in call else _X     # cummax / cummin: ties, whose index torch defines
    got, expected = ours(fg.to_tensor(x)), theirs(torch.tensor(x))
    assert type(got).__name__ == type(expected).__name__ and got._fields == ("values", "indices")
    np.testing.assert_array_equal(got.values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())
    values, indices = got                                  # torch's unpacking
    assert got[0] is values and got[1] is indices          # Paddle's indexing


def test_nanmedian_values_are_x_at_the_indices_and_take_the_gradient():
    x = torch.tensor(_NAN_X, requires_grad=True)
    ours = fg.to_tensor(_NAN_X, stop_gradient=False)
    torch.nanmedian(x, dim=1).values.sum().backward()
    got = fg.nanmedian(ours, dim=1)
    got.values.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), x.grad.numpy())
    np.testing.assert_array_equal(np.take_along_axis(_NAN_X, got.indices.numpy()[:, None], 1)[:, 0],
                                  got.values.numpy())


def test_nanmedian_of_a_slice_of_nans_is_nan_at_its_first_index():
    got = fg.nanmedian(fg.to_tensor(np.array([[np.nan, np.nan], [2.0, np.nan]])), dim=1)
    np.testing.assert_array_equal(got.values.numpy(), [np.nan, 2.0])
    np.testing.assert_array_equal(got.indices.numpy(), [0, 0])
    np.testing.assert_array_equal(fg.nanmedian(fg.to_tensor(np.array([[1, 3, 2, 2]])), dim=1).values.numpy(), [2])
    with pytest.raises(ValueError, match="nanmedian"):
        fg.nanmedian(fg.to_tensor(_X), dim=2)
    with pytest.raises(TypeError, match="not both"):
        fg.nanmedian(fg.to_tensor(_X), axis=0, dim=0)


def test_paddle_forms_are_unchanged():
    x = fg.to_tensor(_X)
    assert isinstance(fg.nanmedian(x, 1), fg.Tensor) and isinstance(fg.median(x, 1), fg.Tensor)
    assert isinstance(fg.sort(x, 1), fg.Tensor) and isinstance(fg.max(x, 1), fg.Tensor)
    np.testing.assert_array_equal(x.topk(2)[1].numpy(), torch.tensor(_X).topk(2)[1].numpy())


def test_pairs_in_a_static_program():
    main, startup = fg.static.Program(), fg.static.Program()
    with fg.static.program_guard(main, startup):
        x = fg.static.data("x", [-1, 5], "float64")
        pairs = [fg.topk(x, 2), fg.kthvalue(x, 2), fg.cummax(x, 1), fg.cummin(x, 1), fg.nanmedian(x, dim=1)]
    assert [type(p).__name__ for p in pairs] == ["topk", "kthvalue", "cummax", "cummin", "nanmedian"]
    fetched = fg.static.Executor().run(main, feed={"x": _X}, fetch_list=[v for p in pairs for v in p])
    t = torch.tensor(_X)
    expected = [torch.topk(t, 2), torch.kthvalue(t, 2), torch.cummax(t, 1), torch.cummin(t, 1), torch.nanmedian(t, 1)]
    for got, want in zip(fetched, [v for p in expected for v in p]):
        np.testing.assert_array_equal(got, want.numpy())


def test_return_types_are_named_as_torchs():
    t = torch.tensor(_X)
    for name, result in (("topk", torch.topk(t, 1)), ("aminmax", torch.aminmax(t)), ("cummin", torch.cummin(t, 0))):
        ours = getattr(fg.return_types, name)
        assert ours.__name__ == type(result).__name__
        assert all(hasattr(result, field) for field in ours._fields) and len(ours._fields) == len(result)


# ---------------------------------------------------------------- torch's top-level function names
_P = np.abs(_X) + 0.5
_W = _RNG.standard_normal((4, 3, 3))
_SPD = _X[:, :3].T @ _X[:, :3] + 3 * np.eye(3)
_CALLS = {  # torch's call, written once for both modules (m is torch or fluidgrad; T makes a tensor)
    "mul": lambda m, T: m.mul(T(_X), T(_Y)), "sub": lambda m, T: m.sub(T(_X), T(_Y), alpha=2),
    "div": lambda m, T: m.div(T(_X), T(_Y)), "div floor": lambda m, T: m.div(T(_X), T(_Y), rounding_mode="floor"),
    "div trunc": lambda m, T: m.div(T(_X), T(_Y), rounding_mode="trunc"),
    "true_divide": lambda m, T: m.true_divide(T(np.arange(5)), T(np.full(5, 2))),
    "eq": lambda m, T: m.eq(T(_X), T(_X) * 1), "ne": lambda m, T: m.ne(T(_X), 0.5), "gt": lambda m, T: m.gt(T(_X), T(_Y)),
    "ge": lambda m, T: m.ge(T(_X), 0), "lt": lambda m, T: m.lt(T(_X), T(_Y)), "le": lambda m, T: m.le(T(_X), T(_Y)),
    "greater": lambda m, T: m.greater(T(_X), T(_Y)), "less": lambda m, T: m.less(T(_X), T(_Y)),
    "absolute": lambda m, T: m.absolute(T(_X)), "negative": lambda m, T: m.negative(T(_X)),
    "positive": lambda m, T: m.positive(T(_X)), "sgn": lambda m, T: m.sgn(T(_X)), "fix": lambda m, T: m.fix(T(_X * 3)),
    "float_power": lambda m, T: m.float_power(T(_P), 1.5), "exp2": lambda m, T: m.exp2(T(_X)),
    "addcmul": lambda m, T: m.addcmul(T(_X), T(_Y), T(_P), value=0.5),
    "addcdiv": lambda m, T: m.addcdiv(T(_X), T(_Y), T(_P), value=0.5),
    "arccos": lambda m, T: m.arccos(T(_X / 4)), "arccosh": lambda m, T: m.arccosh(T(_P + 1)),
    "arcsin": lambda m, T: m.arcsin(T(_X / 4)), "arcsinh": lambda m, T: m.arcsinh(T(_X)),
    "arctan": lambda m, T: m.arctan(T(_X)), "arctanh": lambda m, T: m.arctanh(T(_X / 4)),
    "arctan2": lambda m, T: m.arctan2(T(_X), T(_Y)), "clamp_min": lambda m, T: m.clamp_min(T(_X), 0.1),
    "clamp_max": lambda m, T: m.clamp_max(T(_X), 0.1),
    "isposinf": lambda m, T: m.isposinf(T(np.array([np.inf, -np.inf, 1.0]))),
    "isneginf": lambda m, T: m.isneginf(T(np.array([np.inf, -np.inf, 1.0]))),
    "permute": lambda m, T: m.permute(T(_W), (2, 0, 1)), "narrow": lambda m, T: m.narrow(T(_X), 1, 1, 3),
    "movedim": lambda m, T: m.movedim(T(_W), 0, 2), "swapaxes": lambda m, T: m.swapaxes(T(_W), 0, 2),
    "swapdims": lambda m, T: m.swapdims(T(_W), 1, 2), "select": lambda m, T: m.select(T(_W), 1, 2),
    "unflatten": lambda m, T: m.unflatten(T(np.arange(12.0).reshape(2, 6)), 1, (2, 3)),
    "ravel": lambda m, T: m.ravel(T(_W)), "fliplr": lambda m, T: m.fliplr(T(_X)), "flipud": lambda m, T: m.flipud(T(_X)),
    "msort": lambda m, T: m.msort(T(_X)),
    "take_along_dim": lambda m, T: m.take_along_dim(T(_X), T(np.argsort(_X, 1)), 1),
    "argwhere": lambda m, T: m.argwhere(T(_X > 0)),
    "scatter_add": lambda m, T: m.scatter_add(T(_X), 1, T(np.array([[0, 1], [4, 4], [2, 0]])), T(_Y[:, :2])),
    "index_copy": lambda m, T: m.index_copy(T(_X), 0, T(np.array([2, 0])), T(_Y[:2])),
    "scatter_reduce": lambda m, T: m.scatter_reduce(T(_X), 1, T(np.array([[0, 1], [4, 4], [2, 0]])), T(_Y[:, :2]),
                                                    "amax", include_self=False),
    "put": lambda m, T: m.put(T(_X), T(np.array([[-1, 3], [0, 3]])), T(_Y[:2, :2]), accumulate=True),
    "index_fill": lambda m, T: m.index_fill(T(_X), 1, T(np.array([1, 3])), -1.0),
    "adjoint": lambda m, T: m.adjoint(T(_X)), "aminmax min": lambda m, T: m.aminmax(T(_X), dim=1).min,
    "aminmax max": lambda m, T: m.aminmax(T(_X), dim=0, keepdim=True).max,
    "mv": lambda m, T: m.mv(T(_X), T(_Y[0])), "ger": lambda m, T: m.ger(T(_X[0]), T(_Y[1])),
    "concatenate": lambda m, T: m.concatenate([T(_X), T(_Y)], 1),
    "conj_physical": lambda m, T: m.conj_physical(T(_X + 1j * _Y)),
    "view_as_real": lambda m, T: m.view_as_real(T(_X + 1j * _Y)),
    "view_as_complex": lambda m, T: m.view_as_complex(T(np.stack([_X, _Y], -1))),
    "softmax": lambda m, T: m.softmax(T(_X), dim=1), "log_softmax": lambda m, T: m.log_softmax(T(_X), 0),
    "conv1d": lambda m, T: m.conv1d(T(_W), T(_W[:2, :, :2]), None, 1, 1),
    "conv2d": lambda m, T: m.conv2d(T(_W[None]), T(np.stack([_W[:, :2, :2], -_W[:, 1:, 1:]])), T(np.ones(2)), 1, 1, 1),
    "conv3d": lambda m, T: m.conv3d(T(_W[None, None]), T(np.ones((2, 1, 2, 2, 2))), None, 1, 0),
    "cosine_similarity": lambda m, T: m.cosine_similarity(T(_X), T(_Y), 1),
    "pairwise_distance": lambda m, T: m.pairwise_distance(T(_X), T(_Y)),
    "pixel_shuffle": lambda m, T: m.pixel_shuffle(T(np.arange(32.0).reshape(1, 8, 2, 2)), 2),
    "pixel_unshuffle": lambda m, T: m.pixel_unshuffle(T(np.arange(32.0).reshape(1, 2, 4, 4)), 2),
    "channel_shuffle": lambda m, T: m.channel_shuffle(T(np.arange(32.0).reshape(1, 8, 2, 2)), 2),
    "celu": lambda m, T: m.celu(T(_X), 0.5), "selu": lambda m, T: m.selu(T(_X)),
    "prelu": lambda m, T: m.prelu(T(_W), T(np.array([0.1, 0.2, 0.3]))),
    "hardshrink": lambda m, T: m.hardshrink(T(_X), 0.3),
    "bilinear": lambda m, T: m.bilinear(T(_X), T(_Y), T(np.ones((2, 5, 5))), T(np.arange(2.0))),
    "layer_norm": lambda m, T: m.layer_norm(T(_X), [5], T(_P[0]), T(_Y[0]), 1e-5),
    "adaptive_avg_pool1d": lambda m, T: m.adaptive_avg_pool1d(T(_W), 2),
    "is_signed": lambda m, T: m.is_signed(T(_X)),
    "cholesky": lambda m, T: m.cholesky(T(_SPD)), "cholesky upper": lambda m, T: m.cholesky(T(_SPD), True),
    "cholesky_solve": lambda m, T: m.cholesky_solve(T(_X.T[:3]), T(np.linalg.cholesky(_SPD))),
    "matrix_power": lambda m, T: m.matrix_power(T(_SPD), 3), "matrix_exp": lambda m, T: m.matrix_exp(T(_SPD / 9)),
    "pinverse": lambda m, T: m.pinverse(T(_X)), "slogdet sign": lambda m, T: m.slogdet(T(-_SPD))[0],
    "slogdet logabsdet": lambda m, T: m.slogdet(T(_SPD))[1],
}


def test_every_torch_name_is_tested_and_is_torchs():
    tested = {call.split(" ")[0] for call in _CALLS}
    assert tested == set(torch_names.__all__)
    assert all(callable(getattr(torch, name)) for name in torch_names.__all__)
    assert all(getattr(fg, name) is getattr(torch_names, name) for name in torch_names.__all__)


@pytest.mark.parametrize("call", sorted(_CALLS))
def test_torch_top_level_function_matches_torch(call):
    expected = _np(_CALLS[call](torch, torch.tensor))
    got = _np(_CALLS[call](fg, fg.to_tensor))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert got.dtype == expected.dtype


@pytest.mark.parametrize("name", ["mul", "div", "eq", "softmax", "narrow", "movedim", "permute", "scatter_add"])
def test_torch_top_level_name_is_the_tensor_methods_function(name):
    """fg.f(x, ...) and x.f(...) are one function (permute: the method's transpose)."""
    call = next(c for key, c in _CALLS.items() if key.split(" ")[0] == name)
    as_method = {"mul": lambda x: x.mul(fg.to_tensor(_Y)), "div": lambda x: x.div(fg.to_tensor(_Y)),
                 "eq": lambda x: x.eq(x * 1), "softmax": lambda x: x.softmax(dim=1),
                 "narrow": lambda x: x.narrow(1, 1, 3), "movedim": lambda x: x.movedim(0, 2),
                 "permute": lambda x: x.permute(2, 0, 1),
                 "scatter_add": lambda x: x.scatter_add(1, fg.to_tensor(np.array([[0, 1], [4, 4], [2, 0]])),
                                                        fg.to_tensor(_Y[:, :2]))}[name]
    x = fg.to_tensor(_W if name in ("movedim", "permute") else _X)
    np.testing.assert_array_equal(_np(as_method(x)), _np(call(fg, fg.to_tensor)))


def test_torch_top_level_functions_differentiate_and_build_programs():
    x = fg.to_tensor(_X, stop_gradient=False)
    t = torch.tensor(_X, requires_grad=True)
    (fg.log_softmax(x, dim=1) * fg.narrow(fg.mul(x, x), 1, 0, 5)).sum().backward()
    (torch.log_softmax(t, dim=1) * torch.narrow(torch.mul(t, t), 1, 0, 5)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)
    main = fg.static.Program()
    with fg.static.program_guard(main, fg.static.Program()):
        v = fg.static.data("v", [-1, 5], "float64")
        out = fg.div(fg.permute(v, (1, 0)), 2.0, rounding_mode="floor")
    got, = fg.static.Executor().run(main, feed={"v": _X}, fetch_list=[out])
    np.testing.assert_array_equal(got, torch.div(torch.tensor(_X).T, 2.0, rounding_mode="floor").numpy())


# ---------------------------------------------------------------- Paddle's shape / rank / create_parameter
def test_shape_and_rank_of_a_tensor(eager):
    x = fg.ones([3, 4, 2])
    shape, rank = fg.shape(x), fg.rank(x)
    assert isinstance(shape, fg.Tensor) and shape.dtype == "int64" and shape.numpy().tolist() == [3, 4, 2]
    assert rank.dtype == "int32" and list(rank.shape) == [] and int(rank) == 3
    assert fg.shape(fg.to_tensor(2.0)).numpy().tolist() == []
    for fn in (fg.shape, fg.rank):
        with pytest.raises(TypeError, match=fn.__name__):
            fn([1, 2])


def test_shape_of_a_variable_is_its_size_when_the_program_runs():
    main, startup = fg.static.Program(), fg.static.Program()
    with fg.static.program_guard(main, startup):
        x = fg.static.data("x", [-1, 4], "float32")
        shape, rank = fg.shape(x), fg.rank(x)
        rows = fg.reshape(fg.cast(fg.slice(shape, [0], [0], [1]), "float32"), [])
    assert shape.shape == (2,) and rank.shape == ()
    got = fg.static.Executor().run(main, feed={"x": np.ones((6, 4), "float32")}, fetch_list=[shape, rank, rows])
    assert got[0].tolist() == [6, 4] and int(got[1]) == 2 and float(got[2]) == 6.0


def test_create_parameter_in_eager_mode_is_a_trainable_tensor(eager):
    w = fg.create_parameter([3, 2], "float32")
    b = fg.create_parameter([2], "float32", is_bias=True)
    assert isinstance(w, fg.nn.Parameter) and not w.stop_gradient and w.dtype == "float32"
    assert list(w.shape) == [3, 2]
    np.testing.assert_array_equal(b.numpy(), np.zeros(2, "float32"))
    frozen = fg.create_parameter([2], "float64", attr=fg.ParamAttr(trainable=False),
                                 default_initializer=fg.nn.initializer.Constant(3.0))
    assert frozen.stop_gradient and frozen.numpy().tolist() == [3.0, 3.0]
    fg.matmul(fg.ones([1, 3]), w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((3, 2), "float32"))


def test_create_parameter_in_a_program_is_a_parameter_the_startup_program_initialises():
    main, startup = fg.static.Program(), fg.static.Program()
    with fg.static.program_guard(main, startup):
        w = fg.create_parameter([2, 3], "float32", name="w13",
                                default_initializer=fg.nn.initializer.Constant(0.5))
        again = fg.create_parameter([2, 3], "float32", name="w13")
    assert isinstance(w, fg.Parameter) and again.name == w.name == "w13"
    assert [p.name for p in main.all_parameters()] == ["w13"]
    scope = fg.Scope()
    with fg.scope_guard(scope):
        fg.static.Executor().run(startup)
    np.testing.assert_array_equal(scope["w13"], np.full((2, 3), 0.5, "float32"))


# ---------------------------------------------------------------- fluidgrad.onnx after `import fluidgrad`
def _run(code):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=_REPO))
    assert proc.returncode == 0, proc.stderr[-800:]
    return proc.stdout.strip()


def test_onnx_and_testing_load_on_first_use_only():
    code = ("import sys, fluidgrad; before = [m for m in ('onnx', 'fluidgrad.onnx', 'fluidgrad.testing') "
            "if m in sys.modules]; names = 'onnx' in dir(fluidgrad) and 'testing' in dir(fluidgrad); "
            "ok = callable(fluidgrad.onnx.export_program) and callable(fluidgrad.testing.check_grad); "
            "print(before, names, ok, fluidgrad.onnx is sys.modules['fluidgrad.onnx'])")
    assert _run(code) == "[] True True True"


def test_an_unknown_attribute_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        fg.not_a_name  # noqa: B018


def test_fluidgrad_onnx_exports_after_the_plain_import(tmp_path):
    path = tmp_path / "m.onnx"
    code = (f"import fluidgrad as fg; layer = fg.nn.Linear(3, 2); "
            f"fg.onnx.export(layer, {str(path)!r}, [fg.ones([1, 3])]); print('ok')")
    assert _run(code) == "ok" and path.stat().st_size > 0


def test_new_names_have_no_torch_only_surprises():
    """The names this module adds keep `from fluidgrad import *` and help(fluidgrad) to callables."""
    assert {"mul", "softmax", "shape", "rank", "create_parameter"} <= set(fg.__all__)
    assert not {"float", "long", "optim", "utils", "cuda", "device", "onnx"} & set(fg.__all__)
    assert inspect.ismodule(fg.optim) and inspect.ismodule(fg.utils.data) and inspect.ismodule(fg.cuda)
