"""Layers of paddle.nn / torch.nn composed from existing ops (session 11): nn.RNN and nn.BiRNN
over any cell, Bilinear, AlphaDropout, ChannelShuffle, Softmax2D and MaxUnPool1D-3D (with their
functions), each against PyTorch 2.13.0 with copied weights (values and gradients), eager equal
to a static program with a batch of -1, and the errors of bad input."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.framework.program as program_module
import fluidgrad.nn.functional as NF
from fluidgrad.testing import check_program_grad


@pytest.fixture
def eager(monkeypatch):
    """Eager mode (the suite's conftest guards every test with a program)."""
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _static_equals_eager(layer, *arrays, fetch=lambda out: out):
    """The layer on Variables with a batch of -1 in a static program gives its eager answer."""
    eager = fetch(layer(*[fg.to_tensor(a) for a in arrays]))
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        xs = [fg.static.data(f"x{i}", [None] + list(a.shape[1:]), str(a.dtype)) for i, a in enumerate(arrays)]
        out = fetch(layer(*xs))
    exe = fg.Executor()
    exe.run(startup)
    got, = exe.run(main, feed={f"x{i}": a for i, a in enumerate(arrays)}, fetch_list=[out])
    np.testing.assert_allclose(got, eager.numpy(), rtol=1e-6, atol=1e-7)


# ================================================================ nn.RNN / nn.BiRNN
def _copy_cell(cell, module, suffix=""):
    """torch's weight_ih_l0{suffix}... into a fluidgrad cell (the same layout and gate order)."""
    for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(cell, kind).set_value(getattr(module, f"{kind}_l0{suffix}").detach().double().numpy())


_CELLS = {   # fluidgrad cell, torch module, how torch's final state compares with the cell's
    "SimpleRNNCell": (lambda: fg.nn.SimpleRNNCell(3, 4), lambda: torch.nn.RNN(3, 4, batch_first=True)),
    "SimpleRNNCell relu": (lambda: fg.nn.SimpleRNNCell(3, 4, activation="relu"),
                           lambda: torch.nn.RNN(3, 4, batch_first=True, nonlinearity="relu")),
    "LSTMCell": (lambda: fg.nn.LSTMCell(3, 4), lambda: torch.nn.LSTM(3, 4, batch_first=True)),
    "GRUCell": (lambda: fg.nn.GRUCell(3, 4), lambda: torch.nn.GRU(3, 4, batch_first=True)),
}


def _final(state):
    """torch's final state [1, batch, hidden] (or LSTM's (h, c)) as the cell's [batch, hidden]."""
    return [s[0] for s in state] if isinstance(state, tuple) else [state[0]]


def _as_list(state):
    return list(state) if isinstance(state, tuple) else [state]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "is_reverse"])
@pytest.mark.parametrize("name", sorted(_CELLS))
def test_rnn_over_a_cell_matches_torch_values_and_gradients(name, reverse, eager):
    make_cell, make_module = _CELLS[name]
    fg.set_default_dtype("float64")
    try:
        cell = make_cell()
    finally:
        fg.set_default_dtype("float32")
    torch.manual_seed(0)
    module = make_module().double()
    _copy_cell(cell, module)
    x0 = _rng().standard_normal((2, 5, 3))
    cotangent = _rng(1).standard_normal((2, 5, 4))
    tx = torch.tensor(x0, requires_grad=True)
    t_out, t_state = module(tx.flip(1) if reverse else tx)
    t_out = t_out.flip(1) if reverse else t_out
    (t_out * torch.tensor(cotangent)).sum().backward()
    x = fg.to_tensor(x0, stop_gradient=False)
    out, state = fg.nn.RNN(cell, is_reverse=reverse)(x)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for got, expected in zip(_as_list(state), _final(t_state)):
        np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    fg.sum(out * fg.to_tensor(cotangent)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cell.weight_hh.grad.numpy(), module.weight_hh_l0.grad.numpy(), rtol=1e-9,
                               atol=1e-12)


