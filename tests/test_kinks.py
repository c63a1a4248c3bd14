"""Gradients where a function has a corner, a zero spread or a batch known only at run time:
each must be PyTorch's, in eager and static mode alike (the review-s7 findings and their relatives)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from fluidgrad.dispatch import apply_op
from fluidgrad.nn import functional as F
from fluidgrad.testing import check_grad


def _torch_grad(fn, values):
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    fn(tx).sum().backward()
    return tx.grad.numpy()


def _eager_grad(fn, values):
    x = fg.to_tensor(np.array(values, dtype=np.float64), stop_gradient=False)
    fg.sum(fn(x)).backward()
    return x.grad.numpy()


def _static_grad(fn, values):
    values = np.array(values, dtype=np.float64)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None] + list(values.shape[1:]), "float64")
        x.stop_gradient = False
        dx, = fg.gradients([fg.sum(fn(x))], [x])
    return fg.Executor().run(main, feed={"x": values}, fetch_list=[dx])[0]


# name -> (ours, PyTorch's, the corner values); every value here sits exactly on a kink
_CORNERS = {
    "relu": (F.relu, TF.relu, [0.0, 1.0]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1), [0.0, -1.0]),
    "elu": (lambda x: F.elu(x, 0.5), lambda x: TF.elu(x, 0.5), [0.0, -1.0]),
    "selu": (F.selu, TF.selu, [0.0]),
    "celu": (lambda x: F.celu(x, 2.0), lambda x: TF.celu(x, 2.0), [0.0]),
    "relu6": (F.relu6, TF.relu6, [0.0, 6.0, 3.0, -1.0, 7.0]),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: TF.hardtanh(x, -0.5, 2.0), [-0.5, 2.0, 1.0]),
    "hardswish": (F.hardswish, TF.hardswish, [-3.0, 3.0, -4.0, 4.0, 1.0]),
    "hardsigmoid": (lambda x: F.hardsigmoid(x, 1 / 6, 0.5), TF.hardsigmoid, [-3.0, 3.0, 1.0]),
    "clip (torch.clamp)": (lambda x: fg.clip(x, -1.0, 1.0), lambda x: torch.clamp(x, -1.0, 1.0), [-1.0, 1.0, 0.0]),
    "clip min only": (lambda x: fg.clip(x, min=0.0), lambda x: torch.clamp(x, min=0.0), [0.0, -1.0]),
    "hardshrink": (lambda x: F.hardshrink(x, 0.5), lambda x: TF.hardshrink(x, 0.5), [-0.5, 0.5, 0.0, 1.0, -2.0]),
    "softshrink": (lambda x: F.softshrink(x, 0.5), lambda x: TF.softshrink(x, 0.5), [-0.5, 0.5, 0.0, 1.0, -2.0]),
    "thresholded_relu": (lambda x: F.thresholded_relu(x, 1.0, 0.25), lambda x: TF.threshold(x, 1.0, 0.25),
                         [1.0, 0.0, 2.0]),
    "tanhshrink": (F.tanhshrink, TF.tanhshrink, [0.0, 1.5]),
    "softplus at its threshold": (lambda x: F.softplus(x, 2.0, 5.0), lambda x: TF.softplus(x, 2.0, 5.0), [2.5, 3.0]),
    "abs": (fg.abs, torch.abs, [0.0, -2.0]),
    "l1_loss": (lambda x: F.l1_loss(x, fg.zeros_like(x), "sum"),
                lambda x: TF.l1_loss(x, torch.zeros_like(x), reduction="sum"), [0.0, 1.0]),
    "smooth_l1_loss at delta": (lambda x: F.smooth_l1_loss(x, fg.zeros_like(x), "sum", 1.0),
                                lambda x: TF.huber_loss(x, torch.zeros_like(x), reduction="sum", delta=1.0),
                                [1.0, -1.0, 0.0]),
    "margin_ranking_loss at a tie": (lambda x: F.margin_ranking_loss(x, fg.zeros_like(x), fg.ones_like(x), 0.5, "sum"),
                                     lambda x: TF.margin_ranking_loss(x, torch.zeros_like(x), torch.ones_like(x),
                                                                      margin=0.5, reduction="sum"),
                                     [0.5, 0.0, 1.0]),
    "bce_with_logits at 0": (lambda x: F.binary_cross_entropy_with_logits(x, fg.ones_like(x) * 0.25, reduction="sum"),
                             lambda x: TF.binary_cross_entropy_with_logits(x, torch.ones_like(x) * 0.25,
                                                                           reduction="sum"), [0.0, 2.0]),
    "std of a constant": (lambda x: fg.std(x), lambda x: x.std(), [3.0, 3.0, 3.0]),
    "var of a constant": (lambda x: fg.var(x), lambda x: x.var(), [3.0, 3.0, 3.0]),
    "norm of zeros": (lambda x: fg.norm(x), lambda x: torch.linalg.vector_norm(x), [0.0, 0.0]),
    "normalize zeros": (lambda x: F.normalize(fg.reshape(x, [1, 2])),
                        lambda x: TF.normalize(x.reshape(1, 2)), [0.0, 0.0]),
}


@pytest.mark.parametrize("mode", ["eager", "static"])
@pytest.mark.parametrize("name", sorted(_CORNERS))
def test_gradient_at_a_corner_matches_torch(name, mode):
    ours, theirs, values = _CORNERS[name]
    got = (_eager_grad if mode == "eager" else _static_grad)(ours, values)
    np.testing.assert_allclose(got, _torch_grad(theirs, values), rtol=1e-7, atol=0)   # hardsigmoid: float32 1/6


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_std_gradient_is_zero_on_constant_rows_only(dtype, keepdim):
    """One constant row among random ones: its gradient is 0, the others' PyTorch's."""
    x0 = np.random.default_rng(0).standard_normal((3, 4)).astype(dtype)
    x0[1] = 0.5
    tx = torch.tensor(x0, requires_grad=True)
    tx.std(1, keepdim=keepdim).sum().backward()
    x = fg.to_tensor(x0, stop_gradient=False)
    fg.sum(fg.std(x, axis=1, keepdim=keepdim)).backward()
    assert x.grad.dtype == dtype
    np.testing.assert_array_equal(x.grad.numpy()[1], np.zeros(4, dtype))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5 if dtype == "float32" else 1e-12)


def test_std_with_a_batch_known_only_at_run_time_and_its_second_derivative():
    x0 = np.random.default_rng(1).standard_normal((5, 3))
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 3], "float64")
        x.stop_gradient = False
        spread = fg.std(x, axis=0)
        dx, = fg.gradients([fg.sum(fg.square(spread))], [x])
        ddx, = fg.gradients([fg.sum(fg.square(dx))], [x])
    got = fg.Executor().run(main, feed={"x": x0}, fetch_list=[spread, dx, ddx])
    tx = torch.tensor(x0, requires_grad=True)
    tdx, = torch.autograd.grad(tx.std(0).square().sum(), tx, create_graph=True)
    tddx, = torch.autograd.grad(tdx.square().sum(), tx)
    for ours, theirs in zip(got, [tx.std(0), tdx, tddx]):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-10)


def test_clip_with_an_open_interval_is_hardtanh():
    """closed=False: the slope is 1 only strictly inside (min, max) (hardtanh's, relu6's)."""
    x = np.random.default_rng(2).uniform(-2, 2, (4, 5))
    x[np.abs(np.abs(x) - 0.5) < 0.05] += 0.2   # central differences need distance from the corners
    check_grad("clip", {"X": x}, {"min": -0.5, "max": 0.5, "closed": False},
               torch_fn=lambda X: TF.hardtanh(X, -0.5, 0.5))
    corners = fg.to_tensor(np.array([-0.5, 0.5, 0.0]))
    mask = apply_op("clip_mask", {"X": corners}, {"min": -0.5, "max": 0.5, "closed": False})
    np.testing.assert_array_equal(mask.numpy(), [0.0, 0.0, 1.0])


def test_static_label_smoothing_with_an_unknown_class_count():
    """e / C reads C at run time: the smoothed loss of a [None, None] input is PyTorch's."""
    rng = np.random.default_rng(3)
    logits, label = rng.standard_normal((4, 5)), rng.integers(0, 5, (4,))
    soft = rng.dirichlet(np.ones(5), size=4)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, None], "float64")
        hard = fg.static.data("hard", [None], "int64")
        target = fg.static.data("soft", [None, None], "float64")
        losses = [F.cross_entropy(x, hard, label_smoothing=0.2),
                  F.cross_entropy(x, target, soft_label=True, label_smoothing=0.2)]
    got = fg.Executor().run(main, feed={"x": logits, "hard": label, "soft": soft}, fetch_list=losses)
    t = torch.tensor(logits)
    expected = [TF.cross_entropy(t, torch.tensor(label), label_smoothing=0.2),
                TF.cross_entropy(t, torch.tensor(soft), label_smoothing=0.2)]
    for ours, theirs in zip(got, expected):
        np.testing.assert_allclose(ours, theirs.item(), rtol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (4, 2, 3), (6,)])
