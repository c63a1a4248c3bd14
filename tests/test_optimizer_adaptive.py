"""RMSProp, Adagrad, Adamax, Adadelta, Rprop, NAdam, RAdam (and Adam / AdamW with amsgrad, SGD with
momentum, spelled as torch.optim spells them) against torch.optim: static minimize() and eager step()
over several steps, with weight decay, clipping, per-parameter rates (ParamAttr and parameter
groups), a resumed state_dict, float32 kept, and the refusals of bad arguments."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import optimizer as opt

SHAPES = {"w": (3, 4), "b": (4,)}
STEPS = 8   # RAdam below rectifies its rate from step 6 on

# name: (fluidgrad optimizer from (weight_decay, grad_clip, parameters), torch optimizer from (params, weight_decay))
OPTIMIZERS = {
    "rmsprop": (lambda wd, clip, ps=None: opt.RMSProp(0.01, rho=0.9, epsilon=1e-6, weight_decay=wd, grad_clip=clip,
                                                       parameters=ps),
                lambda ps, wd: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9, eps=1e-6, weight_decay=wd or 0.0)),
    "rmsprop centered momentum": (
        lambda wd, clip, ps=None: opt.RMSProp(0.02, rho=0.8, epsilon=1e-5, momentum=0.7, centered=True,
                                              weight_decay=wd, grad_clip=clip, parameters=ps),
        lambda ps, wd: torch.optim.RMSprop(ps, lr=0.02, alpha=0.8, eps=1e-5, momentum=0.7, centered=True,
                                           weight_decay=wd or 0.0)),
    "rmsprop momentum": (lambda wd, clip, ps=None: opt.RMSProp(0.01, momentum=0.5, weight_decay=wd, grad_clip=clip,
                                                                parameters=ps),
                         lambda ps, wd: torch.optim.RMSprop(ps, lr=0.01, alpha=0.95, eps=1e-6, momentum=0.5,
                                                            weight_decay=wd or 0.0)),
    # torch's name: torch's defaults (lr 0.01, alpha 0.99, eps 1e-8)
    "RMSprop defaults": (lambda wd, clip, ps=None: opt.RMSprop(weight_decay=wd, grad_clip=clip, parameters=ps),
                         lambda ps, wd: torch.optim.RMSprop(ps, weight_decay=wd or 0.0)),
    "RMSprop centered": (lambda wd, clip, ps=None: opt.RMSprop(lr=0.02, centered=True, weight_decay=wd, grad_clip=clip,
                                                               parameters=ps),
                         lambda ps, wd: torch.optim.RMSprop(ps, lr=0.02, centered=True, weight_decay=wd or 0.0)),
    "RMSprop momentum centered": (
        lambda wd, clip, ps=None: opt.RMSprop(lr=0.01, momentum=0.6, centered=True, alpha=0.9, weight_decay=wd,
                                              grad_clip=clip, parameters=ps),
        lambda ps, wd: torch.optim.RMSprop(ps, lr=0.01, momentum=0.6, centered=True, alpha=0.9,
                                           weight_decay=wd or 0.0)),
    "adagrad": (lambda wd, clip, ps=None: opt.Adagrad(0.1, epsilon=1e-6, weight_decay=wd, grad_clip=clip,
                                                       parameters=ps),
                lambda ps, wd: torch.optim.Adagrad(ps, lr=0.1, eps=1e-6, weight_decay=wd or 0.0)),
    "adagrad initial accumulator": (
        lambda wd, clip, ps=None: opt.Adagrad(0.1, weight_decay=wd, grad_clip=clip, parameters=ps,
                                              initial_accumulator_value=0.3),
        lambda ps, wd: torch.optim.Adagrad(ps, lr=0.1, eps=1e-6, initial_accumulator_value=0.3,
                                           weight_decay=wd or 0.0)),
    "adamax": (lambda wd, clip, ps=None: opt.Adamax(0.05, beta1=0.8, beta2=0.95, epsilon=1e-6, weight_decay=wd,
                                                     grad_clip=clip, parameters=ps),
               lambda ps, wd: torch.optim.Adamax(ps, lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=wd or 0.0)),
    "adadelta": (lambda wd, clip, ps=None: opt.Adadelta(0.5, epsilon=1e-6, rho=0.9, weight_decay=wd, grad_clip=clip,
                                                         parameters=ps),
                 lambda ps, wd: torch.optim.Adadelta(ps, lr=0.5, rho=0.9, eps=1e-6, weight_decay=wd or 0.0)),
    "adam amsgrad": (lambda wd, clip, ps=None: opt.Adam(0.05, betas=(0.8, 0.95), eps=1e-6, amsgrad=True,
                                                         weight_decay=wd, grad_clip=clip, parameters=ps),
                     lambda ps, wd: torch.optim.Adam(ps, lr=0.05, betas=(0.8, 0.95), eps=1e-6, amsgrad=True,
                                                     weight_decay=wd or 0.0)),
    "adamw amsgrad": (lambda wd, clip, ps=None: opt.AdamW(0.05, beta1=0.8, amsgrad=True, weight_decay=wd or 0.0,
                                                          grad_clip=clip, parameters=ps),
                      lambda ps, wd: torch.optim.AdamW(ps, lr=0.05, betas=(0.8, 0.999), amsgrad=True,
                                                       weight_decay=wd or 0.0)),
    "nadam": (lambda wd, clip, ps=None: opt.NAdam(0.05, beta1=0.8, beta2=0.95, epsilon=1e-6, momentum_decay=0.01,
                                                   weight_decay=wd, grad_clip=clip, parameters=ps),
              lambda ps, wd: torch.optim.NAdam(ps, lr=0.05, betas=(0.8, 0.95), eps=1e-6, momentum_decay=0.01,
                                               weight_decay=wd or 0.0)),
    "radam": (lambda wd, clip, ps=None: opt.RAdam(0.05, betas=(0.8, 0.85), eps=1e-6, weight_decay=wd, grad_clip=clip,
                                                   parameters=ps),
              lambda ps, wd: torch.optim.RAdam(ps, lr=0.05, betas=(0.8, 0.85), eps=1e-6, weight_decay=wd or 0.0)),
    # Rprop has no weight decay (Paddle's and torch's): both sides ignore wd
    "rprop": (lambda wd, clip, ps=None: opt.Rprop(0.05, learning_rate_range=(1e-3, 0.2), etas=(0.4, 1.3),
                                                   grad_clip=clip, parameters=ps),
              lambda ps, wd: torch.optim.Rprop(ps, lr=0.05, etas=(0.4, 1.3), step_sizes=(1e-3, 0.2))),
    "sgd nesterov": (lambda wd, clip, ps=None: opt.SGD(0.05, momentum=0.8, nesterov=True, weight_decay=wd,
                                                       grad_clip=clip, parameters=ps),
                     lambda ps, wd: torch.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True, weight_decay=wd or 0.0)),
}


def _initial_params() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {name: rng.standard_normal(shape) for name, shape in SHAPES.items()}


def _grad_sequence() -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    return [{name: 3.0 * rng.standard_normal(shape) for name, shape in SHAPES.items()} for _ in range(STEPS)]


def _run_torch(make, params, grads, weight_decay=None, clip=False, groups=None):
    tensors = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params.items()}
    optim = make(groups(tensors) if groups else list(tensors.values()), weight_decay)
    history = []
    for step in grads:
        for k, t in tensors.items():
            t.grad = torch.tensor(step[k].copy())
        if clip:
            torch.nn.utils.clip_grad_value_(list(tensors.values()), clip_value=1.5)
        optim.step()
        history.append({k: t.detach().numpy().copy() for k, t in tensors.items()})
    return history


def _run_static(make, params, grads, lr_factors=None):
    """Parameters whose gradient is whatever is fed: loss = sum(w * g_w) + sum(b * g_b)."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        terms = []
        for name, shape in SHAPES.items():
            attr = fg.ParamAttr(name=name, learning_rate=(lr_factors or {}).get(name, 1.0))
            p = fg.static.create_parameter(list(shape), "float64", attr=attr)
            g = fg.static.data(f"g_{name}", list(shape), "float64")
            terms.append(fg.sum(p * g))
        update_ops, _ = make().minimize(fg.add_n(terms))
    assert len(update_ops) == len(SHAPES)
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope[name] = value.copy()
    history = []
    for step in grads:
        exe.run(main, feed={f"g_{k}": v for k, v in step.items()}, scope=scope)
        history.append({k: np.array(scope[k]) for k in SHAPES})
    return history


