"""nn.utils of everyday torch and Paddle code: rnn.pad_sequence (batch_first, padding_value,
padding_side), PackedSequence (pack_padded_sequence, pack_sequence, pad_packed_sequence, and LSTM /
GRU / SimpleRNN run on one), weight_norm / remove_weight_norm (weight_g / weight_v parameters) and
spectral_norm / remove_spectral_norm (weight_orig, weight_u, weight_v): training steps give torch's
values, gradients and updates. torch 2.13.0 is the oracle (float64)."""
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


_PADDED = _RNG.standard_normal((3, 5, 4))      # batch-first, lengths below
_LENGTHS = [2, 5, 3]


def _same_weights(layer, reference):
    for (name, param), (theirs, value) in zip(layer.named_parameters(), reference.named_parameters()):
        assert name == theirs
        param.set_value(value.detach().numpy())


@pytest.mark.parametrize("kind, bidirectional, sorted_batch", [("LSTM", False, False), ("LSTM", True, True),
                                                               ("GRU", True, False), ("RNN", False, True)])
def test_recurrent_layer_on_a_packed_batch_gives_torchs_outputs_states_and_gradients(kind, bidirectional,
                                                                                    sorted_batch):
    lengths = sorted(_LENGTHS, reverse=True) if sorted_batch else _LENGTHS
    torch.manual_seed(0)
    reference = getattr(torch.nn, kind)(4, 6, num_layers=2, batch_first=True, bidirectional=bidirectional).double()
    layer = getattr(nn, kind)(4, 6, num_layers=2, batch_first=True, bidirectional=bidirectional)
    layer = layer.to(dtype="float64")
    _same_weights(layer, reference)
    x, tx = fg.to_tensor(_PADDED, stop_gradient=False), torch.tensor(_PADDED, requires_grad=True)
    states0 = _RNG.standard_normal((2 * (1 + bidirectional), 3, 6))
    hx = fg.to_tensor(states0), torch.tensor(states0)
    if kind == "LSTM":
        hx = (hx[0], fg.to_tensor(states0 * 0.5)), (hx[1], torch.tensor(states0 * 0.5))
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=sorted_batch)
    expected_packed = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=True,
                                                              enforce_sorted=sorted_batch)
    np.testing.assert_array_equal(packed.data.numpy(), expected_packed.data.detach().numpy())
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), expected_packed.batch_sizes.numpy())
    out, states = layer(packed, hx[0])
    expected, expected_states = reference(expected_packed, hx[1])
    assert isinstance(out, nn.utils.rnn.PackedSequence)
    np.testing.assert_allclose(out.data.numpy(), expected.data.detach().numpy(), rtol=1e-10, atol=1e-12)
    states = states if isinstance(states, tuple) else (states,)
    expected_states = expected_states if isinstance(expected_states, tuple) else (expected_states,)
    for mine, theirs in zip(states, expected_states):
        np.testing.assert_allclose(mine.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    padded, lengths_back = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, padding_value=-1.0,
                                                            total_length=6)
    expected_padded, expected_lengths = torch.nn.utils.rnn.pad_packed_sequence(
        expected, batch_first=True, padding_value=-1.0, total_length=6)
    np.testing.assert_allclose(padded.numpy(), expected_padded.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(lengths_back.numpy(), expected_lengths.numpy())
    cotangent = _RNG.standard_normal(tuple(expected_padded.shape))
    (fg.sum(padded * fg.to_tensor(cotangent)) + sum(fg.sum(s * s) for s in states)).backward()
    ((expected_padded * torch.tensor(cotangent)).sum() + sum((s * s).sum() for s in expected_states)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (name, param), (_, theirs) in zip(layer.named_parameters(), reference.named_parameters()):
        np.testing.assert_allclose(param.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_pack_sequence_and_its_errors():
    ours = nn.utils.rnn.pack_sequence([fg.to_tensor(r) for r in _ROWS], enforce_sorted=False)
    theirs = torch.nn.utils.rnn.pack_sequence([torch.tensor(r) for r in _ROWS], enforce_sorted=False)
    for got, expected in zip(ours, theirs):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    padded, lengths = nn.utils.rnn.pad_packed_sequence(ours)
    np.testing.assert_array_equal(padded.numpy(), torch.nn.utils.rnn.pad_packed_sequence(theirs)[0].numpy())
    assert lengths.numpy().tolist() == [3, 1, 4]
    for got, row in zip(nn.utils.rnn.unpack_sequence(ours), _ROWS):
        np.testing.assert_array_equal(got.numpy(), row)
    for got, row in zip(nn.utils.rnn.unpad_sequence(padded, lengths), _ROWS):
        np.testing.assert_array_equal(got.numpy(), row)
    with pytest.raises(ValueError, match=r"lengths \[3, 1, 4\] must be sorted in decreasing order"):
        nn.utils.rnn.pack_sequence([fg.to_tensor(r) for r in _ROWS])
    with pytest.raises(ValueError, match=r"lengths \[2, 6\] must lie in \[1, 5\]"):
        nn.utils.rnn.pack_padded_sequence(fg.to_tensor(_PADDED[:2]), [2, 6], batch_first=True,
                                          enforce_sorted=False)
    with pytest.raises(ValueError, match="total_length 3 is shorter than the longest sequence"):
        nn.utils.rnn.pad_packed_sequence(ours, total_length=3)


def _copy_torch_spectral_state(layer, reference, transpose):
    weight = reference.weight_orig.detach().numpy()
    layer.weight.set_value(weight.T if transpose else weight)
    layer.bias.set_value(reference.bias.detach().numpy())


@pytest.mark.parametrize("make, shape, transpose", [
    (lambda m: m.Conv2d(2, 3, 3), (2, 2, 5, 5), False),
    (lambda m: m.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4), False),
    (lambda m: m.Linear(4, 3), (5, 4), True)], ids=["Conv2d", "ConvTranspose2d", "Linear"])
def test_spectral_norm_trains_as_torch(make, shape, transpose):
    """torch's u and v copied in: three SGD steps (power iteration while training) and eval give
    torch's losses, weight_orig gradients and outputs. Linear's [in, out] weight takes dim=1."""
    torch.manual_seed(0)
    reference = torch.nn.utils.spectral_norm(make(torch.nn).double(), n_power_iterations=2)
    layer = make(nn).to(dtype="float64")
    _copy_torch_spectral_state(layer, reference, transpose)
    layer = nn.utils.spectral_norm(layer, n_power_iterations=2, dim=1 if transpose else None)
    assert sorted(layer.state_dict()) == sorted(reference.state_dict()) == ["bias", "weight_orig", "weight_u",
                                                                           "weight_v"]
    layer.weight_u.set_value(reference.weight_u.numpy())
    layer.weight_v.set_value(reference.weight_v.numpy())
    opt = fg.optimizer.SGD(0.1, parameters=layer.parameters())
    reference_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(3):
        x0 = _RNG.standard_normal(shape)
        loss, expected = fg.mean(layer(fg.to_tensor(x0)) ** 2), (reference(torch.tensor(x0)) ** 2).mean()
        np.testing.assert_allclose(loss.numpy(), expected.item(), rtol=1e-10)
        loss.backward()
        expected.backward()
        grad = reference.weight_orig.grad.numpy()
        np.testing.assert_allclose(layer.weight_orig.grad.numpy(), grad.T if transpose else grad, rtol=1e-8,
                                   atol=1e-12)
        opt.step()
        opt.clear_grad()
        reference_opt.step()
        reference_opt.zero_grad()
    layer.eval()
    reference.eval()
    x0 = _RNG.standard_normal(shape)
    u = layer.weight_u.numpy()
    np.testing.assert_allclose(layer(fg.to_tensor(x0)).numpy(), reference(torch.tensor(x0)).detach().numpy(),
                               rtol=1e-10)
    np.testing.assert_array_equal(layer.weight_u.numpy(), u)      # eval leaves u as it is


def test_remove_spectral_norm_and_errors():
    layer = nn.utils.spectral_norm(nn.Linear(3, 4))
    x = fg.to_tensor(_RNG.standard_normal((2, 3)).astype("float32"))
    layer.eval()
    before = layer(x).numpy()
    nn.utils.remove_spectral_norm(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(layer(x).numpy(), before, rtol=1e-6)
    with pytest.raises(ValueError, match="remove_spectral_norm: spectral_norm of 'weight' not found in Linear"):
        nn.utils.remove_spectral_norm(layer)
    with pytest.raises(ValueError, match="spectral_norm: n_power_iterations must be >= 0, got -1"):
        nn.utils.spectral_norm(layer, n_power_iterations=-1)
