"""Shared fixtures: every test builds into fresh programs, a fresh global scope and fresh names,
so that tests never see each other's variables (and can run in any order, in parallel)."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.framework import unique_name_guard
from fuzz_conftest_plugin import pytest_addoption, pytest_terminal_summary  # noqa: F401  (--fuzz-long, fuzz count)


@pytest.fixture(autouse=True)
def fresh_programs():
    """Default main/startup programs, global scope and unique names are new for each test, and
    fluidgrad's random generator starts from the same seed: a test's random parameters do not
    depend on which tests ran before it in the same process."""
    fg.seed(0)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.scope_guard(fg.Scope()), unique_name_guard():
        yield main, startup


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