def _assert_same_trajectory(ours, theirs, what):
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for k in SHAPES:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-7, atol=1e-10, err_msg=f"{what} step {step} param {k}")


@pytest.mark.parametrize("weight_decay", [None, 0.1])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_static_minimize_matches_torch(name, weight_decay):
    make, make_torch = OPTIMIZERS[name]
    params, grads = _initial_params(), _grad_sequence()
    _assert_same_trajectory(_run_static(lambda: make(weight_decay, None), params, grads),
                            _run_torch(make_torch, params, grads, weight_decay), name)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_eager_step_matches_torch_with_decay_and_clipping(name):
    make, make_torch = OPTIMIZERS[name]
    params, grads = _initial_params(), _grad_sequence()
    tensors = {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in params.items()}
    optimizer = make(0.1, opt.ClipGradByValue(1.5), list(tensors.values()))
    theirs = _run_torch(make_torch, params, grads, 0.1, clip=True)
    for step, g in enumerate(grads):
        fg.add_n([fg.sum(tensors[k] * fg.to_tensor(g[k])) for k in SHAPES]).backward()
        optimizer.step()
        optimizer.clear_grad()
        for k in SHAPES:
            np.testing.assert_allclose(tensors[k].numpy(), theirs[step][k], rtol=1e-7, atol=1e-10,
                                       err_msg=f"{name} step {step} param {k}")


