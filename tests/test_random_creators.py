"""Paddle's random tensor creators: rand, randn, randint, randperm, uniform, normal."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.framework import program as program_module


@pytest.fixture
def eager(monkeypatch):
    """Outside the suite's program_guard: the creators return Tensors."""
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    assert fg.in_dynamic_mode()


CREATORS = {
    "rand": lambda: fg.rand([300]),
    "randn": lambda: fg.randn([300], dtype="float64"),
    "randint": lambda: fg.randint(-4, 9, [300]),
    "randperm": lambda: fg.randperm(300),
    "uniform": lambda: fg.uniform([300], min=2.0, max=3.0),
    "normal": lambda: fg.normal(5.0, 0.1, [300]),
}


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_seed_repeats_the_draw_and_the_next_draw_differs(name, eager):
    fg.seed(11)
    first = CREATORS[name]().numpy()
    second = CREATORS[name]().numpy()
    fg.seed(11)
    np.testing.assert_array_equal(CREATORS[name]().numpy(), first)
    assert not np.array_equal(first, second)


def test_values_follow_their_distribution(eager):
    fg.seed(0)
    assert 0 <= fg.rand([5000]).numpy().min() and fg.rand([5000]).numpy().max() < 1
    normal = fg.normal(5.0, 0.5, [20000]).numpy()
    assert abs(normal.mean() - 5.0) < 0.02 and abs(normal.std() - 0.5) < 0.02
    ints = fg.randint(-4, 9, [5000]).numpy()
    assert ints.dtype == np.int64 and set(np.unique(ints)) == set(range(-4, 9))
    assert sorted(fg.randperm(7, dtype="int32").numpy().tolist()) == list(range(7))
    assert fg.randint(3, shape=[4]).numpy().max() < 3          # one bound: [0, low)
    assert list(fg.randn([2, 3]).shape) == [2, 3] and list(fg.uniform(4).shape) == [4]


def test_in_a_program_each_run_draws_again_and_a_program_seed_repeats_runs():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.randn([50])
    exe = fg.Executor()
    a, = exe.run(main, fetch_list=[x])
    b, = exe.run(main, fetch_list=[x])
    assert list(x.shape) == [50]
    assert not np.array_equal(a, b)
    main.random_seed = 5
    c, = exe.run(main, fetch_list=[x])
    d, = exe.run(main, fetch_list=[x])
    np.testing.assert_array_equal(c, d)


@pytest.mark.parametrize("make, words", [
    (lambda: fg.rand([2, -1]), "rand: shape"),
    (lambda: fg.randint(5, 5), "randint: low (5) must be less than high (5)"),
    (lambda: fg.randint(0, 5, [2], dtype="float32"), "randint: dtype must be int32 or int64"),
    (lambda: fg.uniform([2], min=1.0, max=0.0), "uniform: min"),
    (lambda: fg.randn([2], dtype="int64"), "randn: dtype must be a floating type"),
    (lambda: fg.normal(0.0, -1.0, [2]), "normal: std must be >= 0"),
    (lambda: fg.randperm(-1), "randperm: n must be >= 0"),
])
def test_bad_arguments_are_refused_naming_the_function(make, words, eager):
    with pytest.raises((ValueError, TypeError), match=words.replace("(", r"\(").replace(")", r"\)")):
        make()
