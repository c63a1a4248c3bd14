"""The Paddle 2 learning-rate schedulers added after StepDecay's family, against torch's
equivalents (or, where torch has none, torch's LambdaLR given the published formula): values
over many steps, jumps with step(epoch), state_dict through fluidgrad.save / load, an eager and a
static optimizer following the rate, and clear errors for bad arguments."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import optimizer as opt
from fluidgrad.optimizer import lr as sched

L = torch.optim.lr_scheduler
BASE = 0.5


def _torch_optimizer(lr: float = BASE) -> torch.optim.Optimizer:
    return torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)


def _torch_lrs(make, steps: int, metrics=None) -> list[float]:
    optim = _torch_optimizer()
    scheduler = make(optim)
    values = []
    for i in range(steps):
        values.append(optim.param_groups[0]["lr"])
        optim.step()
        scheduler.step(*([] if metrics is None else [metrics[i]]))
    return values


def _our_lrs(scheduler, steps: int, metrics=None) -> list[float]:
    values = []
    for i in range(steps):
        values.append(scheduler())
        scheduler.step(*([] if metrics is None else [metrics[i]]))
    return values


def _noam(d_model, warmup):
    return lambda e: d_model ** -0.5 * min(1.0 if e == 0 else e ** -0.5, e * warmup ** -1.5)


SCHEDULERS = {
    "polynomial": (lambda: sched.PolynomialDecay(BASE, decay_steps=7, end_lr=0.0),
                   lambda o: L.PolynomialLR(o, total_iters=7, power=1.0)),
    "polynomial_power": (lambda: sched.PolynomialDecay(BASE, decay_steps=6, end_lr=0.0, power=2.5),
                         lambda o: L.PolynomialLR(o, total_iters=6, power=2.5)),
    "polynomial_end_lr": (lambda: sched.PolynomialDecay(BASE, decay_steps=5, end_lr=0.1),
                          lambda o: L.LambdaLR(o, lambda e: ((BASE - 0.1) * (1 - min(e, 5) / 5) + 0.1) / BASE)),
    "polynomial_cycle": (lambda: sched.PolynomialDecay(BASE, decay_steps=4, end_lr=0.1, cycle=True),
                         lambda o: L.LambdaLR(o, lambda e: ((BASE - 0.1) * (1 - e / (4 * max(1, math.ceil(e / 4))))
                                                            + 0.1) / BASE)),
    "noam": (lambda: sched.NoamDecay(d_model=64, warmup_steps=4, learning_rate=2.0),
             lambda o: L.LambdaLR(o, lambda e: 2.0 / BASE * _noam(64, 4)(e))),
    "natural_exp": (lambda: sched.NaturalExpDecay(BASE, gamma=0.3), lambda o: L.ExponentialLR(o, math.exp(-0.3))),
    "inverse_time": (lambda: sched.InverseTimeDecay(BASE, gamma=0.7), lambda o: L.LambdaLR(o, lambda e: 1 / (1 + 0.7 * e))),
    "multiplicative": (lambda: sched.MultiplicativeDecay(BASE, lambda e: 0.9 if e % 2 else 0.8),
                       lambda o: L.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.8)),
    "linear": (lambda: sched.LinearLR(BASE, total_steps=5, start_factor=0.2, end_factor=0.9),
               lambda o: L.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=5)),
    "one_cycle": (lambda: sched.OneCycleLR(1.0, total_steps=20, divide_factor=10.0, end_learning_rate=1e-3),
                  lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=20, div_factor=10.0, final_div_factor=100.0,
                                         cycle_momentum=False)),
    "one_cycle_linear_three_phase": (
        lambda: sched.OneCycleLR(0.8, total_steps=20, phase_pct=0.25, anneal_strategy="linear", three_phase=True),
        lambda o: L.OneCycleLR(o, max_lr=0.8, total_steps=20, pct_start=0.25, anneal_strategy="linear",
                               three_phase=True, final_div_factor=0.8 / 25 / 1e-4, cycle_momentum=False)),
    "cyclic": (lambda: sched.CyclicLR(0.1, 1.0, step_size_up=3, step_size_down=5),
               lambda o: L.CyclicLR(o, 0.1, 1.0, step_size_up=3, step_size_down=5, cycle_momentum=False)),
    "cyclic_triangular2": (lambda: sched.CyclicLR(0.1, 1.0, step_size_up=4, mode="triangular2"),
                           lambda o: L.CyclicLR(o, 0.1, 1.0, step_size_up=4, mode="triangular2", cycle_momentum=False)),
    "cyclic_exp_range": (lambda: sched.CyclicLR(0.1, 1.0, step_size_up=2, mode="exp_range", exp_gamma=0.9),
                         lambda o: L.CyclicLR(o, 0.1, 1.0, step_size_up=2, mode="exp_range", gamma=0.9,
                                              cycle_momentum=False)),
    "cyclic_scale_fn": (lambda: sched.CyclicLR(0.1, 1.0, 3, scale_fn=lambda x: 0.95 ** x, scale_mode="iterations"),
                        lambda o: L.CyclicLR(o, 0.1, 1.0, 3, scale_fn=lambda x: 0.95 ** x, scale_mode="iterations",
                                             cycle_momentum=False)),
    "warm_restarts": (lambda: sched.CosineAnnealingWarmRestarts(BASE, T_0=4, eta_min=0.01),
                      lambda o: L.CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.01)),
    "warm_restarts_mult": (lambda: sched.CosineAnnealingWarmRestarts(BASE, T_0=2, T_mult=3),
                           lambda o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=3)),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_matches_torch(name):
    ours, theirs = SCHEDULERS[name]
    steps = 20 if name.startswith("one_cycle") else 30
    np.testing.assert_allclose(_our_lrs(ours(), steps), _torch_lrs(theirs, steps), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_a_jump_with_step_epoch_and_a_restored_state_resume_the_schedule(name, tmp_path):
    ours, _ = SCHEDULERS[name]
    straight = _our_lrs(ours(), 20)
    jumped = ours()
    jumped.step(11)
    assert jumped() == pytest.approx(straight[11], rel=1e-12)
    first = ours()
    _our_lrs(first, 9)
    fg.save({"scheduler": first.state_dict()}, str(tmp_path / "lr.safetensors"))
    resumed = ours()
    resumed.set_state_dict(fg.load(str(tmp_path / "lr.safetensors"))["scheduler"])
    np.testing.assert_allclose(_our_lrs(resumed, 11), straight[9:], rtol=1e-12)


def test_warm_restarts_take_fractional_epochs_as_torch():
    ours = sched.CosineAnnealingWarmRestarts(BASE, T_0=3, T_mult=2, eta_min=0.05)
    optim = _torch_optimizer()
    theirs = L.CosineAnnealingWarmRestarts(optim, T_0=3, T_mult=2, eta_min=0.05)
    for epoch in (0.5, 1.25, 2.999, 3.0, 4.5, 8.75, 9.0, 20.1, 2.0):
        ours.step(epoch)
        theirs.step(epoch)
        assert ours() == pytest.approx(optim.param_groups[0]["lr"], rel=1e-12), epoch
        assert ours.last_epoch == theirs.last_epoch


PLATEAU_METRICS = [5.0, 4.0, 4.0, 3.9999, 4.2, 4.1, 3.0, 3.5, 3.5, 3.5, 3.5, 3.5, 2.0, 2.5, 2.5, 1.0] + [1.5] * 14


@pytest.mark.parametrize("kwargs", [
    {},
    {"patience": 1},
    {"patience": 1, "cooldown": 2, "factor": 0.5},
    {"patience": 0, "threshold": 0.3, "threshold_mode": "abs", "min_lr": 0.01},
    {"mode": "max", "patience": 1, "factor": 0.3},
    {"mode": "max", "patience": 2, "threshold": 0.01, "threshold_mode": "abs", "cooldown": 1},
])
def test_reduce_on_plateau_matches_torch(kwargs):
    torch_kwargs = {("eps" if k == "epsilon" else k): v for k, v in kwargs.items()}
    metrics = PLATEAU_METRICS if kwargs.get("mode") != "max" else [-m for m in PLATEAU_METRICS]
    ours = _our_lrs(sched.ReduceOnPlateau(BASE, **kwargs), len(metrics), metrics)
    theirs = _torch_lrs(lambda o: L.ReduceLROnPlateau(o, **torch_kwargs), len(metrics), metrics)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert ours[-1] < BASE                              # the sequence does make it reduce


def test_reduce_on_plateau_takes_tensors_and_arrays_and_resumes(tmp_path):
    first = sched.ReduceOnPlateau(BASE, patience=1, cooldown=1)
    for metric in (fg.to_tensor(np.array(3.0)), np.array([2.0]), np.float32(2.5), 2.5):
        first.step(metric)
    fg.save(first.state_dict(), str(tmp_path / "plateau.safetensors"))
    resumed = sched.ReduceOnPlateau(BASE, patience=1, cooldown=1)
    resumed.set_state_dict(fg.load(str(tmp_path / "plateau.safetensors")))
    for metric in PLATEAU_METRICS:
        first.step(metric)
        resumed.step(metric)
        assert resumed() == first() and resumed.best == first.best
    with pytest.raises(TypeError, match="metrics must be a number or hold one value.*shape \\[2\\]"):
        first.step(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="step needs the metric"):
        first.step()


def test_eager_optimizer_follows_the_scheduler():
    schedule = sched.OneCycleLR(1.0, total_steps=10)
    w = fg.to_tensor(np.zeros(1), stop_gradient=False)
    optimizer = opt.SGD(learning_rate=schedule, parameters=[w])
    expected = 0.0
    for _ in range(10):
        expected -= schedule()                          # the gradient of sum(w) is 1
        fg.sum(w).backward()
        optimizer.step()
        optimizer.clear_grad()
        schedule.step()
    np.testing.assert_allclose(w.numpy(), [expected], rtol=1e-12)


def test_static_learning_rate_follows_reduce_on_plateau():
    scope = fg.Scope()
    with fg.scope_guard(scope):
        main, startup = fg.Program(), fg.Program()
        with fg.program_guard(main, startup):
            w = fg.static.create_parameter([1], "float64", name="w_plateau")
            schedule = sched.ReduceOnPlateau(1.0, patience=0, factor=0.5)
            optimizer = opt.SGD(learning_rate=schedule)
            optimizer.minimize(fg.sum(w))
        exe = fg.Executor()
        exe.run(startup)
        deltas = []
        for metric in (3.0, 3.0, 2.0, 2.0):
            before = float(scope["w_plateau"][0])
            exe.run(main)
            deltas.append(before - float(scope["w_plateau"][0]))
            schedule.step(metric)
    np.testing.assert_allclose(deltas, [1.0, 1.0, 0.5, 0.5])
    assert optimizer.get_lr() == 0.25


@pytest.mark.parametrize("make,error,message", [
    (lambda: sched.PolynomialDecay(0.1, decay_steps=0), ValueError, "decay_steps must be a positive integer"),
    (lambda: sched.NoamDecay(0, warmup_steps=10), ValueError, "d_model must be positive"),
    (lambda: sched.NaturalExpDecay(0.1, gamma=0.0), ValueError, "gamma must be > 0.0"),
    (lambda: sched.LinearLR(0.1, total_steps=5, start_factor=0.0), ValueError, r"start_factor must be in \(0, 1\]"),
    (lambda: sched.OneCycleLR(0.1, total_steps=10, anneal_strategy="exp"), ValueError, "anneal_strategy"),
    (lambda: sched.OneCycleLR(0.1, total_steps=10, phase_pct=1.5), ValueError, "phase_pct"),
    (lambda: sched.CyclicLR(0.1, 1.0, step_size_up=2, mode="sawtooth"), ValueError, "mode must be one of"),
    (lambda: sched.CosineAnnealingWarmRestarts(0.1, T_0=2, T_mult=0), ValueError, "T_mult must be an integer >= 1"),
    (lambda: sched.ReduceOnPlateau(0.1, mode="lowest"), ValueError, "mode must be 'min' or 'max'"),
    (lambda: sched.ReduceOnPlateau(0.1, factor=1.5), ValueError, "factor must be < 1.0"),
    (lambda: sched.ReduceOnPlateau("fast"), TypeError, "learning_rate must be a number"),
])
def test_bad_arguments_are_clear(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_one_cycle_refuses_to_step_past_its_total():
    schedule = sched.OneCycleLR(0.1, total_steps=3)
    for _ in range(3):
        schedule.step()
    with pytest.raises(ValueError, match="past total_steps=3"):
        schedule.step()
