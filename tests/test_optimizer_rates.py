"""Learning rates as users hand them over: NumPy numbers (a config computed with NumPy) to
optimizers, parameter groups and schedulers, and PyTorch's `group["lr"] = ...` changing the rate
of the next steps, checked against torch.optim.SGD step by step."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.optimizer import lr as sched

W0 = np.array([[0.5, -1.0], [2.0, 0.25]])


@pytest.mark.parametrize("rate", [np.float32(0.5), np.float64(0.5), np.int64(1)])
def test_numpy_numbers_are_rates(rate):
    layer = fg.nn.Linear(2, 1)
    assert fg.optimizer.Adam(learning_rate=rate, parameters=layer.parameters()).get_lr() == float(rate)
    assert fg.optimizer.SGD(layer.parameters(), lr=rate).get_lr() == float(rate)
    assert sched.StepDecay(rate, step_size=2)() == float(rate)
    assert sched.LinearWarmup(rate, warmup_steps=2, start_lr=0.0, end_lr=float(rate)).learning_rate == float(rate)
    grouped = fg.optimizer.SGD(0.1, parameters=[{"params": layer.parameters(), "lr": rate}])
    assert grouped.param_groups[0]["lr"] == pytest.approx(float(rate))


def test_bools_are_not_rates():
    with pytest.raises(TypeError, match="learning_rate must be a float"):
        fg.optimizer.SGD(learning_rate=np.bool_(True), parameters=fg.nn.Linear(2, 1).parameters())


def _torch_run(schedule):
    a, b = (torch.tensor(W0[i], requires_grad=True) for i in range(2))
    opt = torch.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.01}], lr=0.1)
    history = []
    for step in range(4):
        for i, rate in schedule.get(step, {}).items():
            opt.param_groups[i]["lr"] = rate
        opt.zero_grad()
        ((a * a).sum() + (b * b * b).sum()).backward()
        opt.step()
        history.append([a.detach().numpy().copy(), b.detach().numpy().copy(), [g["lr"] for g in opt.param_groups]])
    return history


def _our_run(schedule):
    a, b = (fg.to_tensor(W0[i], stop_gradient=False) for i in range(2))
    opt = fg.optimizer.SGD(0.1, parameters=[{"params": [a]}, {"params": [b], "lr": 0.01}])
    history = []
    for step in range(4):
        for i, rate in schedule.get(step, {}).items():
            opt.param_groups[i]["lr"] = rate
        opt.clear_grad()
        (fg.sum(a * a) + fg.sum(b * b * b)).backward()
        opt.step()
        history.append([a.numpy().copy(), b.numpy().copy(), [g["lr"] for g in opt.param_groups]])
    return history


@pytest.mark.parametrize("schedule", [{}, {1: {0: 0.0}}, {1: {1: 0.2}, 2: {0: 0.05, 1: 0.0}}])
def test_setting_a_group_lr_changes_the_next_steps_as_torch(schedule):
    for ours, theirs in zip(_our_run(schedule), _torch_run(schedule)):
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)


def test_a_one_group_optimizer_takes_the_rate_as_its_own():
    layer = fg.nn.Linear(2, 1)
    opt = fg.optimizer.Momentum(learning_rate=0.1, parameters=layer.parameters())
    opt.param_groups[0]["lr"] = 0.3
    assert opt.get_lr() == pytest.approx(0.3) and opt.param_groups[0].get("lr") == pytest.approx(0.3)
    assert "lr" in opt.param_groups[0] and opt.param_groups[0]["params"] == layer.parameters()


def test_a_scheduled_rate_is_not_set_through_a_group():
    opt = fg.optimizer.SGD(learning_rate=sched.StepDecay(0.1, step_size=1), parameters=fg.nn.Linear(2, 1).parameters())
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
    with pytest.raises(TypeError, match="driven by a scheduler"):
        opt.param_groups[0]["lr"] = 0.5
    with pytest.raises(TypeError, match="lr must be a number, got str"):
        opt.param_groups[0]["lr"] = "fast"
