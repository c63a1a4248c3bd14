"""torch.nn layers without a Paddle twin of the same constructor: Threshold, RReLU, Dropout1d, LPPool1d-3d and
the padding layers ConstantPad / ZeroPad / ReflectionPad / ReplicationPad / CircularPad 1d-3d, with
torch's arguments (an int or a tuple of sizes, negative ones cropping) on batched and unbatched
input. torch 2.13.0 is the oracle for values and input gradients (float64)."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import nn

_RNG = np.random.default_rng(13)


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


_CASES = {
    "Threshold(0.1, 20.0)": (lambda m: m.Threshold(0.1, 20.0), (2, 3, 4)),
    "Threshold(-0.5, -1.0, inplace=True)": (lambda m: m.Threshold(-0.5, -1.0, inplace=True), (3, 4)),
    "RReLU().eval()": (lambda m: m.RReLU().eval(), (2, 3, 4)),
    "RReLU(0.1, 0.5).eval()": (lambda m: m.RReLU(0.1, 0.5).eval(), (5, 4)),
    "RReLU(0.2, 0.2)": (lambda m: m.RReLU(0.2, 0.2), (5, 4)),
    "Dropout1d(0.5).eval()": (lambda m: m.Dropout1d(0.5).eval(), (2, 3, 4)),
    "LPPool1d(2, 3, stride=2)": (lambda m: m.LPPool1d(2, 3, stride=2), (2, 3, 7)),
    "LPPool2d(3, (2, 3))": (lambda m: m.LPPool2d(3, (2, 3)), (1, 2, 4, 6)),
    "LPPool2d(2, 3, 2, ceil_mode=True)": (lambda m: m.LPPool2d(2, 3, 2, ceil_mode=True), (1, 2, 6, 6)),
    "LPPool3d(2, 2)": (lambda m: m.LPPool3d(2, 2), (1, 2, 4, 4, 2)),
    "ConstantPad1d(2, 3.5) on 4-D": (lambda m: m.ConstantPad1d(2, 3.5), (1, 2, 3, 4)),
    "ConstantPad1d((1, -1), 2.0) on 1-D": (lambda m: m.ConstantPad1d((1, -1), 2.0), (5,)),
    "ConstantPad2d((1, 0, 2, 1), -1.0) on 2-D": (lambda m: m.ConstantPad2d((1, 0, 2, 1), -1.0), (3, 4)),
    "ConstantPad2d(1, 0.5) on 5-D": (lambda m: m.ConstantPad2d(1, 0.5), (1, 2, 2, 3, 3)),
    "ConstantPad3d((1, 0, 0, 1, 2, 0), 9.0)": (lambda m: m.ConstantPad3d((1, 0, 0, 1, 2, 0), 9.0), (2, 2, 2, 3)),
    "ZeroPad1d((2, 0)) on 3-D": (lambda m: m.ZeroPad1d((2, 0)), (2, 3, 4)),
    "ZeroPad2d((1, 2, 0, 1)) on 3-D": (lambda m: m.ZeroPad2d((1, 2, 0, 1)), (2, 3, 4)),
    "ZeroPad3d(1) on 4-D": (lambda m: m.ZeroPad3d(1), (1, 2, 2, 3)),
    "ReflectionPad1d((2, 1)) unbatched": (lambda m: m.ReflectionPad1d((2, 1)), (3, 5)),
    "ReflectionPad1d(2) batched": (lambda m: m.ReflectionPad1d(2), (2, 3, 5)),
    "ReflectionPad2d((1, 0, 2, 1)) unbatched": (lambda m: m.ReflectionPad2d((1, 0, 2, 1)), (2, 4, 4)),
    "ReflectionPad3d(1)": (lambda m: m.ReflectionPad3d(1), (1, 2, 3, 3, 3)),
    "ReflectionPad3d((1, 0, 0, 1, 1, 1)) unbatched": (lambda m: m.ReflectionPad3d((1, 0, 0, 1, 1, 1)), (2, 3, 3, 3)),
    "ReplicationPad1d((0, 3))": (lambda m: m.ReplicationPad1d((0, 3)), (2, 3, 4)),
    "ReplicationPad2d(2) unbatched": (lambda m: m.ReplicationPad2d(2), (2, 3, 3)),
    "ReplicationPad3d((1, 2, 0, 1, 1, 0))": (lambda m: m.ReplicationPad3d((1, 2, 0, 1, 1, 0)), (1, 1, 2, 3, 3)),
    "ReplicationPad2d((-1, 1, 0, 0)) crops": (lambda m: m.ReplicationPad2d((-1, 1, 0, 0)), (1, 2, 3, 4)),
    "CircularPad1d(1) unbatched": (lambda m: m.CircularPad1d(1), (2, 4)),
    "CircularPad2d((1, 0, 2, 1))": (lambda m: m.CircularPad2d((1, 0, 2, 1)), (1, 2, 3, 3)),
    "CircularPad3d(1)": (lambda m: m.CircularPad3d(1), (1, 1, 2, 3, 3)),
}


@pytest.mark.parametrize("call", sorted(_CASES))
def test_layer_gives_torchs_values_and_gradients(call):
    make, shape = _CASES[call]
    x0 = _RNG.standard_normal(shape)
    x, tx = fg.to_tensor(x0, stop_gradient=False), torch.tensor(x0, requires_grad=True)
    out, expected = make(nn)(x * 1), make(torch.nn)(tx * 1)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-14)
    cotangent = _RNG.standard_normal(tuple(expected.shape))
    fg.sum(out * fg.to_tensor(cotangent)).backward()
    (expected * torch.tensor(cotangent)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_paddles_lp_pool_layers_take_padding_and_channel_last_input():
    x0 = np.abs(_RNG.standard_normal((1, 3, 5, 4))) + 0.1
    expected = nn.LPPool2D(2, 2, 1, padding=1)(fg.to_tensor(x0)).numpy()
    padded = np.pad(x0, [(0, 0), (0, 0), (1, 1), (1, 1)])
    np.testing.assert_allclose(expected, torch.nn.LPPool2d(2, 2, 1)(torch.tensor(padded)).numpy(), rtol=1e-12)
    x1 = np.abs(_RNG.standard_normal((2, 3, 7))) + 0.1
    channel_last = nn.LPPool1D(3, 2, data_format="NLC")(fg.to_tensor(x1.transpose(0, 2, 1))).numpy()
    np.testing.assert_allclose(channel_last, torch.nn.LPPool1d(3, 2)(torch.tensor(x1)).numpy().transpose(0, 2, 1),
                               rtol=1e-12)


def test_rrelu_layer_draws_slopes_while_training_and_uses_the_mean_in_eval():
    layer = nn.RReLU(0.1, 0.3)
    x0 = -np.abs(_RNG.standard_normal((100, 20))) - 0.1
    slopes = layer(fg.to_tensor(x0)).numpy() / x0
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and slopes.std() > 0.03
    layer.eval()
    np.testing.assert_allclose(layer(fg.to_tensor(x0)).numpy() / x0, 0.2, rtol=1e-12)
    assert repr(layer) == "RReLU(lower=0.1, upper=0.3)"
    with pytest.raises(ValueError, match="RReLU: needs 0 <= lower <= upper"):
        nn.RReLU(0.5, 0.1)


def test_padding_layers_refuse_the_wrong_sizes_and_ranks():
    with pytest.raises(ValueError, match=r"ReflectionPad2d: padding must be an int or a tuple of 4 ints, got \(1, 2\)"):
        nn.ReflectionPad2d((1, 2))
    with pytest.raises(ValueError, match=r"ReplicationPad1d: expects a 2-D \(unbatched\) or 3-D \(batched\) input, "
                                         r"got shape \[1, 2, 3, 4\]"):
        nn.ReplicationPad1d(1)(fg.to_tensor(np.zeros((1, 2, 3, 4))))
    with pytest.raises(ValueError, match=r"ConstantPad3d: pads the last 3 axes, got input of shape \[2, 2\]"):
        nn.ConstantPad3d(1, 0.0)(fg.to_tensor(np.zeros((2, 2))))
    assert repr(nn.ConstantPad2d((1, 0, 2, 1), 3.5)) == "ConstantPad2d(padding=(1, 0, 2, 1), value=3.5)"
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d(padding=(1, 1, 1, 1), value=0.0)"


def test_padding_layer_in_a_static_program(monkeypatch):
    """The same layer builds ops in a static program with a -1 batch."""
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 1)
    x0 = _RNG.standard_normal((2, 3, 4, 4))
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        out = nn.ReflectionPad2d((1, 0, 2, 1))(fg.static.data("x", [-1, 3, 4, 4], "float64"))
    got = fg.Executor().run(main, feed={"x": x0}, fetch_list=[out])[0]
    np.testing.assert_array_equal(got, torch.nn.ReflectionPad2d((1, 0, 2, 1))(torch.tensor(x0)).numpy())
