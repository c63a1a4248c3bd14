"""Optimizers, clipping and schedulers against torch.optim; a small MLP trained on digits."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import optimizer as opt
from fluidgrad.optimizer import lr as sched

SHAPES = {"w": (3, 4), "b": (4,)}
STEPS = 5


def _initial_params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape) for name, shape in SHAPES.items()}


def _grad_sequence(seed: int = 1) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{name: 3.0 * rng.standard_normal(shape) for name, shape in SHAPES.items()} for _ in range(STEPS)]


def _run_static(make_opt, params, grads):
    """Parameters whose gradient is whatever is fed: loss = sum(w * g_w) + sum(b * g_b)."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        terms = []
        for name, shape in SHAPES.items():
            p = fg.static.create_parameter(list(shape), "float64", name=name)
            g = fg.static.data(f"g_{name}", list(shape), "float64")
            terms.append(fg.sum(p * g))
        loss = fg.add_n(terms)
        update_ops, params_grads = make_opt().minimize(loss)
    assert [op.type for op in update_ops] and all(op.role == "optimize" for op in update_ops)
    assert sorted(p.name for p, _ in params_grads) == sorted(SHAPES)
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope[name] = value.copy()
    history = []
    for step in grads:
        exe.run(main, feed={f"g_{k}": v for k, v in step.items()}, scope=scope)
        history.append({k: np.array(scope[k]) for k in SHAPES})
    return history


def _clip_norm(tensors, max_norm):
    """torch.nn.utils.clip_grad_norm_ without its 1e-6 added to the norm (Paddle's formula)."""
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t.grad) for t in tensors]))
    factor = torch.clamp(max_norm / total, max=1.0)
    for t in tensors:
        t.grad.mul_(factor)


def _run_torch(make_opt, params, grads, clip):
    tensors = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params.items()}
    optim = make_opt(list(tensors.values()))
    history = []
    for step in grads:
        for k, t in tensors.items():
            t.grad = torch.tensor(step[k].copy())
        if clip == "global_norm":
            _clip_norm(list(tensors.values()), 2.0)
        elif clip == "norm":
            for t in tensors.values():
                _clip_norm([t], 2.0)
        elif clip == "value":
            torch.nn.utils.clip_grad_value_(list(tensors.values()), clip_value=1.5)
        optim.step()
        history.append({k: t.detach().numpy().copy() for k, t in tensors.items()})
    return history


CLIPS = {None: None, "global_norm": lambda: opt.ClipGradByGlobalNorm(2.0),
         "norm": lambda: opt.ClipGradByNorm(2.0), "value": lambda: opt.ClipGradByValue(1.5)}

OPTIMIZERS = {
    "sgd": (lambda wd, clip: opt.SGD(0.1, weight_decay=wd, grad_clip=clip),
            lambda ps, wd: torch.optim.SGD(ps, lr=0.1, weight_decay=wd or 0.0)),
    "momentum": (lambda wd, clip: opt.Momentum(0.1, momentum=0.9, weight_decay=wd, grad_clip=clip),
                 lambda ps, wd: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=wd or 0.0)),
    "nesterov": (lambda wd, clip: opt.Momentum(0.05, momentum=0.8, use_nesterov=True, weight_decay=wd,
                                               grad_clip=clip),
                 lambda ps, wd: torch.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True, weight_decay=wd or 0.0)),
    "adam": (lambda wd, clip: opt.Adam(0.05, beta1=0.8, beta2=0.95, epsilon=1e-6, weight_decay=wd, grad_clip=clip),
             lambda ps, wd: torch.optim.Adam(ps, lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=wd or 0.0)),
    "adamw": (lambda wd, clip: opt.AdamW(0.05, weight_decay=wd or 0.0, grad_clip=clip),
              lambda ps, wd: torch.optim.AdamW(ps, lr=0.05, weight_decay=wd or 0.0)),
}


