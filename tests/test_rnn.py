"""SimpleRNN, LSTM and GRU against torch.nn.RNN / LSTM / GRU with the same weights: outputs,
final states and gradients (inputs, initial states, every weight), in eager mode and in static
mode (jit.to_static), float64."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from both_modes import compare_with_torch

R = np.random.default_rng(5)
TORCH = {"SimpleRNN": torch.nn.RNN, "LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}


def _pair(kind, num_layers, bidirectional, **options):
    ours = getattr(fg.nn, kind)(3, 4, num_layers=num_layers, direction="bidirect" if bidirectional else "forward",
                                **options).to("float64")
    torch_options = {"nonlinearity": options["activation"]} if "activation" in options else {}
    theirs = TORCH[kind](3, 4, num_layers=num_layers, bidirectional=bidirectional, batch_first=True,
                         dtype=torch.float64, **torch_options)
    ours.set_state_dict({name: p.detach().numpy() for name, p in theirs.named_parameters()})
    return ours, theirs


def _flat(F, parts):
    return F.concat([F.reshape(p, [-1]) for p in parts], axis=0)


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
@pytest.mark.parametrize("num_layers,bidirectional", [(1, False), (2, True)])
@pytest.mark.parametrize("with_state", [False, True])
def test_recurrent_layers_match_torch(kind, num_layers, bidirectional, with_state):
    ours, theirs = _pair(kind, num_layers, bidirectional)
    states = num_layers * (2 if bidirectional else 1)
    inputs = {"x": R.normal(size=(2, 5, 3)), "h0": R.normal(size=(states, 2, 4)), "c0": R.normal(size=(states, 2, 4))}
    lstm = kind == "LSTM"

    def run_ours(x, h0, c0):
        initial = ((h0, c0) if lstm else h0) if with_state else None
        out, final = ours(x, initial)
        return _flat(fg, [out, *(final if lstm else [final])])

    def run_theirs(x, h0, c0):
        initial = ((h0, c0) if lstm else h0) if with_state else None
        out, final = theirs(x, initial)
        return torch.cat([p.reshape(-1) for p in [out, *(final if lstm else [final])]])

    wrt = ["x"] + (["h0"] + (["c0"] if lstm else []) if with_state else [])
    compare_with_torch(run_ours, run_theirs, inputs, wrt=wrt, rtol=1e-9, atol=1e-12, static="to_static")

    # every weight's gradient, one eager backward
    ours.clear_gradients()
    fg.sum(fg.square(run_ours(*(fg.to_tensor(inputs[k]) for k in ("x", "h0", "c0"))))).backward()
    (run_theirs(*(torch.tensor(inputs[k]) for k in ("x", "h0", "c0"))) ** 2).sum().backward()
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(getattr(ours, name).grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


def test_simple_rnn_relu_and_time_major():
    ours, theirs = _pair("SimpleRNN", 1, False, activation="relu")
    ours.time_major = True
    x = R.normal(size=(5, 2, 3))
    out, h = ours(fg.to_tensor(x))
    expected, expected_h = theirs(torch.tensor(x).transpose(0, 1))
    np.testing.assert_allclose(out.numpy(), expected.transpose(0, 1).detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(h.numpy(), expected_h.detach().numpy(), rtol=1e-10)


def test_lstm_parameters_and_dropout_between_layers():
    lstm = fg.nn.LSTM(3, 4, num_layers=2, direction="bidirectional", dropout=0.5)
    names = [name for name, _ in lstm.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert lstm.weight_ih_l1_reverse.shape in ([16, 8], (16, 8))
    x = fg.to_tensor(R.normal(size=(2, 6, 3)).astype("float32"))
    lstm.eval()
    first, _ = lstm(x)
    np.testing.assert_array_equal(first.numpy(), lstm(x)[0].numpy())     # no dropout in eval
    lstm.train()
    assert not np.allclose(lstm(x)[0].numpy(), first.numpy())


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="direction must be"):
        fg.nn.GRU(3, 4, direction="backward")
    gru = fg.nn.GRU(3, 4)
    with pytest.raises(ValueError, match=r"input must be \[batch, time, input_size\]"):
        gru(fg.to_tensor(np.zeros((2, 3, 3, 1), dtype="float32")))     # [time, input_size]: torch's unbatched
    with pytest.raises(ValueError, match="input_size 3"):
        gru(fg.to_tensor(np.zeros((2, 5, 4), dtype="float32")))
