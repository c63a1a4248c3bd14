"""conv2d, pool2d, batch_norm, layer_norm, dropout, clip, log_softmax: forward and gradients
against PyTorch (float64) and central differences; nn.functional and the static.nn builders."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from fluidgrad.dispatch import append_static_op
from fluidgrad.nn import functional as F
from fluidgrad.testing import ProgramGradCheck, check_grad, check_program_grad, torch_gradients

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape)


def _run(build, feeds):
    """Build a program from `feeds` (name -> array) and run it; returns the outputs."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        variables = {k: fg.static.data(k, v.shape, v.dtype) for k, v in feeds.items()}
        outs = build(variables)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feeds, fetch_list=outs, scope=scope)


def _check_outputs_vs_torch(op_type, inputs, attrs, used, torch_fn, wrt, rtol=1e-6):
    """Gradient check of an op whose outputs `used` (indices) reach the loss; vs numeric and PyTorch."""
    def build(variables):
        slot_args = {slot: variables[slot] for slot in inputs}
        outs = append_static_op(op_type, slot_args, dict(attrs))
        outs = outs if isinstance(outs, tuple) else (outs,)
        return [outs[i] for i in used]
    analytic = check_program_grad(build, inputs, wrt=wrt, rtol=rtol)
    expected = torch_gradients(torch_fn, inputs, ProgramGradCheck(build, inputs, wrt), wrt)
    for name in wrt:
        np.testing.assert_allclose(analytic[name], expected[name], rtol=rtol, atol=1e-9, err_msg=name)
    return analytic


# ------------------------------------------------------------------ conv2d
CONV_CASES = [
    # x shape, w shape, strides, paddings, dilations, groups
    ((2, 3, 7, 6), (4, 3, 3, 3), [1, 1], [0, 0], [1, 1], 1),
    ((2, 3, 7, 6), (4, 3, 3, 2), [2, 1], [1, 2], [1, 1], 1),
    ((1, 2, 8, 8), (3, 2, 3, 3), [1, 2], [2, 1], [2, 2], 1),
    ((2, 4, 6, 5), (6, 2, 3, 3), [2, 2], [1, 1], [1, 1], 2),
    ((1, 4, 5, 5), (4, 1, 2, 2), [1, 1], [0, 1], [2, 1], 4),
]


@pytest.mark.parametrize("x_shape, w_shape, strides, paddings, dilations, groups", CONV_CASES)
def test_conv2d_matches_torch(x_shape, w_shape, strides, paddings, dilations, groups):
    inputs = {"Input": rand(*x_shape), "Filter": rand(*w_shape), "Bias": rand(w_shape[0])}
    attrs = {"strides": strides, "paddings": paddings, "dilations": dilations, "groups": groups}

    def torch_fn(Input, Filter, Bias):
        return TF.conv2d(Input, Filter, Bias, stride=strides, padding=paddings, dilation=dilations, groups=groups)
    (out,) = _run(lambda v: append_static_op("conv2d", v, attrs), inputs)
    expected = torch_fn(*(torch.tensor(inputs[k]) for k in ("Input", "Filter", "Bias"))).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    check_grad("conv2d", inputs, attrs, torch_fn=torch_fn)


def test_conv2d_asymmetric_padding_and_no_bias():
    x, w = rand(1, 2, 5, 6), rand(3, 2, 3, 3)

    def torch_fn(Input, Filter):
        return TF.conv2d(TF.pad(Input, (2, 0, 1, 0)), Filter)   # left 2, right 0, top 1, bottom 0
    check_grad("conv2d", {"Input": x, "Filter": w}, {"paddings": [1, 0, 2, 0]}, torch_fn=torch_fn)


def test_conv2d_grad_ops_are_differentiable():
    """conv2d_input_grad and conv2d_filter_grad have gradients of their own (grad of grad)."""
    x, w = rand(2, 4, 6, 5), rand(6, 2, 3, 2)
    attrs = {"strides": [2, 1], "paddings": [1, 1], "dilations": [1, 2], "groups": 2}
    dout = rand(2, 6, 3, 5)
    kw = dict(stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2)
    check_grad("conv2d_input_grad", {"DOutput": dout, "Filter": w, "Input": x}, attrs, no_grad=("Input",),
               torch_fn=lambda DOutput, Filter, Input: torch.nn.grad.conv2d_input(x.shape, Filter, DOutput, **kw))
    check_grad("conv2d_filter_grad", {"DOutput": dout, "Input": x, "Filter": w}, attrs, no_grad=("Filter",),
               torch_fn=lambda DOutput, Input, Filter: torch.nn.grad.conv2d_weight(Input, w.shape, DOutput, **kw))


def test_conv2d_second_order_through_backward():
    """d/dx of sum((d loss / d w)^2) for loss = sum(conv(x, w)^2), against PyTorch's double backward."""
    x, w = rand(1, 2, 5, 5), rand(3, 2, 3, 3)

    def build(v):
        out = F.conv2d(v["x"], v["w"], padding=1)
        loss = fg.sum(out * out)
        (dw,) = fg.gradients([loss], [v["w"]])
        return fg.sum(dw * dw)
    analytic = check_program_grad(build, {"x": x, "w": w}, rtol=1e-5)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    loss = (TF.conv2d(xt, wt, padding=1) ** 2).sum()
    (dw,) = torch.autograd.grad(loss, wt, create_graph=True)
    (dx,) = torch.autograd.grad((dw * dw).sum() * torch.tensor(1.0), xt)
    assert analytic["x"].shape == x.shape and np.isfinite(analytic["x"]).all()
    scale = ProgramGradCheck(build, {"x": x, "w": w}).feeds["cotangent_0"]
    np.testing.assert_allclose(analytic["x"], dx.numpy() * scale, rtol=1e-6)


def test_conv2d_shape_errors_name_the_op():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 3, 8, 8], "float64")
        w = fg.static.data("w", [4, 2, 3, 3], "float64")
        with pytest.raises(Exception, match=r"conv2d.*x.*channels"):
            F.conv2d(x, w)
        w_big = fg.static.data("w_big", [4, 3, 9, 9], "float64")
        with pytest.raises(Exception, match=r"conv2d.*does not fit"):
            F.conv2d(x, w_big)


# ------------------------------------------------------------------ pool2d
POOL_CASES = [
    ("max", [2, 2], [2, 2], [0, 0], True),
    ("max", [3, 2], [2, 1], [1, 1], True),
    ("avg", [2, 2], [2, 2], [0, 0], True),
    ("avg", [3, 3], [2, 2], [1, 1], True),
    ("avg", [3, 2], [1, 2], [1, 1], False),
]


