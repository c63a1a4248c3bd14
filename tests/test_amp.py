"""fluidgrad.amp: auto_cast runs Paddle's O1 white-list ops in float16 / bfloat16 and its black-list
ops in float32 (both modes; gradients reach float32 parameters in float32), and GradScaler scales
the loss, unscales the gradients, skips a step with an inf or NaN gradient and adapts the scale."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal((3, 2)).astype("float32")


# ------------------------------------------------------------------ auto_cast
def test_white_list_ops_run_in_float16_and_black_list_ops_in_float32(eager):
    x0, w0 = _data()
    x, w = fg.to_tensor(x0), fg.to_tensor(w0, stop_gradient=False)
    with fg.amp.auto_cast():
        h = fg.matmul(x, w)                          # white: float16
        same = h * h                                 # gray, one dtype: stays float16
        mixed = h + fg.to_tensor(np.ones(2, "float32"))   # gray, mixed: the widest (float32)
        e = fg.exp(h)                                # black: float32
        loss = fg.mean(e)                            # black: float32
    assert [str(t.dtype).replace("paddle.", "") for t in (h, same, mixed, e, loss)] == \
        ["float16", "float16", "float32", "float32", "float32"]
    loss.backward()
    assert str(w.grad.dtype).endswith("float32")
    reference = np.exp(x0 @ w0)
    np.testing.assert_allclose(w.grad.numpy(), x0.T @ (reference / reference.size), rtol=2e-2, atol=1e-3)


def test_bfloat16_ops_run_in_bfloat16_and_their_gradients_reach_float32_parameters(eager):
    x0, w0 = _data()
    x, w = fg.to_tensor(x0), fg.to_tensor(w0, stop_gradient=False)
    with fg.amp.auto_cast(dtype="bfloat16"):
        h = fg.matmul(x, w)
        # Paddle's bfloat16 O1 black list is only its EXTRA_BLACK_LIST (interpolation,
        # embedding, scatter): exp is gray there and stays bfloat16
        e = fg.exp(h)
        loss = fg.mean(e.astype("float32"))
    assert str(h.dtype).endswith("bfloat16") and str(e.dtype).endswith("bfloat16")
    np.testing.assert_allclose(np.asarray(h.numpy(), "float32"), x0 @ w0, rtol=2e-2, atol=2e-2)
    loss.backward()
    assert str(w.grad.dtype).endswith("float32")
    reference = np.exp(x0 @ w0)
    np.testing.assert_allclose(w.grad.numpy(), x0.T @ (reference / reference.size), rtol=3e-2, atol=3e-3)


def test_bfloat16_training_follows_float32_training(eager):
    """auto_cast(dtype='bfloat16') without a loss scale (bfloat16 has float32's range) over 20
    steps of an MLP stays near the float32 run (bfloat16 rounding only)."""
    rng = np.random.default_rng(2)
    x0, y0 = rng.standard_normal((32, 4)).astype("float32"), rng.standard_normal((32, 1)).astype("float32")

    def mlp():
        return fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.GELU(), fg.nn.LayerNorm(8), fg.nn.Linear(8, 1))
    plain, low = mlp(), mlp()
    low.set_state_dict(plain.state_dict())
    opt_plain = fg.optimizer.Adam(learning_rate=0.01, parameters=plain.parameters())
    opt_low = fg.optimizer.Adam(learning_rate=0.01, parameters=low.parameters())
    x, y = fg.to_tensor(x0), fg.to_tensor(y0)
    for _ in range(20):
        for model, opt, dtype in ((plain, opt_plain, None), (low, opt_low, "bfloat16")):
            with fg.amp.auto_cast(enable=dtype is not None, dtype=dtype or "float16"):
                loss = fg.mean((model(x).astype("float32") - y) ** 2)
            loss.backward()
            opt.step()
            opt.clear_grad()
    for (name, a), (_, b) in zip(plain.named_parameters(), low.named_parameters()):
        assert str(b.dtype).endswith("float32"), name
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=5e-2, atol=1e-2, err_msg=name)


def test_float16_black_list_ops_run_in_float32_even_on_float16_inputs(eager):
    h = fg.to_tensor(np.full((2, 3), 12.0, "float16"))
    with fg.amp.auto_cast():
        # float16's largest value is 65504: exp(12) = 162755 would be inf in float16
        np.testing.assert_allclose(fg.exp(h).numpy(), np.exp(12.0), rtol=1e-6)
        assert str(fg.nn.functional.softmax(h).dtype).endswith("float32")
        assert str(fg.sum(h).dtype).endswith("float32")


def test_enable_false_and_custom_lists(eager):
    x0, w0 = _data()
    x, w = fg.to_tensor(x0), fg.to_tensor(w0)
    with fg.amp.auto_cast():
        with fg.amp.auto_cast(enable=False):
            assert str(fg.matmul(x, w).dtype).endswith("float32")
        assert str(fg.matmul(x, w).dtype).endswith("float16")
    with fg.amp.auto_cast(custom_black_list={"matmul"}):
        assert str(fg.matmul(x, w).dtype).endswith("float32")
    with fg.amp.auto_cast(custom_white_list={"exp"}):
        assert str(fg.exp(x).dtype).endswith("float16")
    assert str(fg.matmul(x, w).dtype).endswith("float32")     # outside: nothing is cast
    with pytest.raises(ValueError, match="in both custom_white_list and custom_black_list"):
        with fg.amp.auto_cast(custom_white_list={"exp"}, custom_black_list={"exp"}):
            pass
    with pytest.raises(ValueError, match="dtype must be 'float16' or 'bfloat16'"):
        with fg.amp.auto_cast(dtype="float64"):
            pass


def test_auto_cast_in_a_static_program_appends_casts():
    x0, w0 = _data()
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [4, 3], "float32")
        w = fg.static.create_parameter([3, 2], "float32", name="w_amp")
        with fg.amp.auto_cast():
            h = fg.matmul(x, w)
            loss = fg.mean(h)
        assert h.dtype == "float16" and loss.dtype == "float32"
        assert [op.type for op in main.global_block().ops].count("cast") == 3
    scope = fg.Scope()
    exe = fg.Executor()
    exe.run(startup, scope=scope)
    scope["w_amp"] = w0
    got, = exe.run(main, feed={"x": x0}, fetch_list=[loss], scope=scope)
    np.testing.assert_allclose(got, np.mean(x0 @ w0), rtol=1e-2, atol=1e-3)


# ------------------------------------------------------------------ GradScaler
def _linear_and_optimizer(scale=1024.0, **options):
    layer = fg.nn.Linear(3, 2)
    optimizer = fg.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    return layer, optimizer, fg.amp.GradScaler(init_loss_scaling=scale, **options)


def test_a_step_with_an_inf_gradient_is_skipped_and_the_scale_halves(eager):
    x0, _ = _data()
    layer, optimizer, scaler = _linear_and_optimizer()
    before = layer.weight.numpy().copy()
    loss = fg.mean(layer(fg.to_tensor(x0)) ** 2)
    scaler.scale(loss).backward()
    layer.weight.grad.set_value(np.full((3, 2), np.inf, "float32"))
    scaler.step(optimizer)
    scaler.update()
    np.testing.assert_array_equal(layer.weight.numpy(), before)
    assert scaler.get_scale() == 512.0


def test_the_scale_grows_after_n_good_steps_and_shrinks_after_n_bad_ones(eager):
    x0, _ = _data()
    layer, optimizer, scaler = _linear_and_optimizer(incr_every_n_steps=3, decr_every_n_nan_or_inf=2)
    scales = []
    for step in range(8):
        optimizer.clear_grad()
        loss = fg.mean(layer(fg.to_tensor(x0)) ** 2)
        scaler.scale(loss).backward()
        if step in (4, 5):
            layer.bias.grad.set_value(np.array([np.nan, 0.0], "float32"))
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    # good good good(x2) good bad bad(/2) good good
    assert scales == [1024.0, 1024.0, 2048.0, 2048.0, 2048.0, 1024.0, 1024.0, 1024.0]
    state = scaler.state_dict()
    resumed = fg.amp.GradScaler()
    resumed.load_state_dict(state)
    assert resumed.get_scale() == 1024.0 and resumed.state_dict()["incr_count"] == 2


def test_unscale_then_clip_then_step_is_the_plain_clipped_step(eager):
    x0, _ = _data()
    plain, opt_plain, _ = _linear_and_optimizer()
    scaled, opt_scaled, scaler = _linear_and_optimizer(scale=2.0 ** 12)
    scaled.set_state_dict(plain.state_dict())
    fg.mean(plain(fg.to_tensor(x0)) ** 2).backward()
    fg.nn.utils.clip_grad_norm_(plain.parameters(), 0.05)
    opt_plain.step()
    scaler.scale(fg.mean(scaled(fg.to_tensor(x0)) ** 2)).backward()
    scaler.unscale_(opt_scaled)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt_scaled)
    fg.nn.utils.clip_grad_norm_(scaled.parameters(), 0.05)
    scaler.step(opt_scaled)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt_scaled)
    scaler.update()
    np.testing.assert_allclose(scaled.weight.numpy(), plain.weight.numpy(), rtol=1e-6)


def test_minimize_steps_and_updates_and_torch_spellings(eager):
    x0, _ = _data()
    layer, optimizer, _ = _linear_and_optimizer()
    scaler = fg.amp.GradScaler(init_scale=8.0, growth_interval=1)      # torch's names
    before = layer.weight.numpy().copy()
    loss = fg.mean(layer(fg.to_tensor(x0)) ** 2)
    scaler.scale(loss).backward()
    scaler.minimize(optimizer, loss)
    assert scaler.get_scale() == 16.0 and not np.array_equal(layer.weight.numpy(), before)
    with pytest.raises(TypeError, match="init_scale= \\(PyTorch\\) and init_loss_scaling= \\(Paddle\\)"):
        fg.amp.GradScaler(init_loss_scaling=4.0, init_scale=8.0)


def test_mixed_precision_training_follows_float32_training(eager):
    """auto_cast + GradScaler over 20 steps stays near the float32 run (float16 rounding only)."""
    rng = np.random.default_rng(1)
    x0, y0 = rng.standard_normal((16, 3)).astype("float32"), rng.standard_normal((16, 1)).astype("float32")
    plain, scaled = fg.nn.Linear(3, 1), fg.nn.Linear(3, 1)
    scaled.set_state_dict(plain.state_dict())
    opt_plain = fg.optimizer.SGD(learning_rate=0.05, parameters=plain.parameters())
    opt = fg.optimizer.SGD(learning_rate=0.05, parameters=scaled.parameters())
    scaler = fg.amp.GradScaler(init_loss_scaling=2.0 ** 10)
    x, y = fg.to_tensor(x0), fg.to_tensor(y0)
    for _ in range(20):
        fg.mean((plain(x) - y) ** 2).backward()
        opt_plain.step()
        opt_plain.clear_grad()
        with fg.amp.auto_cast():
            loss = fg.mean((scaled(x) - y) ** 2)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.clear_grad()
    assert str(scaled.weight.dtype).endswith("float32")
    np.testing.assert_allclose(scaled.weight.numpy(), plain.weight.numpy(), rtol=2e-2, atol=2e-3)
