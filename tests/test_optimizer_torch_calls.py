"""torch.optim's calls of session 13 against torch 2.13, step by step: maximize=, Adagrad's
lr_decay=, torch's defaults when an optimizer is called torch's way (Paddle's calls keep
Paddle's), a rate set by hand surviving state_dict / load_state_dict, and torch's errors for
an empty parameter list, negative rates and a model given in place of its parameters."""
import numpy as np
import pytest
import torch

import fluidgrad as fg

_RNG = np.random.default_rng(13)


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _trajectories(make, steps=4, **kwargs):
    """The weight after each step of sum(tanh(x0 @ W)^2), fluidgrad's and torch's."""
    w0, x0 = _RNG.standard_normal((3, 2)), _RNG.standard_normal((5, 3))
    reference = torch.nn.Parameter(torch.tensor(w0.copy()))
    weight = fg.to_tensor(w0.copy(), stop_gradient=False)
    ours, theirs = make(fg.optimizer, [weight]), make(torch.optim, [reference])
    got, want = [], []
    for _ in range(steps):
        theirs.zero_grad()
        (torch.tanh(torch.tensor(x0) @ reference) ** 2).sum().backward()
        theirs.step()
        ours.zero_grad()
        (fg.tanh(fg.to_tensor(x0) @ weight) ** 2).sum().backward()
        ours.step()
        got.append(weight.numpy().copy())
        want.append(reference.detach().numpy().copy())
    return np.array(got), np.array(want)


_MAXIMIZE = {
    "SGD": lambda o, p: o.SGD(p, lr=0.1, maximize=True),
    "SGD momentum nesterov weight_decay": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9, nesterov=True,
                                                             weight_decay=0.01, maximize=True),
    "Adam": lambda o, p: o.Adam(p, lr=0.01, maximize=True),
    "Adam amsgrad weight_decay": lambda o, p: o.Adam(p, lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True),
    "AdamW": lambda o, p: o.AdamW(p, lr=0.01, weight_decay=0.1, maximize=True),
    "RMSprop": lambda o, p: o.RMSprop(p, lr=0.01, maximize=True),
    "Adagrad": lambda o, p: o.Adagrad(p, lr=0.1, maximize=True),
    "Adadelta": lambda o, p: o.Adadelta(p, maximize=True),
    "Adamax": lambda o, p: o.Adamax(p, maximize=True),
    "NAdam": lambda o, p: o.NAdam(p, maximize=True),
    "RAdam": lambda o, p: o.RAdam(p, lr=0.01, maximize=True),
    "Rprop": lambda o, p: o.Rprop(p, maximize=True),
}


@pytest.mark.parametrize("name", sorted(_MAXIMIZE))
def test_maximize_climbs_as_torch(name):
    got, want = _trajectories(_MAXIMIZE[name])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_maximize_in_a_static_program_climbs_the_loss(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 1)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        w = fg.static.create_parameter([3], "float64", attr=fg.ParamAttr(name="w_max"))
        g = fg.static.data("g", [3], "float64")
        fg.optimizer.Adam(learning_rate=0.01, maximize=True).minimize(fg.sum(w * g))
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    w0, grads = _RNG.standard_normal(3), _RNG.standard_normal((3, 3))
    scope["w_max"] = w0.copy()
    reference = torch.nn.Parameter(torch.tensor(w0.copy()))
    theirs = torch.optim.Adam([reference], lr=0.01, maximize=True)
    for grad in grads:
        exe.run(main, feed={"g": grad}, scope=scope)
        theirs.zero_grad()
        reference.grad = torch.tensor(grad)
        theirs.step()
    np.testing.assert_allclose(np.array(scope["w_max"]), reference.detach().numpy(), rtol=1e-9)


def test_lbfgs_takes_no_maximize_as_torch():
    with pytest.raises(TypeError, match="maximize"):
        fg.optimizer.LBFGS([fg.to_tensor(np.zeros(2), stop_gradient=False)], maximize=True)


@pytest.mark.parametrize("lr_decay", [0.1, 0.5])
def test_adagrad_lr_decay_as_torch(lr_decay):
    got, want = _trajectories(lambda o, p: o.Adagrad(p, lr=0.1, lr_decay=lr_decay), steps=5)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


