"""ctc_loss against PyTorch's (per-sample losses, reduction 'none'; the reductions are the
functional's, tests/test_ctc.py). LogProbs are log-probabilities, PyTorch's input; the op
normalises over the classes first (as Paddle), so its gradient is PyTorch's there and the
central differences (which leave the simplex) see the same function. The grad op has no
gradient (documented): no grad of grad."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF

from fluidgrad.ops.ctc import ctc_loss_kernel
from fluidgrad.testing import OpCase

_RNG = np.random.default_rng(20261124)


def _log_probs(t, n, c):
    return np.log(_RNG.dirichlet(np.ones(c), size=(t, n)))


def _ctc(blank=0):
    def fn(LogProbs, Labels, InputLengths, LabelLengths):
        return TF.ctc_loss(LogProbs, Labels, InputLengths, LabelLengths, blank=blank, reduction="none")
    return fn


def _case(log_probs, labels, input_lengths, label_lengths, blank=0, **kw):
    inputs = {"LogProbs": log_probs, "Labels": np.asarray(labels, np.int64),
              "InputLengths": np.asarray(input_lengths, np.int64), "LabelLengths": np.asarray(label_lengths, np.int64)}
    return OpCase("ctc_loss", inputs, {"blank": blank}, use_outputs=(0,), torch_fn=_ctc(blank),
                  second_order=False, **kw)  # ctc_loss_grad has no gradient


def _grad_reference(LogProbs, Labels, InputLengths, LabelLengths, LogAlpha, Loss, DLoss):
    """PyTorch's gradient of its per-sample losses, weighted by DLoss."""
    lp = torch.tensor(LogProbs, requires_grad=True)
    loss = _ctc()(lp, *(torch.tensor(a) for a in (Labels, InputLengths, LabelLengths)))
    (grad,) = torch.autograd.grad(loss, lp, torch.tensor(DLoss))
    return grad.numpy()


def _grad_case():
    lp, labels, lengths, label_lengths = _log_probs(5, 2, 4), np.array([[1, 2], [3, 3]]), np.array([5, 4]), \
        np.array([2, 2])
    loss, alpha = ctc_loss_kernel(lp, labels, lengths, label_lengths)
    return OpCase("ctc_loss_grad", {"LogProbs": lp, "Labels": labels, "InputLengths": lengths,
                                    "LabelLengths": label_lengths, "LogAlpha": alpha, "Loss": loss,
                                    "DLoss": _RNG.uniform(0.5, 1.5, 2)}, numpy_fn=_grad_reference)


CASES = [
    _case(_log_probs(6, 3, 5), [[1, 2, 2], [3, 1, 0], [4, 4, 4]], [6, 5, 6], [3, 2, 1]),
    _case(_log_probs(5, 2, 4), [[2, 0, 2], [1, 0, 0]], [5, 3], [3, 0], blank=3, id="ctc_loss-blank-3-empty-label"),
    _case(_log_probs(4, 1, 3), [[1, 1]], [4], [2], id="ctc_loss-repeat-needs-a-blank"),
    _grad_case(),
]