def test_birnn_of_two_gru_cells_is_torch_bidirectional_gru(eager):
    fg.set_default_dtype("float64")
    try:
        forward, backward = fg.nn.GRUCell(3, 4), fg.nn.GRUCell(3, 4)
    finally:
        fg.set_default_dtype("float32")
    torch.manual_seed(0)
    module = torch.nn.GRU(3, 4, batch_first=True, bidirectional=True).double()
    _copy_cell(forward, module)
    _copy_cell(backward, module, "_reverse")
    x0 = _rng().standard_normal((2, 5, 3))
    h0 = _rng(2).standard_normal((2, 2, 4))
    t_out, t_h = module(torch.tensor(x0), torch.tensor(h0))
    out, (h_fw, h_bw) = fg.nn.BiRNN(forward, backward)(fg.to_tensor(x0),
                                                        (fg.to_tensor(h0[0]), fg.to_tensor(h0[1])))
    assert list(out.shape) == [2, 5, 8]
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(h_fw.numpy(), t_h[0].detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(h_bw.numpy(), t_h[1].detach().numpy(), rtol=1e-10)


def test_sequence_length_runs_a_padded_batch_as_torch_packed_sequences(eager):
    fg.set_default_dtype("float64")
    try:
        forward, backward = fg.nn.LSTMCell(3, 4), fg.nn.LSTMCell(3, 4)
    finally:
        fg.set_default_dtype("float32")
    torch.manual_seed(0)
    module = torch.nn.LSTM(3, 4, batch_first=True, bidirectional=True).double()
    _copy_cell(forward, module)
    _copy_cell(backward, module, "_reverse")
    x0, lengths = _rng().standard_normal((3, 5, 3)), [5, 2, 3]
    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x0), torch.tensor(lengths), batch_first=True,
                                                     enforce_sorted=False)
    t_out, (t_h, t_c) = module(packed)
    t_out, _ = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=True, total_length=5)
    out, ((h_fw, c_fw), (h_bw, c_bw)) = fg.nn.BiRNN(forward, backward)(
        fg.to_tensor(x0), sequence_length=fg.to_tensor(np.array(lengths)))
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for got, expected in [(h_fw, t_h[0]), (c_fw, t_c[0]), (h_bw, t_h[1]), (c_bw, t_c[1])]:
        np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-10)


def test_time_major_reads_time_first(eager):
    cell = fg.nn.GRUCell(3, 4)
    x0 = _rng().standard_normal((2, 5, 3)).astype("float32")
    batch_first, h = fg.nn.RNN(cell)(fg.to_tensor(x0))
    time_first, h_tm = fg.nn.RNN(cell, time_major=True)(fg.to_tensor(x0.transpose(1, 0, 2).copy()))
    np.testing.assert_allclose(time_first.numpy(), batch_first.numpy().transpose(1, 0, 2), rtol=1e-6)
    np.testing.assert_allclose(h_tm.numpy(), h.numpy(), rtol=1e-6)


class _Accumulator(fg.nn.RNNCellBase):
    """A user cell with nested states (a running sum, a step count) and two outputs."""

    def __init__(self, size):
        super().__init__()
        self.scale = self.create_parameter([size], default_initializer=fg.nn.initializer.Constant(2.0))

    @property
    def state_shape(self):
        return ((3,), (1,))

    def forward(self, inputs, states):
        total, count = states
        total = total + inputs * self.scale
        return (total, count + 1.0), (total, count + 1.0)