@pytest.mark.parametrize("clip", list(CLIPS))
@pytest.mark.parametrize("weight_decay", [None, 0.1])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_update_matches_torch(name, weight_decay, clip):
    make_fg, make_torch = OPTIMIZERS[name]
    params, grads = _initial_params(), _grad_sequence()
    ours = _run_static(lambda: make_fg(weight_decay, CLIPS[clip]() if clip else None), params, grads)
    theirs = _run_torch(lambda ps: make_torch(ps, weight_decay), params, grads, clip)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for k in SHAPES:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-6, atol=1e-9, err_msg=f"{name} step {step} param {k}")


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_eager_update_reuses_the_kernels(name):
    """`_apply_update` (what eager step() calls) follows the same trajectory as torch."""
    make_fg, make_torch = OPTIMIZERS[name]
    params, grads = _initial_params(), _grad_sequence()
    optimizer = make_fg(None, None)
    state: dict = {}
    w = params["w"].copy()
    theirs = _run_torch(lambda ps: make_torch(ps, None), params, grads, None)
    for step, g in enumerate(grads):
        w = optimizer._apply_update(w, g["w"], state)
        np.testing.assert_allclose(w, theirs[step]["w"], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["momentum", "adam", "adamw"])
def test_eager_step_matches_torch(name):
    """Eager mode: parameters=[Tensors], loss.backward(), step(), clear_grad(); clipping and decay too."""
    make_fg, make_torch = OPTIMIZERS[name]
    params, grads = _initial_params(), _grad_sequence()
    tensors = {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in params.items()}
    clip = opt.ClipGradByGlobalNorm(2.0)
    optimizer = make_fg(0.1, clip)
    optimizer._parameter_list = list(tensors.values())
    theirs = _run_torch(lambda ps: make_torch(ps, 0.1), params, grads, "global_norm")
    for step, g in enumerate(grads):
        loss = fg.add_n([fg.sum(tensors[k] * fg.to_tensor(g[k])) for k in SHAPES])
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        for k in SHAPES:
            assert tensors[k].grad is None
            np.testing.assert_allclose(tensors[k].numpy(), theirs[step][k], rtol=1e-6, atol=1e-9)


def test_eager_minimize_is_step():
    w = fg.to_tensor(np.array([1.0, -2.0]), stop_gradient=False)
    optimizer = opt.SGD(0.5, parameters=[w])
    loss = fg.sum(w * w)
    loss.backward()
    ops, params_grads = optimizer.minimize(loss)
    assert ops == [] and params_grads[0][0] is w
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])


def test_eager_state_dict_resumes_training():
    """Two steps, save the optimizer state, restore it into a new optimizer, three more steps:
    the same trajectory as five uninterrupted torch.optim.Adam steps."""
    params, grads = _initial_params(), _grad_sequence()
    theirs = _run_torch(lambda ps: torch.optim.Adam(ps, lr=0.05), params, grads, None)
    tensors = {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in params.items()}
    for k, t in tensors.items():
        t.name = k
    optimizer = opt.Adam(0.05, parameters=list(tensors.values()))
    for step, g in enumerate(grads):
        if step == 2:
            state = optimizer.state_dict()
            assert sorted(state) == ["lr", "param_groups", "state"]     # torch's form (and the optimizer's rate)
            assert all(sorted(slots) == ["Beta1Pow", "Beta2Pow", "Moment1", "Moment2"]
                       for slots in state["state"].values()) and len(state["state"]) == len(SHAPES)
            optimizer = opt.Adam(0.05, parameters=list(tensors.values()))
            optimizer.set_state_dict(state)
        fg.add_n([fg.sum(tensors[k] * fg.to_tensor(g[k])) for k in SHAPES]).backward()
        optimizer.step()
        optimizer.clear_grad()
    for k in SHAPES:
        np.testing.assert_allclose(tensors[k].numpy(), theirs[-1][k], rtol=1e-6)
    with pytest.raises(ValueError, match="w.Moment1.*shape"):
        optimizer.set_state_dict({"w.Moment1": np.zeros(3)})


def _head_model(frozen):
    """[backbone, head, frozen?] linears built afresh (new parameter names each time, as a model
    rebuilt in the same process) from seed 0."""
    fg.seed(0)
    layers = [fg.nn.Linear(3, 3), fg.nn.Linear(3, 2), fg.nn.Linear(3, 2)]
    for p in layers[2].parameters():
        p.stop_gradient = frozen
    return layers, [p for layer in layers for p in layer.parameters()]


def _train(make_opt, layers, optimizer, steps, with_head):
    x = np.linspace(-1, 1, 12).reshape(4, 3)
    for _ in range(steps):
        hidden = layers[0](fg.to_tensor(x.astype("float32")))
        loss = fg.sum(hidden * hidden)
        if with_head:   # the head is used (gets gradients) only from some step on
            loss = loss + fg.sum(layers[1](hidden) ** 2)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()


