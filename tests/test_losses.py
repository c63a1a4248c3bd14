"""Every loss against PyTorch, value and gradients, eager and static, float64.

The losses are compositions of registered ops, so the op-case table checks their pieces;
here each whole loss is checked over its options (weights, ignore_index, reductions, ranks)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from both_modes import compare_with_torch

R = np.random.default_rng(7)
REDUCTIONS = ["mean", "sum", "none"]


def logits(*shape):
    return R.normal(size=shape)


def labels(classes, *shape, ignore=None):
    out = R.integers(0, classes, size=shape).astype(np.int64)
    if ignore is not None:
        out.flat[::3] = ignore
    return out


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5), (2, 4, 3, 2)])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_any_rank_weights_ignore_index(shape, reduction, weighted):
    n, c, *rest = shape
    inputs = {"input": np.log(np.abs(logits(*shape)) + 0.1), "label": labels(c, n, *rest, ignore=1),
              "weight": R.uniform(0.5, 2.0, size=c)}
    weight_of = (lambda w: w) if weighted else (lambda w: None)
    compare_with_torch(
        lambda input, label, weight: F.nll_loss(input, label, weight_of(weight), ignore_index=1, reduction=reduction),
        lambda input, label, weight: TF.nll_loss(input, label, weight_of(weight), ignore_index=1,
                                                 reduction=reduction),
        inputs, wrt=["input"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_label_smoothing_weight_ignore_index(reduction, smoothing, weighted):
    inputs = {"input": logits(7, 5), "label": labels(5, 7, ignore=-1), "weight": R.uniform(0.5, 2.0, size=5)}
    weight_of = (lambda w: w) if weighted else (lambda w: None)
    compare_with_torch(
        lambda input, label, weight: F.cross_entropy(input, label, weight_of(weight), ignore_index=-1,
                                                     reduction=reduction, label_smoothing=smoothing),
        lambda input, label, weight: TF.cross_entropy(input, label, weight_of(weight), ignore_index=-1,
                                                      reduction=reduction, label_smoothing=smoothing),
        inputs, wrt=["input"])


def test_cross_entropy_class_axis_and_soft_label_smoothing():
    x = logits(3, 4, 6)
    hard = labels(4, 3, 6)
    compare_with_torch(lambda x, y: F.cross_entropy(x, y, axis=1, label_smoothing=0.1),
                       lambda x, y: TF.cross_entropy(x, y, label_smoothing=0.1), {"x": x, "y": hard}, wrt=["x"])
    soft = np.abs(logits(5, 4))
    soft /= soft.sum(-1, keepdims=True)
    compare_with_torch(lambda x, y: F.cross_entropy(x, y, soft_label=True, label_smoothing=0.3),
                       lambda x, y: TF.cross_entropy(x, y, label_smoothing=0.3),
                       {"x": logits(5, 4), "y": soft}, wrt=["x", "y"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    inputs = {"x": logits(4, 5), "y": logits(4, 5)}
    for fg_fn, torch_fn in [(F.mse_loss, TF.mse_loss), (F.l1_loss, TF.l1_loss)]:
        compare_with_torch(lambda x, y: fg_fn(x, y, reduction=reduction),
                           lambda x, y: torch_fn(x, y, reduction=reduction), inputs, wrt=["x", "y"])
    for delta in (0.5, 1.0, 2.0):
        compare_with_torch(lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction, delta=delta),
                           lambda x, y: TF.huber_loss(x, y, reduction=reduction, delta=delta),
                           inputs, wrt=["x", "y"])
        layer = fg.nn.SmoothL1Loss(reduction, delta)
        compare_with_torch(lambda x, y: layer(x, y),
                           lambda x, y: TF.smooth_l1_loss(x / delta, y / delta, reduction=reduction,
                                                          beta=1.0) * delta ** 2,
                           inputs, wrt=["x"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction, weighted):
    inputs = {"p": R.uniform(0.05, 0.95, size=(4, 3)), "y": R.uniform(0, 1, size=(4, 3)),
              "w": R.uniform(0.5, 2, size=(3,))}
    weight_of = (lambda w: w) if weighted else (lambda w: None)
    compare_with_torch(lambda p, y, w: F.binary_cross_entropy(p, y, weight_of(w), reduction),
                       lambda p, y, w: TF.binary_cross_entropy(p, y, weight_of(w), reduction=reduction),
                       inputs, wrt=["p", "y"])


def test_binary_cross_entropy_clamps_the_log_at_minus_100():
    p = fg.to_tensor(np.array([0.0, 1.0, 0.5]))
    y = fg.to_tensor(np.array([1.0, 0.0, 1.0]))
    expected = TF.binary_cross_entropy(torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64),
                                       torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64), reduction="none")
    np.testing.assert_allclose(F.binary_cross_entropy(p, y, reduction="none").numpy(), expected.numpy())


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", ["plain", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_with_logits(reduction, options):
    inputs = {"x": logits(4, 3) * 4, "y": R.uniform(0, 1, size=(4, 3)), "w": R.uniform(0.5, 2, size=(4, 1)),
              "pw": R.uniform(0.5, 3, size=(3,))}
    use_w, use_pw = options in ("weight", "both"), options in ("pos_weight", "both")
    compare_with_torch(
        lambda x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, w if use_w else None, reduction,
                                                               pw if use_pw else None),
        lambda x, y, w, pw: TF.binary_cross_entropy_with_logits(x, y, w if use_w else None, reduction=reduction,
                                                                pos_weight=pw if use_pw else None),
        inputs, wrt=["x", "y"])


@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    target = R.uniform(0.1, 1.0, size=(3, 4))
    target[0, 1] = 0.0                                   # a zero target contributes nothing
    target = np.log(target + 0.05) if log_target else target
    compare_with_torch(lambda x, t: F.kl_div(x, t, reduction, log_target),
                       lambda x, t: TF.kl_div(x, t, reduction=reduction, log_target=log_target),
                       {"x": np.log(R.uniform(0.1, 1.0, size=(3, 4))), "t": target}, wrt=["x"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_loss(reduction):
    inputs = {"a": logits(6), "b": logits(6), "y": R.choice([-1.0, 1.0], size=6)}
    compare_with_torch(lambda a, b, y: F.margin_ranking_loss(a, b, y, 0.3, reduction),
                       lambda a, b, y: TF.margin_ranking_loss(a, b, y, margin=0.3, reduction=reduction),
                       inputs, wrt=["a", "b"])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cosine_similarity(axis):
    compare_with_torch(lambda a, b: F.cosine_similarity(a, b, axis=axis),
                       lambda a, b: TF.cosine_similarity(a, b, dim=axis),
                       {"a": logits(3, 4, 5), "b": logits(3, 4, 5)}, wrt=["a", "b"])


def test_loss_layers_match_their_functions():
    x, y = fg.to_tensor(logits(5, 3)), fg.to_tensor(labels(3, 5))
    w = fg.to_tensor(np.array([1.0, 2.0, 0.5]))
    assert np.allclose(fg.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(x, y).numpy(),
                       F.cross_entropy(x, y, w, label_smoothing=0.1).numpy())
    log_p = F.log_softmax(x, axis=1)
    assert np.allclose(fg.nn.NLLLoss(weight=w)(log_p, y).numpy(), F.nll_loss(log_p, y, w).numpy())
    p = fg.sigmoid(x)
    t = fg.to_tensor(R.uniform(0, 1, size=(5, 3)))
    assert np.allclose(fg.nn.BCELoss()(p, t).numpy(), F.binary_cross_entropy(p, t).numpy())
    assert np.allclose(fg.nn.BCEWithLogitsLoss()(x, t).numpy(), F.binary_cross_entropy_with_logits(x, t).numpy())
    assert np.allclose(fg.nn.L1Loss("sum")(x, t).numpy(), F.l1_loss(x, t, "sum").numpy())
    assert np.allclose(fg.nn.KLDivLoss("batchmean")(log_p, t).numpy(), F.kl_div(log_p, t, "batchmean").numpy())
    assert np.allclose(fg.nn.CosineSimilarity(axis=0)(x, t).numpy(), F.cosine_similarity(x, t, axis=0).numpy())
    a = fg.to_tensor(logits(4))
    assert np.allclose(fg.nn.MarginRankingLoss(0.5)(a, -a, fg.ones_like(a)).numpy(),
                       F.margin_ranking_loss(a, -a, fg.ones_like(a), 0.5).numpy())


def test_bad_arguments_are_clear_errors():
    x, y = fg.to_tensor(logits(4, 3)), fg.to_tensor(labels(3, 4))
    with pytest.raises(ValueError, match="nll_loss: reduction"):
        F.nll_loss(x, y, reduction="avg")
    with pytest.raises(ValueError, match="nll_loss: label of shape"):
        F.nll_loss(x, fg.to_tensor(labels(3, 4, 2)))
    with pytest.raises(ValueError, match="label_smoothing must lie"):
        F.cross_entropy(x, y, label_smoothing=1.5)
    with pytest.raises(ValueError, match="delta must be positive"):
        F.smooth_l1_loss(x, x, delta=0.0)
    with pytest.raises(Exception, match="out of range"):
        F.nll_loss(x, fg.to_tensor(np.array([0, 1, 2, 3])))


@pytest.mark.parametrize("call", ["nll_loss", "nll_loss_weighted", "cross_entropy_smoothed"])
@pytest.mark.parametrize("static", [False, True])
def test_float_hard_labels_are_refused_not_scored_zero(call, static):
    """A one-hot of float labels picks no class, so they would silently give loss 0 (torch refuses them too)."""
    x, y = logits(2, 3), np.array([0.9, 1.9], "float32")
    fns = {"nll_loss": lambda x, y: F.nll_loss(x, y),
           "nll_loss_weighted": lambda x, y: F.nll_loss(x, y, weight=fg.to_tensor(np.ones(3))),
           "cross_entropy_smoothed": lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1)}
    with pytest.raises(fg.framework.DTypeError, match="hard labels must be integers.*float32"):
        if static:
            with fg.static.program_guard(fg.static.Program(), fg.static.Program()):
                fns[call](fg.static.data("x", [2, 3], "float64"), fg.static.data("y", [2], "float32"))
        else:
            fns[call](fg.to_tensor(x), fg.to_tensor(y))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_labels_with_class_weights_follow_paddle(reduction):
    """Paddle's rule: each sample's loss times label . weight, the mean over the total of those."""
    soft = np.abs(logits(6, 4)) + 0.1
    soft /= soft.sum(-1, keepdims=True)

    def paddle_rule(x, y, w):
        per_sample = TF.cross_entropy(x, y, reduction="none") * (y @ w)
        return {"none": per_sample.reshape(-1, 1), "sum": per_sample.sum(),
                "mean": per_sample.sum() / (y @ w).sum()}[reduction]
    compare_with_torch(lambda x, y, w: F.cross_entropy(x, y, w, soft_label=True, reduction=reduction), paddle_rule,
                       {"x": logits(6, 4), "y": soft, "w": R.uniform(0.5, 2.0, size=4)}, wrt=["x", "y"])
