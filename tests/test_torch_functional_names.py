"""torch.nn.functional's names and keywords in fluidgrad.nn.functional: conv_transpose1d-3d (torch's
positional order), logsigmoid, softmin, threshold, rrelu, pdist, one_hot without num_classes,
dropout1d, gumbel_softmax, lp_pool1d-3d, upsample_nearest / upsample_bilinear, unfold / fold's
kernel_size= / padding= / stride= / dilation=, hardtanh's min_val= / max_val=, the shrinks' lambd=,
affine_grid's size=, interpolate's recompute_scale_factor=, and the in-place forms (inplace=True,
relu_, threshold_, ...). torch 2.13.0 is the oracle for values and gradients (float64); the
compositions' gradients are also checked against central differences in a static program, and
eager against static."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad.testing import check_program_grad

_RNG = np.random.default_rng(13)
_X2 = _RNG.standard_normal((4, 5))
_X3 = _RNG.standard_normal((2, 4, 7))
_X4 = _RNG.standard_normal((2, 4, 5, 6))
_W1 = _RNG.standard_normal((4, 3, 3))          # conv_transpose1d, groups=2: [in, out / groups, k]
_W2 = _RNG.standard_normal((4, 3, 3, 2))
_B2 = _RNG.standard_normal(6)
_W3 = _RNG.standard_normal((2, 3, 2, 2, 2))
_X5 = _RNG.standard_normal((1, 2, 2, 3, 2))
_COLUMNS = _RNG.standard_normal((1, 12, 12))
_THETA = _RNG.standard_normal((1, 2, 3))


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


# name -> (call(m, *inputs) with m torch.nn.functional or fluidgrad.nn.functional, inputs)
_CALLS = {
    "conv_transpose1d(x, w, None, 2, 1, 1, 2, 1)": (
        lambda m, x, w: m.conv_transpose1d(x, w, None, 2, 1, 1, 2, 1), (_X3, _W1)),
    "conv_transpose2d(x, w, b, 2, 1, 1, 2, 2)": (
        lambda m, x, w, b: m.conv_transpose2d(x, w, b, 2, 1, 1, 2, 2), (_X4, _W2, _B2)),
    "conv_transpose2d(x, w, stride=(2, 1), padding=(1, 0), dilation=2)": (
        lambda m, x, w: m.conv_transpose2d(x, w[:, :3], stride=(2, 1), padding=(1, 0), dilation=2), (_X4, _W2)),
    "conv_transpose3d(x, w, stride=2, output_padding=1)": (
        lambda m, x, w: m.conv_transpose3d(x, w, stride=2, output_padding=1), (_X5, _W3)),
    "logsigmoid(x)": (lambda m, x: m.logsigmoid(x), (_X2,)),
    "softmin(x, 0)": (lambda m, x: m.softmin(x, 0), (_X2,)),
    "softmin(x, dim=-1)": (lambda m, x: m.softmin(x, dim=-1), (_X3,)),
    "threshold(x, 0.1, 20.0)": (lambda m, x: m.threshold(x, 0.1, 20.0), (_X2,)),
    "rrelu(x, 0.1, 0.3, False)": (lambda m, x: m.rrelu(x, 0.1, 0.3, False), (_X2,)),
    "pdist(x)": (lambda m, x: m.pdist(x), (_X2,)),
    "pdist(x, p=1)": (lambda m, x: m.pdist(x, p=1), (_X2,)),
    "pdist(x, 3)": (lambda m, x: m.pdist(x, 3), (_X2,)),
    "unfold(x, kernel_size=(2, 3), dilation=1, padding=(1, 0), stride=2)": (
        lambda m, x: m.unfold(x, kernel_size=(2, 3), dilation=1, padding=(1, 0), stride=2), (_X4,)),
    "fold(c, output_size=(4, 5), kernel_size=2)": (
        lambda m, c: m.fold(c, output_size=(4, 5), kernel_size=2), (_COLUMNS,)),
    "hardtanh(x, min_val=-0.5, max_val=0.25)": (lambda m, x: m.hardtanh(x, min_val=-0.5, max_val=0.25), (_X2,)),
    "hardshrink(x, lambd=0.3)": (lambda m, x: m.hardshrink(x, lambd=0.3), (_X2,)),
    "softshrink(x, lambd=0.3)": (lambda m, x: m.softshrink(x, lambd=0.3), (_X2,)),
    "softplus(x, beta=2, threshold=1)": (lambda m, x: m.softplus(x, beta=2, threshold=1), (_X2,)),
    "cosine_similarity(x, y, dim=0)": (lambda m, x, y: m.cosine_similarity(x, y, dim=0), (_X2, _X2[::-1].copy())),
    "lp_pool1d(x, 2, 3, stride=2)": (lambda m, x: m.lp_pool1d(x, 2, 3, stride=2), (np.abs(_X3) + 0.1,)),
    "lp_pool2d(x, 3, (2, 3))": (lambda m, x: m.lp_pool2d(x, 3, (2, 3)), (np.abs(_X4) + 0.1,)),
    "lp_pool3d(x, 2, 2)": (lambda m, x: m.lp_pool3d(x, 2, 2), (np.abs(_X5) + 0.1,)),
    "upsample_nearest(x, scale_factor=2)": (lambda m, x: m.upsample_nearest(x, scale_factor=2), (_X4,)),
    "upsample_bilinear(x, size=(7, 9))": (lambda m, x: m.upsample_bilinear(x, size=(7, 9)), (_X4,)),
    "interpolate(x, scale_factor=1.7, mode='bilinear', recompute_scale_factor=True)": (
        lambda m, x: m.interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True), (_X4,)),
    "affine_grid(theta, size=[1, 1, 2, 3], align_corners=False)": (
        lambda m, t: m.affine_grid(t, size=[1, 1, 2, 3], align_corners=False), (_THETA,)),
    "dropout1d(x, 0.5, training=False)": (lambda m, x: m.dropout1d(x, 0.5, training=False), (_X3,)),
    "leaky_relu(x * 1, 0.2, inplace=True)": (lambda m, x: m.leaky_relu(x * 1, 0.2, inplace=True), (_X2,)),
    "elu_(x * 1)": (lambda m, x: m.elu_(x * 1), (_X2,)),
    "threshold_(x * 1, 0.1, 2.0)": (lambda m, x: m.threshold_(x * 1, 0.1, 2.0), (_X2,)),
    "hardtanh_(x * 1, -0.5, 0.5)": (lambda m, x: m.hardtanh_(x * 1, -0.5, 0.5), (_X2,)),
}


@pytest.mark.parametrize("call", sorted(_CALLS))
def test_torch_call_gives_torchs_values_and_gradients(call):
    fn, arrays = _CALLS[call]
    ours = [fg.to_tensor(a, stop_gradient=False) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = fn(F, *ours), fn(TF, *theirs)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    cotangent = _RNG.standard_normal(tuple(expected.shape))
    fg.sum(out * fg.to_tensor(cotangent)).backward()
    (expected * torch.tensor(cotangent)).sum().backward()
    for i, (mine, reference) in enumerate(zip(ours, theirs)):
        expected_grad = np.zeros(arrays[i].shape) if reference.grad is None else reference.grad.numpy()
        got = np.zeros(arrays[i].shape) if mine.grad is None else mine.grad.numpy()
        np.testing.assert_allclose(got, expected_grad, rtol=1e-9, atol=1e-12, err_msg=f"input {i}")


def test_one_hot_infers_the_class_count_as_torch():
    labels = np.array([[0, 3], [1, 2]])
    for args in ((), (-1,), (6,)):
        got = F.one_hot(fg.to_tensor(labels), *args).numpy()
        np.testing.assert_array_equal(got, TF.one_hot(torch.tensor(labels), *args).numpy())
    assert F.one_hot(fg.to_tensor(labels), num_classes=-1).shape == (2, 2, 4)


def test_one_hot_refuses_what_it_cannot_infer(monkeypatch):
    with pytest.raises(ValueError, match="non-negative"):
        F.one_hot(fg.to_tensor(np.array([1, -1])))
    with pytest.raises(ValueError, match="empty"):
        F.one_hot(fg.to_tensor(np.zeros(0, "int64")))
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 1)
    with fg.program_guard(fg.Program(), fg.Program()):
        labels = fg.static.data("labels", [-1], "int64")
        with pytest.raises(ValueError, match="num_classes is needed for labels"):
            F.one_hot(labels)
        assert F.one_hot(labels, 4).shape == (-1, 4)


def test_softmin_without_dim_takes_torchs_implicit_axis():
    for shape in ((5,), (3, 4), (2, 3, 4), (2, 3, 4, 5)):
        x = _RNG.standard_normal(shape)
        with pytest.warns(UserWarning):
            expected = TF.softmin(torch.tensor(x)).numpy()
        np.testing.assert_allclose(F.softmin(fg.to_tensor(x)).numpy(), expected, rtol=1e-12)


def test_inplace_writes_into_x_and_returns_it():
    x = fg.to_tensor(_X2.copy())
    out = F.relu(x, inplace=True)
    assert out is x
    np.testing.assert_array_equal(x.numpy(), np.maximum(_X2, 0))
    y = fg.to_tensor(_X2.copy())
    assert F.relu_(y) is y and F.selu(y, inplace=False) is not y
    leaf = fg.to_tensor(_X2, stop_gradient=False)
    with pytest.raises(RuntimeError, match=r"relu\(inplace=True\): .*leaf Tensor that requires a gradient"):
        F.relu(leaf, inplace=True)       # as torch refuses
    with pytest.raises(RuntimeError, match="threshold_: .*leaf"):
        F.threshold_(leaf, 0.1, 2.0)
    with fg.no_grad():
        F.relu_(leaf)
    np.testing.assert_array_equal(leaf.numpy(), np.maximum(_X2, 0))


def test_inplace_gradient_flows_through_the_update_as_torch():
    leaf, reference = fg.to_tensor(_X2, stop_gradient=False), torch.tensor(_X2, requires_grad=True)
    for m, x in ((F, leaf), (TF, reference)):
        h = x * 2
        m.elu(h, alpha=0.5, inplace=True)
        (h * h).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), reference.grad.numpy(), rtol=1e-12)


def test_rrelu_training_draws_slopes_between_lower_and_upper():
    x = fg.to_tensor(-np.abs(_RNG.standard_normal((200, 50))) - 0.1, stop_gradient=False)
    out = F.rrelu(x, 0.2, 0.4, training=True)
    slopes = out.numpy() / x.numpy()
    assert 0.2 <= slopes.min() and slopes.max() <= 0.4 and slopes.std() > 0.05
    fg.sum(out).backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-12)   # the drawn slope is the gradient
    positive = fg.to_tensor(np.abs(_X2))
    np.testing.assert_array_equal(F.rrelu(positive, training=True).numpy(), np.abs(_X2))
    with pytest.raises(ValueError, match="rrelu: needs 0 <= lower <= upper"):
        F.rrelu(x, 0.5, 0.1)


def test_gumbel_softmax_samples_soft_and_straight_through_hard():
    logits = fg.to_tensor(_RNG.standard_normal((64, 5)), stop_gradient=False)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.numpy().sum(-1), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True, dim=0)
    assert set(np.unique(hard.numpy())) == {0.0, 1.0}
    np.testing.assert_array_equal(hard.numpy().sum(0), 1.0)
    fg.sum(hard * fg.to_tensor(_RNG.standard_normal((64, 5)))).backward()
    assert np.abs(logits.grad.numpy()).sum() > 0       # the soft sample's gradient
    with pytest.raises(ValueError, match="temperature must be positive"):
        F.gumbel_softmax(logits, temperature=0.0)


def test_errors_name_the_function_and_the_shapes():
    with pytest.raises(ValueError, match=r"pdist: expects a 2-D input \[N, M\].*\[2, 4, 7\]"):
        F.pdist(fg.to_tensor(_X3))
    with pytest.raises(ValueError, match=r"dropout1d: .*\[2, 4, 5, 6\]"):
        F.dropout1d(fg.to_tensor(_X4))
    with pytest.raises(NotImplementedError, match="interpolate: antialias"):
        F.interpolate(fg.to_tensor(_X4), scale_factor=0.5, mode="bilinear", antialias=True)
    with pytest.raises(TypeError, match="give paddings= or padding=, not both"):
        F.unfold(fg.to_tensor(_X4), 2, 1, 1, padding=1)


# the compositions in a static program: central differences, and the same values as eager
_STATIC = {
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 1, 2), (_X4, _W2)),
    "pdist": (lambda x: F.pdist(x, p=2), (_X2,)),
    "softmin": (lambda x: F.softmin(x, dim=1), (_X2,)),
    "threshold": (lambda x: F.threshold(x, 0.1, 2.0), (_X2,)),
    "lp_pool2d": (lambda x: F.lp_pool2d(x, 2, 2), (np.abs(_X4) + 0.1,)),
    "rrelu eval": (lambda x: F.rrelu(x, training=False), (_X2,)),
}


@pytest.mark.parametrize("name", sorted(_STATIC))
def test_composition_in_a_static_program(name, monkeypatch):
    fn, arrays = _STATIC[name]
    eager_out = fn(*[fg.to_tensor(a) for a in arrays]).numpy()
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 1)
    feeds = {f"in{i}": a for i, a in enumerate(arrays)}
    check_program_grad(lambda v: fn(*[v[f"in{i}"] for i in range(len(arrays))]), feeds)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        out = fn(*[fg.static.data(k, list(a.shape), "float64") for k, a in feeds.items()])
    got = fg.Executor().run(main, feed=feeds, fetch_list=[out])[0]
    np.testing.assert_allclose(got, eager_out, rtol=1e-12, atol=1e-14)
