"""paddle.metric.accuracy: top-k accuracy of a batch, as a Tensor (both modes)."""
from __future__ import annotations

from typing import Any

from ..dispatch import apply_op
from ..functions import assign, cast, equal, full_like, mean, reshape, sum
from ..tensor.math import any as _any
from ..tensor.search import topk

__all__ = ["accuracy"]


def _write_count(count: Any, output: Any) -> None:
    """Paddle's correct= / total= outputs: the count written into the given Tensor or Variable."""
    shape = list(output.shape) if all(d >= 0 for d in output.shape) else [1]
    assign(reshape(cast(count, output.dtype), shape), output=output)


def accuracy(input: Any, label: Any, k: int = 1, correct: Any = None, total: Any = None,
             name: str | None = None) -> Any:
    """The fraction of rows of `input` ([N, C] scores) whose label ([N, 1] or [N] class ids) is
    among the k highest scores, as a float32 Tensor of shape [1] (paddle.metric.accuracy); both
    modes. `correct` and `total` (Paddle's optional outputs: integer Tensors or Variables of one
    element) receive the number of such rows and N."""
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
    found = cast(_any(equal(indices, cast(label, indices.dtype)), axis=1), "int64")    # label among the k best
    if correct is not None:
        _write_count(sum(found), correct)
    if total is not None:
        _write_count(sum(full_like(found, 1)), total)
    return reshape(mean(cast(found, "float32")), [1])
