"""cross_entropy's torch target forms beside Paddle's: classes on axis 1 with [N, d1, ...] integer
labels, float class probabilities of the logits' shape, a class weight of the wrong size named,
both readings fitting refused; values and gradients against torch 2.13, eager and static."""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fluidgrad as fg
import fluidgrad.nn.functional as F
from both_modes import compare_with_torch

_RNG = np.random.default_rng(13)


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _probabilities(shape, axis=1):
    p = np.abs(_RNG.standard_normal(shape)) + 0.1
    return p / p.sum(axis, keepdims=True)


def _options(weight, options):
    """torch's and fluidgrad's keyword arguments: `weight` a [C] array or None."""
    def torch_kwargs(**tensors):
        return {**options, **({"weight": tensors["w"]} if weight is not None else {})}

    def fg_kwargs(**tensors):
        return {**options, **({"weight": tensors["w"]} if weight is not None else {})}
    return torch_kwargs, fg_kwargs


_HARD_OPTIONS = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 1}, {"label_smoothing": 0.2},
                 {"ignore_index": 2, "label_smoothing": 0.1, "reduction": "none"}]


@pytest.mark.parametrize("with_weight", [False, True])
@pytest.mark.parametrize("options", _HARD_OPTIONS, ids=str)
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 4, 3, 2)], ids=str)
def test_classes_on_axis_1_with_integer_labels_follow_torch(shape, options, with_weight):
    weight = _RNG.uniform(0.5, 2.0, shape[1]) if with_weight else None
    inputs = {"x": _RNG.standard_normal(shape), "y": _RNG.integers(0, shape[1], shape[:1] + shape[2:])}
    if with_weight:
        inputs["w"] = weight
    torch_kwargs, fg_kwargs = _options(weight, options)
    compare_with_torch(lambda x, y, **t: F.cross_entropy(x, y, **fg_kwargs(**t)),
                       lambda x, y, **t: torch.nn.functional.cross_entropy(x, y, **torch_kwargs(**t)),
                       inputs, wrt=["x"])


_SOFT_OPTIONS = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.3},
                 {"label_smoothing": 0.1, "reduction": "none"}]


@pytest.mark.parametrize("with_weight", [False, True])
@pytest.mark.parametrize("options", _SOFT_OPTIONS, ids=str)
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2), (2, 3, 2, 2)], ids=str)
def test_class_probabilities_follow_torch(shape, options, with_weight):
    weight = _RNG.uniform(0.5, 2.0, shape[1]) if with_weight else None
    inputs = {"x": _RNG.standard_normal(shape), "y": _probabilities(shape)}
    if with_weight:
        inputs["w"] = weight
    torch_kwargs, fg_kwargs = _options(weight, options)
    compare_with_torch(lambda x, y, **t: F.cross_entropy(x, y, **fg_kwargs(**t)),
                       lambda x, y, **t: torch.nn.functional.cross_entropy(x, y, **torch_kwargs(**t)),
                       inputs, wrt=["x", "y"])


def test_the_layer_takes_torchs_forms_and_target_keyword(eager):
    x = _RNG.standard_normal((2, 4, 3, 2))
    y = _RNG.integers(0, 4, (2, 3, 2))
    w = _RNG.uniform(0.5, 2.0, 4)
    expected = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), label_smoothing=0.1)(torch.tensor(x), torch.tensor(y))
    got = fg.nn.CrossEntropyLoss(weight=fg.to_tensor(w), label_smoothing=0.1)(fg.to_tensor(x), fg.to_tensor(y))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10)
    p = _probabilities((2, 4, 3))
    expected = torch.nn.functional.cross_entropy(torch.tensor(x[..., 0]), target=torch.tensor(p))
    np.testing.assert_allclose(F.cross_entropy(fg.to_tensor(x[..., 0]), target=fg.to_tensor(p)).numpy(),
                               expected.numpy(), rtol=1e-10)


def test_paddles_forms_keep_working(eager):
    x = _RNG.standard_normal((2, 3, 4))                      # Paddle: classes last
    y = _RNG.integers(0, 4, (2, 3))
    expected = torch.nn.functional.cross_entropy(torch.tensor(x).permute(0, 2, 1), torch.tensor(y))
    for label in (y, y[..., None]):
        np.testing.assert_allclose(F.cross_entropy(fg.to_tensor(x), fg.to_tensor(label)).numpy(),
                                   expected.numpy(), rtol=1e-10)
    np.testing.assert_allclose(F.cross_entropy(fg.to_tensor(x), fg.to_tensor(y), axis=-1).numpy(),
                               expected.numpy(), rtol=1e-10)
    soft = _probabilities((2, 3, 4), axis=-1)                # soft_label=True: classes last, Paddle's rule
    loss = F.cross_entropy(fg.to_tensor(x), fg.to_tensor(soft), soft_label=True)
    reference = -(soft * torch.log_softmax(torch.tensor(x), -1).numpy()).sum(-1).mean()
    np.testing.assert_allclose(loss.numpy(), reference, rtol=1e-10)
    assert list(fg.nn.CrossEntropyLoss(reduction="none")(fg.to_tensor(x), fg.to_tensor(y[..., None])).shape) \
        == [2, 3, 1]


