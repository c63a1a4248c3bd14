"""The losses added in session 10 (square_error_cost, triplet_margin_loss and its distance form,
cosine_embedding_loss, soft_margin_loss, gaussian_nll_loss, sigmoid_focal_loss, label_smooth,
pairwise_distance) and their Layers: against PyTorch (value and gradient, eager and static, every
reduction), against central differences (float64), grad of grad against PyTorch, PyTorch's
keyword spellings, and clear errors for bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from both_modes import compare_with_torch
from fluidgrad.testing import check_program_grad

R = np.random.default_rng(10)
REDUCTIONS = ["mean", "sum", "none"]


def normal(*shape):
    return R.normal(size=shape)


def signs(*shape):
    return np.where(R.uniform(size=shape) < 0.5, -1.0, 1.0)


def torch_focal(logit, label, alpha=0.25, gamma=2.0, reduction="sum", normalizer=None):
    """torchvision.ops.sigmoid_focal_loss (not installed here), with Paddle's normalizer."""
    p = torch.sigmoid(logit)
    loss = TF.binary_cross_entropy_with_logits(logit, label, reduction="none")
    loss = loss * (1 - (p * label + (1 - p) * (1 - label))) ** gamma
    if alpha >= 0:
        loss = loss * (alpha * label + (1 - alpha) * (1 - label))
    if normalizer is not None:
        loss = loss / normalizer
    return {"mean": loss.mean, "sum": loss.sum, "none": lambda: loss}[reduction]()