@pytest.mark.parametrize("name", ["rmsprop centered momentum", "adagrad", "adamax", "adadelta", "nadam", "radam",
                                  "rprop"])
def test_per_parameter_rates_match_torch_parameter_groups(name):
    """ParamAttr(learning_rate=0.25) in a program, and a parameter group of its own rate in eager
    mode, against torch.optim with two groups."""
    make, make_torch = OPTIMIZERS[name]
    params, grads = _initial_params(), _grad_sequence()
    base = make(None, None).get_lr()

    def torch_groups(tensors):
        return [{"params": [tensors["w"]], "lr": base * 0.25}, {"params": [tensors["b"]]}]
    theirs = _run_torch(make_torch, params, grads, groups=torch_groups)
    _assert_same_trajectory(_run_static(lambda: make(None, None), params, grads, lr_factors={"w": 0.25}), theirs,
                            f"{name} static")
    tensors = {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in params.items()}
    optimizer = make(None, None, [{"params": [tensors["w"]], "learning_rate": 0.25},   # Paddle: a ratio
                                  {"params": [tensors["b"]]}])
    ours = []
    for g in grads:
        fg.add_n([fg.sum(tensors[k] * fg.to_tensor(g[k])) for k in SHAPES]).backward()
        optimizer.step()
        optimizer.clear_grad()
        ours.append({k: tensors[k].numpy().copy() for k in SHAPES})
    _assert_same_trajectory(ours, theirs, f"{name} eager")


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_state_dict_resumes_the_trajectory(name):
    """Two steps, state_dict into a new optimizer, three more steps: torch's five steps."""
    make, make_torch = OPTIMIZERS[name]
    params, grads = _initial_params(), _grad_sequence()
    theirs = _run_torch(make_torch, params, grads)
    tensors = {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in params.items()}
    for k, t in tensors.items():
        t.name = k
    optimizer = make(None, None, list(tensors.values()))
    for step, g in enumerate(grads):
        if step == 2:
            state = optimizer.state_dict()
            assert sorted(state) == ["lr", "param_groups", "state"]     # torch's form (and the optimizer's rate)
            assert [sorted(slots) for slots in state["state"].values()] == [sorted(optimizer.accumulators)] * len(SHAPES)
            optimizer = make(None, None, list(tensors.values()))
            optimizer.set_state_dict(state)
        fg.add_n([fg.sum(tensors[k] * fg.to_tensor(g[k])) for k in SHAPES]).backward()
        optimizer.step()
        optimizer.clear_grad()
    for k in SHAPES:
        np.testing.assert_allclose(tensors[k].numpy(), theirs[-1][k], rtol=1e-7)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_float32_parameters_stay_float32_and_train(name):
    layer = fg.nn.Linear(3, 2)
    optimizer = OPTIMIZERS[name][0](None, None, layer.parameters())
    x = fg.to_tensor(np.random.default_rng(2).standard_normal((8, 3)).astype("float32"))
    losses = []
    for _ in range(30):
        loss = fg.mean(layer(x) ** 2)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss.numpy()))
    assert all(str(p.dtype) == "float32" for p in layer.parameters())
    assert all(str(v.dtype) == "float32" for s in optimizer._eager_state.values() for v in s.values())
    assert losses[-1] < losses[0]


