"""nll_loss of log-probabilities that are -inf in classes other than the target (logits masked
with -inf) is finite with torch's value and gradient: the target's entry is selected, never
multiplied by a one-hot (0 * -inf is NaN)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

_LOGITS = np.array([[1.0, -np.inf, 0.5, 0.2], [-np.inf, 2.0, 0.3, -np.inf], [0.1, 0.2, -np.inf, 0.4]])
_TARGET = np.array([0, 2, 3])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_masked_classes_give_torchs_loss_and_gradient(reduction, monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    weight = np.array([1.0, 2.0, 0.5, 3.0])
    z = fg.to_tensor(_LOGITS, stop_gradient=False)
    got = fg.nn.functional.nll_loss(fg.nn.functional.log_softmax(z, 1), fg.to_tensor(_TARGET),
                                    weight=fg.to_tensor(weight), reduction=reduction)
    fg.sum(got).backward()
    t = torch.tensor(_LOGITS, requires_grad=True)
    expected = torch.nn.functional.nll_loss(torch.log_softmax(t, 1), torch.tensor(_TARGET),
                                            weight=torch.tensor(weight), reduction=reduction)
    expected.sum().backward()
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert np.isfinite(got.numpy()).all()
