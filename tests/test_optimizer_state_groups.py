"""An optimizer's state dict with every group option (torch's form), per-group schedules in a static
program, and Adagrad's lr_decay (the `adagrad_decay` op) in a static program: each against an
uninterrupted eager run (bit for bit) and against torch.optim 2.13 doing the same."""
import numpy as np
import pytest
import torch

import fluidgrad as fg

_RNG = np.random.default_rng(14)
_W = [_RNG.standard_normal((3, 4)), _RNG.standard_normal(4), _RNG.standard_normal((4, 2))]
_XS = [_RNG.standard_normal((5, 3)) for _ in range(10)]


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


# two groups with different options (torch's spellings, read by both), and a fresh optimizer with other options
_GROUPS = {
    "SGD(momentum, nesterov)": (
        lambda m, p: m.SGD([{"params": p[:2], "momentum": 0.9, "nesterov": True},
                            {"params": p[2:], "lr": 0.05, "momentum": 0.5, "weight_decay": 0.01}], lr=0.1,
                           maximize=False),
        lambda m, p: m.SGD([{"params": p[:2]}, {"params": p[2:], "lr": 0.7}], lr=0.3, maximize=True)),
    "Adam(amsgrad)": (
        lambda m, p: m.Adam([{"params": p[:2], "amsgrad": True, "betas": (0.8, 0.9)},
                             {"params": p[2:], "lr": 0.01, "eps": 1e-3, "weight_decay": 0.1}], lr=0.05),
        lambda m, p: m.Adam([{"params": p[:2]}, {"params": p[2:]}], lr=0.3, betas=(0.5, 0.6))),
    "AdamW": (
        lambda m, p: m.AdamW([{"params": p[:2], "weight_decay": 0.3, "betas": (0.7, 0.95)},
                              {"params": p[2:], "lr": 0.01, "amsgrad": True}], lr=0.05),
        lambda m, p: m.AdamW([{"params": p[:2]}, {"params": p[2:]}], lr=0.2, weight_decay=0.0)),
    "RMSprop": (
        lambda m, p: m.RMSprop([{"params": p[:2], "momentum": 0.5, "centered": True},
                                {"params": p[2:], "alpha": 0.7, "lr": 0.001}], lr=0.01),
        lambda m, p: m.RMSprop([{"params": p[:2]}, {"params": p[2:], "eps": 1e-2}], lr=0.3)),
    "Adagrad": (
        lambda m, p: m.Adagrad([{"params": p[:2], "lr_decay": 0.1},
                                {"params": p[2:], "lr": 0.05, "eps": 1e-6, "weight_decay": 0.01}], lr=0.1),
        lambda m, p: m.Adagrad([{"params": p[:2]}, {"params": p[2:], "lr_decay": 0.5}], lr=0.3)),
}


def _params(m):
    if m is torch:
        return [torch.nn.Parameter(torch.tensor(w.copy())) for w in _W]
    return [fg.to_tensor(w.copy(), stop_gradient=False) for w in _W]


def _loss(m, p, x):
    if m is torch:
        return ((torch.tanh(torch.tensor(x) @ p[0] + p[1]) @ p[2]) ** 2).sum()
    x = fg.to_tensor(x) if isinstance(x, np.ndarray) else x     # a static program's data variable as it is
    return fg.sum(fg.matmul(fg.tanh(fg.matmul(x, p[0]) + p[1]), p[2]) ** 2)


def _train(m, optimizer, params, xs):
    for x in xs:
        optimizer.zero_grad()
        _loss(m, params, x).backward()
        optimizer.step()


def _values(m, params):
    return [p.detach().numpy().copy() if m is torch else p.numpy().copy() for p in params]


def _resumed(m, name, through=lambda state: state):
    """Five steps, the optimizer's state through `through`, a fresh optimizer with other options
    loading it, five more steps: the parameters."""
    make, fresh = _GROUPS[name]
    params = _params(m)
    optimizer = make(m.optim if m is torch else fg.optimizer, params)
    _train(m, optimizer, params, _XS[:5])
    state = through(optimizer.state_dict())
    again = fresh(m.optim if m is torch else fg.optimizer, params)
    again.load_state_dict(state)
    _train(m, again, params, _XS[5:])
    return _values(m, params)