# name -> (ours(reduction), PyTorch's(reduction), inputs, differentiated inputs, twice differentiable)
CASES = {
    "square_error_cost": (lambda r: lambda x, y: F.square_error_cost(x, y),
                          lambda r: lambda x, y: (x - y) ** 2,
                          lambda: {"x": normal(4, 3), "y": normal(4, 3)}, ["x", "y"]),
    "triplet_margin_loss": (lambda r: lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=1.5, reduction=r),
                            lambda r: lambda a, p, n: TF.triplet_margin_loss(a, p, n, margin=1.5, reduction=r),
                            lambda: {"a": normal(6, 3), "p": normal(6, 3), "n": normal(6, 3)}, ["a", "p", "n"]),
    "triplet_margin_loss_p1_swap": (
        lambda r: lambda a, p, n: F.triplet_margin_loss(a, p, n, p=1, swap=True, epsilon=1e-3, reduction=r),
        lambda r: lambda a, p, n: TF.triplet_margin_loss(a, p, n, p=1, swap=True, eps=1e-3, reduction=r),
        lambda: {"a": normal(5, 4), "p": normal(5, 4), "n": normal(5, 4)}, ["a", "p", "n"]),
    "triplet_margin_loss_p3_rank3": (
        lambda r: lambda a, p, n: F.triplet_margin_loss(a, p, n, p=3, reduction=r),
        lambda r: lambda a, p, n: TF.triplet_margin_loss(a, p, n, p=3, reduction=r),
        lambda: {"a": normal(2, 3, 4), "p": normal(2, 3, 4), "n": normal(2, 3, 4)}, ["a", "p", "n"]),
    "triplet_margin_with_distance_loss": (
        lambda r: lambda a, p, n: F.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda u, v: 1.0 - F.cosine_similarity(u, v, axis=-1), margin=0.5, swap=True,
            reduction=r),
        lambda r: lambda a, p, n: TF.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda u, v: 1.0 - TF.cosine_similarity(u, v, dim=-1), margin=0.5, swap=True,
            reduction=r),
        lambda: {"a": normal(6, 3), "p": normal(6, 3), "n": normal(6, 3)}, ["a", "p", "n"]),
    "cosine_embedding_loss": (
        lambda r: lambda x1, x2, y: F.cosine_embedding_loss(x1, x2, y, margin=0.2, reduction=r),
        lambda r: lambda x1, x2, y: TF.cosine_embedding_loss(x1, x2, y, margin=0.2, reduction=r),
        lambda: {"x1": normal(8, 3), "x2": normal(8, 3), "y": signs(8).astype(np.int64)}, ["x1", "x2"]),
    "cosine_embedding_loss_1d": (
        lambda r: lambda x1, x2, y: F.cosine_embedding_loss(x1, x2, y, margin=-0.5, reduction=r),
        lambda r: lambda x1, x2, y: TF.cosine_embedding_loss(x1, x2, y, margin=-0.5, reduction=r),
        lambda: {"x1": normal(5), "x2": normal(5), "y": np.array(-1.0)}, ["x1", "x2"]),
    "soft_margin_loss": (lambda r: lambda x, y: F.soft_margin_loss(x, y, reduction=r),
                         lambda r: lambda x, y: TF.soft_margin_loss(x, y, reduction=r),
                         lambda: {"x": 3 * normal(4, 5), "y": signs(4, 5)}, ["x"]),
    "gaussian_nll_loss": (
        lambda r: lambda x, y, v: F.gaussian_nll_loss(x, y, v, reduction=r),
        lambda r: lambda x, y, v: TF.gaussian_nll_loss(x, y, v, reduction=r),
        lambda: {"x": normal(4, 3), "y": normal(4, 3), "v": R.uniform(0.2, 2.0, (4, 3))}, ["x", "y", "v"]),
    "gaussian_nll_loss_full_homoscedastic": (
        lambda r: lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True, epsilon=1e-3, reduction=r),
        lambda r: lambda x, y, v: TF.gaussian_nll_loss(x, y, v, full=True, eps=1e-3, reduction=r),
        lambda: {"x": normal(4, 3), "y": normal(4, 3), "v": R.uniform(0.2, 2.0, (4,))}, ["x", "y", "v"]),
    "gaussian_nll_loss_size_one_axis": (
        lambda r: lambda x, y, v: F.gaussian_nll_loss(x, y, v, reduction=r),
        lambda r: lambda x, y, v: TF.gaussian_nll_loss(x, y, v, reduction=r),
        lambda: {"x": normal(3, 2, 4), "y": normal(3, 2, 4), "v": R.uniform(0.2, 2.0, (3, 1, 4))}, ["x", "y", "v"]),
    "sigmoid_focal_loss": (
        lambda r: lambda x, y: F.sigmoid_focal_loss(x, y, reduction=r),
        lambda r: lambda x, y: torch_focal(x, y, reduction=r),
        lambda: {"x": 2 * normal(5, 3), "y": (R.uniform(size=(5, 3)) < 0.3).astype(np.float64)}, ["x"]),
    "sigmoid_focal_loss_normalizer": (
        lambda r: lambda x, y, n: F.sigmoid_focal_loss(x, y, n, alpha=0.6, gamma=1.5, reduction=r),
        lambda r: lambda x, y, n: torch_focal(x, y, 0.6, 1.5, r, n),
        lambda: {"x": 2 * normal(5, 3), "y": (R.uniform(size=(5, 3)) < 0.3).astype(np.float64),
                 "n": np.array([3.0])}, ["x", "n"]),
    "sigmoid_focal_loss_no_alpha_gamma_0": (
        lambda r: lambda x, y: F.sigmoid_focal_loss(x, y, alpha=-1, gamma=0, reduction=r),
        lambda r: lambda x, y: torch_focal(x, y, -1, 0, r),
        lambda: {"x": 2 * normal(5, 3), "y": (R.uniform(size=(5, 3)) < 0.3).astype(np.float64)}, ["x"]),
    "label_smooth": (lambda r: lambda y: F.label_smooth(y, epsilon=0.2),
                     lambda r: lambda y: y * 0.8 + 0.2 / y.shape[-1],
                     lambda: {"y": R.dirichlet(np.ones(4), size=(2, 3))}, ["y"]),
    "label_smooth_prior": (lambda r: lambda y, prior: F.label_smooth(y, prior, epsilon=0.3),
                           lambda r: lambda y, prior: y * 0.7 + 0.3 * prior,
                           lambda: {"y": R.dirichlet(np.ones(4), size=5), "prior": R.dirichlet(np.ones(4), size=1)},
                           ["y", "prior"]),
    "pairwise_distance": (lambda r: lambda x, y: F.pairwise_distance(x, y, p=2.5, keepdim=True),
                          lambda r: lambda x, y: TF.pairwise_distance(x, y, p=2.5, keepdim=True),
                          lambda: {"x": normal(4, 3), "y": normal(1, 3)}, ["x", "y"]),
}
UNREDUCED = {"square_error_cost", "label_smooth", "label_smooth_prior", "pairwise_distance"}
# first derivatives that do not depend on the inputs (linear maps): no grad of grad to compare
LINEAR = {"label_smooth", "label_smooth_prior"}


