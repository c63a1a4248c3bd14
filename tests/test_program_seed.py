"""Program.random_seed (Fluid's `startup.random_seed = 7`): the Executor seeds the program's random
ops with it at the start of each run, so every run draws the same numbers; an op's own `seed`
wins; 0 (the default) leaves the ops on the global generator (`fluidgrad.seed`), and eager mode
never sees a program's seed. See ops/random.py."""
from __future__ import annotations

import numpy as np

import fluidgrad as fg
from fluidgrad.framework.serialize import program_from_dict, program_to_dict
from fluidgrad.initializer import Uniform
from fluidgrad.nn import functional as F


def _model(seed: int, weight_seed: int = 0) -> tuple[fg.Program, fg.Program]:
    main, startup = fg.Program(), fg.Program()
    main.random_seed = startup.random_seed = seed
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 4], "float64")
        hidden = fg.static.nn.fc(x, 4)
        fg.static.nn.fc(hidden, 4, weight_attr=fg.ParamAttr(initializer=Uniform(-1.0, 1.0, seed=weight_seed))
                        if weight_seed else None)
    return main, startup


def _initialise(main: fg.Program, startup: fg.Program) -> list[np.ndarray]:
    scope = fg.executor.Scope()
    with fg.scope_guard(scope):
        fg.Executor().run(startup)
    return [np.array(scope[p.name]) for p in main.all_parameters() if p.name.endswith("w_0")]


def test_a_seeded_startup_program_initialises_the_same_on_every_run_and_each_parameter_differently():
    first, second = _initialise(*_model(7)), _initialise(*_model(7))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])   # one stream for the run, not one per op
    other = _initialise(*_model(8))
    assert not np.array_equal(first[0], other[0])


def test_an_unseeded_program_draws_new_numbers_on_each_run():
    main, startup = _model(0)
    assert not np.array_equal(_initialise(main, startup)[0], _initialise(main, startup)[0])


def test_a_seed_set_after_building_counts_and_survives_clone_and_serialisation():
    main, startup = _model(0)
    startup.random_seed = 11
    expected = _initialise(main, startup)
    np.testing.assert_array_equal(_initialise(main, startup.clone())[0], expected[0])
    restored = program_from_dict(program_to_dict(startup))
    np.testing.assert_array_equal(_initialise(main, restored)[0], expected[0])


def test_an_ops_own_seed_wins_over_the_programs():
    seeded_op = [_initialise(*_model(program_seed, weight_seed=5))[1] for program_seed in (0, 7, 8)]
    np.testing.assert_array_equal(seeded_op[0], seeded_op[1])
    np.testing.assert_array_equal(seeded_op[0], seeded_op[2])


def _dropout_masks(seed: int) -> list[np.ndarray]:
    main, startup = fg.Program(), fg.Program()
    main.random_seed = seed
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 64], "float64")
        out = F.dropout(x, 0.5)
    exe = fg.Executor()
    return [exe.run(main, feed={"x": np.ones((8, 64))}, fetch_list=[out])[0] for _ in range(2)]


def test_dropout_in_a_seeded_main_program_repeats_its_mask_on_every_run():
    first, second = _dropout_masks(3)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(_dropout_masks(3)[0], first)
    unseeded = _dropout_masks(0)
    assert not np.array_equal(unseeded[0], unseeded[1])


def test_running_a_seeded_program_leaves_eager_and_the_global_generator_alone():
    x = fg.to_tensor(np.ones((16, 16)))
    fg.seed(4)
    expected = [F.dropout(x, 0.5).numpy() for _ in range(2)]
    fg.seed(4)
    got = [F.dropout(x, 0.5).numpy()]
    _initialise(*_model(7))                       # draws from its own generator only
    got.append(F.dropout(x, 0.5).numpy())
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
