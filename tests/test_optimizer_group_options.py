"""Parameter groups as torch code uses them: a parameter listed twice, options written into
`optimizer.param_groups`, checked against torch.optim 2.13 step by step."""
import warnings

import numpy as np
import pytest
import torch

import fluidgrad as fg

_RNG = np.random.default_rng(13)


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_a_parameter_listed_twice_warns_as_torch_and_is_updated_once(name, eager):
    w = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters") as caught:
        opt = getattr(fg.optimizer, name)([w, w], lr=0.1)
    assert caught[0].filename == __file__           # the warning names the caller's line
    assert len(opt.param_groups[0]["params"]) == 1
    (w * w).sum().backward()
    opt.step()
    once = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    single = getattr(fg.optimizer, name)([once], lr=0.1)
    (once * once).sum().backward()
    single.step()
    np.testing.assert_array_equal(w.numpy(), once.numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(fg.optimizer, name)([w, once], lr=0.1)


def test_a_parameter_in_two_groups_is_refused_as_torch_refuses_it(eager):
    w, v = (fg.to_tensor(np.ones(2), stop_gradient=False) for _ in range(2))
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        fg.optimizer.Adam([{"params": [w]}, {"params": [v, w]}], lr=0.1)
    opt = fg.optimizer.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [v, w]})
    reference = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        torch.optim.Adam([{"params": [reference]}, {"params": [reference]}], lr=0.1)


def _weights():
    return _RNG.standard_normal((3, 2)), [_RNG.standard_normal((5, 3)) for _ in range(8)]   # RAdam: past step 6


def _train(fg_opt_of, torch_opt_of, w0, xs, change=lambda groups, step: None, steps=None):
    """Steps of sum(tanh(x @ W)^2) with fluidgrad's optimizer and torch's on the same weight,
    `change(param_groups, step)` applied to both before each step; returns both weights."""
    ours = fg.to_tensor(w0.copy(), stop_gradient=False)
    theirs = torch.nn.Parameter(torch.tensor(w0.copy()))
    opt, topt = fg_opt_of([ours]), torch_opt_of([theirs])
    for step, x in enumerate(xs):
        change(opt.param_groups, step)
        change(topt.param_groups, step)
        opt.clear_grad()
        fg.sum(fg.tanh(fg.matmul(fg.to_tensor(x), ours)) ** 2).backward()
        opt.step()
        topt.zero_grad()
        (torch.tanh(torch.tensor(x) @ theirs) ** 2).sum().backward()
        topt.step()
    return ours.numpy(), theirs.detach().numpy()


# (optimizer, constructor keywords, key written, value, before which step): torch's names throughout
_WRITES = [
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "momentum", 0.3, 1),
    ("SGD", {"lr": 0.1}, "momentum", 0.9, 1),                     # switched on, as torch does
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "nesterov", True, 1),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "weight_decay", 0.2, 1),
    ("SGD", {"lr": 0.1}, "lr", 0.3, 2),
    ("Adam", {"lr": 0.05}, "betas", (0.5, 0.6), 2),              # the bias correction reads the new betas
    ("Adam", {"lr": 0.05}, "eps", 1e-2, 1),
    ("Adam", {"lr": 0.05}, "weight_decay", 0.3, 1),
    ("Adam", {"lr": 0.05}, "amsgrad", True, 0),
    ("AdamW", {"lr": 0.05}, "weight_decay", 0.5, 1),
    ("AdamW", {"lr": 0.05}, "betas", (0.7, 0.8), 1),
    ("RMSprop", {"lr": 0.01}, "alpha", 0.5, 1),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5}, "momentum", 0.9, 1),
    ("RMSprop", {"lr": 0.01}, "centered", True, 0),
    ("RMSprop", {"lr": 0.01}, "eps", 1e-3, 1),
    ("Adagrad", {"lr": 0.1, "eps": 1e-10}, "eps", 1e-2, 1),        # torch's defaults where Paddle's differ
    ("Adagrad", {"lr": 0.1, "eps": 1e-10}, "weight_decay", 0.1, 1),
    ("Adadelta", {"lr": 1.0, "rho": 0.9}, "rho", 0.5, 1),
    ("Adadelta", {"lr": 1.0, "rho": 0.9}, "eps", 1e-3, 1),
    ("Adamax", {"lr": 0.05}, "betas", (0.6, 0.7), 2),
    ("Adamax", {"lr": 0.05}, "eps", 1e-2, 1),
    ("NAdam", {"lr": 0.05}, "momentum_decay", 0.01, 1),
    ("NAdam", {"lr": 0.05}, "eps", 1e-2, 1),
    ("RAdam", {"lr": 0.05}, "eps", 1e-2, 1),
    ("Rprop", {"lr": 0.05}, "etas", (0.3, 1.5), 2),
    ("Rprop", {"lr": 0.05}, "step_sizes", (1e-3, 0.06), 2),
]


