"""nn.utils of everyday torch and Paddle code: rnn.pad_sequence (batch_first, padding_value,
padding_side) and weight_norm / remove_weight_norm (weight_g / weight_v parameters; training steps
give torch's values, gradients and updates). torch 2.13.0 is the oracle (float64)."""
import warnings

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import nn

_RNG = np.random.default_rng(13)
_ROWS = [_RNG.standard_normal((3, 2)), _RNG.standard_normal((1, 2)), _RNG.standard_normal((4, 2))]


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True}, {"padding_value": -1.5},
                                    {"batch_first": True, "padding_side": "left", "padding_value": 7.0}],
                         ids=str)
def test_pad_sequence_matches_torch_with_gradients(kwargs):
    ours = [fg.to_tensor(r, stop_gradient=False) for r in _ROWS]
    theirs = [torch.tensor(r, requires_grad=True) for r in _ROWS]
    out = nn.utils.rnn.pad_sequence(ours, **kwargs)
    expected = torch.nn.utils.rnn.pad_sequence(theirs, **kwargs)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    cotangent = _RNG.standard_normal(tuple(expected.shape))
    fg.sum(out * fg.to_tensor(cotangent)).backward()
    (expected * torch.tensor(cotangent)).sum().backward()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_array_equal(mine.grad.numpy(), reference.grad.numpy())


def test_pad_sequence_takes_one_tensor_and_refuses_mismatches():
    batch = _RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(nn.utils.rnn.pad_sequence(fg.to_tensor(batch)).numpy(),
                                  torch.nn.utils.rnn.pad_sequence(torch.tensor(batch)).numpy())
    with pytest.raises(ValueError, match=r"pad_sequence: sequences must be \[L, \*\] with the same trailing sizes"):
        nn.utils.rnn.pad_sequence([fg.to_tensor(np.zeros((2, 3))), fg.to_tensor(np.zeros((2, 4)))])
    with pytest.raises(ValueError, match="padding_side must be 'right' or 'left'"):
        nn.utils.rnn.pad_sequence([fg.to_tensor(np.zeros(2))], padding_side="top")


def _torch_weight_norm(module, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)      # torch prefers parametrizations.weight_norm
        return torch.nn.utils.weight_norm(module, **kwargs)


def _copy_conv(layer, reference):
    layer.weight.set_value(reference.weight.detach().numpy())
    layer.bias.set_value(reference.bias.detach().numpy())


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_trains_as_torch(dim):
    """Three SGD steps of a weight-normed Conv2D (the same [out, in, kh, kw] layout in both
    libraries): outputs, the g and v gradients and the updated parameters follow torch's."""
    torch.manual_seed(0)
    reference = torch.nn.Conv2d(2, 3, 3).double()
    layer = nn.Conv2D(2, 3, 3).to(dtype="float64")
    _copy_conv(layer, reference)
    reference = _torch_weight_norm(reference, dim=dim)
    layer = nn.utils.weight_norm(layer, dim=dim)
    assert sorted(n for n, _ in layer.named_parameters()) == sorted(n for n, _ in reference.named_parameters())
    np.testing.assert_allclose(layer.weight_g.numpy(), reference.weight_g.detach().numpy(), rtol=1e-12)
    opt = fg.optimizer.SGD(0.1, parameters=layer.parameters())
    reference_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(3):
        x0 = _RNG.standard_normal((2, 2, 5, 5))
        loss = fg.mean(layer(fg.to_tensor(x0)) ** 2)
        expected = (reference(torch.tensor(x0)) ** 2).mean()
        np.testing.assert_allclose(loss.numpy(), expected.item(), rtol=1e-11)
        loss.backward()
        expected.backward()
        for name in ("weight_g", "weight_v", "bias"):
            np.testing.assert_allclose(getattr(layer, name).grad.numpy(), getattr(reference, name).grad.numpy(),
                                       rtol=1e-9, atol=1e-13, err_msg=name)
        opt.step()
        opt.clear_grad()
        reference_opt.step()
        reference_opt.zero_grad()
    np.testing.assert_allclose(layer.weight_v.numpy(), reference.weight_v.detach().numpy(), rtol=1e-10)


def test_weight_norm_of_a_linear_keeps_torchs_output_axis():
    """fluidgrad's Linear weight is [in, out] (Paddle's), torch's [out, in]: torch's dim=0 (a norm per
    output) is dim=1 here, and then values and gradients agree."""
    reference = torch.nn.Linear(3, 4).double()
    layer = nn.Linear(3, 4).to(dtype="float64")
    layer.weight.set_value(reference.weight.detach().numpy().T)
    layer.bias.set_value(reference.bias.detach().numpy())
    reference, layer = _torch_weight_norm(reference), nn.utils.weight_norm(layer, dim=1)
    assert layer.weight_g.shape == (1, 4)
    x0 = _RNG.standard_normal((5, 3))
    out, expected = layer(fg.to_tensor(x0)), reference(torch.tensor(x0))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
    fg.sum(out * out).backward()
    (expected * expected).sum().backward()
    np.testing.assert_allclose(layer.weight_g.grad.numpy(), reference.weight_g.grad.numpy().T, rtol=1e-10)
    np.testing.assert_allclose(layer.weight_v.grad.numpy(), reference.weight_v.grad.numpy().T, rtol=1e-10)


def test_remove_weight_norm_gives_back_one_weight():
    layer = nn.utils.weight_norm(nn.Linear(3, 4))
    layer.weight_g.set_value(layer.weight_g.numpy() * 2)
    x = fg.to_tensor(_RNG.standard_normal((2, 3)).astype("float32"))
    before = layer(x).numpy()
    assert sorted(layer.state_dict()) == ["bias", "weight_g", "weight_v"]
    nn.utils.remove_weight_norm(layer)
    assert sorted(n for n, _ in layer.named_parameters()) == ["bias", "weight"]
    np.testing.assert_allclose(layer(x).numpy(), before, rtol=1e-6)
    with pytest.raises(ValueError, match="remove_weight_norm: weight_norm of 'weight' not found in Linear"):
        nn.utils.remove_weight_norm(layer)
    with pytest.raises(ValueError, match="weight_norm: Linear has no parameter 'kernel'"):
        nn.utils.weight_norm(layer, name="kernel")
    with pytest.raises(ValueError, match=r"weight_norm: dim 2 is out of range for a weight of shape \[3, 4\]"):
        nn.utils.weight_norm(layer, dim=2)