def _uninterrupted(m, name):
    params = _params(m)
    _train(m, _GROUPS[name][0](m.optim if m is torch else fg.optimizer, params), params, _XS)
    return _values(m, params)


def _through_file(tmp_path):
    def through(state):
        fg.save(state, tmp_path / "optimizer.pdopt")
        return fg.load(tmp_path / "optimizer.pdopt")
    return through


@pytest.mark.parametrize("name", sorted(_GROUPS))
def test_a_resumed_optimizer_trains_as_the_uninterrupted_one_and_as_torch(name, tmp_path):
    expected = _uninterrupted(fg, name)
    for got in (_resumed(fg, name), _resumed(fg, name, _through_file(tmp_path))):
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)
    theirs, theirs_resumed = _uninterrupted(torch, name), _resumed(torch, name)
    for a, b, c in zip(expected, theirs, theirs_resumed):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)
    fresh = _params(fg)
    _train(fg, _GROUPS[name][1](fg.optimizer, fresh), fresh, _XS)   # the fresh options alone train otherwise
    assert not all(np.allclose(a, b) for a, b in zip(_values(fg, fresh), expected))


@pytest.mark.parametrize("name", sorted(_GROUPS))
def test_the_saved_groups_hold_torchs_options_and_parameter_ids(name):
    ours, theirs = _params(fg), _params(torch)
    optimizer, reference = _GROUPS[name][0](fg.optimizer, ours), _GROUPS[name][0](torch.optim, theirs)
    _train(fg, optimizer, ours, _XS[:2])
    _train(torch, reference, theirs, _XS[:2])
    state, expected = optimizer.state_dict(), reference.state_dict()
    assert sorted(state["state"]) == sorted(expected["state"])
    for index, (group, want) in enumerate(zip(state["param_groups"], expected["param_groups"])):
        assert group["params"] == want["params"] and group["lr"] == pytest.approx(want["lr"], rel=1e-15)
        assert group["weight_decay"] == want["weight_decay"] and group["maximize"] == want["maximize"]
        for key in ("momentum", "nesterov", "betas", "eps", "amsgrad", "alpha", "centered", "lr_decay"):
            if key in want and key in optimizer.param_groups[index]:   # torch's spellings read the saved options
                assert optimizer.param_groups[index][key] == pytest.approx(want[key]), key


def test_options_written_into_groups_and_keys_of_ones_own_round_trip():
    params = _params(fg)
    optimizer = fg.optimizer.Adam([{"params": params[:2]}, {"params": params[2:]}], lr=0.05)
    optimizer.param_groups[1]["betas"] = (0.6, 0.7)
    optimizer.param_groups[0]["note"] = "backbone"
    optimizer.param_groups[1]["weight_decay"] = fg.regularizer.L1Decay(0.01)
    _train(fg, optimizer, params, _XS[:3])
    again = fg.optimizer.Adam([{"params": params[:2]}, {"params": params[2:]}], lr=0.3)
    again.set_state_dict(optimizer.state_dict())
    assert again.param_groups[1]["betas"] == (0.6, 0.7) and again.param_groups[0]["note"] == "backbone"
    assert isinstance(again.param_groups[1]["weight_decay"], fg.regularizer.L1Decay)
    assert [g["lr"] for g in again.param_groups] == [g["lr"] for g in optimizer.param_groups]
    twin = [fg.to_tensor(p.numpy().copy(), stop_gradient=False) for p in params]
    twin_opt = fg.optimizer.Adam([{"params": twin[:2]}, {"params": twin[2:]}], lr=0.3)
    twin_opt.set_state_dict(optimizer.state_dict())
    _train(fg, optimizer, params, _XS[3:6])
    _train(fg, twin_opt, twin, _XS[3:6])
    for a, b in zip(params, twin):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_torchs_own_param_groups_load_into_a_fluidgrad_optimizer():
    reference = torch.optim.Adam([{"params": _params(torch)[:2], "betas": (0.5, 0.6)},
                                  {"params": _params(torch)[2:], "lr": 0.01, "eps": 1e-4, "amsgrad": True}], lr=0.05)
    params = _params(fg)
    optimizer = fg.optimizer.Adam([{"params": params[:2]}, {"params": params[2:]}], lr=0.3)
    optimizer.load_state_dict({"state": {}, "param_groups": reference.state_dict()["param_groups"]})
    for group, want in zip(optimizer.param_groups, reference.param_groups):
        for key in ("lr", "betas", "eps", "amsgrad", "weight_decay"):
            assert group[key] == pytest.approx(want[key]), key