def _cases_and_reductions():
    for name in sorted(CASES):
        for reduction in (["none"] if name in UNREDUCED else REDUCTIONS):
            yield name, reduction


@pytest.mark.parametrize("name, reduction", list(_cases_and_reductions()))
def test_against_torch_eager_and_static(name, reduction):
    ours, theirs, inputs, wrt = CASES[name]
    compare_with_torch(ours(reduction), theirs(reduction), inputs(), wrt=wrt, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name, reduction", list(_cases_and_reductions()))
def test_gradient_against_central_differences(name, reduction):
    ours, _, inputs, wrt = CASES[name]
    feeds = inputs()
    check_program_grad(lambda v: ours(reduction)(**v), feeds, wrt=wrt, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(set(CASES) - LINEAR))
def test_grad_of_grad_against_torch(name):
    ours, theirs, inputs, wrt = CASES[name]
    values = inputs()
    reduction = "none" if name in UNREDUCED else "sum"
    tensors = {k: torch.tensor(v, requires_grad=k in wrt) for k, v in values.items()}
    first = torch.autograd.grad(theirs(reduction)(**tensors).sum(), [tensors[k] for k in wrt], create_graph=True)
    directions = [R.uniform(0.5, 1.5, size=g.shape) for g in first]
    expected = torch.autograd.grad(sum((g * torch.tensor(d)).sum() for g, d in zip(first, directions)),
                                   [tensors[k] for k in wrt], allow_unused=True)
    ours_in = {k: fg.to_tensor(v, stop_gradient=k not in wrt) for k, v in values.items()}
    first_ours = fg.grad([fg.sum(ours(reduction)(**ours_in))], [ours_in[k] for k in wrt], create_graph=True)
    second = fg.grad([fg.add_n([fg.sum(g * fg.to_tensor(d)) for g, d in zip(first_ours, directions)])],
                     [ours_in[k] for k in wrt], allow_unused=True)
    for k, got, want in zip(wrt, second, expected):
        want = np.zeros(values[k].shape) if want is None else want.numpy(force=True)
        got = np.zeros(values[k].shape) if got is None else got.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10, err_msg=f"{name}: second derivative in {k}")


def test_float32_stays_float32():
    x, y = fg.to_tensor(normal(4, 3).astype("float32")), fg.to_tensor(normal(4, 3).astype("float32"))
    v = fg.to_tensor(R.uniform(0.5, 1.0, (4, 3)).astype("float32"))
    for out in (F.square_error_cost(x, y), F.triplet_margin_loss(x, y, -y), F.soft_margin_loss(x, fg.sign(y)),
                F.cosine_embedding_loss(x, y, fg.to_tensor(np.array([1, -1, 1, 1]))), F.gaussian_nll_loss(x, y, v),
                F.sigmoid_focal_loss(x, fg.cast(y > 0, "float32")), F.label_smooth(F.softmax(x))):
        assert out.dtype == "float32"


def test_gaussian_nll_variance_below_epsilon_passes_the_gradient_straight_through():
    """PyTorch clamps the variance outside autograd: the gradient is that of the clamped
    variance, applied to the variance itself (a clip op's gradient would be 0 there)."""
    inputs = {"x": normal(3, 2), "y": normal(3, 2), "v": np.array([[1e-9, 0.5], [0.0, 2.0], [1e-3, 1e-7]])}
    compare_with_torch(lambda x, y, v: F.gaussian_nll_loss(x, y, v, epsilon=1e-4, reduction="sum"),
                       lambda x, y, v: TF.gaussian_nll_loss(x, y, v, eps=1e-4, reduction="sum"),
                       inputs, wrt=["x", "y", "v"], rtol=1e-9, atol=1e-9)