def _torch_pool(kind, ksize, strides, paddings, exclusive):
    if kind == "max":
        return lambda X: TF.max_pool2d(X, ksize, strides, paddings)
    return lambda X: TF.avg_pool2d(X, ksize, strides, paddings, count_include_pad=not exclusive)


@pytest.mark.parametrize("kind, ksize, strides, paddings, exclusive", POOL_CASES)
def test_pool2d_matches_torch(kind, ksize, strides, paddings, exclusive):
    x = rand(2, 3, 7, 6)
    attrs = {"pooling_type": kind, "ksize": ksize, "strides": strides, "paddings": paddings, "exclusive": exclusive}
    torch_fn = _torch_pool(kind, ksize, strides, paddings, exclusive)
    (out,) = _run(lambda v: append_static_op("pool2d", v, attrs), {"X": x})
    np.testing.assert_allclose(out, torch_fn(torch.tensor(x)).numpy(), rtol=1e-12)
    check_grad("pool2d", {"X": x}, attrs, torch_fn=torch_fn)


def test_max_pool_ties_go_to_the_first_maximum():
    """ReLU outputs tie at 0 often: like PyTorch, only the first maximum of a window gets dOut."""
    x = np.maximum(rand(2, 3, 6, 6), 0.0)
    x[0, 0, :2, :2] = 0.7
    attrs = {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}
    dout = rand(2, 3, 3, 3)
    (dx,) = _run(lambda v: append_static_op("pool2d_grad", v, attrs), {"X": x, "DOut": dout})
    xt = torch.tensor(x, requires_grad=True)
    TF.max_pool2d(xt, 2).backward(torch.tensor(dout))
    np.testing.assert_array_equal(dx, xt.grad.numpy())


def test_global_pooling():
    x = rand(2, 3, 4, 5)
    for kind, reduce in (("max", lambda X: X.amax((2, 3), keepdim=True)),
                         ("avg", lambda X: X.mean((2, 3), keepdim=True))):
        check_grad("pool2d", {"X": x}, {"pooling_type": kind, "global_pooling": True}, torch_fn=reduce)


def test_global_pooling_with_unknown_spatial_size():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 3, None, None], "float64")
        out = fg.static.nn.pool2d(x, pool_type="avg", global_pooling=True)
    assert out.shape == (-1, 3, 1, 1)
    data = rand(2, 3, 5, 4)
    (value,) = fg.Executor().run(main, feed={"x": data}, fetch_list=[out], scope=fg.Scope())
    np.testing.assert_allclose(value, data.mean(axis=(2, 3), keepdims=True))


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_grad_is_differentiable(kind):
    """pool2d_grad's gradient (avg pooling, or max_pool2d_select for max) passes the numeric check."""
    x, dout = rand(1, 2, 6, 6), rand(1, 2, 3, 3)
    attrs = {"pooling_type": kind, "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}
    check_grad("pool2d_grad", {"X": x, "DOut": dout}, attrs, no_grad=("X",))
    if kind == "max":
        select_attrs = {k: v for k, v in attrs.items() if k != "pooling_type"}
        check_grad("max_pool2d_select", {"X": x, "Y": rand(1, 2, 6, 6)}, select_attrs, no_grad=("X",))


# ------------------------------------------------------------------ batch_norm
def _bn_inputs(shape):
    c = shape[1]
    return {"X": rand(*shape) * 2 + 1, "Scale": rand(c), "Bias": rand(c), "Mean": rand(c),
            "Variance": np.abs(rand(c)) + 0.5}


@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (6, 4)])
def test_batch_norm_training_matches_torch(shape):
    inputs = _bn_inputs(shape)
    attrs = {"momentum": 0.8, "epsilon": 1e-4, "is_test": False}
    y, mean_out, var_out = _run(lambda v: append_static_op("batch_norm", v, attrs)[:3], inputs)
    rm, rv = torch.tensor(inputs["Mean"]), torch.tensor(inputs["Variance"])
    expected = TF.batch_norm(torch.tensor(inputs["X"]), rm, rv, torch.tensor(inputs["Scale"]),
                             torch.tensor(inputs["Bias"]), training=True, momentum=0.2, eps=1e-4)
    np.testing.assert_allclose(y, expected.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mean_out, rm.numpy(), rtol=1e-10)
    np.testing.assert_allclose(var_out, rv.numpy(), rtol=1e-10)

    def torch_fn(X, Scale, Bias, Mean, Variance):
        return TF.batch_norm(X, Mean.clone(), Variance.clone(), Scale, Bias, training=True, momentum=0.2, eps=1e-4)
    _check_outputs_vs_torch("batch_norm", inputs, attrs, [0], torch_fn, ["X", "Scale", "Bias"])


def test_batch_norm_inference_matches_torch():
    inputs = _bn_inputs((3, 4, 2, 3))
    attrs = {"epsilon": 1e-5, "is_test": True}

    def torch_fn(X, Scale, Bias, Mean, Variance):
        return TF.batch_norm(X, Mean, Variance, Scale, Bias, training=False, eps=1e-5)
    y, mean_out, _ = _run(lambda v: append_static_op("batch_norm", v, attrs)[:3], inputs)
    np.testing.assert_allclose(y, torch_fn(*(torch.tensor(inputs[k]) for k in inputs)).numpy(), rtol=1e-10)
    np.testing.assert_array_equal(mean_out, inputs["Mean"])
    _check_outputs_vs_torch("batch_norm", inputs, attrs, [0], torch_fn, ["X", "Scale", "Bias"])