def test_state_dicts_of_earlier_versions_still_load():
    """The flat form (`<param name>.<slot>`, "param_groups" of rates), as fluidgrad wrote it before."""
    params = _params(fg)
    for i, p in enumerate(params):
        p.name = f"w{i}"
    optimizer = fg.optimizer.Adam([{"params": params[:2]}, {"params": params[2:], "lr": 0.01}], lr=0.05)
    _train(fg, optimizer, params, _XS[:5])
    earlier = {f"{p.name}.{slot}": value.copy() for p, slots in optimizer.state.items() for slot, value in
               slots.items()}
    earlier["param_groups"] = [{"lr": 0.05}, {"lr": 0.01}]
    twin = [fg.to_tensor(p.numpy().copy(), stop_gradient=False) for p in params]
    for i, p in enumerate(twin):
        p.name = f"w{i}"
    again = fg.optimizer.Adam([{"params": twin[:2]}, {"params": twin[2:], "lr": 0.01}], lr=0.05)
    again.set_state_dict(earlier)
    _train(fg, optimizer, params, _XS[5:])
    _train(fg, again, twin, _XS[5:])
    for a, b in zip(params, twin):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_groups_or_sizes_that_do_not_match_are_clear_errors():
    params = _params(fg)
    optimizer = fg.optimizer.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1, momentum=0.9)
    _train(fg, optimizer, params, _XS[:1])
    state = optimizer.state_dict()
    with pytest.raises(ValueError, match=r"SGD.set_state_dict: the state has 2 parameter groups, this optimizer "
                                         r"has 1"):
        fg.optimizer.SGD(params, lr=0.1).set_state_dict(state)
    with pytest.raises(ValueError, match=r"parameter group 0 holds 2 parameters in the state, 1 in this optimizer"):
        fg.optimizer.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1).set_state_dict(state)
    wrong = optimizer.state_dict()
    wrong["state"][2]["Velocity"] = np.zeros(3)
    with pytest.raises(ValueError, match=r"state\[2\].Velocity \(parameter .*\) has shape \[3\], expected \[4, 2\]"):
        fg.optimizer.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1).set_state_dict(wrong)
    wrong = optimizer.state_dict()
    wrong["state"][0]["Moment1"] = np.zeros((3, 4))
    with pytest.raises(ValueError, match=r"state\[0\] has an accumulator 'Moment1'; the update of its group has "
                                         r"\['Velocity'\]"):
        fg.optimizer.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1).set_state_dict(wrong)


# ------------------------------------------------------------------ per-group schedules in a static program
_SCHEDULES = {
    "LambdaLR(one lambda per group)": lambda s, o: s.LambdaLR(o, [lambda e: 0.8 ** e, lambda e: 1.0 / (1 + e)]),
    "MultiplicativeLR(one lambda per group)": lambda s, o: s.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 0.7]),
    "StepLR(each group scaled)": lambda s, o: s.StepLR(o, step_size=2, gamma=0.5),
    "CosineAnnealingLR(eta_min)": lambda s, o: s.CosineAnnealingLR(o, T_max=4, eta_min=5e-3),
    "OneCycleLR(max_lr per group)": lambda s, o: s.OneCycleLR(o, max_lr=[0.2, 0.05], total_steps=8,
                                                              cycle_momentum=False),
}


def _grouped(module, params):
    return module.SGD([{"params": params[:2]}, {"params": params[2:], "lr": 0.01}], lr=0.1, momentum=0.9)


def _scheduled_eager(m, schedule, steps=7):
    params = _params(m)
    optimizer = _grouped(torch.optim if m is torch else fg.optimizer, params)
    scheduler = schedule(torch.optim.lr_scheduler if m is torch else fg.optimizer.lr_scheduler, optimizer)
    rates = []
    for x in _XS[:steps]:
        _train(m, optimizer, params, [x])
        scheduler.step()
        rates.append(list(scheduler.get_last_lr()))
    return _values(m, params), rates