def test_kl_div_batchmean_divides_by_the_batch_in_both_modes(shape):
    rng = np.random.default_rng(4)
    p, q = rng.uniform(0.1, 1, shape), rng.uniform(0.1, 1, shape)
    expected = TF.kl_div(torch.tensor(np.log(p)), torch.tensor(q), reduction="batchmean").item()
    eager = F.kl_div(fg.log(fg.to_tensor(p)), fg.to_tensor(q), reduction="batchmean").numpy()
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None] + list(shape[1:]), "float64")
        t = fg.static.data("t", [None] + list(shape[1:]), "float64")
        loss = F.kl_div(fg.log(x), t, reduction="batchmean")
    static = fg.Executor().run(main, feed={"x": p, "t": q}, fetch_list=[loss])[0]
    np.testing.assert_allclose(eager, expected, rtol=1e-12)
    np.testing.assert_allclose(static, expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["hardshrink", "softshrink", "thresholded_relu", "tanhshrink"])
def test_shrink_activations_match_torch_away_from_their_corners(name):
    ours, theirs, _ = _CORNERS[name]
    x0 = np.random.default_rng(5).uniform(-3, 3, (4, 5))
    np.testing.assert_allclose(ours(fg.to_tensor(x0)).numpy(), theirs(torch.tensor(x0)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(_eager_grad(ours, x0), _torch_grad(theirs, x0), rtol=1e-12)


@pytest.mark.parametrize("fn", [F.hardshrink, F.softshrink])
def test_shrink_refuses_a_negative_threshold(fn):
    with pytest.raises(ValueError, match="threshold"):
        fn(fg.to_tensor(np.ones(3)), -0.5)


def test_binary_cross_entropy_gradient_at_probabilities_0_and_1_is_torch_s():
    """The clamped logs are flat there; PyTorch's gradient (x - y) / max(x (1 - x), 1e-12) is finite."""
    p0, y0 = np.array([0.0, 0.0, 1.0, 1.0, 0.3]), np.array([0.0, 1.0, 0.0, 1.0, 0.6])
    tp, ty = torch.tensor(p0, requires_grad=True), torch.tensor(y0, requires_grad=True)
    TF.binary_cross_entropy(tp, ty, reduction="sum").backward()
    p, y = fg.to_tensor(p0, stop_gradient=False), fg.to_tensor(y0, stop_gradient=False)
    loss = F.binary_cross_entropy(p, y, reduction="sum")
    loss.backward()
    np.testing.assert_allclose(loss.numpy(), TF.binary_cross_entropy(tp, ty, reduction="sum").item(), rtol=1e-12)
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("bad", [1.5, -0.1, np.nan])
def test_binary_cross_entropy_refuses_a_value_outside_0_1(bad):
    with pytest.raises(Exception, match="probabilities"):
        F.binary_cross_entropy(fg.to_tensor(np.array([0.5, bad])), fg.to_tensor(np.array([1.0, 0.0])))


@pytest.mark.parametrize("ours, theirs", [(fg.nn.Hardshrink(0.3), torch.nn.Hardshrink(0.3)),
                                          (fg.nn.Softshrink(0.3), torch.nn.Softshrink(0.3)),
                                          (fg.nn.ThresholdedReLU(0.3, 0.1), torch.nn.Threshold(0.3, 0.1)),
                                          (fg.nn.Tanhshrink(), torch.nn.Tanhshrink())])
def test_shrink_layers_match_torch(ours, theirs):
    x0 = np.random.default_rng(6).uniform(-1, 1, (3, 4))
    np.testing.assert_allclose(ours(fg.to_tensor(x0)).numpy(), theirs(torch.tensor(x0)).numpy(), rtol=1e-12)