_TORCH_CALLS = {
    "Adadelta(params)": lambda o, p: o.Adadelta(p),
    "Adadelta(params, lr=0.5)": lambda o, p: o.Adadelta(p, lr=0.5),
    "Adamax(params)": lambda o, p: o.Adamax(p),
    "Rprop(params)": lambda o, p: o.Rprop(p),
    "Adagrad(params)": lambda o, p: o.Adagrad(p),
    "Adagrad(params, 0.05)": lambda o, p: o.Adagrad(p, 0.05),
}


@pytest.mark.parametrize("call", sorted(_TORCH_CALLS))
def test_torch_style_calls_take_torchs_defaults(call):
    got, want = _trajectories(_TORCH_CALLS[call], steps=5)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_paddle_style_calls_keep_paddles_defaults():
    w = fg.to_tensor(np.zeros(2), stop_gradient=False)
    adadelta = fg.optimizer.Adadelta(parameters=[w])
    assert adadelta.get_lr() == pytest.approx(0.001) and adadelta.rho == 0.95
    assert fg.optimizer.Adamax(parameters=[w]).get_lr() == pytest.approx(0.001)
    rprop = fg.optimizer.Rprop(parameters=[w])
    assert rprop.get_lr() == pytest.approx(0.001) and rprop.learning_rate_range == (1e-5, 50.0)
    assert fg.optimizer.Adagrad(learning_rate=0.1, parameters=[w]).epsilon == 1e-6


def _resumed_rates(m, set_rates):
    optim = torch.optim if m is torch else fg.optimizer
    a, b = m.nn.Linear(2, 2), m.nn.Linear(2, 1)
    optimizer = optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.01}], lr=0.1,
                          momentum=0.9)
    b(a(m.ones([1, 2]))).sum().backward()
    optimizer.step()
    set_rates(optimizer)
    state = optimizer.state_dict()
    resumed = optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.01}], lr=0.1,
                        momentum=0.9)
    resumed.load_state_dict(state)
    return [group["lr"] for group in resumed.param_groups]


@pytest.mark.parametrize("rates", [(0.05, 0.002), (0.1, 0.003), (0.01, 0.01)])
def test_state_dict_restores_each_groups_rate(rates):
    def set_rates(optimizer):
        for group, rate in zip(optimizer.param_groups, rates):
            group["lr"] = rate
    assert _resumed_rates(fg, set_rates) == pytest.approx(_resumed_rates(torch, set_rates), rel=1e-12)


def test_state_dict_has_torchs_keys_and_a_rate_set_by_hand():
    layer = fg.nn.Linear(2, 2)
    optimizer = fg.optimizer.Adam(layer.parameters(), lr=0.1)
    layer(fg.ones([1, 2])).sum().backward()
    optimizer.step()
    reference = torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    assert {"state", "param_groups"} <= set(optimizer.state_dict()) and set(reference.state_dict()) == {
        "state", "param_groups"}
    optimizer.set_lr(0.02)
    assert optimizer.state_dict()["param_groups"][0]["lr"] == pytest.approx(0.02)


def test_state_dict_of_other_groups_is_refused():
    layer = fg.nn.Linear(2, 2)
    optimizer = fg.optimizer.Adam(layer.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="param_groups"):
        optimizer.set_state_dict({"param_groups": [{"lr": 0.1}, {"lr": 0.2}]})


@pytest.mark.parametrize("call, error, words", [
    (lambda layer: fg.optimizer.SGD([], lr=0.1), ValueError, "empty parameter list"),
    (lambda layer: fg.optimizer.Adam(layer.parameters(), lr=-0.5), ValueError, "Invalid learning rate"),
    (lambda layer: fg.optimizer.AdamW(layer.parameters(), lr=0.1, eps=-1e-8), ValueError, "Invalid epsilon"),
    (lambda layer: fg.optimizer.SGD(layer.parameters, lr=0.1), TypeError, "parameters()"),
    (lambda layer: fg.optimizer.SGD(layer, lr=0.1), TypeError, "parameters"),
    (lambda layer: fg.optimizer.Adam(layer.parameters), TypeError, "parameters()"),
])
def test_torch_errors_for_bad_arguments(call, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        call(fg.nn.Linear(2, 1))
