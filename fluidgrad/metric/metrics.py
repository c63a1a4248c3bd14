"""Metrics accumulated over batches (paddle.metric's classes): Metric, Accuracy, Precision, Recall.

A metric's life in a training loop (fluidgrad.Model drives it; a hand-written loop may too):
`compute(outputs..., labels...)` turns one batch into what `update` needs (Accuracy: which of
the top k predictions are right; others pass their inputs through), `update(...)` adds the
batch to the running totals and returns the batch's value, `accumulate()` gives the value over
every batch since `reset()`, and `name()` names it in logs. `compute` runs on Tensors (it may
be part of a program); `update` and `accumulate` work on NumPy arrays.
"""
from __future__ import annotations

import abc
from typing import Any

import numpy as np

from ..functions import cast, equal, reshape
from ..tensor.search import argmax, topk

__all__ = ["Accuracy", "Metric", "Precision", "Recall"]


def _numpy(value: Any, owner: str, what: str) -> np.ndarray:
    """A Tensor's or array's values as an array (metrics accumulate in NumPy)."""
    if hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    if isinstance(value, (np.ndarray, np.generic, list, tuple, int, float)):
        return np.asarray(value)
    raise TypeError(f"{owner}: {what} must be a Tensor or a NumPy array, got {type(value).__name__}")


class Metric(metaclass=abc.ABCMeta):
    """Base class of metrics: subclasses define reset, update, accumulate and name, and may
    define compute (default: its inputs unchanged, as Paddle's)."""

    def __init__(self) -> None:
        pass

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget every batch seen."""

    @abc.abstractmethod
    def update(self, *args: Any) -> Any:
        """Add one batch (what compute returned) and return its value."""

    @abc.abstractmethod
    def accumulate(self) -> Any:
        """The value over every batch since reset()."""

    @abc.abstractmethod
    def name(self) -> Any:
        """The name (or list of names) of the value(s) in logs."""

    def compute(self, *args: Any) -> Any:
        """One batch's network outputs and labels turned into update()'s arguments."""
        return args


class Accuracy(Metric):
    """Top-k accuracy of [..., C] scores against class ids ([..., 1] or [...]) or one-hot labels
    ([..., C]); `topk=(1, 5)` reports both, named "acc_top1", "acc_top5"."""

    def __init__(self, topk: int | tuple[int, ...] = (1,), name: str | None = None, *args: Any,
                 **kwargs: Any) -> None:
        super().__init__()
        self.topk = (topk,) if isinstance(topk, int) else tuple(int(k) for k in topk)
        if not self.topk or min(self.topk) < 1:
            raise ValueError(f"Accuracy: topk must be positive integers, got {topk!r}")
        self.maxk = max(self.topk)
        name = name or "acc"
        self._name = [f"{name}_top{k}" for k in self.topk] if self.maxk != 1 else [name]
        self.reset()

    def compute(self, pred: Any, label: Any, *args: Any) -> Any:
        """[..., maxk] float32: 1 where the i-th best score is the label's class."""
        if pred.shape[-1] >= 0 and self.maxk > pred.shape[-1]:
            raise ValueError(f"Accuracy: topk={self.topk} needs at least {self.maxk} classes, got scores of "
                             f"shape {list(pred.shape)}")
        _, best = topk(pred, self.maxk, axis=-1)
        if len(label.shape) == 1 or label.shape[-1] == 1:
            label = reshape(label, [-1, 1] if len(pred.shape) == 2 else list(pred.shape[:-1]) + [1])
        else:   # one-hot (or soft) labels: the class of the largest entry
            label = argmax(label, axis=-1, keepdim=True)
        return cast(equal(best, cast(label, best.dtype)), "float32")

    def update(self, correct: Any, *args: Any) -> float | list[float]:
        correct = _numpy(correct, "Accuracy.update", "correct")
        samples = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            hits = float(correct[..., :k].sum())
            accs.append(hits / samples if samples else 0.0)
            self.total[i] += hits
            self.count[i] += samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self) -> None:
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self) -> float | list[float]:
        values = [t / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return values[0] if len(self.topk) == 1 else values

    def name(self) -> list[str]:
        return self._name


class _BinaryCounts(Metric):
    """Binary classification counts: predictions are probabilities of class 1 (rounded at 0.5),
    labels are 0 or 1, both [N] or [N, 1]."""

    def __init__(self, name: str, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self._name = name
        self.reset()

    def _hits(self, preds: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        owner = f"{type(self).__name__}.update"
        preds, labels = _numpy(preds, owner, "preds"), _numpy(labels, owner, "labels")
        if preds.size != labels.size or preds.shape[0] != labels.shape[0]:
            raise ValueError(f"{owner}: preds of shape {list(preds.shape)} and labels of shape "
                             f"{list(labels.shape)} must hold one value per sample")
        return np.floor(preds.reshape(-1) + 0.5).astype(np.int64) == 1, labels.reshape(-1).astype(np.int64) == 1

    def reset(self) -> None:
        self.tp, self.fp, self.fn = 0, 0, 0

    def name(self) -> str:
        return self._name


class Precision(_BinaryCounts):
    """True positives over predicted positives (0.0 before any positive prediction)."""

    def __init__(self, name: str = "precision", *args: Any, **kwargs: Any) -> None:
        super().__init__(name)

    def update(self, preds: Any, labels: Any) -> None:
        predicted, actual = self._hits(preds, labels)
        self.tp += int(np.sum(predicted & actual))
        self.fp += int(np.sum(predicted & ~actual))

    def accumulate(self) -> float:
        positives = self.tp + self.fp
        return self.tp / positives if positives else 0.0


class Recall(_BinaryCounts):
    """True positives over actual positives (0.0 before any positive label)."""

    def __init__(self, name: str = "recall", *args: Any, **kwargs: Any) -> None:
        super().__init__(name)

    def update(self, preds: Any, labels: Any) -> None:
        predicted, actual = self._hits(preds, labels)
        self.tp += int(np.sum(predicted & actual))
        self.fn += int(np.sum(~predicted & actual))

    def accumulate(self) -> float:
        positives = self.tp + self.fn
        return self.tp / positives if positives else 0.0