def test_gaussian_nll_variance_as_a_number():
    x0, y0 = normal(4, 3), normal(4, 3)
    got = F.gaussian_nll_loss(fg.to_tensor(x0), fg.to_tensor(y0), 0.7, full=True).numpy()
    expected = TF.gaussian_nll_loss(torch.tensor(x0), torch.tensor(y0), 0.7, full=True).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_gaussian_nll_negative_variance_raises_in_eager_and_gives_nan_in_static():
    x0, v0 = normal(2, 3), np.array([[1.0, -0.5, 1.0], [1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="gaussian_nll_loss: variance has negative entries"):
        F.gaussian_nll_loss(fg.to_tensor(x0), fg.to_tensor(x0), fg.to_tensor(v0))
    with pytest.raises(ValueError, match="gaussian_nll_loss: variance has negative entries"):
        F.gaussian_nll_loss(fg.to_tensor(x0), fg.to_tensor(x0), -1.0)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x, v = fg.static.data("x", [None, 3], "float64"), fg.static.data("v", [None, 3], "float64")
        loss = F.gaussian_nll_loss(x, x, v, reduction="none")
    out, = fg.Executor().run(main, feed={"x": x0, "v": v0}, fetch_list=[loss])
    assert np.isnan(out[0, 1]) and np.isfinite(np.delete(out.ravel(), 1)).all()


def test_layers_match_their_functions():
    a, p, n = (fg.to_tensor(normal(5, 3)) for _ in range(3))
    y = fg.to_tensor(signs(5))
    v = fg.to_tensor(R.uniform(0.5, 1.0, (5, 3)))
    pairs = [
        (fg.nn.TripletMarginLoss(margin=0.5, p=1, swap=True, reduction="sum")(a, p, n),
         F.triplet_margin_loss(a, p, n, 0.5, 1, swap=True, reduction="sum")),
        (fg.nn.TripletMarginLoss(eps=1e-2)(a, p, n), F.triplet_margin_loss(a, p, n, epsilon=1e-2)),
        (fg.nn.TripletMarginWithDistanceLoss(margin=2.0, reduction="none")(a, p, n),
         F.triplet_margin_with_distance_loss(a, p, n, margin=2.0, reduction="none")),
        (fg.nn.CosineEmbeddingLoss(0.3, "none")(a, p, y), F.cosine_embedding_loss(a, p, y, 0.3, "none")),
        (fg.nn.SoftMarginLoss("sum")(a, fg.sign(p)), F.soft_margin_loss(a, fg.sign(p), "sum")),
        (fg.nn.GaussianNLLLoss(full=True, eps=0.1)(a, p, v), F.gaussian_nll_loss(a, p, v, True, 0.1)),
        (fg.nn.PairwiseDistance(p=1, keepdim=True)(a, p), F.pairwise_distance(a, p, 1, keepdim=True)),
    ]
    for layer_out, function_out in pairs:
        np.testing.assert_array_equal(layer_out.numpy(), function_out.numpy())
    torch_layer = torch.nn.TripletMarginLoss(margin=0.5, p=1, swap=True, reduction="sum")
    np.testing.assert_allclose(pairs[0][0].numpy(), torch_layer(*(torch.tensor(t.numpy()) for t in (a, p, n))).numpy())


def test_layers_in_a_static_program():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        a, p, n = (fg.static.data(k, [None, 3], "float64") for k in "apn")
        loss = fg.nn.TripletMarginLoss(margin=0.5)(a, p, n) + fg.nn.GaussianNLLLoss()(a, p, fg.abs(n))
    feed = {k: normal(4, 3) for k in "apn"}
    got, = fg.Executor().run(main, feed=feed, fetch_list=[loss])
    t = {k: torch.tensor(v) for k, v in feed.items()}
    expected = TF.triplet_margin_loss(t["a"], t["p"], t["n"], margin=0.5) + TF.gaussian_nll_loss(t["a"], t["p"],
                                                                                                   t["n"].abs())
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-12)


def test_torch_keyword_spellings():
    x1, x2, x3 = normal(4, 3), normal(4, 3), normal(4, 3)
    a, b, c = (fg.to_tensor(v) for v in (x1, x2, x3))
    ta, tb, tc = (torch.tensor(v) for v in (x1, x2, x3))
    y = np.array([1, -1, -1, 1])
    checks = [
        (F.triplet_margin_loss(anchor=a, positive=b, negative=c, eps=1e-3),
         TF.triplet_margin_loss(anchor=ta, positive=tb, negative=tc, eps=1e-3)),
        (F.cosine_embedding_loss(a, b, target=fg.to_tensor(y)),
         TF.cosine_embedding_loss(ta, tb, target=torch.tensor(y))),
        (F.soft_margin_loss(a, target=fg.sign(b)), TF.soft_margin_loss(ta, target=torch.sign(tb))),
        (F.gaussian_nll_loss(a, target=b, var=fg.abs(c), eps=1e-2),
         TF.gaussian_nll_loss(ta, target=tb, var=tc.abs(), eps=1e-2)),
        (F.sigmoid_focal_loss(inputs=a, targets=fg.cast(b > 0, "float64"), reduction="mean"),
         torch_focal(ta, (tb > 0).double(), reduction="mean")),
        (F.pairwise_distance(a, b, eps=1e-3), TF.pairwise_distance(ta, tb, eps=1e-3)),
    ]
    for got, expected in checks:
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    with pytest.raises(TypeError, match="triplet_margin_loss: give input= or anchor=, not both"):
        F.triplet_margin_loss(a, b, c, anchor=a)
    with pytest.raises(TypeError, match="gaussian_nll_loss: give epsilon= or eps=, not both"):
        F.gaussian_nll_loss(a, b, fg.abs(c), epsilon=0.1, eps=0.2)
    with pytest.raises(TypeError, match="soft_margin_loss: missing the argument label="):
        F.soft_margin_loss(a)


def test_integer_focal_labels_are_read_as_zero_or_one():
    x0, y0 = normal(4, 3), (R.uniform(size=(4, 3)) < 0.5)
    got = F.sigmoid_focal_loss(fg.to_tensor(x0), fg.to_tensor(y0.astype(np.int64))).numpy()
    np.testing.assert_allclose(got, torch_focal(torch.tensor(x0), torch.tensor(y0, dtype=torch.float64)).numpy(),
                               rtol=1e-12)


def test_label_smooth_with_the_class_count_known_only_at_run_time():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        y = fg.static.data("y", [None, None], "float64")
        out = F.label_smooth(y, epsilon=0.25)
    y0 = np.eye(5)[[0, 3, 4]]
    got, = fg.Executor().run(main, feed={"y": y0}, fetch_list=[out])
    np.testing.assert_allclose(got, y0 * 0.75 + 0.25 / 5, rtol=1e-14)


def _static(build, shapes):
    with fg.program_guard(fg.Program(), fg.Program()):
        return build(*(fg.static.data(f"v{i}", shape, "float64") for i, shape in enumerate(shapes)))


BAD_INPUTS = {
    "square_error_cost": (lambda x, y: F.square_error_cost(x, y), [[4, 3], [4, 2]],
                          r"square_error_cost: input of shape \[4, 3\], label of shape \[4, 2\] do not broadcast"),
    "triplet_ranks": (lambda a, p, n: F.triplet_margin_loss(a, p, n), [[4, 3], [4, 3], [3]],
                      r"triplet_margin_loss: input of shape \[4, 3\], positive of shape \[4, 3\], negative of shape "
                      r"\[3\]: the three must have the same shape"),
    "triplet_sizes": (lambda a, p, n: F.triplet_margin_loss(a, p, n), [[4, 3], [4, 2], [4, 3]],
                      r"triplet_margin_loss: .*positive of shape \[4, 2\]"),
    "triplet_reduction": (lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction="avg"), [[4, 3]] * 3,
                          "triplet_margin_loss: reduction must be one of 'mean', 'sum', 'none', got 'avg'"),
    "cosine_inputs": (lambda a, b, y: F.cosine_embedding_loss(a, b, y), [[4, 3], [4, 2], [4]],
                      r"cosine_embedding_loss: input1 of shape \[4, 3\], input2 of shape \[4, 2\]"),
    "cosine_label": (lambda a, b, y: F.cosine_embedding_loss(a, b, y), [[4, 3], [4, 3], [4, 1]],
                     r"cosine_embedding_loss: label of shape \[4, 1\] does not fit input1 of shape \[4, 3\]"),
    "cosine_reduction": (lambda a, b, y: F.cosine_embedding_loss(a, b, y, reduction=None), [[4, 3], [4, 3], [4]],
                         "cosine_embedding_loss: reduction must be"),
    "soft_margin": (lambda x, y: F.soft_margin_loss(x, y), [[4, 3], [3, 4]],
                    r"soft_margin_loss: input of shape \[4, 3\], label of shape \[3, 4\] do not broadcast"),
    "soft_margin_reduction": (lambda x, y: F.soft_margin_loss(x, y, "batchmean"), [[4, 3], [4, 3]],
                              "soft_margin_loss: reduction must be"),
    "gaussian_variance": (lambda x, y, v: F.gaussian_nll_loss(x, y, v), [[4, 3], [4, 3], [3]],
                          r"gaussian_nll_loss: variance of shape \[3\] does not fit input of shape \[4, 3\]"),
    "gaussian_variance_two_axes": (lambda x, y, v: F.gaussian_nll_loss(x, y, v), [[4, 3, 2], [4, 3, 2], [4, 1, 1]],
                                   r"gaussian_nll_loss: variance of shape \[4, 1, 1\] does not fit"),
    "gaussian_label": (lambda x, y, v: F.gaussian_nll_loss(x, y, v), [[4, 3], [4, 2], [4, 3]],
                       r"gaussian_nll_loss: input of shape \[4, 3\], label of shape \[4, 2\] do not broadcast"),
    "gaussian_reduction": (lambda x, y, v: F.gaussian_nll_loss(x, y, v, reduction="max"), [[4, 3]] * 3,
                           "gaussian_nll_loss: reduction must be"),
    "focal_label": (lambda x, y: F.sigmoid_focal_loss(x, y), [[4, 3], [4]],
                    r"sigmoid_focal_loss: label of shape \[4\] differs from logit of shape \[4, 3\]"),
    "focal_normalizer": (lambda x, y, n: F.sigmoid_focal_loss(x, y, n), [[4, 3], [4, 3], [2, 2]],
                         r"sigmoid_focal_loss: normalizer must be a scalar"),
    "focal_reduction": (lambda x, y: F.sigmoid_focal_loss(x, y, reduction="all"), [[4, 3], [4, 3]],
                        "sigmoid_focal_loss: reduction must be"),
    "label_smooth_prior": (lambda y, prior: F.label_smooth(y, prior), [[4, 3], [1, 4]],
                           r"label_smooth: prior_dist of shape \[1, 4\] does not fit label of shape \[4, 3\]"),
    "pairwise": (lambda x, y: F.pairwise_distance(x, y), [[4, 3], [4, 2]],
                 r"pairwise_distance: x of shape \[4, 3\], y of shape \[4, 2\] do not broadcast"),
}


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_a_clear_error_naming_the_loss_and_shapes(name, static):
    build, shapes, message = BAD_INPUTS[name]
    with pytest.raises(ValueError, match=message):
        if static:
            _static(build, shapes)
        else:
            build(*(fg.to_tensor(R.uniform(0.5, 1.0, shape)) for shape in shapes))


