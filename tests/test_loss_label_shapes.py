"""A label of another shape than the input: the binary cross-entropies refuse it (as PyTorch's),
the regression losses broadcast it with a warning (as PyTorch's); a label of the same shape, or
one that matches up to axes of unknown size (static mode), gets neither."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from fluidgrad.nn import functional as F
from fluidgrad.static import data

_REGRESSION = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]
_BINARY = ["binary_cross_entropy", "binary_cross_entropy_with_logits"]


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("name", _REGRESSION)
def test_regression_loss_warns_and_broadcasts_as_torch(name):
    prediction, label = np.arange(4.0).reshape(4, 1), np.array([0.5, 1.0, 3.0, 2.0])
    expected, torch_warnings = _caught(lambda: getattr(TF, name)(torch.tensor(prediction), torch.tensor(label)))
    assert torch_warnings, "PyTorch warns here (the oracle for warning at all)"
    out, messages = _caught(lambda: getattr(F, name)(fg.to_tensor(prediction), fg.to_tensor(label)))
    assert any(name in m and "[4]" in m and "[4, 1]" in m for m in messages), messages
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12)   # the same (broadcast) value


@pytest.mark.parametrize("name", _REGRESSION + _BINARY)
@pytest.mark.parametrize("label_shape", [[None, 1], [4, 1]])
def test_no_warning_nor_error_for_the_same_shape_up_to_unknown_axes(name, label_shape):
    with fg.program_guard(fg.Program(), fg.Program()):
        x, y = data("x", [None, 1], "float64"), data("y", label_shape, "float64")
        _, messages = _caught(lambda: getattr(F, name)(x, y))
    assert not messages
    eager = fg.to_tensor(np.full((4, 1), 0.25))
    _, messages = _caught(lambda: getattr(F, name)(eager, fg.to_tensor(np.full((4, 1), 0.5))))
    assert not messages


@pytest.mark.parametrize("name", _BINARY)
@pytest.mark.parametrize("mode", ["eager", "static"])
def test_binary_cross_entropy_refuses_a_label_of_another_shape_in_both_modes(name, mode):
    with fg.program_guard(fg.Program(), fg.Program()):
        if mode == "eager":
            x, y = fg.to_tensor(np.full((4, 1), 0.3)), fg.to_tensor(np.ones(4))
        else:
            x, y = data("x", [None, 1], "float64"), data("y", [None], "float64")
        with pytest.raises(ValueError, match=rf"{name}: label of shape \[-?\d\] differs from .* \[-?\d, 1\]"):
            getattr(F, name)(x, y)


@pytest.mark.parametrize("name", _REGRESSION)
def test_regression_loss_warns_in_static_mode_too(name):
    with fg.program_guard(fg.Program(), fg.Program()):
        x, y = data("x", [None, 1], "float64"), data("y", [None], "float64")
        _, messages = _caught(lambda: getattr(F, name)(x, y))
    assert any(name in m for m in messages), messages


def test_binary_cross_entropy_weights_still_broadcast():
    """Only the label must match: a weight (and pos_weight) broadcast as in PyTorch."""
    prob, label, weight = np.full((3, 2), 0.3), np.array([[0.0, 1.0]] * 3), np.array([2.0, 0.5])
    expected = TF.binary_cross_entropy(torch.tensor(prob), torch.tensor(label), weight=torch.tensor(weight))
    got = F.binary_cross_entropy(fg.to_tensor(prob), fg.to_tensor(label), weight=fg.to_tensor(weight))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    expected = TF.binary_cross_entropy_with_logits(torch.tensor(prob), torch.tensor(label),
                                                   pos_weight=torch.tensor(weight))
    got = F.binary_cross_entropy_with_logits(fg.to_tensor(prob), fg.to_tensor(label), pos_weight=fg.to_tensor(weight))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
