"""Per-parameter options of an optimizer: parameter groups (dicts with "params" and their own
learning_rate / weight_decay, as torch.optim and Paddle take them) and ParamAttr(learning_rate=...),
checked against torch.optim over several steps, with a scheduler and a state_dict round trip."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg


def _models(seed: int = 0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(shape).astype(np.float64) for shape in [(3, 2), (2,), (2, 2), (2,)]]
    ours = [fg.to_tensor(v.copy(), stop_gradient=False) for v in values]
    theirs = [torch.tensor(v.copy(), requires_grad=True) for v in values]
    return rng, ours, theirs


def _loss_fg(params, x):
    h = fg.tanh(fg.matmul(fg.to_tensor(x), params[0]) + params[1])
    return fg.sum(fg.matmul(h, params[2]) + params[3])


def _loss_torch(params, x):
    h = torch.tanh(torch.tensor(x) @ params[0] + params[1])
    return (h @ params[2] + params[3]).sum()


@pytest.mark.parametrize("kind", ["SGD", "Momentum", "Adam"])
def test_parameter_groups_match_torch_over_steps_with_a_scheduler(kind):
    rng, ours, theirs = _models()
    torch_kind = {"SGD": torch.optim.SGD, "Momentum": torch.optim.SGD, "Adam": torch.optim.Adam}[kind]
    extra = {"momentum": 0.9} if kind == "Momentum" else {}
    scheduler = fg.optimizer.lr.StepDecay(0.1, step_size=2, gamma=0.5)
    opt = getattr(fg.optimizer, kind)(scheduler, parameters=[
        {"params": ours[:2]}, {"params": ours[2:], "lr": 0.02, "weight_decay": 0.1}])
    topt = torch_kind([{"params": theirs[:2]}, {"params": theirs[2:], "lr": 0.02, "weight_decay": 0.1}],
                      lr=0.1, **extra)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=2, gamma=0.5)
    for _ in range(5):
        x = rng.standard_normal((4, 3))
        _loss_fg(ours, x).backward()
        _loss_torch(theirs, x).backward()
        opt.step(), topt.step()
        opt.clear_grad(), topt.zero_grad()
        scheduler.step(), tsched.step()
    for mine, ref in zip(ours, theirs):
        np.testing.assert_allclose(mine.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_parameter_groups_state_dict_round_trip_resumes_the_same_training():
    rng, ours, _ = _models()
    groups = lambda params: [{"params": params[:2]}, {"params": params[2:], "learning_rate": 0.003}]  # noqa: E731
    opt = fg.optimizer.Adam(0.01, parameters=groups(ours))
    xs = [rng.standard_normal((4, 3)) for _ in range(4)]
    for x in xs[:2]:
        _loss_fg(ours, x).backward()
        opt.step(), opt.clear_grad()
    saved_params, saved_state = [p.numpy().copy() for p in ours], opt.state_dict()
    for x in xs[2:]:
        _loss_fg(ours, x).backward()
        opt.step(), opt.clear_grad()
    resumed = [fg.to_tensor(v, stop_gradient=False) for v in saved_params]
    opt2 = fg.optimizer.Adam(0.01, parameters=groups(resumed))
    opt2.set_state_dict(saved_state)
    for x in xs[2:]:
        _loss_fg(resumed, x).backward()
        opt2.step(), opt2.clear_grad()
    for mine, ref in zip(resumed, ours):
        np.testing.assert_array_equal(mine.numpy(), ref.numpy())


def test_a_group_takes_the_optimizers_options_and_stores_other_keys_as_torch():
    rng, ours, theirs = _models()
    opt = fg.optimizer.Adam([{"params": ours[:2], "betas": (0.8, 0.9), "note": "head"}, {"params": ours[2:]}],
                            lr=0.05)
    topt = torch.optim.Adam([{"params": theirs[:2], "betas": (0.8, 0.9), "note": "head"}, {"params": theirs[2:]}],
                            lr=0.05)
    assert opt.param_groups[0]["note"] == "head" and opt.param_groups[1]["betas"] == (0.9, 0.999)
    for _ in range(3):
        x = rng.standard_normal((4, 3))
        _loss_fg(ours, x).backward()
        _loss_torch(theirs, x).backward()
        opt.step(), topt.step()
        opt.clear_grad(), topt.zero_grad()
    for mine, ref in zip(ours, theirs):
        np.testing.assert_allclose(mine.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    layer = fg.nn.Linear(2, 2)
    with pytest.raises(ValueError, match=r"beta1 and beta2 must lie in \[0, 1\)"):
        fg.optimizer.Adam(0.1, parameters=[{"params": layer.parameters()}]).param_groups[0]["betas"] = (1.5, 0.9)
    with pytest.raises(TypeError, match="group 1"):
        fg.optimizer.Adam(0.1, parameters=[{"params": [layer.weight]}, layer.bias])


def test_param_attr_learning_rate_follows_a_static_scheduler():
    main, startup = fg.Program(), fg.Program()
    scheduler = fg.optimizer.lr.StepDecay(1.0, step_size=1, gamma=0.5)
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        y = fg.static.nn.fc(x, 2, bias_attr=fg.ParamAttr(name="groups_half_b", learning_rate=0.5))
        fg.optimizer.SGD(scheduler).minimize(fg.mean(y))
    exe, scope = fg.Executor(), fg.global_scope()
    exe.run(startup)
    for rate in [1.0, 0.5, 0.25]:
        before = np.array(scope["groups_half_b"])
        exe.run(main, feed={"x": np.ones((2, 3), np.float32)})
        np.testing.assert_allclose(before - np.array(scope["groups_half_b"]), np.full(2, 0.5 * rate * 0.5),
                                   rtol=1e-6)
        scheduler.step()


def test_a_gradient_of_another_dtype_is_cast_to_the_parameter():
    param = fg.to_tensor(np.ones(3, np.float32), stop_gradient=False)
    param.grad = fg.to_tensor(np.full(3, 2.0))             # float64
    fg.optimizer.Adam(0.1, parameters=[param]).step()
    ref = torch.ones(3, requires_grad=True)
    ref.grad = torch.full((3,), 2.0)
    torch.optim.Adam([ref], lr=0.1).step()
    assert param.numpy().dtype == np.float32
    np.testing.assert_allclose(param.numpy(), ref.detach().numpy(), rtol=1e-6)