def test_batch_norm_builder_updates_running_stats_and_clone_for_test_uses_them():
    x1, x2 = rand(8, 3, 4, 4), rand(8, 3, 4, 4) + 0.5
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3, 4, 4], "float64")
        y = fg.static.nn.batch_norm(x, momentum=0.9, name="bn")
        test_program = main.clone(for_test=True)
    assert [op.attr("is_test") for op in test_program.global_block().ops if op.type == "batch_norm"] == [True]
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    torch_bn = torch.nn.BatchNorm2d(3, momentum=0.1, dtype=torch.float64)
    for batch in (x1, x2):
        (ours,) = exe.run(main, feed={"x": batch}, fetch_list=[y], scope=scope)
        np.testing.assert_allclose(ours, torch_bn(torch.tensor(batch)).detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(scope["bn.w_1"], torch_bn.running_mean.numpy(), rtol=1e-10)
    np.testing.assert_allclose(scope["bn.w_2"], torch_bn.running_var.numpy(), rtol=1e-10)
    torch_bn.eval()
    (ours,) = exe.run(test_program, feed={"x": x1}, fetch_list=[y.name], scope=scope)
    np.testing.assert_allclose(ours, torch_bn(torch.tensor(x1)).detach().numpy(), rtol=1e-10, atol=1e-12)
    trainable = {p.name for p in main.all_parameters() if p.trainable}
    assert trainable == {"bn.w_0", "bn.b_0"}


# ------------------------------------------------------------------ layer_norm
@pytest.mark.parametrize("shape, axis, affine", [((4, 6), 1, True), ((2, 3, 4), 1, True), ((2, 3, 4), 2, True),
                                                 ((3, 5), 1, False), ((3, 4), 0, True)])
def test_layer_norm_matches_torch(shape, axis, affine):
    normalized = list(shape[axis:])
    width = int(np.prod(normalized))
    inputs = {"X": rand(*shape) * 3 + 1}
    if affine:
        inputs.update(Scale=rand(width), Bias=rand(width))

    def torch_fn(X, Scale=None, Bias=None):
        weight = Scale.reshape(normalized) if Scale is not None else None
        bias = Bias.reshape(normalized) if Bias is not None else None
        return TF.layer_norm(X, normalized, weight, bias, eps=1e-5)
    attrs = {"begin_norm_axis": axis, "epsilon": 1e-5}
    (y,) = _run(lambda v: [append_static_op("layer_norm", v, attrs)[0]], inputs)
    np.testing.assert_allclose(y, torch_fn(**{k: torch.tensor(v) for k, v in inputs.items()}).numpy(), rtol=1e-10,
                               atol=1e-12)
    _check_outputs_vs_torch("layer_norm", inputs, attrs, [0], torch_fn, list(inputs))


def test_layer_norm_bias_without_scale():
    x, b = rand(3, 2, 2), rand(2, 2)
    check_program_grad(lambda v: F.layer_norm(v["x"], [2, 2], None, v["b"]), {"x": x, "b": b})


# ------------------------------------------------------------------ dropout
def test_dropout_fixed_seed_forward_and_gradient():
    x = rand(40, 50)
    attrs = {"dropout_prob": 0.3, "seed": 11}
    out, mask = _run(lambda v: append_static_op("dropout", v, attrs), {"X": x})
    kept = mask != 0
    assert abs(1 - kept.mean() - 0.3) < 0.03
    np.testing.assert_allclose(mask[kept], 1 / 0.7)
    np.testing.assert_allclose(out, x * mask)
    out_again, _ = _run(lambda v: append_static_op("dropout", v, attrs), {"X": x})
    np.testing.assert_array_equal(out_again, out)   # a seed fixes the mask
    mask_t = torch.tensor(mask)
    check_grad("dropout", {"X": x}, attrs, torch_fn=lambda X: (X * mask_t, mask_t))


def test_dropout_modes_and_inference():
    x = rand(20, 30)
    test_out, _ = _run(lambda v: append_static_op("dropout", v, {"dropout_prob": 0.4, "is_test": True}), {"X": x})
    np.testing.assert_array_equal(test_out, x)
    down_train, down_mask = _run(lambda v: append_static_op(
        "dropout", v, {"dropout_prob": 0.4, "seed": 3, "dropout_implementation": "downgrade_in_infer"}), {"X": x})
    assert set(np.unique(down_mask)) <= {0.0, 1.0}
    down_test, _ = _run(lambda v: append_static_op(
        "dropout", v, {"dropout_prob": 0.4, "is_test": True, "dropout_implementation": "downgrade_in_infer"}), {"X": x})
    np.testing.assert_allclose(down_test, x * 0.6)
    all_dropped, _ = _run(lambda v: append_static_op("dropout", v, {"dropout_prob": 1.0}), {"X": x})
    np.testing.assert_array_equal(all_dropped, np.zeros_like(x))


def test_dropout_builder_is_identity_in_the_test_program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 8], "float64")
        y = fg.static.nn.dropout(x, 0.5)
        test_program = main.clone(for_test=True)
    data = rand(4, 8)
    exe, scope = fg.Executor(), fg.Scope()
    (train_out,) = exe.run(main, feed={"x": data}, fetch_list=[y], scope=scope)
    (test_out,) = exe.run(test_program, feed={"x": data}, fetch_list=[y.name], scope=scope)
    np.testing.assert_array_equal(test_out, data)
    assert (train_out == 0).any() and set(np.round(train_out[train_out != 0] / data[train_out != 0], 9)) == {2.0}


# ------------------------------------------------------------------ clip, clip_mask, log_softmax
def test_clip_and_log_softmax_gradients():
    x = rand(4, 5)
    x[np.abs(np.abs(x) - 0.5) < 0.05] += 0.2   # keep away from the kinks (clip_mask is piecewise constant)
    check_grad("clip", {"X": x}, {"min": -0.5, "max": 0.5}, torch_fn=lambda X: torch.clamp(X, -0.5, 0.5))
    check_grad("log_softmax", {"X": x}, {"axis": 0}, torch_fn=lambda X: torch.log_softmax(X, 0))
    check_grad("log_softmax", {"X": x}, {"axis": -1}, torch_fn=lambda X: torch.log_softmax(X, -1))


