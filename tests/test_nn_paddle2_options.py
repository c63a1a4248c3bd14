"""Paddle 2 layer options the session-8 review found missing or wrong: BatchNorm's
use_global_stats and affine-free form, Parameter.trainable, fluidgrad.summary, adaptive pooling
to size 0. PyTorch is the oracle for the maths (values and gradients)."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.nn import functional as F


def _x(shape, seed=0, scale=3.0, shift=2.0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float64") * scale + shift


# ---------------------------------------------------------------- BatchNorm's use_global_stats
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_use_global_stats_false_matches_torch_batch_statistics_and_gradient(training):
    """False: batch statistics in both phases (value and gradient through the statistics);
    the running statistics move only while training."""
    x = _x((4, 3, 2, 2))
    layer = fg.nn.BatchNorm2D(3, use_global_stats=False)
    layer.to("float64")
    layer.train(training)
    xt = fg.to_tensor(x, stop_gradient=False)
    dy = _x((4, 3, 2, 2), seed=1, scale=1.0, shift=0.0)
    fg.sum(layer(xt) * fg.to_tensor(dy)).backward()
    reference = torch.tensor(x, requires_grad=True)
    weight = torch.ones(3, dtype=torch.float64, requires_grad=True)
    out = torch.nn.functional.batch_norm(reference, None, None, weight, None, training=True, eps=1e-5)
    (out * torch.tensor(dy)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), reference.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(layer.weight.grad.numpy(), weight.grad.numpy(), rtol=1e-9)
    moved = not np.allclose(layer._mean.numpy(), 0.0)
    assert moved == training


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_use_global_stats_true_uses_running_statistics_in_both_phases(training):
    x = _x((4, 3, 2, 2)).astype("float32")
    layer = fg.nn.BatchNorm2D(3, use_global_stats=True)
    layer._mean.set_value(np.array([1.0, 2.0, 3.0], "float32"))
    layer._variance.set_value(np.array([4.0, 1.0, 0.25], "float32"))
    layer.train(training)
    expected = (x - np.array([1.0, 2.0, 3.0]).reshape(1, 3, 1, 1)) / np.sqrt(
        np.array([4.0, 1.0, 0.25]).reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(layer(fg.to_tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(layer._mean.numpy(), [1.0, 2.0, 3.0])


def test_batch_norm_without_affine_part_trains_like_torch():
    """No scale / shift: the gradient of x and the running statistics as torch's affine=False."""
    x = _x((5, 2, 3)).astype("float32")
    layer = fg.nn.BatchNorm1D(2, weight_attr=False, bias_attr=False, momentum=0.9)
    assert layer.weight is None and layer.bias is None and layer.parameters() == []
    reference = torch.nn.BatchNorm1d(2, affine=False, momentum=0.1)
    xt, xr = fg.to_tensor(x, stop_gradient=False), torch.tensor(x, requires_grad=True)
    fg.sum(fg.square(layer(xt))).backward()
    reference(xr).square().sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer._variance.numpy(), reference.running_var.numpy(), rtol=1e-5)
    layer.eval(), reference.eval()
    np.testing.assert_allclose(layer(fg.to_tensor(x)).numpy(), reference(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- Parameter.trainable
def test_trainable_and_stop_gradient_are_one_flag():
    layer = fg.nn.Linear(2, 3)
    layer.bias.trainable = False
    assert layer.bias.stop_gradient and not layer.bias.trainable
    layer.bias.stop_gradient = False
    assert layer.bias.trainable
    frozen = fg.nn.Linear(2, 3, bias_attr=fg.ParamAttr(trainable=False))
    assert frozen.bias.trainable is False and frozen.weight.trainable is True


def test_frozen_weight_gets_no_gradient_but_its_input_does():
    layer = fg.nn.Linear(2, 1)
    layer.weight.trainable = False
    x = fg.to_tensor(np.ones((1, 2), "float32"), stop_gradient=False)
    fg.sum(layer(x)).backward()
    assert layer.weight.grad is None and layer.bias.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), layer.weight.numpy().T)


