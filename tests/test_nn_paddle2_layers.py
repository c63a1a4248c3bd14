"""Paddle 2 layers added for the session-8 review: the RNN cells, padding layers, Dropout2D /
Dropout3D, Unflatten and Fold, each against PyTorch (values and gradients), in eager mode and
traced into a Program where that matters."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.nn import functional as F


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _tensor(array):
    return fg.to_tensor(np.asarray(array), stop_gradient=False)


# ---------------------------------------------------------------- RNN cells
_CELLS = {"SimpleRNNCell": torch.nn.RNNCell, "LSTMCell": torch.nn.LSTMCell, "GRUCell": torch.nn.GRUCell}


def _twin(name, bias=True, **options):
    fg.seed(1)
    attrs = {} if bias else {"bias_ih_attr": False, "bias_hh_attr": False}
    cell = getattr(fg.nn, name)(5, 4, **options, **attrs)
    cell.to("float64")
    reference = _CELLS[name](5, 4, bias=bias, nonlinearity=options.get("activation", "tanh")) \
        if name == "SimpleRNNCell" else _CELLS[name](5, 4, bias=bias)
    reference.double()
    with torch.no_grad():
        for pname, param in reference.named_parameters():
            param.copy_(torch.tensor(getattr(cell, pname).numpy()))
    return cell, reference


@pytest.mark.parametrize(("name", "options"), [("SimpleRNNCell", {}), ("SimpleRNNCell", {"activation": "relu"}),
                                               ("LSTMCell", {}), ("GRUCell", {})])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_rnn_cell_matches_torch_with_gradients(name, options, bias, with_state):
    cell, reference = _twin(name, bias, **options)
    x = _rand(3, 5)
    lstm = name == "LSTMCell"
    states = [_rand(3, 4, seed=2), _rand(3, 4, seed=3)][:2 if lstm else 1] if with_state else []
    inputs = [_tensor(x)] + [_tensor(s) for s in states]
    torch_inputs = [torch.tensor(v, requires_grad=True) for v in [x] + states]
    state_arg = (tuple(inputs[1:]) if lstm else inputs[1]) if with_state else None
    out, new_state = cell(inputs[0], state_arg)
    torch_state = (tuple(torch_inputs[1:]) if lstm else torch_inputs[1]) if with_state else None
    expected = reference(torch_inputs[0], torch_state)
    h_expected, c_expected = expected if lstm else (expected, None)
    h, c = new_state if lstm else (new_state, None)
    assert out is h
    weights = [_rand(3, 4, seed=4), _rand(3, 4, seed=5)]
    loss = fg.sum(h * fg.to_tensor(weights[0])) + (fg.sum(c * fg.to_tensor(weights[1])) if lstm else 0.0)
    loss.backward()
    torch_loss = (h_expected * torch.tensor(weights[0])).sum() + \
        ((c_expected * torch.tensor(weights[1])).sum() if lstm else 0.0)
    torch_loss.backward()
    np.testing.assert_allclose(h.numpy(), h_expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    if lstm:
        np.testing.assert_allclose(c.numpy(), c_expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    for got, want in zip(inputs, torch_inputs):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-9, atol=1e-12)
    for pname, param in reference.named_parameters():
        grad = getattr(cell, pname).grad      # none for weight_hh from the zero state (torch: zeros)
        np.testing.assert_allclose(np.zeros(param.shape) if grad is None else grad.numpy(), param.grad.numpy(),
                                   rtol=1e-9, atol=1e-12)
    assert (cell.weight_hh.grad is None) == (not with_state)


def test_cells_run_the_layers_step_maths():
    """LSTM over one step from a given state is LSTMCell with the same weights."""
    fg.seed(3)
    layer = fg.nn.LSTM(5, 4)
    cell = fg.nn.LSTMCell(5, 4)
    for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(cell, kind).set_value(getattr(layer, f"{kind}_l0").numpy())
    x, h0, c0 = (fg.to_tensor(_rand(*shape, seed=s).astype("float32")) for s, shape in
                 enumerate([(2, 5), (2, 4), (2, 4)]))
    out, (h, c) = layer(fg.unsqueeze(x, 1), (fg.unsqueeze(h0, 0), fg.unsqueeze(c0, 0)))
    cell_h, (_, cell_c) = cell(x, (h0, c0))
    np.testing.assert_allclose(cell_h.numpy(), h.numpy()[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(cell_c.numpy(), c.numpy()[0], rtol=1e-6, atol=1e-7)


def test_cells_refuse_bad_shapes_and_states():
    cell = fg.nn.LSTMCell(5, 4)
    assert cell.state_shape == ((4,), (4,)) and fg.nn.GRUCell(5, 4).state_shape == (4,)
    with pytest.raises(ValueError, match=r"LSTMCell: inputs must be \[batch, 5\]"):
        cell(fg.to_tensor(np.zeros((2, 3), "float32")))
    with pytest.raises(TypeError, match="LSTMCell: states must be a tuple"):
        cell(fg.to_tensor(np.zeros((2, 5), "float32")), fg.to_tensor(np.zeros((2, 4), "float32")))
    with pytest.raises(ValueError, match=r"GRUCell: states must be \[batch, 4\]"):
        fg.nn.GRUCell(5, 4)(fg.to_tensor(np.zeros((2, 5), "float32")), fg.to_tensor(np.zeros((2, 3), "float32")))
    with pytest.raises(ValueError, match="SimpleRNNCell: activation"):
        fg.nn.SimpleRNNCell(5, 4, activation="sigmoid")


def test_a_cell_unrolled_under_to_static_trains_like_eager():
    fg.seed(4)
    cell = fg.nn.GRUCell(3, 2)

    def unroll(x):
        h = None
        for t in range(x.shape[1]):
            h, _ = cell(x[:, t], h)
        return fg.sum(h * h)

    x = _rand(2, 4, 3).astype("float32")
    eager = unroll(fg.to_tensor(x))
    eager.backward()
    eager_grad = cell.weight_hh.grad.numpy().copy()
    cell.clear_gradients()
    static = fg.jit.to_static(unroll)(fg.to_tensor(x))
    static.backward()
    np.testing.assert_allclose(static.numpy(), eager.numpy(), rtol=1e-6)
    np.testing.assert_allclose(cell.weight_hh.grad.numpy(), eager_grad, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- padding layers
_TORCH_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "replicate", "circular": "circular"}


@pytest.mark.parametrize("mode", sorted(_TORCH_MODES))
@pytest.mark.parametrize(("layer", "shape", "padding"), [("Pad1D", (2, 3, 5), [2, 1]),
                                                         ("Pad2D", (2, 3, 4, 5), [1, 2, 0, 3]),
                                                         ("Pad3D", (1, 2, 3, 4, 4), [1, 0, 2, 1, 1, 2])])
def test_pad_layers_match_torch_pad(layer, shape, padding, mode):
    x = _rand(*shape)
    value = 0.5 if mode == "constant" else 0.0
    got = _tensor(x)
    out = getattr(fg.nn, layer)(padding, mode=mode, value=value)(got)
    reference = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.pad(reference, padding, mode=_TORCH_MODES[mode], value=value) \
        if mode == "constant" else torch.nn.functional.pad(reference, padding, mode=_TORCH_MODES[mode])
    dout = _rand(*expected.shape, seed=1)
    fg.sum(out * fg.to_tensor(dout)).backward()
    (expected * torch.tensor(dout)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got.grad.numpy(), reference.grad.numpy(), rtol=1e-12)


def test_zero_pad_layers_and_channel_last_layout():
    x = _rand(2, 4, 5, 3)                                   # NHWC
    out = fg.nn.ZeroPad2D([1, 2, 0, 3], data_format="NHWC")(fg.to_tensor(x)).numpy()
    expected = torch.nn.functional.pad(torch.tensor(x).permute(0, 3, 1, 2), [1, 2, 0, 3]).permute(0, 2, 3, 1)
    np.testing.assert_array_equal(out, expected.numpy())
    np.testing.assert_array_equal(F.zeropad2d(fg.to_tensor(x[..., 0]), 1).numpy(),
                                  np.pad(x[..., 0], [(0, 0), (1, 1), (1, 1)]))
    np.testing.assert_array_equal(fg.nn.ZeroPad1D(2)(fg.to_tensor(_rand(1, 2, 3))).numpy()[..., :2], 0.0)
    assert fg.nn.ZeroPad3D(1)(fg.to_tensor(_rand(1, 1, 2, 2, 2))).shape == (1, 1, 4, 4, 4)
    with pytest.raises(ValueError, match="Pad2D: padding must be an int or 4 ints"):
        fg.nn.Pad2D([1, 2])
    with pytest.raises(ValueError, match="Pad2D: mode"):
        fg.nn.Pad2D(1, mode="mirror")
    with pytest.raises(ValueError, match="Pad2D: expects a 4-D"):
        fg.nn.Pad2D(1)(fg.to_tensor(_rand(2, 3)))


# ---------------------------------------------------------------- Dropout2D / Dropout3D
@pytest.mark.parametrize(("layer", "shape", "data_format"), [("Dropout2D", (4, 6, 3, 2), "NCHW"),
                                                             ("Dropout2D", (4, 3, 2, 6), "NHWC"),
                                                             ("Dropout3D", (3, 5, 2, 2, 2), "NCDHW")])
def test_channel_dropout_drops_whole_channels(layer, shape, data_format):
    fg.seed(0)
    x = _tensor(np.abs(_rand(*shape)) + 0.1)
    drop = getattr(fg.nn, layer)(0.5, data_format=data_format)
    out = drop(x)
    fg.sum(out).backward()
    channels = np.moveaxis(out.numpy() / x.numpy(), -1, 1) if data_format.endswith("C") else out.numpy() / x.numpy()
    per_channel = channels.reshape(shape[0], channels.shape[1], -1)
    assert np.all((per_channel == per_channel[..., :1]))             # one draw per (sample, channel)
    assert set(np.unique(per_channel).tolist()) == {0.0, 2.0}        # dropped, or kept and scaled by 1/(1-p)
    np.testing.assert_array_equal(x.grad.numpy(), out.numpy() / x.numpy())
    drop.eval()
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_channel_dropout_extremes_match_torch(p):
    x = _rand(2, 3, 4, 4)
    got = F.dropout2d(fg.to_tensor(x), p, training=True).numpy()
    np.testing.assert_array_equal(got, torch.nn.functional.dropout2d(torch.tensor(x), p, training=True).numpy())


def test_dropout_axis_shares_draws_along_the_other_axes():
    fg.seed(2)
    out = F.dropout(fg.to_tensor(np.ones((8, 5))), 0.5, axis=1).numpy()
    assert np.all(out == out[:1])
    with pytest.raises(ValueError, match="dropout: axis"):
        F.dropout(fg.to_tensor(np.ones((8, 5))), 0.5, axis=2)
    with pytest.raises(ValueError, match="dropout2d: expects a 4-D"):
        F.dropout2d(fg.to_tensor(np.ones((8, 5))), 0.5)


# ---------------------------------------------------------------- Unflatten
@pytest.mark.parametrize(("shape", "axis", "sizes"), [((2, 12, 3), 1, [3, 4]), ((2, 12, 3), -2, [2, -1, 3]),
                                                      ((6, 5), 0, [3, 2]), ((4, 6), -1, [-1, 3])])
def test_unflatten_matches_torch(shape, axis, sizes):
    x = _rand(*shape)
    got = _tensor(x)
    out = fg.nn.Unflatten(axis, sizes)(got)
    np.testing.assert_array_equal(out.numpy(), torch.nn.Unflatten(axis, sizes)(torch.tensor(x)).numpy())
    fg.sum(out * 2.0).backward()
    np.testing.assert_array_equal(got.grad.numpy(), np.full(shape, 2.0))


def test_unflatten_refuses_sizes_that_do_not_multiply_out():
    with pytest.raises(ValueError, match=r"Unflatten: axis 1 of x of shape \[2, 12\] \(size 12\) cannot be split"):
        fg.nn.Unflatten(1, [5, 2])(fg.to_tensor(np.zeros((2, 12))))
    with pytest.raises(ValueError, match="Unflatten: shape"):
        fg.nn.Unflatten(1, [-1, -1])


def test_unflatten_with_a_dynamic_batch_in_a_program():
    with fg.program_guard(fg.Program(), fg.Program()):
        x = fg.static.data("x", [None, 12], "float32")
        y = fg.nn.Unflatten(1, [3, 4])(x)
        assert list(y.shape) == [-1, 3, 4]
        out, = fg.Executor().run(feed={"x": np.arange(24, dtype="float32").reshape(2, 12)}, fetch_list=[y])
    np.testing.assert_array_equal(out, np.arange(24, dtype="float32").reshape(2, 3, 4))


# ---------------------------------------------------------------- Fold
def test_fold_layer_matches_torch_and_undoes_unfold_counts():
    x = _rand(2, 3 * 4, 9)
    got = _tensor(x)
    out = fg.nn.Fold([4, 4], [2, 2])(got)
    reference = torch.tensor(x, requires_grad=True)
    expected = torch.nn.Fold((4, 4), (2, 2))(reference)
    dout = _rand(2, 3, 4, 4, seed=1)
    fg.sum(out * fg.to_tensor(dout)).backward()
    (expected * torch.tensor(dout)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got.grad.numpy(), reference.grad.numpy(), rtol=1e-12)
    image = fg.to_tensor(_rand(1, 2, 5, 5))            # fold(unfold(x)) = x times each pixel's window count
    counts = F.fold(F.unfold(fg.ones_like(image), 3, paddings=1), [5, 5], 3, paddings=1)
    np.testing.assert_allclose(F.fold(F.unfold(image, 3, paddings=1), [5, 5], 3, paddings=1).numpy(),
                               image.numpy() * counts.numpy())


def test_fold_refuses_columns_that_do_not_fit():
    with pytest.raises(ValueError, match=r"op fold.*axis 1 must be C \* 4"):
        F.fold(fg.to_tensor(np.zeros((1, 6, 9))), [4, 4], 2)
    with pytest.raises(ValueError, match=r"op fold.*has 8 windows; kernel \[2, 2\] slides 9 times"):
        F.fold(fg.to_tensor(np.zeros((1, 4, 8))), [4, 4], 2)