# ------------------------------------------------------------------ nn.functional
def test_functional_losses_match_torch():
    logits, labels, target = rand(6, 5), RNG.integers(0, 5, size=(6, 1)), rand(6, 5)
    feeds = {"logits": logits, "labels": labels.astype(np.int64), "target": target}
    ce, ce_sum, ce_none, mse, sm, lsm = _run(lambda v: [
        F.cross_entropy(v["logits"], v["labels"]), F.cross_entropy(v["logits"], v["labels"], reduction="sum"),
        F.cross_entropy(v["logits"], v["labels"], reduction="none"), F.mse_loss(v["logits"], v["target"]),
        F.softmax(v["logits"]), F.log_softmax(v["logits"], axis=0)], feeds)
    lt, yt = torch.tensor(logits), torch.tensor(labels[:, 0])
    np.testing.assert_allclose(ce, TF.cross_entropy(lt, yt).numpy(), rtol=1e-10)
    np.testing.assert_allclose(ce_sum, TF.cross_entropy(lt, yt, reduction="sum").numpy(), rtol=1e-10)
    np.testing.assert_allclose(ce_none[:, 0], TF.cross_entropy(lt, yt, reduction="none").numpy(), rtol=1e-10)
    np.testing.assert_allclose(mse, TF.mse_loss(lt, torch.tensor(target)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(sm, torch.softmax(lt, -1).numpy(), rtol=1e-10)
    np.testing.assert_allclose(lsm, torch.log_softmax(lt, 0).numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="reduction"):
        _run(lambda v: F.cross_entropy(v["logits"], v["labels"], reduction="avg"), feeds)


@pytest.mark.parametrize("label_shape", ["column", "flat"])
def test_cross_entropy_weight_and_ignore_index_match_torch(label_shape):
    logits, weight = rand(7, 4), np.abs(rand(4)) + 0.2
    labels = np.array([0, 3, 1, 2, 2, 1, 3])
    labels[[1, 4]] = 2                                   # samples of the ignored class
    fed = labels.reshape(-1, 1) if label_shape == "column" else labels
    feeds = {"logits": logits, "labels": fed.astype(np.int64), "weight": weight}
    mean, total, none = _run(lambda v: [
        F.cross_entropy(v["logits"], v["labels"], weight=v["weight"], ignore_index=2),
        F.cross_entropy(v["logits"], v["labels"], weight=v["weight"], reduction="sum"),
        F.cross_entropy(v["logits"], v["labels"], ignore_index=2, reduction="none")], feeds)
    lt, yt, wt = torch.tensor(logits), torch.tensor(labels), torch.tensor(weight)
    np.testing.assert_allclose(mean, TF.cross_entropy(lt, yt, weight=wt, ignore_index=2).numpy(), rtol=1e-10)
    np.testing.assert_allclose(total, TF.cross_entropy(lt, yt, weight=wt, reduction="sum").numpy(), rtol=1e-10)
    np.testing.assert_allclose(none.reshape(-1), TF.cross_entropy(lt, yt, ignore_index=2, reduction="none").numpy(),
                               rtol=1e-10)

    def build(v):
        return F.cross_entropy(v["logits"], v["labels"], weight=v["weight"], ignore_index=2)
    analytic = check_program_grad(build, feeds, wrt=["logits"])
    lt.requires_grad_(True)
    TF.cross_entropy(lt, yt, weight=wt, ignore_index=2).backward()
    scale = ProgramGradCheck(build, feeds, ["logits"]).feeds["cotangent_0"]
    np.testing.assert_allclose(analytic["logits"], lt.grad.numpy() * scale, rtol=1e-6)


def test_functional_layers_match_torch():
    x, w, b = rand(2, 3, 6, 6), rand(4, 3, 3, 3), rand(4)
    lw, lb = rand(6, 2), rand(2)
    feeds = {"x": x, "w": w, "b": b, "lw": lw, "lb": lb}
    same, strided, mp, ap, lin = _run(lambda v: [
        F.conv2d(v["x"], v["w"], v["b"], padding="same"), F.conv2d(v["x"], v["w"], stride=2, padding=1),
        F.max_pool2d(v["x"], 2), F.avg_pool2d(v["x"], 3, stride=1, padding=1),
        F.linear(v["x"], v["lw"], v["lb"])], feeds)
    xt, wt = torch.tensor(x), torch.tensor(w)
    np.testing.assert_allclose(same, TF.conv2d(xt, wt, torch.tensor(b), padding="same").numpy(), rtol=1e-10)
    np.testing.assert_allclose(strided, TF.conv2d(xt, wt, stride=2, padding=1).numpy(), rtol=1e-10)
    np.testing.assert_allclose(mp, TF.max_pool2d(xt, 2).numpy())
    np.testing.assert_allclose(ap, TF.avg_pool2d(xt, 3, 1, 1, count_include_pad=False).numpy(), rtol=1e-10)
    np.testing.assert_allclose(lin, (xt @ torch.tensor(lw) + torch.tensor(lb)).numpy(), rtol=1e-10)


def test_functional_norms_and_embedding():
    x, ids, table = rand(4, 3, 2, 2), np.array([[0, 2], [1, 1]], dtype=np.int64), rand(3, 5)
    c = 3
    feeds = {"x": x, "ids": ids, "table": table, "w": rand(c), "b": rand(c), "m": rand(c), "v": np.abs(rand(c)) + 1}
    bn_eval, ln, emb, oh = _run(lambda v: [
        F.batch_norm(v["x"], v["m"], v["v"], v["w"], v["b"], training=False),
        F.layer_norm(v["x"], [2, 2]), F.embedding(v["ids"], v["table"]), F.one_hot(v["ids"], 4)], feeds)
    t = {k: torch.tensor(val) for k, val in feeds.items()}
    np.testing.assert_allclose(bn_eval, TF.batch_norm(t["x"], t["m"], t["v"], t["w"], t["b"]).numpy(), rtol=1e-10)
    np.testing.assert_allclose(ln, TF.layer_norm(t["x"], [2, 2]).numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(emb, table[ids])
    np.testing.assert_array_equal(oh, np.eye(4)[ids])


# ------------------------------------------------------------------ static.nn builders
def test_conv_pool_builders_and_a_small_cnn_learns():
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = (digits.images[:256] / 16.0).astype("float32").reshape(-1, 1, 8, 8)
    labels = digits.target[:256].astype("int64").reshape(-1, 1)
    fg.seed(1)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("img", [None, 1, 8, 8], "float32")
        y = fg.static.data("lbl", [None, 1], "int64")
        h = fg.static.nn.conv2d(x, 8, 3, padding=1, activation="relu", name="c1")
        h = fg.static.nn.batch_norm(h, name="bn1")
        h = fg.static.nn.max_pool2d(h, 2)
        h = fg.static.nn.conv2d(h, 8, 3, padding=1, groups=2, bias_attr=False, name="c2")
        h = fg.static.nn.avg_pool2d(h, 2)
        h = fg.static.nn.layer_norm(h, begin_norm_axis=1)
        h = fg.static.nn.pool2d(h, pool_type="max", global_pooling=True)
        h = fg.static.nn.dropout(h, 0.1)
        logits = fg.static.nn.fc(h, 10)
        loss = fg.nn.functional.cross_entropy(logits, y)
        fg.optimizer.Adam(0.02).minimize(loss)
    params = {p.name: p.shape for p in main.all_parameters()}
    assert params["c1.w_0"] == (8, 1, 3, 3) and params["c1.b_0"] == (8,) and params["c2.w_0"] == (8, 4, 3, 3)
    assert "c2.b_0" not in params and logits.shape == (-1, 10)
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    losses = [float(exe.run(main, feed={"img": images, "lbl": labels}, fetch_list=[loss], scope=scope)[0])
              for _ in range(25)]
    assert losses[-1] < 0.6 * losses[0], losses


def test_builders_reject_bad_input():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        flat = fg.static.data("flat", [None, 8], "float32")
        with pytest.raises(ValueError, match="conv2d.*4-D"):
            fg.static.nn.conv2d(flat, 4, 3)
        with pytest.raises(ValueError, match="pool_type"):
            fg.static.nn.pool2d(fg.static.data("img4", [None, 1, 4, 4]), 2, pool_type="median")


# ------------------------------------------------------------------ the same functions on eager Tensors
def test_functional_runs_eagerly_and_matches_torch():
    x, w, scale, bias = rand(2, 3, 6, 6), rand(4, 3, 3, 3), rand(4), rand(4)
    labels = np.array([[1], [5]])
    ours = {k: fg.to_tensor(v.copy(), stop_gradient=False) for k, v in {"x": x, "w": w, "s": scale, "b": bias}.items()}
    mean, var = fg.to_tensor(np.zeros(4)), fg.to_tensor(np.ones(4))
    h = F.conv2d(ours["x"], ours["w"], padding=1, stride=1)
    h = F.batch_norm(h, mean, var, ours["s"], ours["b"], training=True)
    h = F.avg_pool2d(F.max_pool2d(h, 2), 3, stride=1, padding=1)
    h = F.layer_norm(h, [3, 3])
    loss = F.cross_entropy(fg.reshape(h, [2, -1]), fg.to_tensor(labels))
    loss.backward()

    theirs = {k: torch.tensor(v, requires_grad=True) for k, v in {"x": x, "w": w, "s": scale, "b": bias}.items()}
    t_mean, t_var = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    th = TF.conv2d(theirs["x"], theirs["w"], padding=1)
    th = TF.batch_norm(th, t_mean, t_var, theirs["s"], theirs["b"], training=True, momentum=0.1)
    th = TF.avg_pool2d(TF.max_pool2d(th, 2), 3, stride=1, padding=1, count_include_pad=False)
    th = TF.layer_norm(th, [3, 3])
    t_loss = TF.cross_entropy(th.reshape(2, -1), torch.tensor(labels[:, 0]))
    t_loss.backward()
    np.testing.assert_allclose(loss.numpy(), t_loss.detach().numpy(), rtol=1e-10)
    for k in ours:
        np.testing.assert_allclose(ours[k].grad.numpy(), theirs[k].grad.numpy(), rtol=1e-6, atol=1e-10, err_msg=k)
    np.testing.assert_allclose(mean.numpy(), t_mean.numpy(), rtol=1e-10)   # running stats written back
    np.testing.assert_allclose(var.numpy(), t_var.numpy(), rtol=1e-10)


# ------------------------------------------------------------------ float32 stays float32
FLOAT32_CASES = [
    ("conv2d", {"Input": (2, 4, 5, 5), "Filter": (6, 2, 3, 3), "Bias": (6,)}, {"paddings": [1, 1], "groups": 2}),
    ("pool2d", {"X": (2, 3, 6, 6)}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}),
    ("pool2d", {"X": (2, 3, 6, 6)}, {"pooling_type": "avg", "ksize": [3, 3], "strides": [1, 1], "paddings": [1, 1]}),
    ("batch_norm", {"X": (4, 3, 2, 2), "Scale": (3,), "Bias": (3,), "Mean": (3,), "Variance": (3,)}, {}),
    ("layer_norm", {"X": (4, 6), "Scale": (6,), "Bias": (6,)}, {}),
    ("dropout", {"X": (4, 6)}, {"seed": 5}),
    ("log_softmax", {"X": (4, 6)}, {}),
    ("clip", {"X": (4, 6)}, {"min": -0.3, "max": 0.3}),
]


@pytest.mark.parametrize("op_type, shapes, attrs", FLOAT32_CASES, ids=[c[0] + str(i) for i, c in enumerate(FLOAT32_CASES)])
def test_float32_in_float32_out_and_gradients(op_type, shapes, attrs):
    inputs64 = {k: np.abs(rand(*s)) + 0.5 if k == "Variance" else rand(*s) for k, s in shapes.items()}
    inputs32 = {k: v.astype(np.float32) for k, v in inputs64.items()}
    outs32 = _run(lambda v: append_static_op(op_type, v, attrs), inputs32)
    outs64 = _run(lambda v: append_static_op(op_type, v, attrs), inputs64)
    for a, b in zip(outs32, outs64):
        assert a.dtype == np.float32, f"{op_type}: float32 inputs give {a.dtype}"
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        variables = {k: fg.static.data(k, v.shape, "float32") for k, v in inputs32.items()}
        for var in variables.values():
            var.stop_gradient = False
        out = append_static_op(op_type, variables, attrs)
        first = out[0] if isinstance(out, tuple) else out
        grads = fg.gradients([fg.sum(first)], list(variables.values()))
    values = fg.Executor().run(main, feed=inputs32, fetch_list=[g for g in grads if g is not None], scope=fg.Scope())
    assert values and all(v.dtype == np.float32 for v in values)


# ------------------------------------------------------------------ 1-3D convolution, pooling, resampling, norms
def _both_modes(fn, arrays):
    """fn(*values) run eagerly on Tensors and statically on Variables; both results, as arrays."""
    eager = fn(*(fg.to_tensor(a) for a in arrays))
    eager = [t.numpy() for t in (eager if isinstance(eager, (list, tuple)) else [eager])]
    names = [f"a{i}" for i in range(len(arrays))]
    static = _run(lambda v: fn(*(v[n] for n in names)), dict(zip(names, arrays)))
    return eager, static


def _t(a):
    return torch.tensor(a)


X1, X2, X3 = rand(2, 4, 9), rand(2, 4, 9, 8), rand(1, 2, 5, 6, 7)
W1, W2, W3 = rand(6, 2, 3), rand(4, 2, 3, 3), rand(3, 2, 2, 3, 2)
FUNCTIONAL_CASES = [
    ("conv1d-strided-dilated-groups", lambda x, w: F.conv1d(x, w, stride=2, padding=1, dilation=2, groups=2), [X1, W1],
     lambda x, w: TF.conv1d(x, w, stride=2, padding=1, dilation=2, groups=2)),
    ("conv2d-same-stride2", lambda x, w: F.conv2d(x, w, stride=2, padding="SAME", groups=2), [X2, W2],
     lambda x, w: TF.conv2d(TF.pad(x, (0, 1, 1, 1)), w, stride=2, groups=2)),
    ("conv2d-paddle-pairs", lambda x, w: F.conv2d(x, w, padding=[[0, 0], [0, 0], [1, 0], [2, 1]], groups=2), [X2, W2],
     lambda x, w: TF.conv2d(TF.pad(x, (2, 1, 1, 0)), w, groups=2)),
    ("conv2d-valid", lambda x, w: F.conv2d(x, w, padding="valid", groups=2), [X2, W2],
     lambda x, w: TF.conv2d(x, w, groups=2)),
    ("conv3d", lambda x, w: F.conv3d(x, w, stride=(1, 2, 1), padding=(1, 0, 1)), [X3, W3],
     lambda x, w: TF.conv3d(x, w, stride=(1, 2, 1), padding=(1, 0, 1))),
    ("conv1d_transpose", lambda x, w: F.conv1d_transpose(x, w, stride=3, output_padding=2), [X1, rand(4, 3, 4)],
     lambda x, w: TF.conv_transpose1d(x, w, stride=3, output_padding=2)),
    ("conv2d_transpose-output_size", lambda x, w: F.conv2d_transpose(x, w, stride=2, padding=1, output_size=[18, 16]),
     [X2, rand(4, 3, 3, 3)], lambda x, w: TF.conv_transpose2d(x, w, stride=2, padding=1, output_padding=(1, 1))),
    ("conv2d_transpose-same", lambda x, w: F.conv2d_transpose(x, w, stride=2, padding="same"), [X2, rand(4, 3, 3, 3)],
     lambda x, w: TF.conv_transpose2d(x, w, stride=2)[..., :18, :16]),   # ONNX SAME_UPPER: crop at the end
    ("conv3d_transpose-groups", lambda x, w: F.conv3d_transpose(x, w, stride=2, groups=2, dilation=(1, 2, 1)),
     [X3, rand(2, 1, 2, 2, 2)], lambda x, w: TF.conv_transpose3d(x, w, stride=2, groups=2, dilation=(1, 2, 1))),
    ("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True), [X1],
     lambda x: TF.max_pool1d(x, 3, 2, 1, ceil_mode=True)),
    ("max_pool2d-mask", lambda x: F.max_pool2d(x, 3, 2, 1, return_mask=True, ceil_mode=True, dilation=2), [X2],
     lambda x: TF.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True)),
    ("max_pool2d-same", lambda x: F.max_pool2d(x, 3, 2, "same"), [X2],
     lambda x: TF.max_pool2d(TF.pad(x, (0, 1, 1, 1), value=-np.inf), 3, 2)),
    ("max_pool3d", lambda x: F.max_pool3d(x, 2, (1, 2, 2), 1), [X3], lambda x: TF.max_pool3d(x, 2, (1, 2, 2), 1)),
    ("avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2, 1, exclusive=False), [X1], lambda x: TF.avg_pool1d(x, 3, 2, 1)),
    ("avg_pool2d-ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [X2],
     lambda x: TF.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d-count_include_pad", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=True), [X2],
     lambda x: TF.avg_pool2d(x, 3, 2, 1)),
    ("avg_pool2d-divisor", lambda x: F.avg_pool2d(x, 2, divisor_override=3), [X2],
     lambda x: TF.avg_pool2d(x, 2, divisor_override=3)),
    ("avg_pool3d", lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True), [X3],
     lambda x: TF.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 4), [X1], lambda x: TF.adaptive_avg_pool1d(x, 4)),
    ("adaptive_avg_pool2d-None", lambda x: F.adaptive_avg_pool2d(x, [4, None]), [X2],
     lambda x: TF.adaptive_avg_pool2d(x, (4, 8))),
    ("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 3, 3)), [X3],
     lambda x: TF.adaptive_avg_pool3d(x, (2, 3, 3))),
    ("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 4, return_mask=True), [X1],
     lambda x: TF.adaptive_max_pool1d(x, 4, return_indices=True)),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (4, 3), return_mask=True), [X2],
     lambda x: TF.adaptive_max_pool2d(x, (4, 3), return_indices=True)),
    ("adaptive_max_pool3d", lambda x: F.adaptive_max_pool3d(x, 2), [X3], lambda x: TF.adaptive_max_pool3d(x, 2)),
    ("interpolate-nearest-scale", lambda x: F.interpolate(x, scale_factor=1.7), [X2],
     lambda x: TF.interpolate(x, scale_factor=1.7)),
    ("interpolate-bilinear-corners", lambda x: F.interpolate(x, size=(13, 5), mode="bilinear", align_corners=True),
     [X2], lambda x: TF.interpolate(x, size=(13, 5), mode="bilinear", align_corners=True)),
    ("upsample-bicubic", lambda x: F.upsample(x, scale_factor=2, mode="bicubic"), [X2],
     lambda x: TF.interpolate(x, scale_factor=2, mode="bicubic")),
    ("interpolate-linear", lambda x: F.interpolate(x, size=[20], mode="linear"), [X1],
     lambda x: TF.interpolate(x, size=20, mode="linear")),
    ("interpolate-trilinear", lambda x: F.interpolate(x, size=(3, 8, 9), mode="trilinear"), [X3],
     lambda x: TF.interpolate(x, size=(3, 8, 9), mode="trilinear")),
    ("interpolate-area", lambda x: F.interpolate(x, size=(4, 3), mode="area"), [X2],
     lambda x: TF.interpolate(x, size=(4, 3), mode="area")),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), [X2], lambda x: TF.pixel_shuffle(x, 2)),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), [X2[:, :, :8]], lambda x: TF.pixel_unshuffle(x, 2)),
    ("unfold", lambda x: F.unfold(x, [2, 3], strides=[2, 1], paddings=[1, 0, 0, 2], dilations=[1, 2]), [X2],
     lambda x: TF.unfold(TF.pad(x, (0, 2, 1, 0)), (2, 3), dilation=(1, 2), stride=(2, 1))),
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, 1e-5, w, b), [X2, rand(4), rand(4)],
     lambda x, w, b: TF.group_norm(x, 2, w, b)),
    ("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [X3, rand(2), rand(2)],
     lambda x, w, b: TF.instance_norm(x, weight=w, bias=b)),
    ("rms_norm", lambda x, w: F.rms_norm(x, [9, 8], w), [X2, rand(9, 8)], lambda x, w: TF.rms_norm(x, [9, 8], w, 1e-6)),
    ("layer_norm-two-axes", lambda x, w, b: F.layer_norm(x, [9, 8], w, b), [X2, rand(9, 8), rand(9, 8)],
     lambda x, w, b: TF.layer_norm(x, [9, 8], w, b)),
    ("local_response_norm", lambda x: F.local_response_norm(x, 3, 0.1, 0.75, 2.0), [X3],
     lambda x: TF.local_response_norm(x, 3, 0.1, 0.75, 2.0)),
    ("normalize", lambda x: F.normalize(x, axis=2), [X2], lambda x: TF.normalize(x, dim=2)),
    ("normalize-p3", lambda x: F.normalize(x, p=3), [X2], lambda x: TF.normalize(x, p=3)),
]