def test_a_user_cell_with_nested_states_starts_from_get_initial_states(eager):
    cell = _Accumulator(3)
    x0 = _rng().standard_normal((2, 4, 3)).astype("float32")
    x = fg.to_tensor(x0, stop_gradient=False)
    (totals, counts), (total, count) = fg.nn.RNN(cell)(x, sequence_length=fg.to_tensor(np.array([4, 2])))
    expected = np.cumsum(2 * x0, axis=1) * (np.arange(4) < np.array([[4], [2]]))[..., None]
    np.testing.assert_allclose(totals.numpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(counts.numpy()[..., 0], [[1, 2, 3, 4], [1, 2, 0, 0]])
    np.testing.assert_allclose(total.numpy(), [expected[0, 3], expected[1, 1]], rtol=1e-6)
    np.testing.assert_array_equal(count.numpy(), [[4.0], [2.0]])
    fg.sum(total).backward()
    np.testing.assert_allclose(cell.scale.grad.numpy(), x0[0].sum(0) + x0[1, :2].sum(0), rtol=1e-6)


class _Shapes(fg.nn.Layer):
    """A cell whose output is [batch] and whose state is [batch, 2, 3]."""

    def forward(self, inputs, states):
        grown = (0.0 if states is None else states) + fg.reshape(inputs, [-1, 2, 3])
        return fg.sum(inputs, axis=-1), grown


def test_sequence_length_masks_outputs_and_states_of_any_rank(eager):
    x0 = _rng().standard_normal((2, 3, 6)).astype("float32")
    out, state = fg.nn.RNN(_Shapes())(fg.to_tensor(x0), sequence_length=[3, 1])
    np.testing.assert_allclose(out.numpy(), x0.sum(-1) * [[1, 1, 1], [1, 0, 0]], rtol=1e-6)
    np.testing.assert_allclose(state.numpy(), np.stack([x0[0].sum(0), x0[1, 0]]).reshape(2, 2, 3), rtol=1e-6)


def test_get_initial_states_follows_a_static_batch():
    cell = _Accumulator(3)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 4, 3], "float32")
        total, count = cell.get_initial_states(x, init_value=0.5)
    exe = fg.Executor()
    exe.run(startup)
    got_total, got_count = exe.run(main, feed={"x": np.zeros((5, 4, 3), "float32")}, fetch_list=[total, count])
    np.testing.assert_array_equal(got_total, np.full((5, 3), 0.5, "float32"))
    np.testing.assert_array_equal(got_count, np.full((5, 1), 0.5, "float32"))


def test_rnn_in_a_static_program_equals_eager():
    cell = fg.nn.LSTMCell(3, 4)
    _static_equals_eager(fg.nn.RNN(cell, is_reverse=True), _rng().standard_normal((2, 5, 3)).astype("float32"),
                         fetch=lambda result: result[0])
    birnn = fg.nn.BiRNN(fg.nn.SimpleRNNCell(3, 4), fg.nn.SimpleRNNCell(3, 4))
    _static_equals_eager(birnn, _rng().standard_normal((2, 5, 3)).astype("float32"), fetch=lambda result: result[0])


@pytest.mark.parametrize("call, error, message", [
    (lambda: fg.nn.RNN(fg.nn.GRUCell(3, 4))(fg.to_tensor(np.zeros(3, "float32"))), ValueError,
     r"RNN: inputs must be \[batch, time, ...\].* got shape \[3\]"),
    (lambda: fg.nn.BiRNN(fg.nn.GRUCell(3, 4), fg.nn.GRUCell(5, 4)), ValueError, "same input size, got 3"),
    (lambda: fg.nn.BiRNN(fg.nn.GRUCell(3, 4), fg.nn.GRUCell(3, 4))(fg.to_tensor(np.zeros((2, 5, 3), "float32")),
                                                                  fg.to_tensor(np.zeros((2, 4), "float32"))),
     TypeError, r"BiRNN: initial_states must be None or a pair"),
    (lambda: fg.nn.RNN(_Missing())(fg.to_tensor(np.zeros((2, 5, 3), "float32"))), NotImplementedError,
     "_Missing: define state_shape"),
])
def test_rnn_refuses_with_the_layer_and_the_shapes(call, error, message, eager):
    with pytest.raises(error, match=message):
        call()


class _Missing(fg.nn.RNNCellBase):
    def forward(self, inputs, states):
        return inputs, states


