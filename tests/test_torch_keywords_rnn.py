"""SimpleRNN / LSTM / GRU and torch's nn.RNN under PyTorch's keywords (batch_first=,
bidirectional=, bias=, nonlinearity=, hx=) against torch 2.13.0 with the same weights: torch's
shapes and values, torch's time-major default once torch's keywords are used, Paddle's
batch-major default otherwise."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from both_modes import compare_with_torch

R = np.random.default_rng(12)
OURS = {"LSTM": fg.nn.LSTM, "GRU": fg.nn.GRU, "RNN": fg.nn.RNN, "SimpleRNN": fg.nn.SimpleRNN}
TORCH = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN": torch.nn.RNN, "SimpleRNN": torch.nn.RNN}


def _pair(kind, *args, **kwargs):
    ours = OURS[kind](3, 4, *args, **kwargs).to(dtype="float64")
    theirs = TORCH[kind](3, 4, *args, dtype=torch.float64, **kwargs)
    ours.set_state_dict({name: p.detach().numpy() for name, p in theirs.named_parameters()})
    assert sorted(n for n, _ in ours.named_parameters()) == sorted(n for n, _ in theirs.named_parameters())
    return ours, theirs


def _states(kind, layers_directions, batch):
    h = R.standard_normal((layers_directions, batch, 4))
    return (h, R.standard_normal(h.shape)) if kind == "LSTM" else h


def _assert_same(got, expected):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
        return
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", sorted(OURS))
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [None, False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_torch_keywords_give_torchs_shapes_and_values(kind, bidirectional, batch_first, with_state):
    keywords = {"bidirectional": bidirectional, **({} if batch_first is None else {"batch_first": batch_first})}
    ours, theirs = _pair(kind, 2, **keywords)                    # num_layers=2, positional as in torch
    assert ours.time_major == (not batch_first)                 # torch's default: time-major
    x = R.standard_normal((2, 5, 3) if batch_first else (5, 2, 3))
    states = _states(kind, 2 * (2 if bidirectional else 1), 2) if with_state else None
    if states is None:
        got, expected = ours(fg.to_tensor(x)), theirs(torch.tensor(x))
    else:
        as_ours = tuple(map(fg.to_tensor, states)) if kind == "LSTM" else fg.to_tensor(states)
        as_torch = tuple(map(torch.tensor, states)) if kind == "LSTM" else torch.tensor(states)
        got, expected = ours(fg.to_tensor(x), hx=as_ours), theirs(torch.tensor(x), as_torch)
    _assert_same(got, expected)


def test_gradients_of_a_time_major_bidirectional_lstm_match_torch():
    ours, theirs = _pair("LSTM", 2, bidirectional=True)
    inputs = {"x": R.standard_normal((5, 2, 3)), "h0": R.standard_normal((4, 2, 4)), "c0": R.standard_normal((4, 2, 4))}

    def run_ours(x, h0, c0):
        out, (h, c) = ours(x, (h0, c0))
        return fg.concat([fg.reshape(out, [-1]), fg.reshape(h, [-1]), fg.reshape(c, [-1])], axis=0)

    def run_theirs(x, h0, c0):
        out, (h, c) = theirs(x, (h0, c0))
        return torch.cat([out.reshape(-1), h.reshape(-1), c.reshape(-1)])

    compare_with_torch(run_ours, run_theirs, inputs, wrt=["x", "h0", "c0"], rtol=1e-9, atol=1e-12,
                       static="to_static")


@pytest.mark.parametrize("kind", ["GRU", "RNN"])
def test_bias_false_and_nonlinearity(kind):
    options = {"bias": False, **({"nonlinearity": "relu"} if kind == "RNN" else {})}
    ours, theirs = _pair(kind, 1, **options)
    assert not any("bias" in name for name, _ in ours.named_parameters())
    x = R.standard_normal((4, 2, 3))
    _assert_same(ours(fg.to_tensor(x)), theirs(torch.tensor(x)))


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_unbatched_input_as_torch(kind):
    ours, theirs = _pair(kind, 2, bidirectional=True)
    x = R.standard_normal((5, 3))
    _assert_same(ours(fg.to_tensor(x)), theirs(torch.tensor(x)))


def test_nn_rnn_with_sizes_is_torchs_rnn_and_with_a_cell_paddles():
    torch_style = fg.nn.RNN(3, 4, 2, "relu", batch_first=True)
    assert isinstance(torch_style, fg.nn.SimpleRNN) and torch_style.activation == "relu"
    assert not torch_style.time_major and torch_style.num_layers == 2
    assert fg.nn.RNN(input_size=3, hidden_size=4).time_major        # torch's default
    wrapper = fg.nn.RNN(fg.nn.GRUCell(3, 4))
    assert isinstance(wrapper, fg.nn.RNN) and tuple(wrapper(fg.to_tensor(R.standard_normal((2, 5, 3)).astype(
        "float32")))[0].shape) == (2, 5, 4)


def test_paddles_keywords_keep_paddles_batch_major_default():
    """LSTM(3, 4) and LSTM(3, 4, 2, direction='bidirect') are Paddle calls: [batch, time, ...]."""
    for ours in (fg.nn.LSTM(3, 4), fg.nn.LSTM(3, 4, 2, direction="bidirect"), fg.nn.GRU(3, 4, dropout=0.0)):
        assert ours.time_major is False
        assert tuple(ours(fg.to_tensor(R.standard_normal((2, 5, 3)).astype("float32")))[0].shape)[:2] == (2, 5)
    assert fg.nn.LSTM(3, 4, time_major=True, bidirectional=True).time_major


_REFUSED = {
    "time_major and batch_first": (TypeError, lambda: fg.nn.LSTM(3, 4, time_major=False, batch_first=True)),
    "direction and bidirectional": (TypeError, lambda: fg.nn.GRU(3, 4, direction="bidirect", bidirectional=True)),
    "bias_ih_attr and bias": (TypeError, lambda: fg.nn.LSTM(3, 4, bias_ih_attr=fg.ParamAttr(), bias=False)),
    "activation and nonlinearity": (TypeError, lambda: fg.nn.SimpleRNN(3, 4, activation="relu", nonlinearity="tanh")),
    "proj_size": (ValueError, lambda: fg.nn.LSTM(3, 4, proj_size=2)),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_conflicting_or_unsupported_keywords_are_refused(case):
    error, make = _REFUSED[case]
    with pytest.raises(error, match="not both|not supported"):
        make()


def test_hx_and_initial_states_together_are_refused():
    with pytest.raises(TypeError, match="not both"):
        h = fg.zeros([1, 2, 4])
        fg.nn.GRU(3, 4)(fg.to_tensor(R.standard_normal((2, 5, 3)).astype("float32")), h, hx=h)