def test_unused_rmsprop_accumulators_are_placeholders():
    w = fg.to_tensor(np.ones((50, 40)), stop_gradient=False)
    optimizer = opt.RMSProp(0.01, parameters=[w])
    fg.sum(w * w).backward()
    optimizer.step()
    shapes = {slot: value.shape for slot, value in optimizer._eager_state[id(w)].items()}
    assert shapes == {"MeanSquare": (50, 40), "MeanGrad": (1,), "Moment": (1,)}


def test_paddle_defaults_and_torch_spellings():
    w = fg.to_tensor(np.ones(3), stop_gradient=False)
    assert opt.RMSProp(parameters=[w]).rho == 0.95 and opt.Adadelta(parameters=[w]).get_lr() == 0.001
    assert opt.Adagrad([w], lr=0.5).get_lr() == 0.5 and opt.Adamax(parameters=[w]).beta2 == 0.999


@pytest.mark.parametrize("make, message", [
    (lambda ps: opt.RMSProp(0.1, rho=1.0, parameters=ps), r"RMSProp: rho must lie in \[0.0, 1.0\), got 1.0"),
    (lambda ps: opt.RMSProp(0.1, momentum=-0.5, parameters=ps), "RMSProp: momentum must lie"),
    (lambda ps: opt.Adagrad(0.1, initial_accumulator_value=-1.0, parameters=ps), "Adagrad: initial_accumulator"),
    (lambda ps: opt.Adamax(0.1, beta1=1.5, parameters=ps), "Adamax: beta1 must lie"),
    (lambda ps: opt.Adadelta(0.1, epsilon=-1.0, parameters=ps), "Adadelta: epsilon must lie"),
])
def test_bad_arguments_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make([fg.to_tensor(np.ones(3), stop_gradient=False)])


@pytest.mark.parametrize("make, message", [
    (lambda ps: opt.Adam(ps, betas=(0.9, 0.99), beta1=0.9), r"Adam: betas= \(PyTorch\) and beta1= \(Paddle\)"),
    (lambda ps: opt.Adam(0.1, 0.9, parameters=ps, betas=(0.9, 0.99)), r"betas= \(PyTorch\) and beta1="),
    (lambda ps: opt.AdamW(ps, eps=1e-6, epsilon=1e-8), r"AdamW: eps= \(PyTorch\) and epsilon= \(Paddle\)"),
    (lambda ps: opt.RMSProp(ps, alpha=0.9, rho=0.9), r"RMSProp: alpha= \(PyTorch\) and rho= \(Paddle\)"),
    (lambda ps: opt.SGD(ps, momentum=0.9, nesterov=True, use_nesterov=True), "nesterov= .* use_nesterov="),
    (lambda ps: opt.Adam(ps, betas=0.9), r"Adam: betas must be a pair \(beta1, beta2\)"),
    (lambda ps: opt.Adagrad(ps, betas=(0.9, 0.99)), "unexpected keyword argument 'betas'"),
    (lambda ps: opt.Adam(ps, 0.1, (0.9, 0.99)), "Adam: after the parameters and the learning rate, give the other"),
    (lambda ps: opt.SGD(ps, 0.1, lr=0.2), r"SGD: the learning rate given twice \(second argument and lr=\)"),
    (lambda ps: opt.Adam(ps, 0.1, parameters=ps), "Adam: parameters given twice"),
])
def test_torch_and_paddle_spellings_of_one_setting_are_refused_together(make, message):
    with pytest.raises(TypeError, match=message):
        make([fg.to_tensor(np.ones(3), stop_gradient=False)])


def test_sgd_momentum_is_its_own_update_and_keeps_the_class_name():
    w = fg.to_tensor(np.ones(3), stop_gradient=False)
    plain, heavy = opt.SGD([w], lr=0.1), opt.SGD([w], lr=0.1, momentum=0.9)
    assert (plain.op_type, heavy.op_type) == ("sgd", "momentum") and isinstance(heavy, opt.SGD)
    assert type(heavy) is not opt.SGD and type(heavy).__name__ == "SGD"     # never fused as plain SGD
    assert opt.Adam([w], amsgrad=True).op_type == "adam_amsgrad" and type(opt.Adam([w])) is opt.Adam
    with pytest.raises(ValueError, match="SGD: Nesterov momentum"):
        opt.SGD([w], nesterov=True)
    with pytest.raises(ValueError, match="SGD: dampening=0.5 is not supported"):
        opt.SGD([w], momentum=0.9, dampening=0.5)
