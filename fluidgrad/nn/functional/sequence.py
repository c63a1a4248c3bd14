"""Padded batches of sequences: `sequence_mask` (Paddle 2's name), the mask the recurrent layers
use to run a batch with `sequence_length`."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...dispatch import is_tensor
from ...framework import normalize_dtype
from ...functions import cast, less_than, unsqueeze
from ...indexing import create

__all__ = ["sequence_mask"]


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def sequence_mask(x: Any, maxlen: Any = None, dtype: Any = "int64", name: str | None = None) -> Any:
    """mask[..., j] = j < x[...]: shape x.shape + [maxlen], 1 at each sequence's valid steps and 0
    on its padding. maxlen None is max(x), known only for an eager Tensor; a Program needs it given
    (its shape is fixed when the op is appended). No gradient."""
    if str(x.dtype) not in ("int32", "int64"):
        raise TypeError(f"sequence_mask: x must hold integer lengths (int32 or int64), got {_describe(x)}")
    if maxlen is None:
        if not is_tensor(x):
            raise ValueError(f"sequence_mask: maxlen is needed for the Variable {_describe(x)}: the mask's "
                             f"last axis is max(x), known only when the program runs")
        maxlen = int(np.max(x.numpy())) if x.numpy().size else 0
    elif is_tensor(maxlen):
        maxlen = int(maxlen.numpy())
    if int(maxlen) < 0:
        raise ValueError(f"sequence_mask: maxlen must be non-negative, got {maxlen}")
    steps = create("range", {"start": 0, "end": int(maxlen), "step": 1, "dtype": "int64"}, like=x)   # x's mode
    below = less_than(steps, unsqueeze(cast(x, "int64"), -1))
    return cast(below, normalize_dtype(dtype))