def _static_parameters():
    return [fg.static.create_parameter(list(w.shape), "float64", name=f"w{i}",
                                       default_initializer=fg.nn.initializer.Assign(w)) for i, w in enumerate(_W)]


def _static_run(make_optimizer, steps, between=lambda optimizer: None):
    """The same training as a Program run by the Executor; `between(optimizer)` after each run."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [5, 3], "float64")
        params = _static_parameters()
        optimizer, extra = make_optimizer(params)
        optimizer.minimize(_loss(fg, params, x))
    with fg.scope_guard(fg.Scope()) as scope:
        exe = fg.Executor()
        exe.run(startup)
        for value in _XS[:steps]:
            exe.run(main, feed={"x": value})
            between(extra)
        return [np.array(fg.global_scope()[f"w{i}"]) for i in range(len(_W))], main, scope


@pytest.mark.parametrize("schedule", sorted(_SCHEDULES))
def test_a_per_group_schedule_steps_a_static_program_as_eager_mode(schedule):
    make = _SCHEDULES[schedule]
    eager_values, rates = _scheduled_eager(fg, make)

    def build(params):
        optimizer = _grouped(fg.optimizer, params)
        return optimizer, make(fg.optimizer.lr_scheduler, optimizer)
    static_values, _, _ = _static_run(build, 7, lambda scheduler: scheduler.step())
    for a, b in zip(static_values, eager_values):
        np.testing.assert_array_equal(a, b)
    torch_values, torch_rates = _scheduled_eager(torch, make)
    np.testing.assert_allclose(rates, torch_rates, rtol=1e-12)
    for a, b in zip(eager_values, torch_values):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    unscheduled, _, _ = _static_run(lambda params: (_grouped(fg.optimizer, params), None), 7)
    assert not all(np.allclose(a, b) for a, b in zip(unscheduled, static_values))


def test_a_list_of_lambdas_of_the_wrong_length_is_refused_as_torch():
    optimizer = _grouped(fg.optimizer, _params(fg))
    with pytest.raises(ValueError, match=r"LambdaLR: Expected 2 lr_lambdas \(one per parameter group\), but got 3"):
        fg.optimizer.lr_scheduler.LambdaLR(optimizer, [lambda e: 1.0] * 3)


# ------------------------------------------------------------------ Adagrad's lr_decay in a static program
def _adagrad(module, params):
    return module.Adagrad([{"params": params[:2], "lr_decay": 0.2},
                           {"params": params[2:], "lr": 0.05, "lr_decay": 0.05}], lr=0.1, eps=1e-10)


def test_adagrad_lr_decay_in_a_static_program_equals_eager_and_torch():
    params = _params(fg)
    _train(fg, _adagrad(fg.optimizer, params), params, _XS[:6])
    static_values, main, _ = _static_run(lambda ps: (_adagrad(fg.optimizer, ps), None), 6)
    assert [op.type for op in main.global_block().ops].count("adagrad_decay") == 3
    for a, b in zip(static_values, _values(fg, params)):
        np.testing.assert_array_equal(a, b)
    theirs = _params(torch)
    _train(torch, _adagrad(torch.optim, theirs), theirs, _XS[:6])
    for a, b in zip(static_values, _values(torch, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    undecayed = _params(fg)
    _train(fg, fg.optimizer.Adagrad([{"params": undecayed[:2]}, {"params": undecayed[2:], "lr": 0.05}], lr=0.1,
                                    eps=1e-10), undecayed, _XS[:6])
    assert not np.allclose(undecayed[0].numpy(), static_values[0])


def test_adagrad_decay_op_counts_the_steps_before_the_rate():
    param, grad, moment = np.array([1.0, -2.0]), np.array([0.5, 0.25]), np.zeros(2)
    kernel = fg.ops.optim.update_kernel("adagrad_decay", epsilon=1e-10, lr_decay=0.5)
    out, moment_out, step = kernel(param, grad, moment, np.array([2.0]), np.array([0.3]))
    rate = 0.3 / (1 + 2.0 * 0.5)
    np.testing.assert_allclose(out, param - rate * grad / (np.sqrt(grad * grad) + 1e-10), rtol=1e-15)
    assert step.tolist() == [3.0] and moment_out.tolist() == (grad * grad).tolist()
