"""Learning-rate schedulers (Paddle 2 names; also `fluidgrad.optimizer.lr`).

A scheduler is a function of the epoch (or step) counter `last_epoch`:

    sched = StepDecay(0.1, step_size=30, gamma=0.1)
    opt = fluidgrad.optimizer.SGD(learning_rate=sched)
    opt.minimize(loss)
    for epoch in range(90):
        ...exe.run(...)...
        sched.step()          # the next run uses the new rate

How the new rate reaches a static program: the optimizer keeps the rate in a persistable
1-element variable (`opt.lr_var`); `step()` notifies the optimizers using this scheduler,
and each writes `last_lr` into that variable in `global_scope()` (once the startup program
has created it there) and into its startup initialiser. A program run in another scope:
call `opt.sync_lr(scope)` once after the startup program; later steps update it too.
"""
from __future__ import annotations

from .base import LRScheduler, is_rate  # noqa: F401  (is_rate: what optimizers take as a rate)
from .cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from .decay import (CosineAnnealingDecay, ExponentialDecay, InverseTimeDecay, LambdaDecay, LinearLR, LinearWarmup,
                    MultiplicativeDecay, MultiStepDecay, NaturalExpDecay, NoamDecay, PiecewiseDecay, PolynomialDecay,
                    StepDecay)
from .plateau import ReduceOnPlateau

__all__ = ["CosineAnnealingDecay", "CosineAnnealingWarmRestarts", "CyclicLR", "ExponentialDecay", "InverseTimeDecay",
           "LRScheduler", "LambdaDecay", "LinearLR", "LinearWarmup", "MultiStepDecay", "MultiplicativeDecay",
           "NaturalExpDecay", "NoamDecay", "OneCycleLR", "PiecewiseDecay", "PolynomialDecay", "ReduceOnPlateau",
           "StepDecay"]