# ---------------------------------------------------------------- summary
class _TwoInputs(fg.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = fg.nn.Conv2D(1, 2, 3)
        self.norm = fg.nn.BatchNorm2D(2)
        self.drop = fg.nn.Dropout(0.5)
        self.head = fg.nn.Linear(2 * 4 * 4 + 3, 1)

    def forward(self, image, extra):
        features = fg.flatten(self.drop(self.norm(self.conv(image))), 1)
        return self.head(fg.concat([features, extra], axis=1))


def test_summary_of_a_two_input_model_runs_it_without_side_effects(capsys):
    model = _TwoInputs()
    info = fg.summary(model, [(None, 1, 6, 6), (None, 3)])
    expected = sum(int(np.prod(p.shape)) for p in model.parameters())
    assert info == {"total_params": expected, "trainable_params": expected}
    out = capsys.readouterr().out
    for row in ("Conv2D-1", "BatchNorm2D-1", "Dropout-1", "Linear-1", "[1, 2, 4, 4]", f"Total params: {expected:,}"):
        assert row in out
    assert model.training and model.norm.training                 # the mode is restored
    np.testing.assert_array_equal(model.norm._mean.numpy(), 0.0)  # eval: running statistics untouched


def test_summary_takes_tensors_and_refuses_nonsense():
    model = fg.nn.Linear(3, 2)
    assert fg.summary(model, input=fg.to_tensor(np.ones((2, 3), "float32")))["total_params"] == 8
    with pytest.raises(ValueError, match="summary"):
        fg.summary(model)
    with pytest.raises(ValueError, match="summary"):
        fg.summary(model, "3")
    with pytest.raises(TypeError, match="summary"):
        fg.summary(lambda x: x, (1, 3))


# ---------------------------------------------------------------- adaptive pooling to 0
def test_adaptive_pooling_op_refuses_size_zero_with_a_shape_error():
    x = fg.to_tensor(np.ones((1, 2, 4, 4), "float32"))
    with pytest.raises(ValueError, match=r"adaptive_max_pool2d.*\[1, 2, 4, 4\]"):
        F.adaptive_max_pool2d(x, [2, 0])
    with pytest.raises(fg.framework.errors.ShapeError, match="pool2d"):
        fg.dispatch.apply_op("pool2d", {"X": x}, {"ksize": [0, 2], "adaptive": True, "pooling_type": "avg"})


# ---------------------------------------------------------------- ParamAttr(regularizer=, need_clip=)
def _linear_pair(attr):
    fg.seed(0)
    return fg.nn.Linear(3, 2, weight_attr=attr), np.ones((2, 3), "float32")


def test_param_attr_regularizer_takes_the_place_of_the_optimizers_weight_decay():
    """An L1Decay on the weight, the optimizer's L2 (0.5) on the bias only: torch's SGD with the same
    per-parameter decays (the L1 one as a sign term added to the gradient)."""
    layer, x = _linear_pair(fg.ParamAttr(regularizer=fg.regularizer.L1Decay(0.2)))
    weight, bias = (torch.tensor(p.numpy(), requires_grad=True) for p in (layer.weight, layer.bias))
    opt = fg.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters(), weight_decay=0.5)
    reference = torch.optim.SGD([{"params": [weight], "weight_decay": 0.0}, {"params": [bias], "weight_decay": 0.5}],
                                lr=0.1)
    for _ in range(2):
        fg.mean(fg.square(layer(fg.to_tensor(x)))).backward()
        opt.step()
        opt.clear_grad()
        reference.zero_grad()
        ((torch.tensor(x) @ weight + bias) ** 2).mean().backward()
        weight.grad += 0.2 * torch.sign(weight.detach())
        reference.step()
    np.testing.assert_allclose(layer.weight.numpy(), weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.bias.numpy(), bias.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("clip", [fg.nn.ClipGradByGlobalNorm(1e-3), fg.nn.ClipGradByNorm(1e-3),
                                  fg.nn.ClipGradByValue(1e-4)])
def test_need_clip_false_leaves_a_gradient_out_of_clipping_in_both_modes(clip):
    """The unclipped weight moves by its full gradient; the bias is clipped as if alone."""
    layer, x = _linear_pair(fg.ParamAttr(need_clip=False))
    start = [p.numpy().copy() for p in layer.parameters()]
    opt = fg.optimizer.SGD(learning_rate=1.0, parameters=layer.parameters(), grad_clip=clip)
    fg.mean(layer(fg.to_tensor(x))).backward()
    bias_grad = layer.bias.grad.numpy().copy()
    opt.step()
    np.testing.assert_allclose(start[0] - layer.weight.numpy(), 0.5, rtol=1e-5)
    expected_bias_step = clip.clip_arrays([bias_grad])[0]
    np.testing.assert_allclose(start[1] - layer.bias.numpy(), expected_bias_step, rtol=1e-5)
    assert np.abs(expected_bias_step).max() < 0.01

    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        data = fg.static.data("x", [None, 3], "float32")
        out = fg.static.nn.fc(data, 2, weight_attr=fg.ParamAttr(name="w", need_clip=False,
                                                                initializer=fg.nn.initializer.Constant(0.0)),
                              bias_attr=fg.ParamAttr(name="b"))
        fg.optimizer.SGD(learning_rate=1.0, grad_clip=clip).minimize(fg.mean(out))
    scope = fg.Scope()
    exe = fg.Executor()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": x}, scope=scope)
    np.testing.assert_allclose(-scope.find_var("w"), 0.5, rtol=1e-5)
    np.testing.assert_allclose(-scope.find_var("b"), expected_bias_step, rtol=1e-5)


def test_static_param_attr_regularizer_and_clone_keep_the_options():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        data = fg.static.data("x", [None, 3], "float32")
        attr = fg.ParamAttr(name="w", regularizer=fg.regularizer.L2Decay(0.25), learning_rate=2.0,
                            initializer=fg.nn.initializer.Constant(1.0))
        out = fg.static.nn.fc(data, 2, weight_attr=attr, bias_attr=False)
        fg.optimizer.SGD(learning_rate=0.1, weight_decay=10.0).minimize(fg.mean(out))
    scope = fg.Scope()
    exe = fg.Executor()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, scope=scope)
    np.testing.assert_allclose(scope.find_var("w"), 1.0 - 0.1 * 2.0 * (0.5 + 0.25 * 1.0), rtol=1e-6)
    clone = main.clone().global_block().var("w")
    assert (clone.regularizer, clone.need_clip, clone.optimize_attr) == (attr.regularizer, True, {"learning_rate": 2.0})


