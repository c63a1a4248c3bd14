"""Tensor.retain_grads() (Paddle 2; PyTorch's retain_grad()): an intermediate keeps its gradient
in .grad, accumulated over backward calls like a leaf's, against PyTorch; asking twice keeps it
once; a tensor without a gradient refuses."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

X0 = np.array([[1.0, -2.0], [0.5, 3.0]])


def test_intermediate_gradients_match_torch_and_accumulate():
    x = fg.to_tensor(X0, stop_gradient=False)
    h = fg.tanh(x * 2.0)
    h.retain_grads()
    h.retain_grad()                                      # asked twice: kept once
    out = fg.sum(h * h * x)
    out.backward(retain_graph=True)
    out.backward()
    t = torch.tensor(X0, requires_grad=True)
    th = torch.tanh(t * 2.0)
    th.retain_grad()
    tout = (th * th * t).sum()
    tout.backward(retain_graph=True)
    tout.backward()
    np.testing.assert_allclose(h.grad.numpy(), th.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert h.grad.stop_gradient


def test_leaves_keep_theirs_anyway_and_constants_refuse():
    x = fg.to_tensor(X0, stop_gradient=False)
    x.retain_grads()
    fg.sum(x * 3.0).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(X0, 3.0))
    with pytest.raises(RuntimeError, match="retain_grads: this tensor does not require a gradient"):
        (fg.to_tensor(X0) * 2.0).retain_grads()