@pytest.mark.parametrize("name, fn, arrays, torch_fn", FUNCTIONAL_CASES, ids=[c[0] for c in FUNCTIONAL_CASES])
def test_nd_functions_match_torch_in_both_modes(name, fn, arrays, torch_fn):
    expected = torch_fn(*(_t(a) for a in arrays))
    expected = [e.numpy() for e in (expected if isinstance(expected, tuple) else (expected,))]
    eager, static = _both_modes(fn, arrays)
    for ours in (eager, static):
        assert len(ours) == len(expected)
        for got, want in zip(ours, expected):
            assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, fn, arrays, torch_fn", [c for c in FUNCTIONAL_CASES if c[0] in {
    "group_norm", "instance_norm", "rms_norm", "local_response_norm", "normalize", "normalize-p3", "pixel_shuffle",
    "interpolate-area", "avg_pool2d-divisor", "conv2d_transpose-same"}], ids=lambda c: c if isinstance(c, str) else "")
def test_composed_functions_have_torch_gradients(name, fn, arrays, torch_fn):
    """The functions built from several ops: gradients vs central differences and PyTorch."""
    small = [arrays[0][:1]] + list(arrays[1:])   # one sample: every element is perturbed
    feeds = {f"a{i}": a for i, a in enumerate(small)}

    def build(v):
        out = fn(*(v[f"a{i}"] for i in range(len(small))))
        return out[0] if isinstance(out, tuple) else out
    analytic = check_program_grad(build, feeds, rtol=1e-5)
    expected = torch_gradients(lambda **t: torch_fn(*(t[f"a{i}"] for i in range(len(small)))), feeds,
                               ProgramGradCheck(build, feeds), list(feeds))
    for key in feeds:
        np.testing.assert_allclose(analytic[key], expected[key], rtol=1e-6, atol=1e-9, err_msg=key)


