"""fluidgrad.nn.init, PyTorch's in-place initialisers: the random ones against torch's own draws on
the same fans (statistics with a fixed seed, tolerances far below the gap a wrong fan, gain or mode
would make), the deterministic ones exactly, in `model.apply` loops, on static parameters, and
their refusals."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.nn import init


def _torch_layout(shape):
    """The shape torch stores the same weight in: 2-D weights are [out, in] there, [in, out] here."""
    return tuple(reversed(shape)) if len(shape) == 2 else shape


_LINEAR, _CONV = (400, 300), (64, 32, 3, 3)  # fans (400, 300) and (288, 576): the modes differ by sqrt(2)

_RANDOM = {
    "xavier_uniform_": lambda m, w: m.xavier_uniform_(w),
    "xavier_uniform_ gain": lambda m, w: m.xavier_uniform_(w, gain=m.calculate_gain("tanh")),
    "xavier_normal_": lambda m, w: m.xavier_normal_(w),
    "xavier_normal_ gain": lambda m, w: m.xavier_normal_(w, gain=0.5),
    "kaiming_uniform_": lambda m, w: m.kaiming_uniform_(w),
    "kaiming_uniform_ a=sqrt(5)": lambda m, w: m.kaiming_uniform_(w, a=5 ** 0.5),   # torch's Linear default
    "kaiming_uniform_ fan_out": lambda m, w: m.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu"),
    "kaiming_normal_": lambda m, w: m.kaiming_normal_(w),
    "kaiming_normal_ fan_out tanh": lambda m, w: m.kaiming_normal_(w, mode="fan_out", nonlinearity="tanh"),
    "kaiming_normal_ leaky 0.5": lambda m, w: m.kaiming_normal_(w, a=0.5),
    "normal_": lambda m, w: m.normal_(w, 0.5, 0.02),
    "uniform_": lambda m, w: m.uniform_(w, -0.3, 0.1),
    "trunc_normal_": lambda m, w: m.trunc_normal_(w, mean=0.1, std=0.5, a=-0.2, b=0.6),
}


@pytest.fixture
def eager(monkeypatch):
    """Eager mode (the suite's conftest guards every test with a program)."""
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


@pytest.mark.parametrize("shape", [_LINEAR, _CONV], ids=["linear", "conv"])
@pytest.mark.parametrize("name", sorted(_RANDOM))
def test_random_initialisers_draw_what_torch_draws(name, shape, eager):
    fg.seed(3)
    torch.manual_seed(3)
    weight = fg.nn.create_parameter(list(shape), "float32")
    assert _RANDOM[name](init, weight) is weight
    got = weight.numpy()
    expected = torch.empty(_torch_layout(shape))
    _RANDOM[name](torch.nn.init, expected)
    expected = expected.numpy()
    assert got.shape == shape and got.dtype == np.float32
    spread = float(expected.std())
    assert float(got.mean()) == pytest.approx(float(expected.mean()), abs=0.04 * spread)
    assert float(got.std()) == pytest.approx(spread, rel=0.02)
    if "uniform" in name or "trunc" in name:   # bounded: the same bounds, reached by both
        assert float(got.min()) == pytest.approx(float(expected.min()), abs=0.01 * spread)
        assert float(got.max()) == pytest.approx(float(expected.max()), abs=0.01 * spread)


@pytest.mark.parametrize("name, call", [
    ("eye_ wide", lambda m, w: m.eye_(w)), ("zeros_", lambda m, w: m.zeros_(w)),
    ("ones_", lambda m, w: m.ones_(w)), ("constant_", lambda m, w: m.constant_(w, -1.25)),
])
def test_deterministic_initialisers_match_torch_exactly(name, call, eager):
    for shape in [(3, 5), (5, 3)]:
        weight = fg.to_tensor(np.full(shape, 7.0))
        call(init, weight)
        expected = torch.full(shape, 7.0, dtype=torch.float64)
        call(torch.nn.init, expected)
        np.testing.assert_array_equal(weight.numpy(), expected.numpy())
        assert weight.dtype == fg.float64


@pytest.mark.parametrize("shape, groups", [((6, 4, 3, 3), 2), ((4, 6, 3), 1), ((3, 2, 3, 1, 2), 1)])
def test_dirac_matches_torch_and_passes_the_channels_through(shape, groups, eager):
    weight = fg.to_tensor(np.ones(shape, "float32"))
    init.dirac_(weight, groups=groups)
    expected = torch.ones(shape)
    torch.nn.init.dirac_(expected, groups=groups)
    np.testing.assert_array_equal(weight.numpy(), expected.numpy())
    if shape == (6, 4, 3, 3):   # each group of 4 input channels copies its first 3 through
        x = np.random.default_rng(0).standard_normal((1, 8, 5, 5)).astype("float32")
        out = fg.nn.functional.conv2d(fg.to_tensor(x), weight, padding=1, groups=2).numpy()
        np.testing.assert_allclose(out[0], x[0, [0, 1, 2, 4, 5, 6]], rtol=1e-6)


@pytest.mark.parametrize("shape, gain", [((400, 300), 1.0), ((30, 100), 2.0), ((8, 2, 3, 3), 0.5)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape, gain, eager):
    weight = fg.nn.create_parameter(list(shape), "float64")
    init.orthogonal_(weight, gain=gain)
    w = weight.numpy().reshape(shape[0], -1)
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(min(w.shape)), atol=1e-10)


def test_sparse_zeroes_the_fraction_of_each_column(eager):
    fg.seed(0)
    weight = fg.to_tensor(np.ones((50, 40)))
    init.sparse_(weight, sparsity=0.3, std=0.1)
    w = weight.numpy()
    np.testing.assert_array_equal((w == 0).sum(axis=0), np.full(40, 15))
    assert w[w != 0].std() == pytest.approx(0.1, rel=0.1)


def test_an_init_loop_over_model_apply_fills_the_parameters_in_place(eager):
    model = fg.nn.Sequential(fg.nn.Conv2D(3, 8, 3), fg.nn.ReLU(), fg.nn.Flatten(), fg.nn.Linear(8 * 4 * 4, 5))
    weights = [id(p) for p in model.parameters()]

    def initialise(layer):
        if isinstance(layer, (fg.nn.Linear, fg.nn.Conv2D)):
            init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
            init.constant_(layer.bias, 0.1)

    fg.seed(1)
    model.apply(initialise)
    assert [id(p) for p in model.parameters()] == weights
    conv, linear = model[0], model[3]
    assert conv.weight.numpy().std() == pytest.approx(np.sqrt(2 / (8 * 9)), rel=0.1)
    assert linear.weight.numpy().std() == pytest.approx(np.sqrt(2 / 5), rel=0.1)
    for layer in (conv, linear):
        np.testing.assert_array_equal(layer.bias.numpy(), np.full(layer.bias.shape, 0.1, "float32"))
        assert not layer.weight.stop_gradient and layer.weight.grad is None
    x = fg.to_tensor(np.ones((2, 3, 6, 6), "float32"))
    fg.sum(model[3](model[2](fg.ones([2, 8, 4, 4])))).backward()   # the new values, still a trainable leaf
    np.testing.assert_allclose(linear.weight.grad.numpy(), np.full((128, 5), 2.0), rtol=1e-6)
    assert list(model(x).shape) == [2, 5]


def test_init_on_a_static_parameter_appends_to_the_startup_program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        out = fg.static.nn.fc(x, 2)
        weight, bias = main.global_block().all_parameters()
        assert init.eye_(weight) is weight
        init.constant_(bias, 0.5)
    exe = fg.Executor()
    exe.run(startup)
    got, = exe.run(main, feed={"x": np.array([[1.0, 2.0, 3.0]], "float32")}, fetch_list=[out])
    np.testing.assert_allclose(got, [[1.5, 2.5]])


@pytest.mark.parametrize("call, error, message", [
    (lambda: init.xavier_uniform_(fg.to_tensor(np.zeros(3))), ValueError,
     r"nn.init.xavier_uniform_: fan in and fan out can not be computed .* shape \[3\]"),
    (lambda: init.kaiming_normal_(fg.to_tensor(np.zeros((2, 3))), mode="fan_avg"), ValueError,
     "nn.init.kaiming_normal_: mode must be 'fan_in' or 'fan_out', got 'fan_avg'"),
    (lambda: init.kaiming_uniform_(fg.to_tensor(np.zeros((2, 3))), nonlinearity="swish"), ValueError,
     "unsupported nonlinearity 'swish'"),
    (lambda: init.eye_(fg.to_tensor(np.zeros((2, 3, 4)))), ValueError, r"eye_: only 2-D .* \[2, 3, 4\]"),
    (lambda: init.dirac_(fg.to_tensor(np.zeros((3, 3, 3))), groups=2), ValueError, "do not split into groups=2"),
    (lambda: init.normal_([1.0, 2.0]), TypeError, "nn.init.normal_: expected a parameter Tensor or Variable, got list"),
    (lambda: init.uniform_(fg.to_tensor(np.zeros(3)), generator=torch.Generator()), TypeError, "fluidgrad.seed"),
])
def test_init_refuses_with_the_function_and_the_shape(call, error, message, eager):
    with pytest.raises(error, match=message):
        call()
