"""Activation functions (Paddle 2 names), for both modes."""
from __future__ import annotations

from typing import Any

from ...dispatch import apply_op
from ...functions import relu, sigmoid, tanh  # noqa: F401  (re-exported)

__all__ = ['softmax', 'log_softmax', 'leaky_relu']


def softmax(x: Any, axis: int = -1) -> Any:
    return apply_op("softmax", {"X": x}, {"axis": int(axis)})


def log_softmax(x: Any, axis: int = -1) -> Any:
    return apply_op("log_softmax", {"X": x}, {"axis": int(axis)})


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
    return apply_op("leaky_relu", {"X": x}, {"alpha": float(negative_slope)})