def _torch_trajectory(make_opt, layers, steps_without_head, steps_with_head):
    modules = [torch.nn.Linear(3, 3), torch.nn.Linear(3, 2)]
    with torch.no_grad():
        for module, layer in zip(modules, layers):
            module.weight.copy_(torch.tensor(layer.weight.numpy().T))
            module.bias.copy_(torch.tensor(layer.bias.numpy()))
    optim = make_opt([p for m in modules for p in m.parameters()])
    x = torch.tensor(np.linspace(-1, 1, 12).reshape(4, 3).astype("float32"))
    for step in range(steps_without_head + steps_with_head):
        hidden = modules[0](x)
        loss = (hidden * hidden).sum() + ((modules[1](hidden) ** 2).sum() if step >= steps_without_head else 0)
        optim.zero_grad()
        loss.backward()
        optim.step()
    return [m.weight.detach().numpy().T for m in modules]


@pytest.mark.parametrize("frozen", [False, True], ids=["unused-head", "unused-head-and-frozen-layer"])
@pytest.mark.parametrize("name", ["Adam", "Momentum"])
def test_eager_state_of_parameters_that_never_stepped_resumes_in_a_rebuilt_model(tmp_path, name, frozen):
    """Two steps train the backbone only; the state, saved to a file, goes into a rebuilt model
    (new parameter names: matched by position); two steps more with the head follow the same
    trajectory as four uninterrupted ones, and as torch.optim's."""
    makers = {"Adam": (lambda ps: opt.Adam(0.05, parameters=ps), lambda ps: torch.optim.Adam(ps, lr=0.05)),
              "Momentum": (lambda ps: opt.Momentum(0.05, 0.9, parameters=ps),
                           lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9))}
    make_opt, make_torch = makers[name]
    layers, params = _head_model(frozen)
    expected = _torch_trajectory(make_torch, layers, 2, 2)
    optimizer = make_opt(params)
    _train(make_opt, layers, optimizer, 2, with_head=False)
    state = optimizer.state_dict()
    assert set(state["state"]) == {0, 1}       # the backbone's weight and bias stepped, by position (torch's keys)
    fg.save({"model": [layer.state_dict() for layer in layers], "opt": state}, tmp_path / "ck")
    loaded = fg.load(tmp_path / "ck")
    again, again_params = _head_model(frozen)
    assert not {p.name for p in again_params} & {p.name for p in params}
    for layer, layer_state in zip(again, loaded["model"]):
        layer.set_state_dict(layer_state)
    again_opt = make_opt(again_params)
    again_opt.set_state_dict(loaded["opt"])
    _train(make_opt, again, again_opt, 2, with_head=True)
    _train(make_opt, layers, optimizer, 2, with_head=True)
    for layer, resumed, want in zip(layers, again, expected):
        np.testing.assert_array_equal(resumed.weight.numpy(), layer.weight.numpy())
        np.testing.assert_allclose(resumed.weight.numpy(), want, rtol=1e-5, atol=1e-6)


def test_eager_state_of_a_fresh_optimizer_is_empty_and_a_mismatched_one_is_refused():
    layers, params = _head_model(False)
    optimizer = opt.Adam(0.1, parameters=params)
    assert optimizer.state_dict()["state"] == {}        # as PyTorch's: no state before the first step
    _train(None, layers, optimizer, 1, with_head=False)
    state = optimizer.state_dict()
    _, other = _head_model(False)
    with pytest.raises(ValueError, match=r"parameter group 0 holds 6 parameters in the state, 4 in this optimizer"):
        opt.Adam(0.1, parameters=other[:4]).set_state_dict(state)


def test_static_state_dict_reads_and_writes_the_scope():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        w = fg.static.create_parameter([3], "float64", name="w_state")
        optimizer = opt.Momentum(0.1, parameters=[w])
        optimizer.minimize(fg.sum(w * w))
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    exe.run(main, scope=scope)
    state = optimizer.state_dict(scope)
    (name,) = state
    assert "velocity" in name and np.any(state[name] != 0)
    optimizer.set_state_dict({name: np.zeros(3)}, scope)
    np.testing.assert_array_equal(scope[name], np.zeros(3))


def test_minimize_with_parameter_list_updates_only_those():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        a = fg.static.create_parameter([2], "float64", name="a_only")
        b = fg.static.create_parameter([2], "float64", name="b_frozen")
        loss = fg.sum(a * b)
        update_ops, params_grads = opt.SGD(0.5).minimize(loss, parameter_list=[a])
    assert [p.name for p, _ in params_grads] == ["a_only"] and len(update_ops) == 1
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    a0, b0 = np.array(scope["a_only"]), np.array(scope["b_frozen"])
    exe.run(main, scope=scope)
    np.testing.assert_allclose(scope["a_only"], a0 - 0.5 * b0)
    np.testing.assert_array_equal(scope["b_frozen"], b0)


