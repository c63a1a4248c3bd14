"""Ops that draw random numbers (initializers, dropout masks) from one seeded generator.

Which generator a random op draws from, first match wins: its own non-zero `seed` attribute (the
same numbers on every run of the op); inside an Executor run of a Program whose `random_seed`
is non-zero, a generator seeded with it at the start of each run (Fluid's
`startup.random_seed = 7`: every run of that program draws the same numbers, its ops in order);
else the global generator that `fluidgrad.seed` resets (eager mode, unseeded programs).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import numpy as np

from .registry import NO_GRADIENT, register_op
from ..framework.variable import normalize_dtype

_generator = np.random.default_rng(0)


def seed(value: int) -> None:
    """Make every random op repeatable: `fluidgrad.seed(0)`."""
    global _generator
    _generator = np.random.default_rng(value)


def get_rng_state() -> dict:
    """The global generator's state (PyTorch's and Paddle's name): recompute replays it."""
    return _generator.bit_generator.state


def set_rng_state(state: dict) -> None:
    """Put the global generator back into a state that `get_rng_state` returned."""
    _generator.bit_generator.state = state


# the generator of the program run in progress on this thread (see program_seed)
_running = threading.local()


@contextlib.contextmanager
def program_seed(seed: int) -> Iterator[None]:
    """Inside: random ops without a seed of their own draw from a generator seeded with `seed`
    (non-zero; a Program's `random_seed`), made now. The Executor runs a seeded program in it."""
    saved = getattr(_running, "generator", None)
    _running.generator = np.random.default_rng(seed)
    try:
        yield
    finally:
        _running.generator = saved


def generator(op_seed: int = 0) -> np.random.Generator:
    """A private generator when an op carries its own non-zero seed, else the running program's
    (`program_seed`), else the global one."""
    if op_seed:
        return np.random.default_rng(op_seed)
    return getattr(_running, "generator", None) or _generator


def _shape_infer(ctx):
    ctx.set_output("Out", ctx.attr("shape"), normalize_dtype(ctx.attr("dtype")))


def _uniform(shape, min, max, dtype, seed):
    return generator(seed).uniform(min, max, size=shape).astype(dtype)


def _gaussian(shape, mean, std, dtype, seed):
    return generator(seed).normal(mean, std, size=shape).astype(dtype)


def _truncated_gaussian(shape, mean, std, dtype, seed, a, b):
    """N(mean, std^2) redrawn outside [mean + a std, mean + b std] (a, b in std units: -2, 2 by default)."""
    if not a < b:
        raise ValueError(f"truncated_gaussian_random: the bounds must satisfy a < b, got a={a}, b={b}")
    rng = generator(seed)
    values = rng.normal(0.0, 1.0, size=shape)
    bad = (values < a) | (values > b)
    while bad.any():
        values[bad] = rng.normal(0.0, 1.0, size=int(bad.sum()))
        bad = (values < a) | (values > b)
    return (mean + std * values).astype(dtype)


_SHAPE_ATTRS = {"shape": [1], "dtype": "float32", "seed": 0}
register_op("uniform_random", inputs=(), outputs="Out", attrs={**_SHAPE_ATTRS, "min": -1.0, "max": 1.0},
            kernel=_uniform, infer=_shape_infer, grad=NO_GRADIENT)
register_op("gaussian_random", inputs=(), outputs="Out", attrs={**_SHAPE_ATTRS, "mean": 0.0, "std": 1.0},
            kernel=_gaussian, infer=_shape_infer, grad=NO_GRADIENT)
def _randint(shape, low, high, dtype, seed):
    return generator(seed).integers(low, high, size=shape).astype(dtype)


def _randperm_infer(ctx):
    ctx.set_output("Out", [ctx.attr("n")], normalize_dtype(ctx.attr("dtype")))


def _randperm(n, dtype, seed):
    return generator(seed).permutation(n).astype(dtype)


register_op("randint", inputs=(), outputs="Out", attrs={**_SHAPE_ATTRS, "dtype": "int64", "low": 0, "high": 2},
            kernel=_randint, infer=_shape_infer, grad=NO_GRADIENT)
register_op("randperm", inputs=(), outputs="Out", attrs={"n": 1, "dtype": "int64", "seed": 0},
            kernel=_randperm, infer=_randperm_infer, grad=NO_GRADIENT)
register_op("truncated_gaussian_random", inputs=(), outputs="Out",
            attrs={**_SHAPE_ATTRS, "mean": 0.0, "std": 1.0, "a": -2.0, "b": 2.0},
            kernel=_truncated_gaussian, infer=_shape_infer, grad=NO_GRADIENT)