# ================================================================ Bilinear
@pytest.mark.parametrize("lead", [(4,), (2, 3)], ids=["batch", "two leading axes"])
def test_bilinear_matches_torch_values_and_gradients(lead, eager):
    fg.set_default_dtype("float64")
    try:
        layer = fg.nn.Bilinear(3, 5, 2)
    finally:
        fg.set_default_dtype("float32")
    module = torch.nn.Bilinear(3, 5, 2).double()
    with torch.no_grad():
        module.weight.copy_(torch.tensor(layer.weight.numpy()))
        module.bias.copy_(torch.tensor(layer.bias.numpy()[0]))
    a0, b0 = _rng().standard_normal(lead + (3,)), _rng(1).standard_normal(lead + (5,))
    cotangent = _rng(2).standard_normal(lead + (2,))
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    t_out = module(ta, tb)
    (t_out * torch.tensor(cotangent)).sum().backward()
    a, b = fg.to_tensor(a0, stop_gradient=False), fg.to_tensor(b0, stop_gradient=False)
    out = layer(a, b)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12)
    fg.sum(out * fg.to_tensor(cotangent)).backward()
    for got, expected in [(a.grad, ta.grad), (b.grad, tb.grad), (layer.weight.grad, module.weight.grad)]:
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10)
    np.testing.assert_allclose(layer.bias.grad.numpy()[0], module.bias.grad.numpy(), rtol=1e-10)
    bound = 1 / np.sqrt(3)
    assert np.abs(layer.weight.numpy()).max() <= bound and list(layer.bias.shape) == [1, 2]


def test_bilinear_gradients_are_numeric_and_static_equals_eager():
    rng = _rng()
    check_program_grad(lambda v: NF.bilinear(v["a"], v["b"], v["w"], v["bias"]),
                       {"a": rng.standard_normal((3, 2)), "b": rng.standard_normal((3, 4)),
                        "w": rng.standard_normal((5, 2, 4)), "bias": rng.standard_normal((5,))})
    _static_equals_eager(fg.nn.Bilinear(3, 5, 2), rng.standard_normal((4, 3)).astype("float32"),
                         rng.standard_normal((4, 5)).astype("float32"))


def test_bilinear_refuses_mismatched_features(eager):
    with pytest.raises(ValueError, match=r"bilinear: needs x1 \[..., in1\].* x2 \[4, 4\], weight \[2, 3, 5\]"):
        fg.nn.Bilinear(3, 5, 2)(fg.to_tensor(np.zeros((4, 3), "float32")), fg.to_tensor(np.zeros((4, 4), "float32")))


# ================================================================ AlphaDropout
def test_alpha_dropout_is_the_identity_in_eval_as_torch(eager):
    x0 = _rng().standard_normal((4, 6)).astype("float32")
    layer = fg.nn.AlphaDropout(0.3)
    layer.eval()
    np.testing.assert_array_equal(layer(fg.to_tensor(x0)).numpy(),
                                  torch.nn.AlphaDropout(0.3).eval()(torch.tensor(x0)).numpy())


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_in_training_keeps_mean_and_variance_as_torch(p, eager):
    x0 = _rng().standard_normal(200_000)
    fg.seed(0)
    torch.manual_seed(0)
    t_out = torch.nn.AlphaDropout(p)(torch.tensor(x0)).numpy()
    x = fg.to_tensor(x0, stop_gradient=False)
    out = fg.nn.AlphaDropout(p)(x)
    got = out.numpy()
    dropped_value = np.bincount(np.unique(t_out, return_inverse=True)[1]).argmax()
    dropped_value = np.unique(t_out)[dropped_value]                  # the one value every dropped element takes
    dropped = np.isclose(got, dropped_value, rtol=0, atol=1e-12)
    assert dropped.mean() == pytest.approx(p, abs=0.005)
    assert np.isclose(t_out, dropped_value, rtol=0, atol=1e-12).mean() == pytest.approx(p, abs=0.005)
    slope, intercept = np.polyfit(x0[~np.isclose(t_out, dropped_value)], t_out[~np.isclose(t_out, dropped_value)], 1)
    np.testing.assert_allclose(got[~dropped], slope * x0[~dropped] + intercept, rtol=1e-9, atol=1e-9)
    assert got.mean() == pytest.approx(0.0, abs=0.01) and got.std() == pytest.approx(1.0, abs=0.01)
    assert abs(got.mean() - t_out.mean()) < 0.01 and abs(got.std() - t_out.std()) < 0.01
    fg.sum(out).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(dropped, 0.0, slope), rtol=1e-9)