def test_l1_and_l2_decay_objects():
    """weight_decay=L2Decay(c) is the float c; L1Decay adds c * sign(p) to the gradient."""
    from fluidgrad.regularizer import L1Decay, L2Decay
    params, grads = _initial_params(), _grad_sequence()
    as_float = _run_static(lambda: opt.Momentum(0.1, weight_decay=0.05), params, grads)
    as_object = _run_static(lambda: opt.Momentum(0.1, weight_decay=L2Decay(0.05)), params, grads)
    np.testing.assert_array_equal(as_object[-1]["w"], as_float[-1]["w"])
    l1 = _run_static(lambda: opt.SGD(0.1, weight_decay=L1Decay(0.2)), params, grads)
    w = params["w"].copy()
    for g in grads:
        w = w - 0.1 * (g["w"] + 0.2 * np.sign(w))
    np.testing.assert_allclose(l1[-1]["w"], w, rtol=1e-12)
    with pytest.raises(ValueError, match="coeff"):
        opt.SGD(0.1, weight_decay=-1.0)
    with pytest.raises(TypeError, match="weight_decay"):
        opt.SGD(0.1, weight_decay="l2")


def test_accumulators_are_persistable_and_initialised_in_startup():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 2], "float32")
        loss = fg.mean(fg.static.nn.fc(x, 1))
        optimizer = opt.Adam(0.01)
        optimizer.minimize(loss)
    block = main.global_block()
    accumulators = [v for v in block.vars.values() if "moment" in v.name or "pow" in v.name]
    assert len(accumulators) == 8 and all(v.persistable for v in accumulators)
    startup_written = {n for op in startup.global_block().ops for n in op.output_arg_names}
    assert {v.name for v in accumulators} | {optimizer.lr_var.name} <= startup_written
    assert optimizer.lr_var.persistable and optimizer.lr_var.shape == (1,)
    test_program = main.clone(for_test=True)
    assert all(op.role not in ("backward", "optimize") for op in test_program.global_block().ops)


def test_scheduler_drives_the_static_learning_rate():
    scope = fg.Scope()
    with fg.scope_guard(scope):
        main, startup = fg.Program(), fg.Program()
        with fg.program_guard(main, startup):
            w = fg.static.create_parameter([2], "float64", name="w_sched")
            loss = fg.sum(w)                       # gradient 1 everywhere
            schedule = sched.StepDecay(1.0, step_size=1, gamma=0.5)
            optimizer = opt.SGD(learning_rate=schedule)
            optimizer.minimize(loss)
        exe = fg.Executor()
        exe.run(startup)
        start = np.array(scope["w_sched"])
        deltas = []
        for _ in range(3):
            before = np.array(scope["w_sched"])
            exe.run(main)
            deltas.append(float((before - scope["w_sched"])[0]))
            schedule.step()
        np.testing.assert_allclose(deltas, [1.0, 0.5, 0.25])
        assert optimizer.get_lr() == 0.125 and scope[optimizer.lr_var.name][0] == 0.125
        np.testing.assert_allclose(start - scope["w_sched"], 1.75)


def test_scheduler_reaches_a_bound_scope_and_a_later_startup():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        w = fg.static.create_parameter([1], "float64", name="w_bound")
        schedule = sched.StepDecay(1.0, step_size=1, gamma=0.1)
        optimizer = opt.SGD(learning_rate=schedule)
        optimizer.minimize(fg.sum(w))
    schedule.step()                               # before the startup program ran
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    np.testing.assert_allclose(scope[optimizer.lr_var.name], [0.1])
    optimizer.sync_lr(scope)
    schedule.step()
    np.testing.assert_allclose(scope[optimizer.lr_var.name], [0.01])


def test_set_lr_and_sync_lr():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        loss = fg.sum(fg.static.create_parameter([1], "float32", name="w_set_lr"))
        optimizer = opt.SGD(0.1)
        optimizer.minimize(loss)
    scope = fg.Scope()
    fg.Executor().run(startup, scope=scope)
    optimizer.set_lr(0.3)
    optimizer.sync_lr(scope)
    assert scope[optimizer.lr_var.name].dtype == np.float32
    np.testing.assert_allclose(scope[optimizer.lr_var.name], [0.3])