@pytest.mark.parametrize("name, kwargs, key, value, at", _WRITES,
                         ids=[f"{n}({k}): {key}={v!r} before step {at}" for n, k, key, v, at in _WRITES])
def test_a_write_into_param_groups_takes_effect_at_the_next_step_as_in_torch(name, kwargs, key, value, at, eager):
    w0, xs = _weights()

    def change(groups, step):
        if step == at:
            for group in groups:
                group[key] = value
    ours, theirs = _train(lambda ps: getattr(fg.optimizer, name)(ps, **kwargs),
                          lambda ps: getattr(torch.optim, name)(ps, **kwargs), w0, xs, change)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    unchanged, torch_unchanged = _train(lambda ps: getattr(fg.optimizer, name)(ps, **kwargs),
                                        lambda ps: getattr(torch.optim, name)(ps, **kwargs), w0, xs)
    # the write changed the training exactly where torch's did (amsgrad may change nothing on 8 steps)
    assert np.allclose(ours, unchanged, rtol=1e-12, atol=0) == np.allclose(theirs, torch_unchanged, rtol=1e-12, atol=0)
    assert key == "amsgrad" or not np.allclose(ours, unchanged, rtol=1e-12, atol=0)


def test_groups_read_the_optimizers_options_under_both_spellings(eager):
    w = fg.to_tensor(np.ones(2), stop_gradient=False)
    group = fg.optimizer.Adam([w], lr=0.1, betas=(0.8, 0.9), eps=1e-6).param_groups[0]
    assert group["betas"] == (0.8, 0.9) and group["beta1"] == 0.8 and group["eps"] == group["epsilon"] == 1e-6
    assert group["weight_decay"] == 0.0 and group["lr"] == pytest.approx(0.1) and group["amsgrad"] is False
    assert {"params", "lr", "beta1", "beta2", "epsilon", "amsgrad", "weight_decay"} <= set(group)
    assert group._optimizer.defaults == {"lr": pytest.approx(0.1), "beta1": 0.8, "beta2": 0.9, "epsilon": 1e-6,
                                         "amsgrad": False, "weight_decay": 0.0}
    group["eps"] = 1e-3
    assert group["epsilon"] == 1e-3 and dict(group.items())["epsilon"] == 1e-3
    group["my_note"] = "kept"                                      # torch stores any key
    assert group["my_note"] == "kept" and group.get("missing", 7) == 7
    with pytest.raises(KeyError):
        group["missing"]
    with pytest.raises(TypeError, match="betas must be a pair"):
        group["betas"] = 0.9
    sgd = fg.optimizer.SGD([w], lr=0.1, momentum=0.9, nesterov=True)
    assert sgd.param_groups[0]["nesterov"] is True and sgd.param_groups[0]["momentum"] == 0.9
    sgd.momentum = 0.5                                             # the optimizer's own: every group without its own
    assert sgd.param_groups[0]["momentum"] == 0.5
    with pytest.raises(ValueError, match="dampening"):
        sgd.param_groups[0]["dampening"] = 0.1


