"""A PyTorch user's optimizer habits, checked against torch.optim: load_state_dict (Paddle:
set_state_dict), add_param_group (Paddle: _add_param_group) and optimizer.state."""
import numpy as np
import pytest
import torch

import fluidgrad as fg

RNG = np.random.default_rng(7)
X = RNG.standard_normal((5, 3))
START = {"w1": RNG.standard_normal((3, 4)), "w2": RNG.standard_normal((4, 2)), "w3": RNG.standard_normal((2, 1))}


def _fg_params():
    return {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in START.items()}


def _torch_params():
    return {k: torch.tensor(v.copy(), requires_grad=True) for k, v in START.items()}


def _fg_step(opt, p):
    h = fg.tanh(fg.matmul(fg.tanh(fg.matmul(fg.to_tensor(X), p["w1"])), p["w2"]))
    fg.sum(fg.square(fg.matmul(h, p["w3"]) - 1.0)).backward()
    opt.step()
    opt.clear_grad()


def _torch_step(opt, p):
    h = torch.tanh(torch.tanh(torch.tensor(X) @ p["w1"]) @ p["w2"])
    ((h @ p["w3"] - 1.0) ** 2).sum().backward()
    opt.step()
    opt.zero_grad()


def _assert_same(fg_params, torch_params):
    for name in fg_params:
        np.testing.assert_allclose(fg_params[name].numpy(), torch_params[name].detach().numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)


@pytest.mark.parametrize("spelling", ["load_state_dict", "set_state_dict"])
def test_adam_resumed_from_its_state_dict_continues_as_torch(spelling):
    ours, theirs = _fg_params(), _torch_params()
    opt = fg.optimizer.Adam(list(ours.values()), lr=0.05)
    reference = torch.optim.Adam(list(theirs.values()), lr=0.05)
    for _ in range(3):
        _fg_step(opt, ours)
        _torch_step(reference, theirs)
    saved = opt.state_dict()
    # a model built again from the saved values, with a new optimizer given the saved state
    resumed = {k: fg.to_tensor(v.numpy().copy(), stop_gradient=False) for k, v in ours.items()}
    resumed_opt = fg.optimizer.Adam(learning_rate=0.05, parameters=list(resumed.values()))
    getattr(resumed_opt, spelling)(saved)
    torch_resumed = {k: torch.tensor(v.detach().numpy().copy(), requires_grad=True) for k, v in theirs.items()}
    torch_resumed_opt = torch.optim.Adam(list(torch_resumed.values()), lr=0.05)
    torch_resumed_opt.load_state_dict(reference.state_dict())
    for _ in range(3):
        _fg_step(opt, ours)
        _fg_step(resumed_opt, resumed)
        _torch_step(torch_resumed_opt, torch_resumed)
    for name in ours:
        np.testing.assert_array_equal(resumed[name].numpy(), ours[name].numpy())
    _assert_same(resumed, torch_resumed)


def test_state_is_a_dict_of_each_parameters_accumulators():
    ours, theirs = _fg_params(), _torch_params()
    opt = fg.optimizer.Adam([ours["w1"], ours["w2"]], lr=0.05)
    reference = torch.optim.Adam([theirs["w1"], theirs["w2"]], lr=0.05)
    assert isinstance(opt.state, dict) and len(opt.state) == 0
    for _ in range(2):
        _fg_step(opt, ours)
        _torch_step(reference, theirs)
    assert isinstance(opt.state, dict) and set(map(id, opt.state)) == {id(ours["w1"]), id(ours["w2"])}
    for name in ("w1", "w2"):
        np.testing.assert_allclose(opt.state[ours[name]]["Moment1"], reference.state[theirs[name]]["exp_avg"],
                                   rtol=1e-10)
        np.testing.assert_allclose(opt.state[ours[name]]["Moment2"], reference.state[theirs[name]]["exp_avg_sq"],
                                   rtol=1e-10)
    assert opt.state[ours["w3"]] == {}          # not one of its parameters: nothing recorded
    assert ours["w3"] not in opt.state


