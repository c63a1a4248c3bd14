"""fluidgrad.distribution against torch.distributions (float64, exact up to rounding), its
gradients (policy gradient into logits, rsample into loc and scale), its draws (statistics and
fg.seed), and the same formulas in a static Program."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import distribution as D

RNG = np.random.default_rng(0)
LOC, SCALE = RNG.standard_normal(3), RNG.uniform(0.5, 2.0, 3)
LOGITS, LOGITS_Q = RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4))
PROBS = RNG.uniform(0.05, 0.95, 3)
LOW, HIGH = np.array([0.0, -1.0, 2.0]), np.array([1.0, 3.0, 2.5])


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _pair(module, name, i=0):
    """The same distribution in fluidgrad (module fg) and torch."""
    wrap = fg.to_tensor if module is fg else torch.tensor
    space = D if module is fg else torch.distributions
    outside = {} if module is fg else {"validate_args": False}      # torch refuses values outside [low, high)
    return {
        "Normal": lambda: space.Normal(wrap(LOC + i), wrap(SCALE * (1 + i))),
        "Categorical logits": lambda: space.Categorical(logits=wrap(LOGITS if i == 0 else LOGITS_Q)),
        "Categorical probs": lambda: space.Categorical(probs=wrap(np.exp(LOGITS if i == 0 else LOGITS_Q))),
        "Bernoulli probs": lambda: space.Bernoulli(probs=wrap(PROBS if i == 0 else PROBS[::-1].copy())),
        "Bernoulli logits": lambda: space.Bernoulli(logits=wrap(LOC + i)),
        "Uniform": lambda: space.Uniform(wrap(LOW - i), wrap(HIGH + i), **outside),
    }[name]()


VALUES = {"Normal": RNG.standard_normal(3), "Categorical logits": np.array([1, 3]),
          "Categorical probs": np.array([[0, 2], [3, 1], [2, 2]]), "Bernoulli probs": np.array([1.0, 0.0, 1.0]),
          "Bernoulli logits": np.array([0.0, 1.0, 1.0]), "Uniform": np.array([0.5, 3.5, 2.1])}


def _close(ours, theirs, rtol=1e-12):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-14)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_log_prob_and_entropy_match_torch(name):
    ours, theirs = _pair(fg, name), _pair(torch, name)
    value = VALUES[name]
    _close(ours.log_prob(fg.to_tensor(value)), theirs.log_prob(torch.tensor(value)))
    _close(ours.prob(fg.to_tensor(value)), theirs.log_prob(torch.tensor(value)).exp())
    _close(ours.entropy(), theirs.entropy())
    if not name.startswith("Categorical"):
        _close(ours.mean, theirs.mean)
        _close(ours.variance, theirs.variance)
    assert ours.batch_shape == list(theirs.batch_shape)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_kl_divergence_matches_torch(name):
    expected = torch.distributions.kl_divergence(_pair(torch, name), _pair(torch, name, 1))
    _close(D.kl_divergence(_pair(fg, name), _pair(fg, name, 1)), expected)
    _close(_pair(fg, name).kl_divergence(_pair(fg, name, 1)), expected)


def test_kl_is_infinite_where_q_cannot_follow_p():
    p, q = D.Uniform(fg.to_tensor(LOW), fg.to_tensor(HIGH)), D.Uniform(fg.to_tensor(LOW + 0.25), fg.to_tensor(HIGH))
    assert np.all(np.isinf(D.kl_divergence(p, q).numpy()))
    p = D.Categorical(probs=fg.to_tensor(np.array([0.5, 0.5, 0.0])))
    q = D.Categorical(probs=fg.to_tensor(np.array([0.0, 0.5, 0.5])))
    expected = torch.distributions.kl_divergence(torch.distributions.Categorical(probs=torch.tensor([0.5, 0.5, 0.0])),
                                                 torch.distributions.Categorical(probs=torch.tensor([0.0, 0.5, 0.5])))
    assert np.isinf(D.kl_divergence(p, q).numpy()) and np.isinf(expected.numpy())


def test_policy_gradient_reaches_the_logits():
    actions, advantage = np.array([1, 3]), np.array([0.7, -1.3])
    logits = fg.to_tensor(LOGITS, stop_gradient=False)
    dist = D.Categorical(logits=logits)
    loss = fg.sum(-dist.log_prob(fg.to_tensor(actions)) * fg.to_tensor(advantage)) - 0.1 * fg.sum(dist.entropy())
    loss.backward()
    expected = torch.tensor(LOGITS, requires_grad=True)
    reference = torch.distributions.Categorical(logits=expected)
    ((-reference.log_prob(torch.tensor(actions)) * torch.tensor(advantage)).sum()
     - 0.1 * reference.entropy().sum()).backward()
    np.testing.assert_allclose(logits.grad.numpy(), expected.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_rsample_is_reparameterized():
    loc, scale = fg.to_tensor(LOC, stop_gradient=False), fg.to_tensor(SCALE, stop_gradient=False)
    fg.seed(3)
    draws = D.Normal(loc, scale).rsample([4])
    fg.sum(draws ** 2).backward()
    eps = (draws.numpy() - LOC) / SCALE                     # the standard normal draws behind them
    np.testing.assert_allclose(loc.grad.numpy(), (2 * draws.numpy()).sum(0), rtol=1e-12)
    np.testing.assert_allclose(scale.grad.numpy(), (2 * draws.numpy() * eps).sum(0), rtol=1e-12)
    low, high = fg.to_tensor(LOW, stop_gradient=False), fg.to_tensor(HIGH, stop_gradient=False)
    fg.sum(D.Uniform(low, high).rsample([5])).backward()
    np.testing.assert_allclose(low.grad.numpy() + high.grad.numpy(), np.full(3, 5.0), rtol=1e-12)
    assert D.Normal(loc, scale).sample([2]).stop_gradient


@pytest.mark.parametrize("name", sorted(VALUES))
def test_draws_are_seeded_and_have_the_right_moments(name):
    fg.seed(7)
    first = _pair(fg, name).sample([4000]).numpy()
    fg.seed(7)
    np.testing.assert_array_equal(_pair(fg, name).sample([4000]).numpy(), first)
    theirs = _pair(torch, name)
    assert list(first.shape) == list(theirs.sample((4000,)).shape)
    if name.startswith("Categorical"):
        frequencies = np.stack([(first == k).mean(0) for k in range(4)], -1)
        np.testing.assert_allclose(frequencies, theirs.probs.numpy(), atol=0.03)
    else:
        np.testing.assert_allclose(first.mean(0), theirs.mean.numpy(), atol=0.1)
        np.testing.assert_allclose(first.var(0), theirs.variance.numpy(), rtol=0.1, atol=0.01)


def test_normal_cdf_icdf_and_python_numbers():
    ours, theirs = D.Normal(0.0, 2.0), torch.distributions.Normal(0.0, 2.0)
    assert ours.loc.dtype == "float32"
    ours = D.Normal(fg.to_tensor(LOC), 1.5)
    theirs = torch.distributions.Normal(torch.tensor(LOC), 1.5)
    value = np.array([0.1, 0.5, 0.9])
    _close(ours.cdf(fg.to_tensor(value)), theirs.cdf(torch.tensor(value)))
    _close(ours.icdf(fg.to_tensor(value)), theirs.icdf(torch.tensor(value)), rtol=1e-10)
    _close(ours.log_prob(fg.to_tensor(value)), theirs.log_prob(torch.tensor(value)))


@pytest.mark.parametrize("call, message", [
    (lambda: D.Normal(fg.to_tensor(LOC), fg.to_tensor(-SCALE)), "scale must be positive"),
    (lambda: D.Categorical(fg.to_tensor(LOGITS)), "non-negative"),
    (lambda: D.Categorical(), "exactly one"),
    (lambda: D.Categorical(logits=fg.to_tensor(LOGITS)).log_prob(fg.to_tensor(np.array([4, 0]))), r"\[0, 4\)"),
    (lambda: D.Uniform(fg.to_tensor(HIGH), fg.to_tensor(LOW)), "low must be less than high"),
    (lambda: D.Normal(fg.to_tensor(np.ones(3)), fg.to_tensor(np.ones(2))), "do not broadcast"),
    (lambda: D.kl_divergence(D.Normal(0.0, 1.0), D.Uniform(0.0, 1.0)), "Normal || Uniform"),
])
def test_bad_input_is_refused_clearly(call, message):
    with pytest.raises((ValueError, NotImplementedError), match=message):
        call()


def test_static_program_matches_eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 1)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        logits = fg.static.data("logits", [2, 4], "float64")
        logits.stop_gradient = False
        loc = fg.static.data("loc", [3], "float64")
        dist = D.Categorical(logits=logits)
        log_prob = dist.log_prob(fg.to_tensor(np.array([1, 3])))
        kl = D.kl_divergence(dist, D.Categorical(logits=fg.to_tensor(LOGITS_Q)))
        normal = D.Normal(loc, fg.to_tensor(SCALE)).log_prob(fg.to_tensor(VALUES["Normal"]))
        grad, = fg.gradients([fg.sum(log_prob)], [logits])
    got = fg.Executor().run(main, feed={"logits": LOGITS, "loc": LOC}, fetch_list=[log_prob, kl, normal, grad])
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    eager_logits = fg.to_tensor(LOGITS, stop_gradient=False)
    eager = D.Categorical(logits=eager_logits)
    expected_log_prob = eager.log_prob(fg.to_tensor(np.array([1, 3])))
    fg.sum(expected_log_prob).backward()
    expected = [expected_log_prob.numpy(),
                D.kl_divergence(eager, D.Categorical(logits=fg.to_tensor(LOGITS_Q))).numpy(),
                D.Normal(fg.to_tensor(LOC), fg.to_tensor(SCALE)).log_prob(fg.to_tensor(VALUES["Normal"])).numpy(),
                eager_logits.grad.numpy()]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-13)