def test_bad_options_are_clear_errors():
    x = fg.to_tensor(normal(4, 3))
    with pytest.raises(ValueError, match="label_smooth: epsilon must lie in"):
        F.label_smooth(x, epsilon=1.5)
    with pytest.raises(ValueError, match="cosine_embedding_loss: margin must lie in"):
        F.cosine_embedding_loss(x, x, fg.to_tensor(np.ones(4)), margin=2)
    with pytest.raises(ValueError, match="triplet_margin_with_distance_loss: margin must be positive"):
        F.triplet_margin_with_distance_loss(x, x, x, margin=0.0)


def test_a_warning_for_labels_that_broadcast_to_another_shape():
    x, y = fg.to_tensor(normal(4, 1)), fg.to_tensor(normal(4))
    with pytest.warns(UserWarning, match="square_error_cost: label of shape"):
        assert F.square_error_cost(x, y).shape == (4, 4)
    with pytest.warns(UserWarning, match="soft_margin_loss: label of shape"):
        F.soft_margin_loss(x, y)


def test_known_values():
    """Spot values by hand: a triplet exactly at distance 0 and 1; a cosine of 1 and of -1."""
    a = fg.to_tensor(np.array([[0.0, 0.0]]))
    loss = F.triplet_margin_loss(a, a, fg.to_tensor(np.array([[1.0, 0.0]])), margin=2.0, epsilon=0.0)
    assert float(loss) == pytest.approx(1.0)
    u = fg.to_tensor(np.array([[1.0, 2.0], [1.0, 2.0]]))
    cos_loss = F.cosine_embedding_loss(u, u * fg.to_tensor(np.array([[1.0], [-1.0]])),
                                       fg.to_tensor(np.array([1, -1])), reduction="none")
    np.testing.assert_allclose(cos_loss.numpy(), [0.0, 0.0], atol=1e-12)
    assert float(F.soft_margin_loss(fg.to_tensor(np.array([0.0])), fg.to_tensor(np.array([1.0])))) == \
        pytest.approx(math.log(2))
