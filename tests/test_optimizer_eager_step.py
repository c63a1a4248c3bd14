"""Eager `step()` binds the update kernel and the learning-rate array once per step: a scheduler
change between steps, parameters of two dtypes and an attribute changed between steps must all
still reach every parameter, as torch.optim does."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

SHAPES = {"w32": ((3, 4), np.float32), "b32": ((4,), np.float32), "w64": ((4, 2), np.float64)}


def _setup(seed: int = 0):
    rng = np.random.default_rng(seed)
    values = {k: rng.standard_normal(shape).astype(dtype) for k, (shape, dtype) in SHAPES.items()}
    grads = [{k: rng.standard_normal(shape).astype(dtype) for k, (shape, dtype) in SHAPES.items()}
             for _ in range(5)]
    return values, grads


def _fg_steps(optimizer, tensors, grads, between=lambda step: None):
    out = []
    for step, g in enumerate(grads):
        fg.add_n([fg.sum(fg.cast(tensors[k] * fg.to_tensor(g[k]), "float64")) for k in SHAPES]).backward()
        optimizer.step()
        optimizer.clear_grad()
        out.append({k: t.numpy().copy() for k, t in tensors.items()})
        between(step)
    return out


def _torch_steps(optimizer, tensors, grads, between=lambda step: None):
    out = []
    for step, g in enumerate(grads):
        sum((tensors[k] * torch.tensor(g[k])).sum().double() for k in SHAPES).backward()
        optimizer.step()
        optimizer.zero_grad()
        out.append({k: t.detach().numpy().copy() for k, t in tensors.items()})
        between(step)
    return out


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
def test_scheduler_and_mixed_dtypes_reach_every_parameter(kind):
    values, grads = _setup()
    ours = {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in values.items()}
    theirs = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in values.items()}
    schedule = fg.lr.StepDecay(learning_rate=0.1, step_size=2, gamma=0.5)
    if kind == "sgd":
        fg_opt = fg.optimizer.SGD(schedule, parameters=list(ours.values()))
        t_opt = torch.optim.SGD(list(theirs.values()), lr=0.1)
    elif kind == "momentum":
        fg_opt = fg.optimizer.Momentum(schedule, momentum=0.9, parameters=list(ours.values()))
        t_opt = torch.optim.SGD(list(theirs.values()), lr=0.1, momentum=0.9)
    else:
        fg_opt = fg.optimizer.Adam(schedule, parameters=list(ours.values()))
        t_opt = torch.optim.Adam(list(theirs.values()), lr=0.1)
    t_sched = torch.optim.lr_scheduler.StepLR(t_opt, step_size=2, gamma=0.5)
    got = _fg_steps(fg_opt, ours, grads, lambda step: schedule.step())
    want = _torch_steps(t_opt, theirs, grads, lambda step: t_sched.step())
    for step, (a, b) in enumerate(zip(got, want)):
        for k, (_, dtype) in SHAPES.items():
            assert a[k].dtype == dtype, f"{kind} step {step}: {k} became {a[k].dtype}"
            np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=f"{kind} step {step} {k}")


def test_attribute_changed_between_steps_is_used():
    """The bound kernel is rebuilt each step, so `opt.momentum = ...` takes effect at once."""
    values, grads = _setup(1)
    ours = {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in values.items()}
    theirs = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in values.items()}
    fg_opt = fg.optimizer.Momentum(0.05, momentum=0.9, parameters=list(ours.values()))
    t_opt = torch.optim.SGD(list(theirs.values()), lr=0.05, momentum=0.9)

    def fg_change(step):
        fg_opt.momentum = 0.5 if step == 1 else fg_opt.momentum

    def torch_change(step):
        if step == 1:
            t_opt.param_groups[0]["momentum"] = 0.5
    got = _fg_steps(fg_opt, ours, grads, fg_change)
    want = _torch_steps(t_opt, theirs, grads, torch_change)
    for step, (a, b) in enumerate(zip(got, want)):
        for k in SHAPES:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=f"step {step} {k}")
