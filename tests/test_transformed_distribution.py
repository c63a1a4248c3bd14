"""TransformedDistribution and the transforms against torch.distributions (2.13): each
transform's forward / inverse / log_abs_det_jacobian and Paddle's spellings; log_prob values and
gradients into the base's and the transforms' parameters; rsample's gradient; shapes; cdf /
icdf; a Program equal to eager mode; non-bijections refused by name."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.transforms as TT

import fluidgrad as fg
import fluidgrad.framework.program as program_module

D = fg.distribution
_RNG = np.random.default_rng(1414)
_LOC, _SCALE = _RNG.normal(size=3), _RNG.uniform(0.5, 1.5, size=3)
_POSITIVE = _RNG.uniform(0.3, 2.0, size=3)
_UNIT = _RNG.uniform(0.1, 0.9, size=3)


@pytest.fixture(autouse=True)
def eager(request, monkeypatch):
    if "static" not in request.node.name:
        monkeypatch.setattr(program_module, "_guard_depth", 0)


def _t(array):
    return torch.tensor(np.asarray(array), requires_grad=True)


def _f(array):
    return fg.to_tensor(np.asarray(array), stop_gradient=False)


# name: (torch transforms, fluidgrad transforms (builders over parameter arrays), value, parameters)
_CHAINS = {
    "exp": (lambda m: [m.ExpTransform()], _POSITIVE, {}),
    "affine-numbers-exp": (lambda m: [m.AffineTransform(1.0, -2.0), m.ExpTransform()], _POSITIVE, {}),
    "affine-tensors": (lambda m, p: [m.AffineTransform(p["a"], p["b"])], _POSITIVE, {"a": _LOC[::-1].copy(),
                                                                                       "b": -_SCALE}),
    "affine-event-dim": (lambda m, p: [m.AffineTransform(p["a"], p["b"], event_dim=1)], _POSITIVE,
                         {"a": _LOC[::-1].copy(), "b": _SCALE + 1}),
    "sigmoid": (lambda m: [m.SigmoidTransform()], _UNIT, {}),
    "tanh": (lambda m: [m.TanhTransform()], _UNIT - 0.5, {}),
    "exp-power": (lambda m: [m.ExpTransform(), m.PowerTransform(4.0)], _POSITIVE, {}),  # (torch keeps 2.5 in float32)
    "exp-power-tensor": (lambda m, p: [m.ExpTransform(), m.PowerTransform(p["e"])], _POSITIVE,
                         {"e": np.array([0.5, 1.5, -2.0])}),
    "compose-inverse": (lambda m: [m.ComposeTransform([m.ExpTransform(), m.AffineTransform(0.0, 3.0)]),
                                   m.SigmoidTransform().inv.inv], _UNIT * 0.4 + 0.55, {}),
    "inverse-of-exp": (lambda m: [m.ExpTransform().inv], np.log(_POSITIVE), {}),
    "stick-breaking": (lambda m: [m.StickBreakingTransform()], np.array([0.2, 0.3, 0.1, 0.4]), {}),
    "independent-sigmoid": (lambda m: [m.IndependentTransform(m.SigmoidTransform(), 1)], _UNIT, {}),
}


def _build(name, module, params):
    make, _, param_values = _CHAINS[name]
    return make(module, params) if param_values else make(module)


def _torch_module(name):
    return TT


@pytest.mark.parametrize("name", list(_CHAINS))
def test_log_prob_values_and_gradients_match_torch(name):
    _, value, param_values = _CHAINS[name]
    t_params, f_params = ({k: _t(v) for k, v in param_values.items()}, {k: _f(v) for k, v in param_values.items()})
    tl, ts, fl, fs = _t(_LOC), _t(_SCALE), _f(_LOC), _f(_SCALE)
    expected = TD.TransformedDistribution(TD.Normal(tl, ts), _build(name, TT, t_params))
    got = D.TransformedDistribution(D.Normal(fl, fs), _build(name, D, f_params))
    assert list(got.batch_shape) == list(expected.batch_shape)
    assert list(got.event_shape) == list(expected.event_shape)
    t_out, f_out = expected.log_prob(torch.tensor(value)), got.log_prob(fg.to_tensor(value))
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    weights = np.arange(1.0, t_out.numel() + 1).reshape(tuple(t_out.shape))
    (t_out * torch.tensor(weights)).sum().backward()
    fg.sum(f_out * fg.to_tensor(weights)).backward()
    for t_param, f_param in [(tl, fl), (ts, fs)] + [(t_params[k], f_params[k]) for k in t_params]:
        np.testing.assert_allclose(f_param.grad.numpy(), t_param.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["exp", "affine-tensors", "exp-power", "sigmoid", "tanh", "stick-breaking"])
def test_rsample_gradient_is_torch_at_the_same_base_draw(name):
    _, _, param_values = _CHAINS[name]
    fl, fs = _f(_LOC), _f(_SCALE)
    f_params = {k: _f(v) for k, v in param_values.items()}
    dist = D.TransformedDistribution(D.Normal(fl, fs), _build(name, D, f_params))
    assert dist.has_rsample
    fg.seed(5)
    draw = dist.rsample([4])
    assert list(draw.shape) == [4] + dist.batch_shape + dist.event_shape
    fg.sum(draw * draw).backward()
    fg.seed(5)
    eps = (D.Normal(fl, fs).rsample([4]).numpy() - _LOC) / _SCALE   # the standard normal draws behind it
    tl, ts = _t(_LOC), _t(_SCALE)
    t_params = {k: _t(v) for k, v in param_values.items()}
    y = tl + ts * torch.tensor(eps)
    for transform in _build(name, TT, t_params):
        y = transform(y)
    np.testing.assert_allclose(draw.numpy(), y.detach().numpy(), rtol=1e-12)
    (y * y).sum().backward()
    for t_param, f_param in [(tl, fl), (ts, fs)] + [(t_params[k], f_params[k]) for k in t_params]:
        np.testing.assert_allclose(f_param.grad.numpy(), t_param.grad.numpy(), rtol=1e-10, atol=1e-12)
    sample = dist.sample([2])
    assert sample.stop_gradient and list(sample.shape) == [2] + dist.batch_shape + dist.event_shape


_SINGLE = {  # name: (torch transform, fluidgrad transform, input x)
    "exp": (TT.ExpTransform(), D.ExpTransform(), _LOC),
    "affine": (TT.AffineTransform(0.5, -2.0), D.AffineTransform(0.5, -2.0), _LOC),
    "sigmoid": (TT.SigmoidTransform(), D.SigmoidTransform(), _LOC),
    "tanh": (TT.TanhTransform(), D.TanhTransform(), _LOC),
    "power": (TT.PowerTransform(torch.tensor(1.7, dtype=torch.float64)), D.PowerTransform(power=1.7), _POSITIVE),
    "stick-breaking": (TT.StickBreakingTransform(), D.StickBreakingTransform(), _LOC),
    "inverse-sigmoid": (TT.SigmoidTransform().inv, D.SigmoidTransform().inv, _UNIT),
    "compose": (TT.ComposeTransform([TT.AffineTransform(0.0, 2.0), TT.TanhTransform()]),
                D.ChainTransform([D.AffineTransform(0.0, 2.0), D.TanhTransform()]), _LOC),
}


@pytest.mark.parametrize("name", list(_SINGLE))
def test_each_transform_forward_inverse_and_jacobian_match_torch(name):
    t_transform, f_transform, x = _SINGLE[name]
    ty = t_transform(torch.tensor(x))
    fy = f_transform(fg.to_tensor(x))
    np.testing.assert_allclose(fy.numpy(), ty.numpy(), rtol=1e-12)
    np.testing.assert_allclose(f_transform.forward(fg.to_tensor(x)).numpy(), ty.numpy(), rtol=1e-12)
    np.testing.assert_allclose(f_transform.inverse(fy).numpy(), t_transform.inv(ty).numpy(), rtol=1e-10)
    np.testing.assert_allclose(f_transform.inv(fy).numpy(), t_transform.inv(ty).numpy(), rtol=1e-10)
    ladj = t_transform.log_abs_det_jacobian(torch.tensor(x), ty).numpy()
    np.testing.assert_allclose(f_transform.log_abs_det_jacobian(fg.to_tensor(x), fy).numpy(), ladj, rtol=1e-12)
    np.testing.assert_allclose(f_transform.forward_log_det_jacobian(fg.to_tensor(x)).numpy(), ladj, rtol=1e-12)
    np.testing.assert_allclose(f_transform.inverse_log_det_jacobian(fy).numpy(), -ladj, rtol=1e-9)
    assert f_transform.forward_shape(list(x.shape)) == list(t_transform.forward_shape(x.shape))
    assert f_transform.inverse_shape(list(ty.shape)) == list(t_transform.inverse_shape(ty.shape))
    assert f_transform.inv.inv is f_transform
    assert f_transform.domain.event_dim == t_transform.domain.event_dim
    assert f_transform.codomain.event_dim == t_transform.codomain.event_dim


def test_softmax_transform_maps_to_the_simplex_and_has_no_jacobian():
    x = _RNG.normal(size=(2, 4))
    np.testing.assert_allclose(D.SoftmaxTransform()(fg.to_tensor(x)).numpy(),
                               TT.SoftmaxTransform()(torch.tensor(x)).numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError):
        TT.SoftmaxTransform().log_abs_det_jacobian(torch.tensor(x), torch.tensor(x))
    with pytest.raises(NotImplementedError, match="SoftmaxTransform is not a bijection"):
        D.SoftmaxTransform().log_abs_det_jacobian(fg.to_tensor(x), fg.to_tensor(x))


def test_abs_transform_has_no_log_prob_as_in_torch():
    x = np.array([-1.5, 0.5])
    np.testing.assert_array_equal(D.AbsTransform()(fg.to_tensor(x)).numpy(), np.abs(x))
    np.testing.assert_array_equal(D.AbsTransform().inverse(fg.to_tensor(x)).numpy(),
                                  TT.AbsTransform().inv(torch.tensor(x)).numpy())
    with pytest.raises(NotImplementedError):
        TD.TransformedDistribution(TD.Normal(0.0, 1.0), [TT.AbsTransform()]).log_prob(torch.tensor(0.5))
    folded = D.TransformedDistribution(D.Normal(0.0, 1.0), [D.AbsTransform()])
    assert np.all(folded.sample([5]).numpy() >= 0)
    with pytest.raises(NotImplementedError, match="log_prob: AbsTransform is not a bijection"):
        folded.log_prob(fg.to_tensor(0.5))


@pytest.mark.parametrize("name, transforms, value", [
    ("exp", lambda m: [m.ExpTransform()], _POSITIVE),
    ("decreasing", lambda m: [m.AffineTransform(1.0, -2.0), m.ExpTransform()], _POSITIVE),
    ("sigmoid", lambda m: [m.SigmoidTransform()], _UNIT),
])
def test_cdf_and_icdf_match_torch(name, transforms, value):
    expected = TD.TransformedDistribution(TD.Normal(torch.tensor(_LOC), torch.tensor(_SCALE)), transforms(TT))
    got = D.TransformedDistribution(D.Normal(fg.to_tensor(_LOC), fg.to_tensor(_SCALE)), transforms(D))
    cdf = expected.cdf(torch.tensor(value)).numpy()
    np.testing.assert_allclose(got.cdf(fg.to_tensor(value)).numpy(), cdf, rtol=1e-10)
    np.testing.assert_allclose(got.icdf(fg.to_tensor(cdf)).numpy(), expected.icdf(torch.tensor(cdf)).numpy(),
                               rtol=1e-8)


def test_shapes_expand_and_validation():
    base = D.Normal(fg.to_tensor(np.zeros((2, 3))), fg.to_tensor(np.ones((2, 3))))
    stick = D.TransformedDistribution(base, D.StickBreakingTransform())
    reference = TD.TransformedDistribution(TD.Normal(torch.zeros(2, 3), torch.ones(2, 3)), TT.StickBreakingTransform())
    assert (stick.batch_shape, stick.event_shape) == ([2], [4])
    assert (list(reference.batch_shape), list(reference.event_shape)) == ([2], [4])
    assert list(stick.sample([5]).shape) == [5, 2, 4]
    wide = D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform()]).expand([3])
    assert wide.batch_shape == [3] and list(wide.rsample([2]).shape) == [2, 3]
    lognormal = D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform()])
    with pytest.raises(ValueError, match=r"TransformedDistribution: value must lie in the support \(positive\)"):
        lognormal.log_prob(fg.to_tensor(np.array([-1.0])))
    with pytest.raises(TypeError, match="TransformedDistribution: transforms must be Transforms"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [np.exp])
    with pytest.raises(TypeError, match="PowerTransform: give exponent"):
        D.PowerTransform()
    # torch's module names
    assert fg.distributions.TransformedDistribution is D.TransformedDistribution
    assert fg.distributions.transforms.ExpTransform is D.ExpTransform


def test_static_log_prob_and_gradients_equal_eager():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        loc = fg.static.data("loc", [3], "float64")
        loc.stop_gradient = False
        value = fg.static.data("value", [3], "float64")
        dist = D.TransformedDistribution(D.Normal(loc, fg.full([3], 0.7, "float64")),
                                         [D.AffineTransform(1.0, 2.0), D.ExpTransform()])
        log_prob = dist.log_prob(value)
        (grad,) = fg.gradients([fg.sum(log_prob)], [loc])
    got = fg.Executor().run(main, feed={"loc": _LOC, "value": _POSITIVE}, fetch_list=[log_prob, grad])
    program_module._guard_depth, saved = 0, program_module._guard_depth
    try:
        eager_loc = _f(_LOC)
        eager = D.TransformedDistribution(D.Normal(eager_loc, fg.full([3], 0.7, "float64")),
                                          [D.AffineTransform(1.0, 2.0), D.ExpTransform()]).log_prob(
            fg.to_tensor(_POSITIVE))
        fg.sum(eager).backward()
    finally:
        program_module._guard_depth = saved
    np.testing.assert_allclose(got[0], eager.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1], eager_loc.grad.numpy(), rtol=1e-12)