def test_writing_into_state_changes_the_next_step():
    ours, theirs = _fg_params(), _torch_params()
    opt = fg.optimizer.Adam([ours["w1"]], lr=0.05)
    reference = torch.optim.Adam([theirs["w1"]], lr=0.05)
    _fg_step(opt, ours)
    _torch_step(reference, theirs)
    opt.state[ours["w1"]]["Moment1"] = np.zeros((3, 4))
    reference.state[theirs["w1"]]["exp_avg"].zero_()
    _fg_step(opt, ours)
    _torch_step(reference, theirs)
    _assert_same({"w1": ours["w1"]}, {"w1": theirs["w1"]})


def test_state_of_a_parameter_before_its_first_step_is_filled_by_it():
    ours = _fg_params()
    opt = fg.optimizer.Adam([ours["w1"]], lr=0.05)
    slots = opt.state[ours["w1"]]
    assert slots == {}
    _fg_step(opt, ours)
    assert set(slots) == {"Moment1", "Moment2", "Beta1Pow", "Beta2Pow"}
    assert opt.state[ours["w1"]] is slots


@pytest.mark.parametrize("spelling", ["add_param_group", "_add_param_group"])
def test_add_param_group_trains_the_new_parameters_as_torch(spelling):
    ours, theirs = _fg_params(), _torch_params()
    opt = fg.optimizer.Adam([ours["w1"]], lr=0.05, weight_decay=0.1)
    reference = torch.optim.Adam([theirs["w1"]], lr=0.05, weight_decay=0.1)
    for _ in range(2):
        _fg_step(opt, ours)
        _torch_step(reference, theirs)
    # w2 with its own rate, w3 with the optimizer's options (rate and weight decay)
    getattr(opt, spelling)({"params": [ours["w2"]], "lr": 0.01, "weight_decay": 0.0})
    getattr(opt, spelling)({"params": ours["w3"]})
    reference.add_param_group({"params": [theirs["w2"]], "lr": 0.01, "weight_decay": 0.0})
    reference.add_param_group({"params": theirs["w3"]})
    assert len(opt.param_groups) == 3
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.05, 0.01, 0.05])
    for _ in range(3):
        _fg_step(opt, ours)
        _torch_step(reference, theirs)
    _assert_same(ours, theirs)
    state = opt.state_dict()
    assert sorted(state["state"]) == [0, 1, 2] and [g["params"] for g in state["param_groups"]] == [[0], [1], [2]]
    assert all(len(slots) == 4 for slots in state["state"].values())     # every parameter's accumulators


def test_add_param_group_with_paddles_ratio():
    ours = _fg_params()
    opt = fg.optimizer.SGD(learning_rate=0.1, parameters=[ours["w1"]])
    opt.add_param_group({"params": [ours["w2"]], "learning_rate": 0.5})   # Paddle: a ratio to the rate
    before = ours["w2"].numpy().copy()
    _fg_step(opt, ours)
    grad_free_step = before - ours["w2"].numpy()
    ours2 = _fg_params()
    h = fg.tanh(fg.matmul(fg.tanh(fg.matmul(fg.to_tensor(X), ours2["w1"])), ours2["w2"]))
    fg.sum(fg.square(fg.matmul(h, ours2["w3"]) - 1.0)).backward()
    np.testing.assert_allclose(grad_free_step, 0.05 * ours2["w2"].grad.numpy(), rtol=1e-10)


def test_add_param_group_refuses_a_parameter_it_already_has():
    ours = _fg_params()
    opt = fg.optimizer.Adam([ours["w1"], ours["w2"]], lr=0.05)
    with pytest.raises(ValueError, match="already belong"):
        opt.add_param_group({"params": [ours["w2"], ours["w3"]]})
    assert len(opt.param_groups) == 1
    with pytest.raises(TypeError, match="'params'"):
        opt.add_param_group({"lr": 0.1})
    opt.add_param_group({"params": [ours["w3"]], "momentum": 0.9})    # a key Adam does not read: stored, as torch
    assert len(opt.param_groups) == 2 and len(opt._parameter_list) == 3
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["betas"] == (0.9, 0.999)


def test_add_param_group_needs_a_parameter_list():
    opt = fg.optimizer.SGD(learning_rate=0.1)
    with pytest.raises(ValueError, match="without parameters"):
        opt.add_param_group({"params": [fg.to_tensor(np.ones(2), stop_gradient=False)]})