def test_per_group_options_at_construction_and_in_add_param_group_follow_torch(eager):
    values = [_RNG.standard_normal(s) for s in [(3, 2), (2,), (2, 2)]]
    ours = [fg.to_tensor(v.copy(), stop_gradient=False) for v in values]
    theirs = [torch.nn.Parameter(torch.tensor(v.copy())) for v in values]

    def make(module, params):
        opt = module.AdamW([{"params": params[:1], "betas": (0.5, 0.7), "weight_decay": 0.3},
                            {"params": params[1:2], "eps": 1e-3, "amsgrad": True}], lr=0.05)
        opt.add_param_group({"params": params[2:], "lr": 0.01, "betas": (0.8, 0.85), "weight_decay": 0.0})
        return opt
    opt, topt = make(fg.optimizer, ours), make(torch.optim, theirs)
    for _ in range(4):
        x = _RNG.standard_normal((4, 3))
        opt.clear_grad(), topt.zero_grad()
        fg.sum(fg.tanh(fg.matmul(fg.tanh(fg.matmul(fg.to_tensor(x), ours[0]) + ours[1]), ours[2]))).backward()
        torch.tanh(torch.tanh(torch.tensor(x) @ theirs[0] + theirs[1]) @ theirs[2]).sum().backward()
        opt.step(), topt.step()
    for mine, ref in zip(ours, theirs):
        np.testing.assert_allclose(mine.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    state = opt.state_dict()                                       # the amsgrad group's own accumulator is saved
    assert any("Moment2Max" in slots for slots in state["state"].values())
    again = make(fg.optimizer, [fg.to_tensor(v, stop_gradient=False) for v in values])
    again.set_state_dict(state)


@pytest.mark.parametrize("name, kwargs", [("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
                                          ("Adam", {"lr": 0.05}), ("AdamW", {"lr": 0.05}),
                                          ("RMSprop", {"lr": 0.01, "momentum": 0.5}), ("NAdam", {"lr": 0.05})])
def test_one_cycle_cycles_momentum_or_beta1_in_the_groups_as_torch(name, kwargs, eager):
    w0, xs = _weights()
    schedulers = []

    def make(module, schedule_module):
        def build(params):
            opt = getattr(module, name)(params, **kwargs)
            schedulers.append(schedule_module.OneCycleLR(opt, max_lr=0.1, total_steps=len(xs) + 1))
            return opt
        return build

    def change(groups, step):
        if step:
            next(s for s in schedulers if s.optimizer.param_groups is groups).step()
    ours, theirs = _train(make(fg.optimizer, fg.optimizer.lr_scheduler), make(torch.optim, torch.optim.lr_scheduler),
                          w0, xs, change)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    key = "betas" if "Adam" in name else "momentum"
    assert schedulers[0].optimizer.param_groups[0][key] == pytest.approx(schedulers[1].optimizer.param_groups[0][key])


def test_lbfgs_reads_its_options_from_the_group(eager):
    w0, xs = _weights()
    ours, theirs = fg.to_tensor(w0.copy(), stop_gradient=False), torch.nn.Parameter(torch.tensor(w0.copy()))
    opt, topt = fg.optimizer.LBFGS([ours], lr=0.5), torch.optim.LBFGS([theirs], lr=0.5)
    for group in opt.param_groups + topt.param_groups:
        group["max_iter"] = 3
        group["history_size"] = 2

    def closure_fg():
        opt.clear_grad()
        loss = fg.sum(fg.tanh(fg.matmul(fg.to_tensor(xs[0]), ours)) ** 2)
        loss.backward()
        return loss

    def closure_torch():
        topt.zero_grad()
        loss = (torch.tanh(torch.tensor(xs[0]) @ theirs) ** 2).sum()
        loss.backward()
        return loss
    for _ in range(2):
        opt.step(closure_fg), topt.step(closure_torch)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert opt._state["n_iter"] == 6


def test_static_minimize_takes_the_groups_options_and_refuses_later_writes():
    import fluidgrad.nn.functional as F
    main, startup = fg.Program(), fg.Program()
    layer = fg.nn.Linear(3, 2, bias_attr=False).to(dtype="float64")
    w0, xs = _weights()
    layer.weight.set_value(w0.copy())
    opt = fg.optimizer.Adam([{"params": layer.parameters(), "betas": (0.5, 0.6), "weight_decay": 0.1}], lr=0.05)
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [5, 3], "float64")
        loss = fg.sum(F.tanh(layer(x)) ** 2)
        opt.minimize(loss)
    exe = fg.Executor()
    exe.run(startup)
    reference = torch.nn.Parameter(torch.tensor(w0.copy()))
    topt = torch.optim.Adam([{"params": [reference], "betas": (0.5, 0.6), "weight_decay": 0.1}], lr=0.05)
    for x_value in xs:
        exe.run(main, feed={"x": x_value})
        topt.zero_grad()
        (torch.tanh(torch.tensor(x_value) @ reference) ** 2).sum().backward()
        topt.step()
    weight = [v for v in main.global_block().vars.values() if v.persistable and list(v.shape) == [3, 2]][0]
    np.testing.assert_allclose(np.array(fg.global_scope()[weight.name]), reference.detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="after minimize"):
        opt.param_groups[0]["betas"] = (0.9, 0.99)
    opt.param_groups[0]["note"] = "stored"                        # a key no update reads: stored