def _torch_lrs(make, steps):
    param = torch.zeros(1, requires_grad=True)
    optim = torch.optim.SGD([param], lr=0.5)
    scheduler = make(optim)
    values = []
    for _ in range(steps):
        values.append(optim.param_groups[0]["lr"])
        optim.step()
        scheduler.step()
    return values


def _our_lrs(scheduler, steps):
    values = []
    for _ in range(steps):
        values.append(scheduler())
        scheduler.step()
    return values


L = torch.optim.lr_scheduler
SCHEDULERS = {
    "step": (lambda: sched.StepDecay(0.5, step_size=3, gamma=0.3), lambda o: L.StepLR(o, step_size=3, gamma=0.3)),
    "multistep": (lambda: sched.MultiStepDecay(0.5, [2, 5], gamma=0.1), lambda o: L.MultiStepLR(o, [2, 5], 0.1)),
    "exponential": (lambda: sched.ExponentialDecay(0.5, 0.9), lambda o: L.ExponentialLR(o, 0.9)),
    "lambda": (lambda: sched.LambdaDecay(0.5, lambda e: 1.0 / (1 + e)), lambda o: L.LambdaLR(o, lambda e: 1.0 / (1 + e))),
    "piecewise": (lambda: sched.PiecewiseDecay([2, 5], [0.5, 0.05, 0.005]), lambda o: L.MultiStepLR(o, [2, 5], 0.1)),
    "cosine": (lambda: sched.CosineAnnealingDecay(0.5, T_max=5, eta_min=0.01),
               lambda o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.01)),
    "warmup": (lambda: sched.LinearWarmup(0.5, warmup_steps=4, start_lr=0.05, end_lr=0.5),
               lambda o: L.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=4)),
    "warmup_cosine": (
        lambda: sched.LinearWarmup(sched.CosineAnnealingDecay(0.5, T_max=6), warmup_steps=3, start_lr=0.0,
                                   end_lr=0.5),
        lambda o: L.SequentialLR(o, [L.LinearLR(o, start_factor=1e-12, end_factor=1.0, total_iters=3),
                                     L.CosineAnnealingLR(o, T_max=6)], milestones=[3])),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_matches_torch(name):
    ours, theirs = SCHEDULERS[name]
    np.testing.assert_allclose(_our_lrs(ours(), 14), _torch_lrs(theirs, 14), rtol=1e-6, atol=1e-9)


def test_bad_arguments_are_clear():
    with pytest.raises(TypeError, match="learning_rate"):
        opt.SGD("fast")
    with pytest.raises(TypeError, match="grad_clip"):
        opt.SGD(0.1, grad_clip=1.0)
    with pytest.raises(ValueError, match="clip_norm"):
        opt.ClipGradByGlobalNorm(-1.0)
    with pytest.raises(ValueError, match="step_size"):
        sched.StepDecay(0.1, step_size=0)
    with pytest.raises(TypeError, match="Variable.*Tensor"):
        opt.SGD(0.1).minimize(np.zeros(1))


def test_update_op_shape_mismatch_names_the_op():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        block = main.global_block()
        p = block.create_var("p_bad", [3], "float32", persistable=True)
        g = block.create_var("g_bad", [4], "float32")
        lr = block.create_var("lr_bad", [1], "float32")
        with pytest.raises(Exception, match="sgd.*p_bad.*g_bad"):
            block.append_op("sgd", {"Param": p, "Grad": g, "LearningRate": lr}, {"ParamOut": p})


def test_mlp_on_digits_with_adam():
    """The issue's user story: an MLP with Adam(0.01).minimize reaches >= 0.95 in 15 epochs."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64").reshape(-1, 1)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0)
    fg.seed(0)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        image = fg.static.data("image", [None, 64], "float32")
        label = fg.static.data("label", [None, 1], "int64")
        hidden = fg.static.nn.fc(image, 64, activation="relu")
        logits = fg.static.nn.fc(hidden, 10)
        test_program = main.clone(for_test=True)      # the executor runs whole blocks: no loss here
        loss = fg.nn.functional.cross_entropy(logits, label)
        opt.Adam(0.01).minimize(loss)
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    for _epoch in range(15):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), 64):
            batch = order[start:start + 64]
            exe.run(main, feed={"image": x_train[batch], "label": y_train[batch]}, scope=scope)
    (scores,) = exe.run(test_program, feed={"image": x_test}, fetch_list=[logits.name], scope=scope)
    accuracy = float((scores.argmax(axis=1) == y_test[:, 0]).mean())
    assert accuracy >= 0.95, accuracy
