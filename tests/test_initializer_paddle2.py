"""Initializers the Paddle 2 way: called on a parameter (eager: filled in place now; static: an op
in the startup program), given as weight_attr / bias_attr, and Paddle 2's arguments (fan_in,
fan_out, gain, negative_slope, nonlinearity, truncation bounds) against PyTorch's formulas."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.nn import initializer as init

_GAINS = [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
          ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]


@pytest.mark.parametrize("nonlinearity, param", _GAINS)
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(torch.nn.init.calculate_gain(nonlinearity, param))


def test_calculate_gain_refuses_an_unknown_nonlinearity():
    with pytest.raises(ValueError, match="calculate_gain: unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")


@pytest.mark.parametrize("make, spread", [
    (lambda: init.KaimingUniform(nonlinearity="tanh"), lambda fi, fo: 5 / 3 * np.sqrt(3 / fi)),
    (lambda: init.KaimingUniform(fan_in=50), lambda fi, fo: np.sqrt(6 / 50)),
    (lambda: init.XavierUniform(gain=2.0), lambda fi, fo: 2 * np.sqrt(6 / (fi + fo))),
])
def test_uniform_limits_follow_the_arguments(make, spread):
    layer = fg.nn.Linear(300, 200, weight_attr=make())
    w = layer.weight.numpy()
    limit = spread(300, 200)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.95 * limit


@pytest.mark.parametrize("make, std", [
    (lambda: init.KaimingNormal(), lambda fi, fo: np.sqrt(2 / fi)),
    (lambda: init.KaimingNormal(fan_in=25, nonlinearity="linear"), lambda fi, fo: 1 / 5),
    (lambda: init.XavierNormal(fan_in=10, fan_out=40, gain=0.5), lambda fi, fo: 0.5 * np.sqrt(2 / 50)),
])
def test_normal_spreads_follow_the_arguments(make, std):
    layer = fg.nn.Linear(300, 200, weight_attr=make())
    assert layer.weight.numpy().std() == pytest.approx(std(300, 200), rel=0.05)


def test_truncated_normal_bounds_are_absolute_as_torch():
    values = init.TruncatedNormal(1.0, 2.0, a=0.5, b=1.5).initial_value([4000], "float64")
    assert values.min() >= 0.5 and values.max() <= 1.5 and values.min() < 0.52 and values.max() > 1.48
    default = init.TruncatedNormal(0.0, 1.0).initial_value([4000], "float64")
    assert np.abs(default).max() <= 2.0 and np.abs(default).max() > 1.9
    with pytest.raises(ValueError, match="a < b"):
        init.TruncatedNormal(0.0, 1.0, a=1.0, b=-1.0)


def test_calling_an_initializer_on_a_static_parameter_appends_to_the_startup_program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        out = fg.static.nn.fc(x, 2, weight_attr=init.Constant(2.0), bias_attr=init.Constant(0.5))
        weight = main.global_block().all_parameters()[0]
        init.Constant(3.0)(weight)                     # re-initialised: the later op wins
    exe = fg.Executor()
    exe.run(startup)
    got, = exe.run(main, feed={"x": np.ones((1, 3), "float32")}, fetch_list=[out])
    np.testing.assert_allclose(got, np.full((1, 2), 9.5, "float32"))


def test_an_initializer_refuses_what_is_not_a_parameter():
    with pytest.raises(TypeError, match="Constant: expected a parameter Tensor or Variable, got list"):
        init.Constant(1.0)([1.0, 2.0])
