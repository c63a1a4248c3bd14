"""Metrics of a training loop (paddle.metric): accuracy."""
from __future__ import annotations

from typing import Any

from ..dispatch import apply_op
from ..functions import cast, equal, mean, reshape
from ..tensor.math import any as _any
from ..tensor.search import topk

__all__ = ["accuracy"]


def accuracy(input: Any, label: Any, k: int = 1, correct: Any = None, total: Any = None,
             name: str | None = None) -> Any:
    """The fraction of rows of `input` ([N, C] scores) whose label ([N, 1] or [N] class ids) is
    among the k highest scores, as a float32 Tensor of shape [1] (paddle.metric.accuracy); both
    modes. `correct` / `total` (Paddle's optional outputs) are not supported."""
    if correct is not None or total is not None:
        raise NotImplementedError("metric.accuracy: the correct= / total= outputs are not supported; "
                                  "use the returned rate")
    if len(input.shape) != 2:
        raise ValueError(f"metric.accuracy: input must be [N, C] scores, got shape {list(input.shape)}")
    if not 1 <= int(k) <= input.shape[1] and input.shape[1] >= 0:
        raise ValueError(f"metric.accuracy: k={k} must be in [1, {input.shape[1]}] for input of shape "
                         f"{list(input.shape)}")
    if len(label.shape) == 1:
        label = apply_op("unsqueeze", {"X": label}, {"axes": [1]})
    if len(label.shape) != 2 or label.shape[1] not in (1, -1):
        raise ValueError(f"metric.accuracy: label must be [N, 1] class ids, got shape {list(label.shape)}")
    _, indices = topk(input, int(k), axis=1)
    found = _any(equal(indices, cast(label, indices.dtype)), axis=1)      # label among the k best
    return reshape(mean(cast(found, "float32")), [1])
