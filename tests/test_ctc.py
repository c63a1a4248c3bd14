"""nn.functional.ctc_loss and nn.CTCLoss: reductions against PyTorch in both modes, the
gradient through log_softmax of raw scores, norm_by_times, infeasible alignments, clear
errors for bad lengths and labels, and the documented absence of a second derivative.
The op itself (value, numeric gradient, PyTorch's gradient, eager == static) is in
tests/op_cases/ctc.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from fluidgrad.framework.errors import ExecutionError, FluidgradError
from fluidgrad.nn import functional as F
from fluidgrad.ops import accel
from fluidgrad.ops.ctc import ctc_loss_grad_kernel, ctc_loss_kernel

RNG = np.random.default_rng(5)
T, N, C = 7, 3, 5
SCORES = RNG.normal(size=(T, N, C))            # raw scores: the functional normalises them
LABELS = np.array([[1, 2, 2, 0], [3, 4, 0, 0], [1, 1, 3, 2]])
INPUT_LENGTHS = np.array([7, 5, 7])
LABEL_LENGTHS = np.array([3, 2, 4])


def _torch(reduction, scores=SCORES, input_lengths=INPUT_LENGTHS, label_lengths=LABEL_LENGTHS):
    x = torch.tensor(scores, requires_grad=True)
    loss = TF.ctc_loss(TF.log_softmax(x, 2), torch.tensor(LABELS), torch.tensor(input_lengths),
                       torch.tensor(label_lengths), reduction=reduction)
    (grad,) = torch.autograd.grad(loss.sum(), x)
    return loss.detach().numpy(), grad.numpy()


def _eager(reduction, **kw):
    x = fg.to_tensor(SCORES, stop_gradient=False)
    loss = F.ctc_loss(x, fg.to_tensor(LABELS), fg.to_tensor(INPUT_LENGTHS), fg.to_tensor(LABEL_LENGTHS),
                      reduction=reduction, **kw)
    fg.sum(loss).backward()
    return loss.numpy(), x.grad.numpy()


def _static(reduction, **kw):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [T, N, C], "float64")
        x.stop_gradient = False
        ints = {name: fg.static.data(name, list(a.shape), "int64") for name, a in
                (("labels", LABELS), ("input_lengths", INPUT_LENGTHS), ("label_lengths", LABEL_LENGTHS))}
        loss = F.ctc_loss(x, ints["labels"], ints["input_lengths"], ints["label_lengths"], reduction=reduction, **kw)
        (grad,) = fg.gradients([fg.sum(loss)], [x])
    feed = {"x": SCORES, "labels": LABELS, "input_lengths": INPUT_LENGTHS, "label_lengths": LABEL_LENGTHS}
    return fg.Executor().run(main, feed=feed, fetch_list=[loss, grad], scope=fg.Scope())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_reductions_and_gradients_match_torch_in_both_modes(reduction):
    want_loss, want_grad = _torch(reduction)
    for got_loss, got_grad in (_eager(reduction), _static(reduction)):
        np.testing.assert_allclose(got_loss, want_loss, rtol=1e-10)
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-9, atol=1e-12)


def test_layer_and_norm_by_times():
    """norm_by_times (Paddle's warpctc): the loss is unchanged, each sample's gradient is
    divided by its number of frames."""
    layer = fg.nn.CTCLoss(blank=0, reduction="sum")
    x = fg.to_tensor(SCORES, stop_gradient=False)
    loss = layer(x, fg.to_tensor(LABELS), fg.to_tensor(INPUT_LENGTHS), fg.to_tensor(LABEL_LENGTHS), norm_by_times=True)
    loss.backward()
    want_loss, want_grad = _torch("sum")
    np.testing.assert_allclose(loss.numpy(), want_loss, rtol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), want_grad / INPUT_LENGTHS[None, :, None], rtol=1e-9, atol=1e-12)
    static_loss, static_grad = _static("sum", norm_by_times=True)
    np.testing.assert_allclose(static_grad, x.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_labels_that_cannot_fit_give_an_infinite_loss_as_torch():
    """4 frames cannot hold "1 1 3 2" (the repeat needs a blank between): loss inf, as PyTorch."""
    short = np.array([7, 5, 4])
    got = F.ctc_loss(fg.to_tensor(SCORES), fg.to_tensor(LABELS), fg.to_tensor(short), fg.to_tensor(LABEL_LENGTHS),
                     reduction="none")
    want, _ = _torch("none", input_lengths=short)
    assert np.isinf(want[2]) and np.isinf(got.numpy()[2])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


def test_gradient_of_an_infinite_loss_is_nan_on_its_frames_and_zero_past_them_as_torch():
    """The sample that cannot fit: NaN on its 4 frames, 0 on the 3 past its input length (as
    PyTorch); the other samples' gradients stay finite and equal PyTorch's."""
    short = np.array([7, 5, 4])
    x = fg.to_tensor(SCORES, stop_gradient=False)
    F.ctc_loss(x, fg.to_tensor(LABELS), fg.to_tensor(short), fg.to_tensor(LABEL_LENGTHS), reduction="sum").backward()
    _, want = _torch("sum", input_lengths=short)
    got = x.grad.numpy()
    assert np.isnan(want[:4, 2]).all() and np.isnan(got[:4, 2]).all()
    np.testing.assert_array_equal(want[4:, 2], 0.0)
    np.testing.assert_array_equal(got[4:, 2], 0.0)
    np.testing.assert_allclose(got[:, :2], want[:, :2], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("lengths, labels, message", [
    ([8, 5, 7], LABELS, r"op ctc_loss: InputLengths must lie in \[0, 7\]"),
    ([7, -1, 7], LABELS, r"op ctc_loss: InputLengths must lie in \[0, 7\]"),
    ([7, 5, 7], np.array([[1, 2, 2, 0], [3, 0, 0, 0], [1, 1, 3, 2]]), r"Labels\[1, 1\] = 0 is not a class .* blank 0"),
    ([7, 5, 7], np.array([[1, 2, 9, 0], [3, 4, 0, 0], [1, 1, 3, 2]]), r"Labels\[0, 2\] = 9 is not a class in \[0, 5\)"),
])
def test_bad_lengths_and_labels_are_clear_errors(lengths, labels, message):
    """Values the shape rule cannot see: the kernel refuses them, in both modes."""
    with pytest.raises(ExecutionError, match=message):
        F.ctc_loss(fg.to_tensor(SCORES), fg.to_tensor(labels), fg.to_tensor(np.array(lengths)),
                   fg.to_tensor(LABEL_LENGTHS))
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        loss = F.ctc_loss(fg.static.data("x", [T, N, C], "float64"), fg.static.data("l", [N, 4], "int64"),
                          fg.static.data("i", [N], "int64"), fg.static.data("ll", [N], "int64"))
    feed = {"x": SCORES, "l": labels, "i": np.array(lengths), "ll": LABEL_LENGTHS}
    with pytest.raises(ExecutionError, match=message):
        fg.Executor().run(main, feed=feed, fetch_list=[loss], scope=fg.Scope())


def test_label_lengths_beyond_the_labels_and_bad_shapes_are_clear_errors():
    with pytest.raises(ExecutionError, match=r"op ctc_loss: LabelLengths must lie in \[0, 4\]"):
        F.ctc_loss(fg.to_tensor(SCORES), fg.to_tensor(LABELS), fg.to_tensor(INPUT_LENGTHS),
                   fg.to_tensor(np.array([3, 5, 1])))
    with pytest.raises(FluidgradError, match=r"ctc_loss.*batch size 3"):
        F.ctc_loss(fg.to_tensor(SCORES), fg.to_tensor(LABELS[:2]), fg.to_tensor(INPUT_LENGTHS),
                   fg.to_tensor(LABEL_LENGTHS))
    with pytest.raises(FluidgradError, match=r"ctc_loss.*\[time, batch, classes\]"):
        F.ctc_loss(fg.to_tensor(SCORES[0]), fg.to_tensor(LABELS), fg.to_tensor(INPUT_LENGTHS),
                   fg.to_tensor(LABEL_LENGTHS))
    with pytest.raises(FluidgradError, match=r"ctc_loss.*integer InputLengths"):
        F.ctc_loss(fg.to_tensor(SCORES), fg.to_tensor(LABELS), fg.to_tensor(INPUT_LENGTHS * 1.0),
                   fg.to_tensor(LABEL_LENGTHS))
    with pytest.raises(ValueError, match="reduction"):
        F.ctc_loss(fg.to_tensor(SCORES), fg.to_tensor(LABELS), fg.to_tensor(INPUT_LENGTHS),
                   fg.to_tensor(LABEL_LENGTHS), reduction="max")


def test_second_derivative_is_a_documented_no_gradient_error():
    x = fg.to_tensor(SCORES, stop_gradient=False)
    loss = F.ctc_loss(x, fg.to_tensor(LABELS), fg.to_tensor(INPUT_LENGTHS), fg.to_tensor(LABEL_LENGTHS))
    (grad,) = fg.grad([loss], [x], create_graph=True)
    with pytest.raises(Exception, match="ctc_loss_grad has no gradient"):
        fg.grad([fg.sum(grad * grad)], [x])


@pytest.mark.skipif(not accel.installed(), reason="numba (the fast extra) not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_recursions_equal_the_numpy_steps(dtype):
    """The alpha and beta recursions compiled by numba give the NumPy path's loss and gradient
    (short inputs, an empty label, an infeasible sample and a repeat included)."""
    scores = SCORES.astype(dtype)
    labels = np.array([[1, 2, 2, 0], [3, 4, 0, 0], [1, 1, 3, 2]])
    for input_lengths, label_lengths in (([7, 5, 7], [3, 2, 4]), ([7, 0, 4], [3, 0, 4]), ([3, 1, 6], [0, 1, 4])):
        args = (scores, labels, np.array(input_lengths), np.array(label_lengths))
        results = []
        for on in (True, False):
            with accel.use_numba(on):
                loss, alpha = ctc_loss_kernel(*args)
                grad = ctc_loss_grad_kernel(*args, alpha, loss, np.ones(N, dtype))
            results.append((loss, alpha, grad))
        for compiled, steps in zip(*results):
            np.testing.assert_allclose(compiled, steps, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)
