"""A Layer's copies keep what ParamAttr gave its parameters: copy.deepcopy (an EMA model, a target
network), pickle, and Layer.to (dtype or device, PyTorch's and Paddle's forms), each then
trained with the same per-parameter learning rate as the original."""
from __future__ import annotations

import copy
import gc
import pickle

import numpy as np
import pytest

import fluidgrad as fg


def _model():
    fg.seed(0)
    return fg.nn.Sequential(
        fg.nn.Linear(3, 4, weight_attr=fg.ParamAttr(learning_rate=0.1)), fg.nn.Tanh(),
        fg.nn.Linear(4, 2, bias_attr=fg.ParamAttr(learning_rate=3.0)))


def _one_sgd_step(model):
    """(parameters before, their gradients, parameters after) of one SGD step at rate 0.5."""
    opt = fg.optimizer.SGD(0.5, parameters=model.parameters())
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype(model[0].weight.dtype)
    fg.sum(model(fg.to_tensor(x)) ** 2).backward()
    before = [p.numpy().copy() for p in model.parameters()]
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    opt.step()
    return before, grads, [p.numpy() for p in model.parameters()]


_RATES = [0.1, 1.0, 1.0, 3.0]    # the ParamAttr factors of weight 0, bias 0, weight 1, bias 1


def _assert_rates_used(model):
    for rate, (before, grad, after) in zip(_RATES, zip(*_one_sgd_step(model))):
        np.testing.assert_allclose(after, before - 0.5 * rate * grad, rtol=1e-6, atol=1e-7)


_COPIES = {
    "deepcopy": lambda m: copy.deepcopy(m),
    "deepcopy inside a list": lambda m: copy.deepcopy([m])[0],
    "pickle": lambda m: pickle.loads(pickle.dumps(m)),
    "deepcopy of a deepcopy": lambda m: copy.deepcopy(copy.deepcopy(m)),
}


@pytest.mark.parametrize("how", sorted(_COPIES))
def test_a_copied_layer_keeps_param_attr_learning_rates(how):
    original = _model()
    copied = _COPIES[how](original)
    assert all(p is not q for p, q in zip(copied.parameters(), original.parameters()))
    del original
    gc.collect()                      # the copy's rates do not hang on the original's parameters
    _assert_rates_used(copied)


def test_the_original_keeps_its_rates_and_its_values_after_its_copy_trains():
    original = _model()
    values = [p.numpy().copy() for p in original.parameters()]
    _one_sgd_step(copy.deepcopy(original))
    for value, p in zip(values, original.parameters()):
        np.testing.assert_array_equal(p.numpy(), value)
    _assert_rates_used(original)


_MOVES = {
    "to(dtype)": lambda m: m.to("float64"),
    "to(dtype=)": lambda m: m.to(dtype="float64"),
    "to('cpu')": lambda m: m.to("cpu"),
    "to(device=, dtype=)": lambda m: m.to(device="cpu", dtype="float64"),
    "to('cpu', dtype)": lambda m: m.to("cpu", "float64"),
}


@pytest.mark.parametrize("how", sorted(_MOVES))
def test_layer_to_keeps_param_attr_learning_rates(how):
    model = _model()
    assert _MOVES[how](model) is model
    wanted = "float32" if "dtype" not in how else "float64"
    assert all(p.dtype == wanted for p in model.parameters())
    _assert_rates_used(model)


def test_layer_to_another_device_says_fluidgrad_runs_on_the_cpu():
    with pytest.raises(ValueError, match="CPU"):
        _model().to("gpu:0")
    with pytest.raises(ValueError, match="CPU"):
        _model().to(device="cuda")
