"""Schedulers of absolute rates (eta_min, min_lr, max_lr) over several parameter groups, one value
for all (or, for min_lr and max_lr, a list of one per group), against torch 2.13: the groups' rates, the weights trained with them, and a
scheduler resumed from its state_dict."""
import numpy as np
import pytest
import torch

import fluidgrad as fg

_RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


_SCHEDULES = {
    "CosineAnnealingLR(eta_min=5e-3)": lambda s, o: s.CosineAnnealingLR(o, T_max=5, eta_min=5e-3),
    "CosineAnnealingLR(eta_min=0)": lambda s, o: s.CosineAnnealingLR(o, T_max=3),
    "CosineAnnealingWarmRestarts(T_mult=2, eta_min=2e-3)": lambda s, o: s.CosineAnnealingWarmRestarts(
        o, T_0=2, T_mult=2, eta_min=2e-3),
    "ReduceLROnPlateau(min_lr=[0.02, 1e-3])": lambda s, o: s.ReduceLROnPlateau(o, patience=0, factor=0.5,
                                                                             min_lr=[0.02, 1e-3]),
    "OneCycleLR(max_lr=[0.2, 0.05])": lambda s, o: s.OneCycleLR(o, max_lr=[0.2, 0.05], total_steps=8),
    "OneCycleLR(max_lr=0.1, three_phase)": lambda s, o: s.OneCycleLR(o, max_lr=0.1, total_steps=8, three_phase=True),
    "StepLR (in proportion, unchanged)": lambda s, o: s.StepLR(o, step_size=2, gamma=0.5),
}


def _train(m, make, steps=7):
    """Two groups (lr 0.1 and 0.01) of SGD with momentum on sum(tanh(x W1) W2)^2: (rates, weights) per step."""
    w1, w2, x = _RNG_STATE
    if m is torch:
        p1, p2 = torch.nn.Parameter(torch.tensor(w1.copy())), torch.nn.Parameter(torch.tensor(w2.copy()))
        optimizer = torch.optim.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.01}], lr=0.1, momentum=0.9)
        scheduler = make(torch.optim.lr_scheduler, optimizer)
    else:
        p1, p2 = fg.to_tensor(w1.copy(), stop_gradient=False), fg.to_tensor(w2.copy(), stop_gradient=False)
        optimizer = fg.optimizer.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.01}], lr=0.1, momentum=0.9)
        scheduler = make(fg.optimizer.lr_scheduler, optimizer)
    history = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = (m.tanh(m.tensor(x) @ p1 if m is torch else fg.to_tensor(x) @ p1) @ p2).sum() ** 2
        loss.backward()
        optimizer.step()
        if "Plateau" in type(scheduler).__name__:
            scheduler.step(1.0)
        else:
            scheduler.step()
        history.append(([g["lr"] for g in optimizer.param_groups], list(scheduler.get_last_lr()),
                        np.array(p1.detach().numpy() if m is torch else p1.numpy()),
                        np.array(p2.detach().numpy() if m is torch else p2.numpy())))
    return history


_RNG_STATE = (_RNG.standard_normal((3, 4)), _RNG.standard_normal((4, 2)), _RNG.standard_normal((5, 3)))


@pytest.mark.parametrize("schedule", sorted(_SCHEDULES))
def test_group_rates_and_weights_follow_torch(schedule):
    ours, theirs = _train(fg, _SCHEDULES[schedule]), _train(torch, _SCHEDULES[schedule])
    for step, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a[0], b[0], rtol=1e-9, atol=1e-15, err_msg=f"group rates, step {step}")
        np.testing.assert_allclose(a[1], b[1], rtol=1e-9, atol=1e-15, err_msg=f"get_last_lr, step {step}")
        np.testing.assert_allclose(a[2], b[2], rtol=1e-9, atol=1e-12, err_msg=f"weight 1, step {step}")
        np.testing.assert_allclose(a[3], b[3], rtol=1e-9, atol=1e-12, err_msg=f"weight 2, step {step}")


def test_a_list_of_the_wrong_length_names_the_setting():
    w = [fg.to_tensor(np.zeros(2), stop_gradient=False) for _ in range(2)]
    optimizer = fg.optimizer.SGD([{"params": [w[0]]}, {"params": [w[1]]}], lr=0.1)
    with pytest.raises(ValueError, match="min_lr"):
        fg.optimizer.lr_scheduler.ReduceLROnPlateau(optimizer, min_lr=[0.0, 0.1, 0.2])


def test_per_group_schedule_resumes_from_its_state_dict():
    def build():
        w = [fg.to_tensor(np.zeros(2), stop_gradient=False) for _ in range(2)]
        optimizer = fg.optimizer.SGD([{"params": [w[0]]}, {"params": [w[1]], "lr": 0.01}], lr=0.1)
        return optimizer, fg.optimizer.lr_scheduler.CosineAnnealingLR(optimizer, T_max=6, eta_min=2e-3)
    optimizer, scheduler = build()
    for _ in range(3):
        scheduler.step()
    state = scheduler.state_dict()
    rates = [scheduler.get_last_lr()]
    for _ in range(2):
        scheduler.step()
        rates.append(scheduler.get_last_lr())
    _, resumed = build()
    resumed.load_state_dict(state)
    again = [resumed.get_last_lr()]
    for _ in range(2):
        resumed.step()
        again.append(resumed.get_last_lr())
    np.testing.assert_allclose(again, rates, rtol=1e-12)