def test_max_pool_backward_reads_the_saved_argmax():
    """The functional max pools run max_pool*_with_index; their backward is max_pool_index_grad
    on the saved Mask, not a second search of the windows."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2, 3, 8, 8], "float64")
        x.stop_gradient = False
        fg.gradients([fg.sum(F.max_pool2d(x, 2))], [x])
    types = [op.type for op in main.global_block().ops]
    assert "max_pool2d_with_index" in types and "max_pool_index_grad" in types
    assert "pool2d" not in types and "pool2d_grad" not in types


def test_ties_and_overlapping_windows_sum_like_torch():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = 1.0   # the maximum of four overlapping windows
    xt = torch.tensor(x, requires_grad=True)
    TF.max_pool2d(xt, 3, 1, 1).sum().backward()
    tensor = fg.to_tensor(x, stop_gradient=False)
    fg.sum(F.max_pool2d(tensor, 3, 1, 1)).backward()
    np.testing.assert_array_equal(tensor.grad.numpy(), xt.grad.numpy())


def test_old_pool2d_and_conv2d_programs_still_load_and_run():
    """Programs saved before the N-D ops carry pool2d / conv2d without the new attributes."""
    from fluidgrad.framework.serialize import program_from_dict, program_to_dict
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2, 2, 6, 6], "float64")
        w = fg.static.data("w", [3, 2, 3, 3], "float64")
        y = append_static_op("conv2d", {"Input": x, "Filter": w}, {"paddings": [1, 1]})
        out = append_static_op("pool2d", {"X": y}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]})
    saved = program_to_dict(main)
    new_attrs = {"padding_algorithm", "ceil_mode", "dilations", "adaptive"}
    for block in saved["blocks"]:
        for op in block["ops"]:
            op["attrs"] = {k: v for k, v in op["attrs"].items() if k not in new_attrs or
                           (k == "dilations" and op["type"] == "conv2d")}
    loaded = program_from_dict(saved)
    feeds = {"x": rand(2, 2, 6, 6), "w": rand(3, 2, 3, 3)}
    (got,) = fg.Executor().run(loaded, feed=feeds, fetch_list=[out.name], scope=fg.Scope())
    want = TF.max_pool2d(TF.conv2d(_t(feeds["x"]), _t(feeds["w"]), padding=1), 2).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)


LAYER_CASES = [
    (lambda: fg.nn.Conv1D(4, 6, 3, padding="same"), (2, 4, 9), [2, 6, 9]),
    (lambda: fg.nn.Conv2D(4, 6, 3, stride=2, padding=1), (2, 4, 8, 8), [2, 6, 4, 4]),
    (lambda: fg.nn.Conv3D(4, 2, 3, bias_attr=False), (1, 4, 4, 5, 5), [1, 2, 2, 3, 3]),
    (lambda: fg.nn.Conv1DTranspose(4, 2, 3, stride=2), (2, 4, 9), [2, 2, 19]),
    (lambda: fg.nn.Conv2DTranspose(4, 2, 3, stride=2, padding=1, output_padding=1), (2, 4, 8, 8), [2, 2, 16, 16]),
    (lambda: fg.nn.Conv3DTranspose(4, 2, 2, stride=2, groups=2), (1, 4, 2, 3, 3), [1, 2, 4, 6, 6]),
    (lambda: fg.nn.MaxPool1D(2), (2, 4, 9), [2, 4, 4]),
    (lambda: fg.nn.MaxPool2D(3, 2, 1, ceil_mode=True), (2, 4, 8, 8), [2, 4, 5, 5]),
    (lambda: fg.nn.MaxPool3D(2), (1, 4, 4, 6, 6), [1, 4, 2, 3, 3]),
    (lambda: fg.nn.AvgPool1D(2), (2, 4, 9), [2, 4, 4]),
    (lambda: fg.nn.AvgPool2D(3, 2, 1), (2, 4, 8, 8), [2, 4, 4, 4]),
    (lambda: fg.nn.AvgPool3D(2), (1, 4, 4, 6, 6), [1, 4, 2, 3, 3]),
    (lambda: fg.nn.AdaptiveAvgPool1D(4), (2, 4, 9), [2, 4, 4]),
    (lambda: fg.nn.AdaptiveAvgPool2D(3), (2, 4, 8, 8), [2, 4, 3, 3]),
    (lambda: fg.nn.AdaptiveAvgPool3D(1), (1, 4, 4, 6, 6), [1, 4, 1, 1, 1]),
    (lambda: fg.nn.AdaptiveMaxPool1D(4), (2, 4, 9), [2, 4, 4]),
    (lambda: fg.nn.AdaptiveMaxPool2D(3), (2, 4, 8, 8), [2, 4, 3, 3]),
    (lambda: fg.nn.AdaptiveMaxPool3D(2), (1, 4, 4, 6, 6), [1, 4, 2, 2, 2]),
    (lambda: fg.nn.Upsample(scale_factor=2, mode="bilinear"), (2, 4, 8, 8), [2, 4, 16, 16]),
    (lambda: fg.nn.PixelShuffle(2), (2, 4, 8, 8), [2, 1, 16, 16]),
    (lambda: fg.nn.GroupNorm(2, 4), (2, 4, 8, 8), [2, 4, 8, 8]),
    (lambda: fg.nn.InstanceNorm1D(4), (2, 4, 9), [2, 4, 9]),
    (lambda: fg.nn.InstanceNorm2D(4), (2, 4, 8, 8), [2, 4, 8, 8]),
    (lambda: fg.nn.InstanceNorm3D(4), (1, 4, 4, 6, 6), [1, 4, 4, 6, 6]),
    (lambda: fg.nn.BatchNorm1D(4), (2, 4, 9), [2, 4, 9]),
    (lambda: fg.nn.BatchNorm3D(4), (2, 4, 2, 3, 3), [2, 4, 2, 3, 3]),
    (lambda: fg.nn.LayerNorm([8, 8]), (2, 4, 8, 8), [2, 4, 8, 8]),
    (lambda: fg.nn.RMSNorm(8), (2, 4, 8, 8), [2, 4, 8, 8]),
    (lambda: fg.nn.LocalResponseNorm(3), (2, 4, 8, 8), [2, 4, 8, 8]),
]


@pytest.mark.parametrize("make, shape, out_shape", LAYER_CASES, ids=[str(i) for i in range(len(LAYER_CASES))])
def test_layers_run_forward_and_backward(make, shape, out_shape):
    layer = make()
    x = fg.to_tensor(rand(*shape).astype("float32"), stop_gradient=False)
    y = layer(x)
    assert list(y.shape) == out_shape and y.dtype == "float32"
    fg.sum(y * y).backward()
    assert x.grad is not None and x.grad.numpy().shape == shape
    assert all(p.grad is not None for p in layer.parameters())


def test_conv_layers_match_torch_with_the_same_weights():
    x = rand(2, 4, 7, 7).astype("float32")
    ours = fg.nn.Conv2DTranspose(4, 6, 3, stride=2, padding=1, groups=2)
    theirs = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    np.testing.assert_allclose(ours(fg.to_tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    assert list(ours.weight.shape) == list(theirs.weight.shape)


@pytest.mark.parametrize("build, message", [
    (lambda: F.conv3d(fg.static.data("x", [1, 2, 4, 4], "float32"), fg.static.data("w", [2, 2, 1, 1, 1], "float32")),
     r"conv3d.*5-D"),
    (lambda: F.conv1d(fg.static.data("x", [1, 3, 8], "float32"), fg.static.data("w", [2, 2, 3], "float32")),
     r"conv1d.*channels"),
    (lambda: F.conv2d_transpose(fg.static.data("x", [1, 2, 4, 4], "float32"),
                                fg.static.data("w", [2, 2, 3, 3], "float32"), stride=2, output_padding=2),
     r"conv2d_transpose.*output_padding"),
    (lambda: F.max_pool2d(fg.static.data("x", [1, 2, 4, 4], "float32"), 2, padding=2),
     r"max_pool2d_with_index.*paddings"),
    (lambda: F.avg_pool1d(fg.static.data("x", [1, 2, 2], "float32"), 3), r"pool1d.*does not fit"),
    (lambda: F.interpolate(fg.static.data("x", [1, 2, 4, 4], "float32"), size=[8, 8, 8], mode="nearest"),
     r"interpolate.*size"),
    (lambda: F.interpolate(fg.static.data("x", [1, 2, 4], "float32"), size=[8], mode="bilinear"), r"interpolate.*mode"),
    (lambda: F.group_norm(fg.static.data("x", [1, 6, 4], "float32"), 4), r"group_norm.*num_groups"),
    (lambda: F.rms_norm(fg.static.data("x", [1, 6, 4], "float32"), [6]), r"rms_norm.*normalized_shape"),
    (lambda: F.conv2d(fg.static.data("x", [1, 2, 4, 4], "int64"), fg.static.data("w", [2, 2, 1, 1], "int64")),
     r"conv2d.*floating"),
])
def test_bad_input_names_the_op(build, message):
    with fg.program_guard(fg.Program(), fg.Program()):
        with pytest.raises((ValueError, fg.framework.errors.FluidgradError), match=message):
            build()


def test_float32_erf_and_gelu_match_torch_over_the_whole_line():
    """The float32 erf (tanh of an odd polynomial) and exact gelu and its slope, on a dense grid
    across and beyond erf's transition, within a few float32 ulps of PyTorch's float64 values."""
    x = np.concatenate([np.linspace(-10, 10, 200001), [0.0, 1e-30, -1e-30, 1e6, -1e6]]).astype(np.float32)
    x64 = torch.from_numpy(x.astype(np.float64))
    xt = x64.clone().requires_grad_()
    TF.gelu(xt).sum().backward()
    ours = fg.to_tensor(x, stop_gradient=False)
    fg.sum(F.gelu(ours)).backward()
    for got, want, atol in ((fg.erf(fg.to_tensor(x)).numpy(), torch.erf(x64).numpy(), 2e-7),
                            (F.gelu(fg.to_tensor(x)).numpy(), TF.gelu(x64).numpy(), 6e-7),
                            (ours.grad.numpy(), xt.grad.numpy(), 3e-7)):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=5e-7, atol=atol)


@pytest.mark.parametrize("ksize, strides, paddings", [(2, 2, 0), (3, 2, 1)])
def test_max_pool_nan_and_ties_match_torch_values_and_indices(ksize, strides, paddings):
    x = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    x[0, 0, 1, 1] = x[1, 2, 4, 5] = np.nan
    x[1, 1, 2:4, 2:4] = 1.0   # a tied window
    out, mask = F.max_pool2d(fg.to_tensor(x), ksize, strides, paddings, return_mask=True)
    t_out, t_mask = TF.max_pool2d(torch.from_numpy(x), ksize, strides, paddings, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(mask.numpy(), t_mask.numpy())
