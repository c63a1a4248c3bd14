"""The losses added in session 11 (hinge_embedding_loss, multi_label_soft_margin_loss,
poisson_nll_loss, multi_margin_loss) and their Layers: against PyTorch (value and gradient, eager
and static, every reduction), against central differences (float64), grad of grad against
PyTorch, PyTorch's keyword spellings and names, and clear errors for bad input."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from both_modes import compare_with_torch
from fluidgrad.testing import check_program_grad

R = np.random.default_rng(11)
REDUCTIONS = ["mean", "sum", "none"]


def normal(*shape):
    return R.normal(size=shape)


def signs(*shape):
    return np.where(R.uniform(size=shape) < 0.5, -1.0, 1.0)


def multi_hot(*shape):
    return (R.uniform(size=shape) < 0.4).astype(np.float64)


# name -> (ours(reduction), PyTorch's(reduction), inputs, differentiated inputs)
CASES = {
    "hinge_embedding_loss": (lambda r: lambda x, y: F.hinge_embedding_loss(x, y, margin=0.7, reduction=r),
                             lambda r: lambda x, y: TF.hinge_embedding_loss(x, y, margin=0.7, reduction=r),
                             lambda: {"x": normal(4, 5), "y": signs(4, 5)}, ["x"]),
    "hinge_embedding_loss_other_labels": (  # PyTorch's rule: a label neither 1 nor -1 gets both terms
        lambda r: lambda x, y: F.hinge_embedding_loss(x, y, reduction=r),
        lambda r: lambda x, y: TF.hinge_embedding_loss(x, y, reduction=r),
        lambda: {"x": normal(6), "y": np.array([1.0, -1.0, 0.0, 2.0, -1.0, 1.0])}, ["x"]),
    "multi_label_soft_margin_loss": (
        lambda r: lambda x, y: F.multi_label_soft_margin_loss(x, y, reduction=r),
        lambda r: lambda x, y: TF.multilabel_soft_margin_loss(x, y, reduction=r),
        lambda: {"x": 3 * normal(4, 5), "y": multi_hot(4, 5)}, ["x"]),
    "multi_label_soft_margin_loss_weight": (
        lambda r: lambda x, y, w: F.multi_label_soft_margin_loss(x, y, w, reduction=r),
        lambda r: lambda x, y, w: TF.multilabel_soft_margin_loss(x, y, w, reduction=r),
        lambda: {"x": 3 * normal(4, 5), "y": multi_hot(4, 5), "w": R.uniform(0.5, 2.0, 5)}, ["x", "w"]),
    "poisson_nll_loss": (lambda r: lambda x, y: F.poisson_nll_loss(x, y, reduction=r),
                         lambda r: lambda x, y: TF.poisson_nll_loss(x, y, reduction=r),
                         lambda: {"x": normal(4, 3), "y": R.poisson(2.0, (4, 3)).astype(np.float64)}, ["x", "y"]),
    "poisson_nll_loss_rates_full": (
        lambda r: lambda x, y: F.poisson_nll_loss(x, y, log_input=False, full=True, epsilon=1e-3, reduction=r),
        lambda r: lambda x, y: TF.poisson_nll_loss(x, y, log_input=False, full=True, eps=1e-3, reduction=r),
        lambda: {"x": R.uniform(0.2, 4.0, (4, 3)), "y": R.uniform(0.0, 5.0, (4, 3))}, ["x"]),
    "poisson_nll_loss_full_log_input": (
        lambda r: lambda x, y: F.poisson_nll_loss(x, y, full=True, reduction=r),
        lambda r: lambda x, y: TF.poisson_nll_loss(x, y, full=True, reduction=r),
        lambda: {"x": normal(5), "y": np.array([0.0, 1.0, 1.5, 3.0, 7.0])}, ["x"]),
    "multi_margin_loss": (
        lambda r: lambda x, y: F.multi_margin_loss(x, y, reduction=r),
        lambda r: lambda x, y: TF.multi_margin_loss(x, y, reduction=r),
        lambda: {"x": normal(6, 4), "y": R.integers(0, 4, 6)}, ["x"]),
    "multi_margin_loss_p2_weight": (
        lambda r: lambda x, y, w: F.multi_margin_loss(x, y, p=2, margin=0.6, weight=w, reduction=r),
        lambda r: lambda x, y, w: TF.multi_margin_loss(x, y, p=2, margin=0.6, weight=w, reduction=r),
        lambda: {"x": normal(6, 4), "y": R.integers(0, 4, 6), "w": R.uniform(0.5, 2.0, 4)}, ["x"]),
    "multi_margin_loss_one_example": (
        lambda r: lambda x, y: F.multi_margin_loss(x, y, margin=2.0, reduction=r),
        lambda r: lambda x, y: TF.multi_margin_loss(x, y, margin=2.0, reduction=r),
        lambda: {"x": normal(5), "y": np.array(3)}, ["x"]),
}


@pytest.mark.parametrize("name, reduction", [(n, r) for n in sorted(CASES) for r in REDUCTIONS])
def test_against_torch_eager_and_static(name, reduction):
    ours, theirs, inputs, wrt = CASES[name]
    compare_with_torch(ours(reduction), theirs(reduction), inputs(), wrt=wrt, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name, reduction", [(n, r) for n in sorted(CASES) for r in REDUCTIONS])
def test_gradient_against_central_differences(name, reduction):
    ours, _, inputs, wrt = CASES[name]
    check_program_grad(lambda v: ours(reduction)(**v), inputs(), wrt=wrt, rtol=1e-6, atol=1e-8)


def torch_multi_margin(x, y, p=1, margin=1.0, weight=None, reduction="mean"):
    """torch's multi_margin_loss composed of differentiable torch ops (torch's own has no double
    backward): the reference for the second derivatives."""
    scores, classes = (x[None], y.reshape(1)) if x.dim() == 1 else (x, y)
    hinge = torch.relu(margin - scores.gather(1, classes[:, None]) + scores) ** p
    hinge = hinge * (1 - TF.one_hot(classes, scores.shape[1]))
    if weight is not None:
        hinge = hinge * weight[classes][:, None]
    loss = hinge.sum(1) / scores.shape[1]
    loss = loss.reshape(()) if x.dim() == 1 else loss
    return {"mean": loss.mean, "sum": loss.sum, "none": lambda: loss}[reduction]()


# torch's multi_margin_loss has no double backward: these second derivatives come from the composition above
SECOND_ORDER_REFERENCE = {
    "multi_margin_loss": lambda r: lambda x, y: torch_multi_margin(x, y, reduction=r),
    "multi_margin_loss_p2_weight": lambda r: lambda x, y, w: torch_multi_margin(x, y, 2, 0.6, w, reduction=r),
    "multi_margin_loss_one_example": lambda r: lambda x, y: torch_multi_margin(x, y, margin=2.0, reduction=r),
}
# piecewise linear in the differentiated inputs: torch's first derivative is a constant (no graph)
LINEAR = {"hinge_embedding_loss", "hinge_embedding_loss_other_labels"}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER_REFERENCE))
def test_the_second_order_reference_is_torchs_loss(name):
    _, theirs, inputs, _ = CASES[name]
    values = {k: torch.tensor(v) for k, v in inputs().items()}
    for reduction in REDUCTIONS:
        np.testing.assert_allclose(SECOND_ORDER_REFERENCE[name](reduction)(**values).numpy(),
                                   theirs(reduction)(**values).numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_piecewise_linear_losses_have_no_second_derivative(name):
    ours, _, inputs, wrt = CASES[name]
    x = {k: fg.to_tensor(v, stop_gradient=k not in wrt) for k, v in inputs().items()}
    first = fg.grad([fg.sum(ours("sum")(**x))], [x[k] for k in wrt], create_graph=True)
    second = fg.grad([fg.add_n([fg.sum(g * g) for g in first])], [x[k] for k in wrt], allow_unused=True)
    for g in second:
        assert g is None or not g.numpy().any()


@pytest.mark.parametrize("name", sorted(set(CASES) - LINEAR))
def test_grad_of_grad_against_torch(name):
    ours, theirs, inputs, wrt = CASES[name]
    theirs = SECOND_ORDER_REFERENCE.get(name, theirs)
    values = inputs()
    tensors = {k: torch.tensor(v, requires_grad=k in wrt) for k, v in values.items()}
    first = torch.autograd.grad(theirs("sum")(**tensors).sum(), [tensors[k] for k in wrt], create_graph=True)
    directions = [R.uniform(0.5, 1.5, size=g.shape) for g in first]
    expected = torch.autograd.grad(sum((g * torch.tensor(d)).sum() for g, d in zip(first, directions)),
                                   [tensors[k] for k in wrt], allow_unused=True)
    ours_in = {k: fg.to_tensor(v, stop_gradient=k not in wrt) for k, v in values.items()}
    first_ours = fg.grad([fg.sum(ours("sum")(**ours_in))], [ours_in[k] for k in wrt], create_graph=True)
    second = fg.grad([fg.add_n([fg.sum(g * fg.to_tensor(d)) for g, d in zip(first_ours, directions)])],
                     [ours_in[k] for k in wrt], allow_unused=True)
    for k, got, want in zip(wrt, second, expected):
        want = np.zeros(values[k].shape) if want is None else want.numpy(force=True)
        got = np.zeros(values[k].shape) if got is None else got.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10, err_msg=f"{name}: second derivative in {k}")


def test_float32_stays_float32():
    x = fg.to_tensor(normal(4, 3).astype("float32"))
    labels = fg.to_tensor(np.array([0, 2, 1, 1]))
    for out in (F.hinge_embedding_loss(x, fg.sign(x)), F.multi_label_soft_margin_loss(x, fg.cast(x > 0, "float32")),
                F.poisson_nll_loss(x, fg.abs(x)), F.multi_margin_loss(x, labels)):
        assert out.dtype == "float32"


def test_a_score_at_the_margin_has_no_multi_margin_gradient_as_torch():
    x0, y0 = np.array([[1.0, 0.0, 0.5], [0.2, 0.2, 3.0]]), np.array([0, 1])      # margin - x[y] + x[i] == 0
    compare_with_torch(lambda x, y: F.multi_margin_loss(x, y), lambda x, y: TF.multi_margin_loss(x, y),
                       {"x": x0, "y": y0}, wrt=["x"])


def test_hinge_at_the_margin_still_learns_as_torch():
    x0, y0 = np.array([1.0, 0.3, -0.2]), np.array([-1.0, -1.0, 1.0])
    compare_with_torch(lambda x, y: F.hinge_embedding_loss(x, y), lambda x, y: TF.hinge_embedding_loss(x, y),
                       {"x": x0, "y": y0}, wrt=["x"])


def test_layers_match_torch():
    x0, y0 = normal(5, 4), R.integers(0, 4, 5)
    w0 = R.uniform(0.5, 2.0, 4)
    x, tx = fg.to_tensor(x0), torch.tensor(x0)
    pairs = [
        (fg.nn.HingeEmbeddingLoss(margin=0.5, reduction="sum")(x, fg.sign(x)),
         torch.nn.HingeEmbeddingLoss(margin=0.5, reduction="sum")(tx, tx.sign())),
        (fg.nn.MultiLabelSoftMarginLoss(fg.to_tensor(w0), "none")(x, fg.cast(x > 0, "float64")),
         torch.nn.MultiLabelSoftMarginLoss(torch.tensor(w0), reduction="none")(tx, (tx > 0).double())),
        (fg.nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-4)(fg.abs(x), fg.abs(x) * 2),
         torch.nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-4)(tx.abs(), tx.abs() * 2)),
        (fg.nn.MultiMarginLoss(p=2, margin=0.5, weight=fg.to_tensor(w0))(x, fg.to_tensor(y0)),
         torch.nn.MultiMarginLoss(p=2, margin=0.5, weight=torch.tensor(w0))(tx, torch.tensor(y0))),
    ]
    for got, expected in pairs:
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


def test_layers_in_a_static_program():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 4], "float64")
        y = fg.static.data("y", [None], "int64")
        loss = fg.nn.MultiMarginLoss()(x, y) + fg.nn.PoissonNLLLoss()(x, fg.abs(x)) + \
            fg.nn.HingeEmbeddingLoss()(x, fg.sign(x)) + fg.nn.MultiLabelSoftMarginLoss()(x, fg.cast(x > 0, "float64"))
    x0, y0 = normal(3, 4), np.array([3, 0, 1])
    got, = fg.Executor().run(main, feed={"x": x0, "y": y0}, fetch_list=[loss])
    tx, ty = torch.tensor(x0), torch.tensor(y0)
    expected = TF.multi_margin_loss(tx, ty) + TF.poisson_nll_loss(tx, tx.abs()) + \
        TF.hinge_embedding_loss(tx, tx.sign()) + TF.multilabel_soft_margin_loss(tx, (tx > 0).double())
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-12)


def test_torch_keyword_spellings_and_names():
    x0, y0 = normal(4, 3), np.array([0, 2, 1, 1])
    x, tx = fg.to_tensor(x0), torch.tensor(x0)
    checks = [
        (F.hinge_embedding_loss(x, target=fg.sign(x)), TF.hinge_embedding_loss(tx, target=tx.sign())),
        (F.multilabel_soft_margin_loss(x, target=fg.cast(x > 0, "float64")),
         TF.multilabel_soft_margin_loss(tx, target=(tx > 0).double())),
        (F.poisson_nll_loss(fg.abs(x), target=x * 2, eps=1e-3, log_input=False),
         TF.poisson_nll_loss(tx.abs(), target=tx * 2, eps=1e-3, log_input=False)),
        (F.multi_margin_loss(x, target=fg.to_tensor(y0)), TF.multi_margin_loss(tx, target=torch.tensor(y0))),
    ]
    for got, expected in checks:
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    with pytest.raises(TypeError, match="poisson_nll_loss: give epsilon= or eps=, not both"):
        F.poisson_nll_loss(x, x, epsilon=0.1, eps=0.2)
    with pytest.raises(TypeError, match="multi_margin_loss: missing the argument label="):
        F.multi_margin_loss(x)


def _bad_inputs():
    x = fg.to_tensor(normal(4, 3))
    return [
        (lambda: F.multi_margin_loss(x, fg.to_tensor(np.array([0, 3, 1, 1]))), ValueError,
         r"multi_margin_loss: label holds class indices outside \[0, 3\): \[3\]"),
        (lambda: F.multi_margin_loss(x, fg.to_tensor(np.array([0, 1]))), ValueError, "multi_margin_loss: expected input"),
        (lambda: F.multi_margin_loss(x, fg.to_tensor(np.array([0.0, 1.0, 1.0, 2.0]))), fg.framework.DTypeError,
         "multi_margin_loss: label must hold integer class indices"),
        (lambda: F.multi_margin_loss(x, fg.to_tensor(np.array([0, 1, 1, 2])), weight=fg.to_tensor(np.ones(4))),
         ValueError, r"multi_margin_loss: weight must be \[C\] = \[3\]"),
        (lambda: F.multi_margin_loss(x, fg.to_tensor(np.array([0, 1, 1, 2])), p=0), ValueError, "p must be > 0"),
        (lambda: F.multi_label_soft_margin_loss(x, fg.to_tensor(np.ones((4, 1)))), ValueError,
         "multi_label_soft_margin_loss: label of shape"),
        (lambda: F.poisson_nll_loss(x, x, epsilon=0.0), ValueError, "poisson_nll_loss: epsilon must be > 0"),
        (lambda: F.poisson_nll_loss(x, fg.to_tensor(np.ones((2, 3)))), ValueError, "poisson_nll_loss"),
        (lambda: F.hinge_embedding_loss(x, x, reduction="avg"), ValueError, "hinge_embedding_loss: reduction"),
    ]


@pytest.mark.parametrize("index", range(9))
def test_bad_input_is_a_clear_error_naming_the_loss(index):
    call, error, words = _bad_inputs()[index]
    with pytest.raises(error, match=words):
        call()


def test_multi_margin_label_out_of_range_in_a_program_is_an_error():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 3], "float64")
        y = fg.static.data("y", [None], "int64")
        loss = F.multi_margin_loss(x, y)
    with pytest.raises(Exception, match="out of range|outside"):
        fg.Executor().run(main, feed={"x": normal(2, 3), "y": np.array([0, 5])}, fetch_list=[loss])


def test_the_losses_export_to_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from fluidgrad.onnx import export_program
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x, y = fg.static.data("x", [None, 4], "float64"), fg.static.data("y", [None], "int64")
        losses = [F.hinge_embedding_loss(x, fg.sign(x)), F.multi_label_soft_margin_loss(x, fg.cast(x > 0, "float64")),
                  F.poisson_nll_loss(x, fg.abs(x), full=True), F.multi_margin_loss(x, y, p=2, reduction="none")]
    feeds = {"x": normal(3, 4), "y": np.array([0, 3, 1])}
    want = fg.Executor().run(main, feed=feeds, fetch_list=losses)
    model = export_program(tmp_path / "l.onnx", [x, y], losses, program=main, scope=fg.Scope())
    session = ort.InferenceSession(str(tmp_path / "l.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {v.name: feeds[v.name] for v in model.graph.input})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