def test_alpha_dropout_in_a_static_program_drops_and_rescales():
    p, x0 = 0.3, _rng().standard_normal((400, 50)).astype("float32")
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        out = fg.nn.AlphaDropout(p)(fg.static.data("x", [None, 50], "float32"))
    exe = fg.Executor()
    exe.run(startup)
    got, = exe.run(main, feed={"x": x0}, fetch_list=[out])
    s = 1.6732632423543772 * 1.0507009873554805
    a = ((1 - p) * (1 + p * s * s)) ** -0.5
    dropped = np.isclose(got, a * s * (p - 1), rtol=1e-6)
    assert dropped.mean() == pytest.approx(p, abs=0.01)
    np.testing.assert_allclose(got[~dropped], a * (x0[~dropped] + s * p), rtol=1e-5)


def test_alpha_dropout_at_the_ends_of_p(eager):
    x0 = _rng().standard_normal((3, 4))
    np.testing.assert_array_equal(NF.alpha_dropout(fg.to_tensor(x0), 0.0).numpy(), x0)
    np.testing.assert_array_equal(NF.alpha_dropout(fg.to_tensor(x0), 1.0).numpy(),
                                  torch.nn.functional.alpha_dropout(torch.tensor(x0), 1.0, True).numpy())
    with pytest.raises(ValueError, match=r"alpha_dropout: p must lie in \[0, 1\], got 1.5"):
        NF.alpha_dropout(fg.to_tensor(x0), 1.5)


# ================================================================ ChannelShuffle, Softmax2D
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_channel_shuffle_matches_torch(data_format, eager):
    x0 = _rng().standard_normal((2, 6, 3, 4))
    expected = torch.nn.ChannelShuffle(3)(torch.tensor(x0)).numpy()
    x = x0 if data_format == "NCHW" else x0.transpose(0, 2, 3, 1)
    got = fg.nn.ChannelShuffle(3, data_format)(fg.to_tensor(x)).numpy()
    np.testing.assert_array_equal(got if data_format == "NCHW" else got.transpose(0, 3, 1, 2), expected)


def test_channel_shuffle_in_static_and_its_errors():
    _static_equals_eager(fg.nn.ChannelShuffle(2), _rng().standard_normal((2, 4, 3, 3)).astype("float32"))
    with pytest.raises(ValueError, match=r"channel_shuffle: groups must be a positive integer dividing the 6 "
                                         r"channels, got 4"):
        NF.channel_shuffle(fg.to_tensor(np.zeros((1, 6, 2, 2))), 4)


@pytest.mark.parametrize("shape", [(2, 4, 3, 3), (4, 3, 5)])
def test_softmax2d_matches_torch(shape, eager):
    x0 = _rng().standard_normal(shape)
    x = fg.to_tensor(x0, stop_gradient=False)
    out = fg.nn.Softmax2D()(x)
    tx = torch.tensor(x0, requires_grad=True)
    t_out = torch.nn.Softmax2d()(tx)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12)
    cotangent = _rng(1).standard_normal(shape)
    fg.sum(out * fg.to_tensor(cotangent)).backward()
    (t_out * torch.tensor(cotangent)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-14)
    with pytest.raises(ValueError, match=r"Softmax2D: expects a 3-D \[C, H, W\] or 4-D .* got shape \[4, 3\]"):
        fg.nn.Softmax2D()(fg.to_tensor(np.zeros((4, 3))))


# ================================================================ MaxUnPool
_UNPOOL = {   # nd, input shape, kernel, stride, padding, output_size
    "2d": (2, (2, 3, 6, 8), 2, None, 0, None),
    "2d stride 1 overlapping": (2, (1, 2, 5, 5), 3, 1, 0, None),
    "2d padding": (2, (1, 2, 5, 5), 3, 2, 1, None),
    "2d output_size": (2, (1, 2, 7, 7), 2, 2, 0, [7, 7]),
    "1d": (1, (2, 3, 8), 2, None, 0, None),
    "3d": (3, (1, 2, 4, 4, 6), 2, None, 0, None),
}