def test_copies_of_a_parameter_keep_its_param_attr_options():
    """copy.deepcopy and pickle of a bare parameter (and of a layer) keep learning rate, regularizer
    and need_clip: they live on the Tensor, not in a table keyed by its identity."""
    import copy
    import pickle
    layer = fg.nn.Linear(3, 2, weight_attr=fg.ParamAttr(learning_rate=0.5, regularizer=fg.regularizer.L2Decay(0.1),
                                                        need_clip=False))
    for twin in (copy.deepcopy(layer.weight), pickle.loads(pickle.dumps(layer.weight)), copy.deepcopy(layer).weight):
        factor, decay, need_clip = fg.framework.optimize_options(twin)
        assert (factor, decay.coeff, need_clip) == (0.5, 0.1, False)
    assert fg.framework.optimize_options(layer.bias) == (1.0, None, True)
    plain = copy.deepcopy(layer.weight)
    plain.grad = fg.to_tensor(np.ones((3, 2), "float32"))
    before = plain.numpy().copy()
    fg.optimizer.SGD(learning_rate=1.0, parameters=[plain]).step()
    np.testing.assert_allclose(before - plain.numpy(), 0.5 * (1.0 + 0.1 * before), rtol=1e-6)


# ---------------------------------------------------------------- static batch_norm, channels last
@pytest.mark.parametrize("is_test", [False, True])
def test_static_batch_norm_nhwc_matches_nchw(is_test):
    x = _x((3, 2, 2, 4)).astype("float32")                     # NHWC, 4 channels
    results = []
    for layout, feed in (("NHWC", x), ("NCHW", x.transpose(0, 3, 1, 2))):
        main, startup = fg.Program(), fg.Program()
        with fg.program_guard(main, startup):
            data = fg.static.data("x", [None] + list(feed.shape[1:]), "float32")
            data.stop_gradient = False
            y = fg.static.nn.batch_norm(data, data_layout=layout, is_test=is_test, name="bn")
            loss = fg.sum(fg.square(y))
            dx, = fg.gradients([loss], [data])
        scope = fg.Scope()
        exe = fg.Executor()
        exe.run(startup, scope=scope)
        out, grad = exe.run(main, feed={"x": feed}, fetch_list=[y, dx], scope=scope)
        if layout == "NCHW":
            out, grad = out.transpose(0, 2, 3, 1), grad.transpose(0, 2, 3, 1)
        results.append((out, grad, scope.find_var("bn.w_2").copy()))
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="batch_norm: data_layout"):
        with fg.program_guard(fg.Program(), fg.Program()):
            fg.static.nn.batch_norm(fg.static.data("x", [2, 3], "float32"), data_layout="CHWN")
