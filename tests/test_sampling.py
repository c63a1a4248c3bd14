"""multinomial and bernoulli: their distributions by statistics over many draws (fixed seeds, so
each run sees the same draws), repeatability through fluidgrad.seed and a program's random_seed,
shapes and dtypes in both modes, no gradient, and the refusals of bad probabilities."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import fluidgrad as fg

PROBS = np.array([[0.1, 0.2, 0.0, 0.7], [0.25, 0.25, 0.25, 0.25], [0.0, 0.0, 1.0, 0.0]])
DRAWS = 20000


def _within_sampling_error(frequencies: np.ndarray, probabilities: np.ndarray, draws: int) -> None:
    """Each observed frequency within 5 standard errors of its probability."""
    bound = 5 * np.sqrt(probabilities * (1 - probabilities) / draws) + 1e-12
    assert np.all(np.abs(frequencies - probabilities) <= bound), (frequencies, probabilities)


def test_multinomial_with_replacement_follows_the_probabilities():
    draws = fg.multinomial(fg.to_tensor((PROBS * 3).astype("float32")), DRAWS, replacement=True).numpy()
    assert draws.shape == (3, DRAWS) and draws.dtype == np.int64
    for row, drawn in zip(PROBS, draws):
        _within_sampling_error(np.bincount(drawn, minlength=4) / DRAWS, row, DRAWS)


def test_multinomial_without_replacement_draws_in_order_of_a_sequential_draw():
    """P(first i, second j) = p_i p_j / (1 - p_i): drawing one, then another from the rest."""
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    pairs = fg.multinomial(fg.to_tensor(np.tile(probs, (DRAWS, 1))), 2).numpy()
    assert pairs.shape == (DRAWS, 2) and np.all(pairs[:, 0] != pairs[:, 1])
    observed = np.zeros((4, 4))
    np.add.at(observed, (pairs[:, 0], pairs[:, 1]), 1.0 / DRAWS)
    expected = np.array([[0.0 if i == j else probs[i] * probs[j] / (1 - probs[i]) for j in range(4)]
                         for i in range(4)])
    _within_sampling_error(observed, expected, DRAWS)
    everything = fg.multinomial(fg.to_tensor(probs), 4).numpy()
    assert sorted(everything.tolist()) == [0, 1, 2, 3]


def test_bernoulli_follows_the_probabilities_and_keeps_the_dtype():
    probs = np.repeat(np.array([[0.0, 0.05, 0.5, 0.9, 1.0]]), DRAWS, axis=0)
    for dtype in ("float32", "float64"):
        draws = fg.bernoulli(fg.to_tensor(probs.astype(dtype))).numpy()
        assert draws.dtype == np.dtype(dtype) and draws.shape == probs.shape
        assert set(np.unique(draws).tolist()) == {0.0, 1.0}
        _within_sampling_error(draws.mean(axis=0), probs[0], DRAWS)
    coins = fg.bernoulli(fg.to_tensor(np.zeros(DRAWS)), p=0.3).numpy()
    _within_sampling_error(np.array([coins.mean()]), np.array([0.3]), DRAWS)


def test_draws_repeat_after_seeding_and_differ_otherwise():
    probs = fg.to_tensor(PROBS)
    fg.seed(11)
    first = [fg.multinomial(probs, 8, replacement=True).numpy(), fg.bernoulli(probs).numpy()]
    again = [fg.multinomial(probs, 8, replacement=True).numpy(), fg.bernoulli(probs).numpy()]
    fg.seed(11)
    replay = [fg.multinomial(probs, 8, replacement=True).numpy(), fg.bernoulli(probs).numpy()]
    for a, b in zip(first, replay):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], again[0])


def test_static_programs_infer_shapes_and_follow_their_random_seed():
    main, startup = fg.Program(), fg.Program()
    main.random_seed = 5
    with fg.program_guard(main, startup):
        probs = fg.static.data("probs", [None, 4], "float64")
        tokens = fg.multinomial(probs, 3, replacement=True)
        mask = fg.bernoulli(probs)
    assert list(tokens.shape) == [-1, 3] and tokens.dtype == "int64"
    assert list(mask.shape) == [-1, 4] and mask.dtype == "float64"
    exe = fg.Executor()
    runs = [exe.run(main, feed={"probs": PROBS}, fetch_list=[tokens, mask]) for _ in range(2)]
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    for row, drawn in zip(PROBS, runs[0][0]):
        assert np.all(row[drawn] > 0)


def test_no_gradient_flows_through_a_draw():
    probs = fg.to_tensor(np.full((4, 5), 0.5), stop_gradient=False)
    mask = fg.bernoulli(probs)
    fg.sum(mask * probs).backward()
    np.testing.assert_array_equal(probs.grad.numpy(), mask.numpy())   # only the product's own factor
    tokens = fg.multinomial(fg.nn.functional.softmax(probs), 2)
    assert tokens.stop_gradient


BAD = {
    "negative probability": (lambda: fg.multinomial(fg.to_tensor(np.array([0.5, -0.1, 0.6])), 1),
                             ValueError, r"op multinomial: X \(shape \[3\], float64\) must hold finite, non-negative"),
    "a row of zeros": (lambda: fg.multinomial(fg.to_tensor(np.array([[0.5, 0.5], [0.0, 0.0]])), 1, True),
                       ValueError, r"op multinomial: every row of X \(shape \[2, 2\]\) needs a positive sum"),
    "more samples than categories": (lambda: fg.multinomial(fg.to_tensor(np.ones(3)), 4), ValueError,
                                     "without replacement, num_samples=4 exceeds the 3 categories"),
    "too few non-zero categories": (lambda: fg.multinomial(fg.to_tensor(np.array([0.5, 0.0, 0.5])), 3),
                                    ValueError, "needs that many categories of non-zero probability"),
    "a 3-D input": (lambda: fg.multinomial(fg.to_tensor(np.ones((2, 2, 2))), 1), ValueError, "must be 1-D or 2-D"),
    "integer probabilities": (lambda: fg.multinomial(fg.to_tensor(np.array([1, 2])), 1), TypeError,
                              "expects floating point input"),
    "bernoulli above 1": (lambda: fg.bernoulli(fg.to_tensor(np.array([0.5, 1.5]))), ValueError,
                          r"op bernoulli: X \(shape \[2\], float64\) must hold probabilities in \[0, 1\]"),
    "bernoulli of NaN": (lambda: fg.bernoulli(fg.to_tensor(np.array([np.nan]))), ValueError, "op bernoulli"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_probabilities_are_refused_clearly(name):
    call, error, message = BAD[name]
    with pytest.raises(error, match=message):
        call()


def test_every_category_pair_is_reachable_without_replacement():
    seen = {tuple(row) for row in fg.multinomial(fg.to_tensor(np.full((400, 3), 1.0)), 2).numpy().tolist()}
    assert seen == set(itertools.permutations(range(3), 2))
