"""Grouping gradients into buckets: one collective per bucket instead of one per parameter.

Parameters are taken in reverse order (the backward pass produces the last layer's gradient
first), grouped by dtype, and a bucket is closed once it holds `bucket_bytes`; the first
bucket is capped at `first_bucket_bytes` so that its all-reduce can start early in the
backward pass (PyTorch DDP's and Paddle's choice). `bucket_bytes <= 0` gives one bucket per
parameter (for comparison).
"""
from __future__ import annotations

from typing import Any

from collections.abc import Sequence
from math import prod

import numpy as np

from ..framework.variable import optimize_options


def plan_buckets(shapes: Sequence[Sequence[int]], dtypes: Sequence[str], bucket_bytes: float,
                 first_bucket_bytes: float | None = None) -> list[list[int]]:
    """Indices of the tensors in each bucket, in the order the buckets are reduced."""
    open_buckets: dict[str, list[int]] = {}
    sizes: dict[str, int] = {}
    buckets: list[list[int]] = []
    for i in reversed(range(len(shapes))):
        dtype = dtypes[i]
        bucket = open_buckets.setdefault(dtype, [])
        bucket.append(i)
        sizes[dtype] = sizes.get(dtype, 0) + prod(shapes[i]) * np.dtype(dtype).itemsize
        cap = first_bucket_bytes if (not buckets and first_bucket_bytes is not None) else bucket_bytes
        if sizes[dtype] >= cap:
            buckets.append(open_buckets.pop(dtype))
            sizes[dtype] = 0
    buckets.extend(b for b in open_buckets.values() if b)
    return buckets


def own_options(optimizer: Any, params: list[Any], decoupled_decay_ok: bool = False) -> str | None:
    """Why the bucket kernels, which update a whole bucket with one rate and one decay, and clip
    every gradient alike, cannot serve these parameters (one has a rate or decay of its own:
    ParamAttr(learning_rate=...), parameter groups, AdamW's group weight_decay or
    apply_decay_param_fun, unless `decoupled_decay_ok`: the caller applies each parameter's; or is
    left out of the optimizer's gradient clipping: ParamAttr(need_clip=False)), or None when they can."""
    clipping = getattr(optimizer, "_grad_clip", None) is not None
    decoupled = None if decoupled_decay_ok else getattr(optimizer, "_decay_of", None)  # AdamW's
    for param in params:
        factor, decay = optimizer._options(param)
        name = getattr(param, "name", None) or "a parameter"
        if (factor != 1.0 or decay is not optimizer.regularization
                or decoupled is not None and decoupled(param) != optimizer.weight_decay):
            return f"{name} has a learning rate or weight decay of its own"
        if optimizer._own_update(param):
            return f"{name}'s parameter group has options of its own"
        if clipping and not optimize_options(param)[2]:
            return f"{name} is left out of gradient clipping (need_clip=False)"
    return None