def test_labels_fitting_both_class_axes_are_refused_until_axis_is_given(eager):
    x, y = fg.to_tensor(_RNG.standard_normal((2, 3, 3))), fg.to_tensor(_RNG.integers(0, 3, (2, 3)))
    with pytest.raises(ValueError, match=r"cross_entropy: labels of shape \[2, 3\] fit logits of shape \[2, 3, 3\]"
                                         r".*axis=1 or axis=-1"):
        F.cross_entropy(x, y)
    for axis in (1, -1):
        expected = torch.nn.functional.cross_entropy(
            torch.tensor(x.numpy()) if axis == 1 else torch.tensor(x.numpy()).permute(0, 2, 1), torch.tensor(y.numpy()))
        np.testing.assert_allclose(F.cross_entropy(x, y, axis=axis).numpy(), expected.numpy(), rtol=1e-10)


@pytest.mark.parametrize("weight_size, shape, axis", [(4, (2, 3), None), (2, (2, 3), None), (3, (2, 4, 5), None),
                                                      (5, (2, 4, 5), 1)])
def test_a_class_weight_of_the_wrong_size_is_named(weight_size, shape, axis, eager):
    labels = _RNG.integers(0, 3, shape[:1] + shape[2:])
    with pytest.raises(ValueError, match=r"cross_entropy: weight of shape \[%d\] must hold one value per class"
                       % weight_size):
        F.cross_entropy(fg.to_tensor(_RNG.standard_normal(shape)), fg.to_tensor(labels),
                        weight=fg.to_tensor(np.ones(weight_size)), axis=axis)
    with pytest.raises(ValueError, match=r"nll_loss: weight of shape"):
        F.nll_loss(fg.to_tensor(_RNG.standard_normal(shape)), fg.to_tensor(labels),
                   weight=fg.to_tensor(np.ones(shape[1] + 1)))


def test_static_programs_with_an_unknown_batch_take_torchs_forms():
    x, y, p = _RNG.standard_normal((3, 4, 5)), _RNG.integers(0, 4, (3, 5)), _probabilities((3, 4, 5))
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        logits = fg.static.data("x", [-1, 4, 5], "float64")
        logits.stop_gradient = False
        hard = F.cross_entropy(logits, fg.static.data("y", [-1, 5], "int64"))
        soft = F.cross_entropy(logits, fg.static.data("p", [-1, 4, 5], "float64"), label_smoothing=0.1)
        grad, = fg.gradients([hard + soft], [logits])
    got = fg.Executor().run(main, feed={"x": x, "y": y, "p": p}, fetch_list=[hard, soft, grad])
    tx = torch.tensor(x, requires_grad=True)
    t_hard = torch.nn.functional.cross_entropy(tx, torch.tensor(y))
    t_soft = torch.nn.functional.cross_entropy(tx, torch.tensor(p), label_smoothing=0.1)
    (t_hard + t_soft).backward()
    for value, want in zip(got, (t_hard.detach(), t_soft.detach(), tx.grad)):
        np.testing.assert_allclose(value, want.numpy(), rtol=1e-10, atol=1e-12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.integers(1, 3), classes=st.integers(2, 5), spatial=st.lists(st.integers(1, 4), min_size=0, max_size=2),
       soft=st.booleans(), smoothing=st.sampled_from([0.0, 0.15]), reduction=st.sampled_from(["mean", "sum", "none"]),
       seed=st.integers(0, 2**16))
def test_torch_forms_over_shapes(batch, classes, spatial, soft, smoothing, reduction, seed, eager):
    """Any [N, C, d...] with torch's integer or probability target, where the labels fit only torch's
    reading (else the refusal is the answer), matches torch's loss and gradient (the eager fixture
    only switches eager mode on: nothing to reset between examples)."""
    rng = np.random.default_rng(seed)
    shape = (batch, classes, *spatial)
    x = rng.standard_normal(shape)
    target = _probabilities(shape) if soft else rng.integers(0, classes, shape[:1] + shape[2:])
    tx = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.cross_entropy(tx, torch.tensor(target), label_smoothing=smoothing,
                                                 reduction=reduction)
    ours = fg.to_tensor(x, stop_gradient=False)
    both_fit = not soft and len(shape) > 2 and list(shape[:-1]) == [shape[0], *shape[2:]]
    if both_fit:
        with pytest.raises(ValueError, match="axis=1 or axis=-1"):
            F.cross_entropy(ours, fg.to_tensor(target), label_smoothing=smoothing, reduction=reduction)
        return
    got = F.cross_entropy(ours, fg.to_tensor(target), label_smoothing=smoothing, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    fg.sum(got * fg.to_tensor(np.linspace(0.5, 1.5, max(got.size, 1)).reshape(got.shape))).backward()
    (expected * torch.tensor(np.linspace(0.5, 1.5, max(expected.numel(), 1)).reshape(expected.shape))).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-12)