@pytest.mark.parametrize("name", sorted(_UNPOOL))
def test_max_unpool_matches_torch_values_and_gradients(name, eager):
    nd, shape, kernel, stride, padding, output_size = _UNPOOL[name]
    x0 = _rng().permutation(np.prod(shape)).reshape(shape).astype("float64")   # no ties
    t_pool = getattr(torch.nn.functional, f"max_pool{nd}d")
    t_unpool = getattr(torch.nn.functional, f"max_unpool{nd}d")
    t_pooled, t_indices = t_pool(torch.tensor(x0), kernel, stride, padding, return_indices=True)
    pooled, mask = getattr(NF, f"max_pool{nd}d")(fg.to_tensor(x0), kernel, stride, padding, return_mask=True)
    np.testing.assert_array_equal(mask.numpy(), t_indices.numpy())
    t_in = t_pooled.detach().clone().requires_grad_(True)
    t_out = t_unpool(t_in, t_indices, kernel, stride, padding, output_size)
    cotangent = _rng(1).standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(cotangent)).sum().backward()
    layer = getattr(fg.nn, f"MaxUnPool{nd}D")(kernel, stride, padding, output_size=output_size)
    x = fg.to_tensor(pooled.numpy(), stop_gradient=False)
    out = layer(x, mask)
    np.testing.assert_array_equal(out.numpy(), t_out.detach().numpy())
    fg.sum(out * fg.to_tensor(cotangent)).backward()
    np.testing.assert_allclose(x.grad.numpy(), t_in.grad.numpy(), rtol=1e-12)


def test_max_unpool_channel_last_and_the_output_size_at_the_call(eager):
    x0 = _rng().permutation(2 * 3 * 6 * 6).reshape(2, 3, 6, 6).astype("float32")
    pooled, mask = NF.max_pool2d(fg.to_tensor(x0), 2, return_mask=True)
    first = NF.max_unpool2d(pooled, mask, 2).numpy()
    last = fg.nn.MaxUnPool2D(2, data_format="NHWC")(fg.to_tensor(pooled.numpy().transpose(0, 2, 3, 1)),
                                                    fg.to_tensor(mask.numpy().transpose(0, 2, 3, 1)))
    np.testing.assert_array_equal(last.numpy().transpose(0, 3, 1, 2), first)
    np.testing.assert_array_equal(first, np.where(first != 0, x0, 0))   # each maximum in its place
    wider = fg.nn.MaxUnPool2D(2)(pooled, mask, output_size=[2, 3, 7, 7])
    expected = torch.nn.MaxUnpool2d(2)(torch.tensor(pooled.numpy()), torch.tensor(mask.numpy()),
                                       output_size=[2, 3, 7, 7])
    np.testing.assert_array_equal(wider.numpy(), expected.numpy())


def test_max_unpool_gradient_is_numeric_and_static_equals_eager():
    x0 = _rng().permutation(2 * 2 * 4 * 4).reshape(2, 2, 4, 4).astype("float64")
    mask = NF.max_pool2d(fg.to_tensor(x0), 2, return_mask=True)[1].numpy()
    check_program_grad(lambda v: NF.max_unpool2d(v["x"], v["mask"], 2),
                       {"x": _rng(1).standard_normal((2, 2, 2, 2)), "mask": mask}, wrt=["x"])
    pooled = NF.max_pool2d(fg.to_tensor(x0), 2).numpy()
    _static_equals_eager(fg.nn.MaxUnPool2D(2), pooled, mask)


@pytest.mark.parametrize("call, message", [
    (lambda x, m: NF.max_unpool2d(x, m, 2, output_size=[9, 9]),
     r"max_unpool2d: output_size \[9, 9\] must give 2 spatial sizes, each strictly within stride \[2, 2\] of the "
     r"default \[4, 4\]"),
    (lambda x, m: NF.max_unpool2d(x, m * 5, 2), r"max_unpool2d: indices must lie in \[0, 16\)"),
    (lambda x, m: NF.max_unpool2d(x, fg.cast(m, "float32"), 2), r"max_unpool2d: needs x of 4 axes .* indices "
                                                              r"\[1, 2, 2, 2\] \(float32\)"),
    (lambda x, m: NF.max_unpool2d(x, m, 2, data_format="NCL"), "max_unpool2d: data_format must be one of"),
])
def test_max_unpool_refuses_with_the_function_and_the_shapes(call, message, eager):
    x0 = _rng().permutation(16 * 2).reshape(1, 2, 4, 4).astype("float32")
    pooled, mask = NF.max_pool2d(fg.to_tensor(x0), 2, return_mask=True)
    with pytest.raises(ValueError, match=message):
        call(pooled, mask)
