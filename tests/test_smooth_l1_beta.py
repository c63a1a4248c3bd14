"""smooth_l1_loss with torch's `beta` (Huber / beta) beside Paddle's `delta` (Huber), huber_loss,
and the SmoothL1Loss / HuberLoss layers: against PyTorch (value and gradient, eager and static,
every reduction), against central differences, and the errors for contradictory keywords."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from both_modes import compare_with_torch
from fluidgrad.testing import check_program_grad

R = np.random.default_rng(12)
REDUCTIONS = ["mean", "sum", "none"]


def _pair():
    return {"x": R.normal(size=(4, 5)), "y": R.normal(size=(4, 5)) * 0.8}


CASES = {
    "beta=0.5": (lambda r: lambda x, y: F.smooth_l1_loss(x, y, beta=0.5, reduction=r),
                 lambda r: lambda x, y: TF.smooth_l1_loss(x, y, beta=0.5, reduction=r)),
    "beta=2": (lambda r: lambda x, y: F.smooth_l1_loss(x, target=y, beta=2.0, reduction=r),
               lambda r: lambda x, y: TF.smooth_l1_loss(x, y, beta=2.0, reduction=r)),
    "beta=0 (L1)": (lambda r: lambda x, y: F.smooth_l1_loss(x, y, beta=0.0, reduction=r),
                    lambda r: lambda x, y: TF.smooth_l1_loss(x, y, beta=0.0, reduction=r)),
    "delta=1 (torch's default beta)": (lambda r: lambda x, y: F.smooth_l1_loss(x, y, reduction=r),
                                       lambda r: lambda x, y: TF.smooth_l1_loss(x, y, reduction=r)),
    "huber delta=0.7": (lambda r: lambda x, y: F.huber_loss(x, y, delta=0.7, reduction=r),
                        lambda r: lambda x, y: TF.huber_loss(x, y, delta=0.7, reduction=r)),
    "paddle delta=0.7 is huber": (lambda r: lambda x, y: F.smooth_l1_loss(x, y, delta=0.7, reduction=r),
                                  lambda r: lambda x, y: TF.huber_loss(x, y, delta=0.7, reduction=r)),
}


@pytest.mark.parametrize("name, reduction", [(n, r) for n in sorted(CASES) for r in REDUCTIONS])
def test_against_torch_eager_and_static(name, reduction):
    ours, theirs = CASES[name]
    compare_with_torch(ours(reduction), theirs(reduction), _pair(), wrt=["x", "y"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_against_central_differences(name):
    ours, _ = CASES[name]
    check_program_grad(lambda v: ours("sum")(**v), _pair(), wrt=["x", "y"], rtol=1e-6, atol=1e-8)


def test_grad_of_grad_against_torch(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    values = _pair()
    tx = torch.tensor(values["x"], requires_grad=True)
    first = torch.autograd.grad(TF.smooth_l1_loss(tx, torch.tensor(values["y"]), beta=0.5, reduction="sum"), [tx],
                                create_graph=True)[0]
    expected = torch.autograd.grad((first * first).sum(), [tx])[0].numpy()
    x = fg.to_tensor(values["x"], stop_gradient=False)
    got_first = fg.grad([F.smooth_l1_loss(x, fg.to_tensor(values["y"]), beta=0.5, reduction="sum")], [x],
                        create_graph=True)[0]
    got = fg.grad([fg.sum(got_first * got_first)], [x])[0].numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("ours, theirs", [
    (lambda: fg.nn.SmoothL1Loss(beta=0.3), lambda: torch.nn.SmoothL1Loss(beta=0.3)),
    (lambda: fg.nn.SmoothL1Loss(reduction="sum", delta=1.0), lambda: torch.nn.SmoothL1Loss(reduction="sum")),
    (lambda: fg.nn.HuberLoss("sum", 0.4), lambda: torch.nn.HuberLoss("sum", 0.4)),
    (lambda: fg.nn.HuberLoss(delta=2.0), lambda: torch.nn.HuberLoss(delta=2.0)),
])
def test_layers_follow_torch(monkeypatch, ours, theirs):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    values = _pair()
    got = ours()(fg.to_tensor(values["x"]), fg.to_tensor(values["y"])).numpy()
    expected = theirs()(torch.tensor(values["x"]), torch.tensor(values["y"])).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_contradictory_or_bad_thresholds_are_errors(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    x, y = fg.to_tensor(np.ones(3)), fg.to_tensor(np.zeros(3))
    with pytest.raises(TypeError, match="smooth_l1_loss.*delta.*beta"):
        F.smooth_l1_loss(x, y, delta=0.5, beta=0.5)
    with pytest.raises(ValueError, match="smooth_l1_loss: beta"):
        F.smooth_l1_loss(x, y, beta=-1.0)
    with pytest.raises(ValueError, match="huber_loss: delta"):
        F.huber_loss(x, y, delta=0.0)
