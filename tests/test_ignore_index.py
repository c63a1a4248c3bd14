"""ignore_index of the cross-entropy losses (default -100, as PyTorch and Paddle), against PyTorch.

An ignored label adds 0 to the loss and nothing to the gradient; "mean" divides by the number
(weighted: the summed class weights) of the counted labels, NaN when none counts. Any other label
outside [0, C) stays an error naming the op and the variable. The op cases in
tests/op_cases/core_loss.py check the ops themselves (gradients, grad of grad); here the whole
losses with their weights and reductions, the compiled and NumPy kernels, and the errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from both_modes import compare_with_torch
from fluidgrad.ops import accel, get_op_def
from fluidgrad.testing import check_program_grad

R = np.random.default_rng(14)
REDUCTIONS = ["mean", "sum", "none"]


def labels(classes, *shape, ignore=-100):
    out = R.integers(0, classes, size=shape).astype(np.int64)
    out.flat[::3] = ignore
    return out


def _torch_like_ours(loss, reduction, axis, label_has_class_axis=False):
    """An unreduced loss has the labels' shape, in Paddle 2 as in PyTorch: labels given with a
    class axis of size 1 (Paddle's [N, 1]) keep it in the loss, which PyTorch has no form for."""
    return loss.unsqueeze(axis) if reduction == "none" and label_has_class_axis else loss


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy_ignores_labels_like_torch(reduction, weighted, ignore_index):
    inputs = {"input": R.normal(size=(9, 5)), "label": labels(5, 9, ignore=ignore_index),
              "weight": R.uniform(0.5, 2.0, size=5)}
    weight_of = (lambda w: w) if weighted else (lambda w: None)
    compare_with_torch(
        lambda input, label, weight: F.cross_entropy(input, label, weight_of(weight), ignore_index=ignore_index,
                                                     reduction=reduction),
        lambda input, label, weight: _torch_like_ours(
            TF.cross_entropy(input, label, weight_of(weight), ignore_index=ignore_index, reduction=reduction),
            reduction, -1),
        inputs, wrt=["input"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_class_axis_1_with_ignored_labels(reduction, weighted):
    """[N, C, d] logits with classes on axis 1 (PyTorch's layout), labels [N, d] and [N, 1, d]."""
    x, y, w = R.normal(size=(3, 4, 5)), labels(4, 3, 5), R.uniform(0.5, 2.0, size=4)
    weight_of = (lambda w: w) if weighted else (lambda w: None)
    for label in (y, y[:, None, :]):
        compare_with_torch(
            lambda input, label, weight: F.cross_entropy(input, label, weight_of(weight), axis=1,
                                                         reduction=reduction),
            lambda input, label, weight: _torch_like_ours(
                TF.cross_entropy(input, label.reshape(3, 5), weight_of(weight), reduction=reduction), reduction, 1,
                label.ndim == 3),
            {"input": x, "label": label, "weight": w}, wrt=["input"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape, axis", [((7, 4), -1), ((3, 4, 5), 1), ((2, 3, 4), -1)])
def test_probability_input_ignores_labels(reduction, weighted, shape, axis):
    """use_softmax=False: input are probabilities (classes on `axis`); PyTorch's nll_loss of their log."""
    axis = axis % len(shape)
    p = R.uniform(0.2, 1.0, size=shape)
    p /= p.sum(axis, keepdims=True)
    label_shape = shape[:axis] + shape[axis + 1:]
    weight_of = (lambda w: w) if weighted else (lambda w: None)
    compare_with_torch(
        lambda p, label, weight: F.cross_entropy(p, label, weight_of(weight), use_softmax=False, axis=axis,
                                                 reduction=reduction),
        lambda p, label, weight: _torch_like_ours(
            TF.nll_loss(torch.log(p).movedim(axis, 1), label, weight_of(weight), reduction=reduction),
            reduction, axis),
        {"p": p, "label": labels(shape[axis], *label_shape), "weight": R.uniform(0.5, 2.0, size=shape[axis])},
        wrt=["p"])


def test_probability_label_of_the_wrong_shape_is_a_build_error():
    with pytest.raises(fg.framework.errors.FluidgradError, match=r"cross_entropy.*Label.*\[2, 4\].*does not fit"):
        F.cross_entropy(fg.to_tensor(np.full((2, 3, 4), 0.25)), fg.to_tensor(np.zeros((2, 4), np.int64)),
                        use_softmax=False, axis=-1)


@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_of_the_mean_over_counted_labels_is_numeric(weighted):
    feeds = {"logits": R.normal(size=(6, 4)), "label": labels(4, 6, 1), "weight": R.uniform(0.5, 2.0, size=4)}

    def build(v):
        return F.cross_entropy(v["logits"], v["label"], v["weight"] if weighted else None)
    grads = check_program_grad(build, feeds, wrt=["logits"])
    assert not grads["logits"][::3].any()              # the ignored rows: no gradient at all


@pytest.mark.parametrize("mode", ["eager", "static"])
def test_all_labels_ignored_follows_torch(mode):
    """mean over no counted label is NaN (0 / 0) with a zero gradient; sum and none are 0."""
    x, y = R.normal(size=(3, 4)), np.full(3, -100)
    for weight in (None, R.uniform(0.5, 2.0, size=4)):
        for reduction in REDUCTIONS:
            xt = torch.tensor(x, requires_grad=True)
            want = TF.cross_entropy(xt, torch.tensor(y), None if weight is None else torch.tensor(weight),
                                    reduction=reduction)
            want.sum().backward()
            with np.errstate(divide="ignore", invalid="ignore"):
                value, grad = _value_and_grad(mode, x, y, weight, reduction)
            np.testing.assert_array_equal(value.reshape(-1), want.detach().numpy().reshape(-1))
            np.testing.assert_array_equal(grad, xt.grad.numpy())


def _value_and_grad(mode, x, y, weight, reduction):
    if mode == "eager":
        xt = fg.to_tensor(x, stop_gradient=False)
        loss = F.cross_entropy(xt, fg.to_tensor(y), None if weight is None else fg.to_tensor(weight),
                               reduction=reduction)
        fg.sum(loss).backward()
        return loss.numpy(), xt.grad.numpy()
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        xv = fg.static.data("x", list(x.shape), "float64")
        xv.stop_gradient = False
        yv = fg.static.data("y", list(y.shape), "int64")
        wv = None if weight is None else fg.static.data("w", list(weight.shape), "float64")
        loss = F.cross_entropy(xv, yv, wv, reduction=reduction)
        grad, = fg.gradients([fg.sum(loss)], [xv])
    feed = {"x": x, "y": y} if weight is None else {"x": x, "y": y, "w": weight}
    return tuple(fg.Executor().run(main, feed=feed, fetch_list=[loss, grad]))


def test_layer_and_paddle_signature_ignore_minus_100_by_default():
    x, y = R.normal(size=(6, 5)), labels(5, 6)
    want = TF.cross_entropy(torch.tensor(x), torch.tensor(y))
    np.testing.assert_allclose(fg.nn.CrossEntropyLoss()(fg.to_tensor(x), fg.to_tensor(y)).numpy(), want.numpy(),
                               rtol=1e-12)
    # Paddle 2's positional order: (logits, label, soft_label, ignore_index, numeric_stable_mode, return_softmax)
    loss, softmax = F.softmax_with_cross_entropy(fg.to_tensor(x), fg.to_tensor(y[:, None]), False, -100, True, True)
    np.testing.assert_allclose(loss.numpy()[:, 0], TF.cross_entropy(torch.tensor(x), torch.tensor(y),
                                                                    reduction="none").numpy(), rtol=1e-12)
    np.testing.assert_allclose(softmax.numpy(), torch.softmax(torch.tensor(x), -1).numpy(), rtol=1e-12)


@pytest.mark.parametrize("bad, ignore_index", [(5, -100), (-1, -100), (-100, -1), (7, 3)])
def test_other_out_of_range_labels_are_errors_naming_op_and_variable(bad, ignore_index):
    x, y = R.normal(size=(4, 5)), np.array([0, bad, 1, -100 if ignore_index == -100 else ignore_index])
    message = rf"softmax_with_cross_entropy.*Label holds {bad}, out of range for 5 classes"
    with pytest.raises(IndexError, match=message):
        F.cross_entropy(fg.to_tensor(x), fg.to_tensor(y), ignore_index=ignore_index)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        loss = F.cross_entropy(fg.static.data("logits", [4, 5], "float64"), fg.static.data("ids", [4], "int64"),
                               ignore_index=ignore_index)
    with pytest.raises(IndexError, match=message + r".*Label: ids"):
        fg.Executor().run(main, feed={"logits": x, "ids": y}, fetch_list=[loss])
    with pytest.raises(IndexError, match=rf"cross_entropy.*Label holds {bad}"):
        F.cross_entropy(fg.to_tensor(np.full((4, 5), 0.2)), fg.to_tensor(y), ignore_index=ignore_index,
                        use_softmax=False)


@pytest.mark.skipif(not accel.installed(), reason="numba (the `fast` extra) is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width, ignore_index", [(3, -100), (70, -100), (5, 0)])
def test_compiled_and_numpy_kernels_agree_on_ignored_labels(dtype, width, ignore_index):
    kernel = get_op_def("softmax_with_cross_entropy").kernel
    logits = (R.normal(size=(4, 6, width)) * 3).astype(dtype)
    label = labels(width, 4, 6, 1, ignore=ignore_index)
    outputs = []
    for on in (True, False):
        with accel.use_numba(on):
            outputs.append(kernel(logits, label, soft_label=False, axis=-1, ignore_index=ignore_index))
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for compiled, plain in zip(*outputs):
        assert compiled.dtype == plain.dtype == dtype
        np.testing.assert_allclose(compiled, plain, **tol)
    assert not outputs[0][1][label == ignore_index].any()
