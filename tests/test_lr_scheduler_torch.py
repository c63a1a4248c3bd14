"""fluidgrad.optimizer.lr_scheduler (torch.optim.lr_scheduler's schedulers, built on an optimizer)
against torch 2.13 over 14 epochs: the optimizer's rate, get_last_lr(), last_epoch; eager
parameters and a static program (whose rate variable is rewritten each step) follow torch's
trajectory; state_dict() resumes; bad uses are clear errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.optimizer import lr_scheduler as fls

EPOCHS = 14
SCHEDULERS = {
    "StepLR": lambda s, o: s.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[5, 2, 9, 9], gamma=0.3),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=4, eta_min=0.01),
    "CosineAnnealingLR eta_min 0": lambda s, o: s.CosineAnnealingLR(o, T_max=5),
    "LambdaLR": lambda s, o: s.LambdaLR(o, lambda e: 1 / (1 + e)),
    "MultiplicativeLR": lambda s, o: s.MultiplicativeLR(o, lambda e: 0.95 if e % 2 else 0.8),
    "LinearLR": lambda s, o: s.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6),
    "ConstantLR": lambda s, o: s.ConstantLR(o, factor=0.3, total_iters=4),
    "PolynomialLR": lambda s, o: s.PolynomialLR(o, total_iters=7, power=2.0),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, max_lr=0.5, total_steps=EPOCHS, cycle_momentum=False),
    "OneCycleLR three phases": lambda s, o: s.OneCycleLR(o, max_lr=0.5, epochs=2, steps_per_epoch=7, three_phase=True,
                                                         anneal_strategy="linear", cycle_momentum=False),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
    "SequentialLR": lambda s, o: s.SequentialLR(o, [s.LinearLR(o, start_factor=0.1, total_iters=3),
                                                    s.ExponentialLR(o, gamma=0.8), s.StepLR(o, 2)], milestones=[3, 7]),
}
# validation losses for ReduceLROnPlateau: stalls, improvements within the threshold, a cooldown
METRICS = [5.0, 4.0, 4.0, 4.0, 3.9999, 3.0, 3.0, 3.0, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0]
W0 = np.random.default_rng(0).standard_normal((3, 2))
GRADS = [np.random.default_rng(1 + i).standard_normal((3, 2)) for i in range(EPOCHS)]


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _torch_run(make, momentum=0.0, metrics=None):
    w = torch.nn.Parameter(torch.tensor(W0.copy()))
    opt = torch.optim.SGD([w], lr=0.1, momentum=momentum)
    scheduler = make(torch.optim.lr_scheduler, opt)
    rates, weights, momenta = [opt.param_groups[0]["lr"]], [], []
    for epoch in range(EPOCHS):
        w.grad = torch.tensor(GRADS[epoch])
        opt.step()
        scheduler.step(*([metrics[epoch]] if metrics else []))
        rates.append(opt.param_groups[0]["lr"])
        weights.append(w.detach().numpy().copy())
        momenta.append(opt.param_groups[0]["momentum"])
    return rates, weights, momenta, scheduler


def _eager_run(make, momentum=0.0, metrics=None):
    w = fg.to_tensor(W0.copy(), stop_gradient=False)
    opt = fg.optimizer.SGD([w], lr=0.1, momentum=momentum)
    scheduler = make(fls, opt)
    rates, weights, momenta = [opt.get_lr()], [], []
    for epoch in range(EPOCHS):
        w.grad = fg.to_tensor(GRADS[epoch])
        opt.step()
        scheduler.step(*([metrics[epoch]] if metrics else []))
        rates.append(opt.get_lr())
        weights.append(w.numpy().copy())
        momenta.append(opt.param_groups[0]["momentum"])
        assert scheduler.get_last_lr() == [opt.get_lr()]
    return rates, weights, momenta, scheduler


CASES = [(name, make, None) for name, make in SCHEDULERS.items()] + [
    ("ReduceLROnPlateau", lambda s, o: s.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1, threshold=1e-3),
     METRICS),
    ("ReduceLROnPlateau max abs", lambda s, o: s.ReduceLROnPlateau(o, "max", patience=0, threshold=0.5,
                                                                    threshold_mode="abs", min_lr=0.02),
     [-m for m in METRICS])]


@pytest.mark.parametrize("name, make, metrics", CASES, ids=[c[0] for c in CASES])
def test_eager_rates_and_parameters_follow_torch(eager, name, make, metrics):
    rates, weights, _, scheduler = _eager_run(make, metrics=metrics)
    expected_rates, expected_weights, _, reference = _torch_run(make, metrics=metrics)
    np.testing.assert_allclose(rates, expected_rates, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-12)
    np.testing.assert_allclose(scheduler.get_last_lr(), reference.get_last_lr(), rtol=1e-13)
    assert scheduler.last_epoch == reference.last_epoch


@pytest.mark.parametrize("name, make, metrics", CASES, ids=[c[0] for c in CASES])
def test_a_static_program_reads_the_scheduled_rate_each_run(name, make, metrics):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        w = fg.static.create_parameter([3, 2], "float64", attr=fg.ParamAttr(name="w"))
        g = fg.static.data("g", [3, 2], "float64")
        opt = fg.optimizer.SGD(learning_rate=0.1)
        opt.minimize(fg.sum(w * g))
    scheduler = make(fls, opt)
    exe, weights = fg.Executor(), []
    exe.run(startup)
    fg.global_scope()["w"] = W0.copy()
    for epoch in range(EPOCHS):
        exe.run(main, feed={"g": GRADS[epoch]})
        scheduler.step(*([metrics[epoch]] if metrics else []))
        weights.append(np.array(fg.global_scope()["w"]))
    np.testing.assert_allclose(weights, _torch_run(make, metrics=metrics)[1], rtol=1e-12)


@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_cycles_the_momentum_as_torch(eager, three_phase):
    def make(s, o):
        return s.OneCycleLR(o, max_lr=1.0, total_steps=EPOCHS, three_phase=three_phase, base_momentum=0.7)
    rates, weights, momenta, _ = _eager_run(make, momentum=0.9)
    expected_rates, expected_weights, expected_momenta, _ = _torch_run(make, momentum=0.9)
    np.testing.assert_allclose(rates, expected_rates, rtol=1e-13)
    np.testing.assert_allclose(momenta, expected_momenta, rtol=1e-13)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-12)


def test_state_dict_resumes_the_schedule(eager):
    opt = fg.optimizer.SGD(fg.nn.Linear(2, 2).parameters(), lr=0.1)
    first = fls.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
    for _ in range(5):
        first.step()
    state = first.state_dict()
    rest = [(first.step(), opt.get_lr())[1] for _ in range(6)]
    other = fg.optimizer.SGD(fg.nn.Linear(2, 2).parameters(), lr=0.1)
    resumed = fls.CosineAnnealingWarmRestarts(other, T_0=3, T_mult=2)
    resumed.load_state_dict(state)
    assert resumed.last_epoch == 5 and other.get_lr() == state["last_lr"]
    assert [(resumed.step(), other.get_lr())[1] for _ in range(6)] == rest


def test_resuming_with_last_epoch_uses_the_initial_rate(eager):
    opt = fg.optimizer.SGD(fg.nn.Linear(2, 2).parameters(), lr=0.1)
    fls.StepLR(opt, step_size=2)
    opt.set_lr(0.5)          # whatever the rate now, a resumed scheduler starts from the initial one
    resumed = fls.StepLR(opt, step_size=2, last_epoch=3)
    assert resumed.last_epoch == 4 and opt.get_lr() == pytest.approx(0.1 * 0.1 ** 2)
    with pytest.raises(KeyError, match="initial_lr"):
        fls.StepLR(fg.optimizer.SGD(fg.nn.Linear(2, 2).parameters(), lr=0.1), step_size=2, last_epoch=3)


def test_parameter_groups_keep_their_ratio(eager):
    a, b = fg.nn.Linear(2, 2), fg.nn.Linear(2, 2)
    opt = fg.optimizer.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.01}], lr=0.1)
    scheduler = fls.StepLR(opt, step_size=1, gamma=0.5)
    scheduler.step()
    assert scheduler.get_last_lr() == pytest.approx([0.05, 0.005])
    assert [group["lr"] for group in opt.param_groups] == pytest.approx([0.05, 0.005])


def test_bad_uses_are_clear_errors(eager):
    params = fg.nn.Linear(2, 2).parameters()
    with pytest.raises(TypeError, match="StepLR: the first argument must be a fluidgrad optimizer"):
        fls.StepLR(torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1), step_size=2)
    driven = fg.optimizer.SGD(params, learning_rate=fg.optimizer.lr.StepDecay(0.1, 2))
    with pytest.raises(TypeError, match="ExponentialLR: SGD's rate is already driven by StepDecay"):
        fls.ExponentialLR(driven, gamma=0.9)
    with pytest.raises(ValueError, match="OneCycleLR: optimizer must support momentum or beta1 .* Adagrad has neither"):
        fls.OneCycleLR(fg.optimizer.Adagrad(params, lr=0.1), max_lr=1.0, total_steps=10)
    with pytest.raises(ValueError, match="OneCycleLR: give total_steps"):
        fls.OneCycleLR(fg.optimizer.SGD(params, lr=0.1), max_lr=1.0, epochs=3, cycle_momentum=False)
    with pytest.raises(ValueError, match="ConstantLR: factor"):
        fls.ConstantLR(fg.optimizer.SGD(params, lr=0.1), factor=2.0)
    with pytest.raises(ValueError, match="LambdaLR: Expected 1 lr_lambdas"):
        fls.LambdaLR(fg.optimizer.SGD(params, lr=0.1), [lambda e: 1.0, lambda e: 2.0])
    opt = fg.optimizer.SGD(params, lr=0.1)
    with pytest.raises(ValueError, match="SequentialLR: expects one milestone fewer"):
        fls.SequentialLR(opt, [fls.StepLR(opt, 2), fls.StepLR(opt, 3)], milestones=[])
    with pytest.raises(TypeError, match="ReduceOnPlateau.step needs the metric"):
        fls.ReduceLROnPlateau(opt).step()
