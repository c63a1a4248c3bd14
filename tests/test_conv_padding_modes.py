"""Conv layers' padding_mode 'reflect' / 'replicate' / 'circular' (PyTorch's and Paddle's): the
input padded in that mode, then an unpadded convolution; values and gradients against torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg


@pytest.fixture(autouse=True)
def _eager(monkeypatch):
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("nd, padding, stride", [(1, 2, 1), (2, [1, 2], 2), (3, 1, 1)])
def test_padding_modes_match_torch(mode, nd, padding, stride):
    rng = np.random.default_rng(nd)
    x0 = rng.standard_normal((2, 3) + (6,) * nd).astype("float32")
    ours = getattr(fg.nn, f"Conv{nd}D")(3, 4, 3, stride=stride, padding=padding, padding_mode=mode)
    theirs = getattr(torch.nn, f"Conv{nd}d")(3, 4, 3, stride=stride, padding=padding, padding_mode=mode)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    x = fg.to_tensor(x0, stop_gradient=False)
    out = ours(x)
    (out * out).sum().backward()
    xt = torch.tensor(x0, requires_grad=True)
    want = theirs(xt)
    (want * want).sum().backward()
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_padding_mode_errors_name_the_layer():
    with pytest.raises(ValueError, match="Conv2D: padding_mode must be one of"):
        fg.nn.Conv2D(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="Conv2D: padding_mode='reflect' needs padding as sizes"):
        fg.nn.Conv2D(3, 4, 3, padding="same", padding_mode="reflect")
