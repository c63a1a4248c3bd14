"""Grad-mode decorators on generator functions, batch norm on one value per channel, group_norm's
two positional orders and to_tensor's errors: what torch and Paddle users meet in their first
hours (session-12 review), checked against torch 2.13."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.nn.functional as F

_RNG = np.random.default_rng(13)


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _doubles(a):
    for _ in range(2):
        a = a * 2
        yield a


@pytest.mark.parametrize("decorate", [
    lambda fn: fg.no_grad()(fn), lambda fn: fg.no_grad(fn), lambda fn: fg.set_grad_enabled(False)(fn),
    lambda fn: fg.inference_mode()(fn)], ids=["no_grad()", "no_grad", "set_grad_enabled(False)", "inference_mode"])
def test_a_decorated_generator_runs_each_resumption_without_recording(decorate, eager):
    x = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    steps = decorate(_doubles)(x)
    first = next(steps)
    assert fg.is_grad_enabled()          # the caller's mode between two resumptions
    assert first.stop_gradient and next(steps).stop_gradient
    assert (x * 2).stop_gradient is False


def test_enable_grad_on_a_generator_records_inside_no_grad(eager):
    x = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    with fg.no_grad():
        steps = [step.stop_gradient for step in fg.enable_grad()(_doubles)(x)]
        assert not fg.is_grad_enabled()
    assert steps == [False, False]


def test_a_decorated_generator_passes_send_throw_close_and_its_return_value(eager):
    seen = []

    @fg.no_grad()
    def echo():
        try:
            while True:
                seen.append(fg.is_grad_enabled())
                got = yield len(seen)
                if got == "stop":
                    return "done"
        except KeyError:
            seen.append("caught")
            yield -1

    gen = echo()
    assert next(gen) == 1 and gen.send(None) == 2
    assert gen.throw(KeyError("k")) == -1 and seen == [False, False, "caught"]
    gen.close()
    gen = echo()
    next(gen)
    with pytest.raises(StopIteration) as stop:
        gen.send("stop")
    assert stop.value.value == "done"
    assert fg.is_grad_enabled()


@pytest.mark.parametrize("shape, data_format", [((1, 3), "NC"), ((1, 3, 1), "NCL"), ((1, 1, 3), "NLC"),
                                                 ((1, 3, 1, 1), "NCHW"), ((1, 1, 1, 3), "NHWC")])
def test_batch_norm_in_training_refuses_one_value_per_channel(shape, data_format, eager):
    x = fg.to_tensor(np.arange(3.0).reshape(shape))
    mean, var = fg.zeros([3], "float64"), fg.ones([3], "float64")
    with pytest.raises(ValueError, match=r"batch_norm: Expected more than 1 value per channel when training"):
        F.batch_norm(x, mean, var, training=True, data_format=data_format)
    with pytest.raises(ValueError, match=r"(?s)batch_norm.*channel"):
        F.batch_norm(x, mean, var, training=False, use_global_stats=False, data_format=data_format)
    np.testing.assert_array_equal(var.numpy(), np.ones(3))     # the running statistics are left alone
    y = F.batch_norm(x, mean, var, training=False, data_format=data_format)    # eval: the running ones
    np.testing.assert_allclose(y.numpy(), x.numpy() / np.sqrt(1 + 1e-5))


def test_batch_norm_layers_refuse_one_value_per_channel_in_training_only():
    layer = fg.nn.BatchNorm2D(3)
    x = fg.to_tensor(np.arange(3.0, dtype="float32").reshape(1, 3, 1, 1))
    with pytest.raises(ValueError, match=r"input size \[1, 3, 1, 1\]"):
        layer(x)
    layer.eval()
    assert list(layer(x).shape) == [1, 3, 1, 1]
    layer.train()
    assert list(layer(fg.to_tensor(np.arange(6.0, dtype="float32").reshape(2, 3, 1, 1))).shape) == [2, 3, 1, 1]
    torch_layer = torch.nn.BatchNorm2d(3)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        torch_layer(torch.arange(3.0).reshape(1, 3, 1, 1))


def test_group_norm_takes_torchs_and_paddles_positional_orders(eager):
    x, w, b = _RNG.standard_normal((2, 6, 3)), _RNG.standard_normal(6), _RNG.standard_normal(6)
    tx, tw, tb = torch.tensor(x, requires_grad=True), torch.tensor(w), torch.tensor(b)
    expected = torch.nn.functional.group_norm(tx, 3, tw, tb, 1e-3)
    expected.sum().backward()
    ours = fg.to_tensor(x, stop_gradient=False)
    got = F.group_norm(ours, 3, fg.to_tensor(w), fg.to_tensor(b), 1e-3)       # torch's order, eps fifth
    got.sum().backward()
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    paddle_order = F.group_norm(fg.to_tensor(x), 3, 1e-3, fg.to_tensor(w), fg.to_tensor(b))
    np.testing.assert_allclose(paddle_order.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    by_keyword = F.group_norm(fg.to_tensor(x), 3, weight=fg.to_tensor(w), bias=fg.to_tensor(b), eps=1e-3)
    np.testing.assert_allclose(by_keyword.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    weight_only = F.group_norm(fg.to_tensor(x), 3, fg.to_tensor(w))
    np.testing.assert_allclose(weight_only.numpy(), torch.nn.functional.group_norm(
        torch.tensor(x), 3, tw).numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("data, error, words", [
    ([[1.0, 2.0], [3.0]], ValueError, "expected sequence of length 2 at dim 1 (got 1)"),
    ([[[1.0], [2.0]], [[3.0], [4.0, 5.0]]], ValueError, "expected sequence of length 1 at dim 2 (got 2)"),
    ([[1.0, 2.0], 3.0], ValueError, "dim 1"),
    (None, TypeError, "NoneType (None)"),
    ({"a": 1}, TypeError, "dict ({'a': 1})"),
    ([1.0, None], TypeError, "list ([1.0, None])"),
    (object(), TypeError, "a object"),
])
def test_to_tensor_errors_name_to_tensor_and_the_data(data, error, words, eager):
    with pytest.raises(error, match="to_tensor") as caught:
        fg.to_tensor(data)
    assert words in str(caught.value)
    with pytest.raises(error, match="to_tensor"):
        fg.to_tensor(data, dtype="float32")


def test_to_tensor_still_takes_numbers_lists_arrays_and_tensors(eager):
    assert list(fg.to_tensor([[1, 2], [3, 4]]).shape) == [2, 2]
    assert list(fg.to_tensor([fg.ones([2]), fg.zeros([2])]).shape) == [2, 2]
    assert fg.to_tensor(np.array([True])).dtype == fg.bool
    assert list(fg.to_tensor(3.0).shape) == []
