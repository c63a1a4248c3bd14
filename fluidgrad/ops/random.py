"""Ops that draw random numbers (initializers, dropout masks) from one seeded generator."""
from __future__ import annotations

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


def generator(op_seed: int = 0) -> np.random.Generator:
    """The global generator, or a private one when an op carries its own non-zero seed."""
    return np.random.default_rng(op_seed) if op_seed else _generator


def _shape_infer(ctx):
    ctx.set_output("Out", ctx.attr("shape"), normalize_dtype(ctx.attr("dtype")))


def _uniform(shape, min, max, dtype, seed):
    return generator(seed).uniform(min, max, size=shape).astype(dtype)


def _gaussian(shape, mean, std, dtype, seed):
    return generator(seed).normal(mean, std, size=shape).astype(dtype)


def _truncated_gaussian(shape, mean, std, dtype, seed):
    rng = generator(seed)
    values = rng.normal(0.0, 1.0, size=shape)
    bad = np.abs(values) > 2.0
    while bad.any():
        values[bad] = rng.normal(0.0, 1.0, size=int(bad.sum()))
        bad = np.abs(values) > 2.0
    return (mean + std * values).astype(dtype)


_SHAPE_ATTRS = {"shape": [1], "dtype": "float32", "seed": 0}
register_op("uniform_random", inputs=(), outputs="Out", attrs={**_SHAPE_ATTRS, "min": -1.0, "max": 1.0},
            kernel=_uniform, infer=_shape_infer, grad=NO_GRADIENT)
register_op("gaussian_random", inputs=(), outputs="Out", attrs={**_SHAPE_ATTRS, "mean": 0.0, "std": 1.0},
            kernel=_gaussian, infer=_shape_infer, grad=NO_GRADIENT)
register_op("truncated_gaussian_random", inputs=(), outputs="Out",
            attrs={**_SHAPE_ATTRS, "mean": 0.0, "std": 1.0},
            kernel=_truncated_gaussian, infer=_shape_infer, grad=NO_GRADIENT)
