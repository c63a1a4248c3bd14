"""embedding_bag: the sum, mean or maximum of the embedding rows of each bag of ids (torch's
F.embedding_bag), without materialising the [bags, bag length, dim] lookups of a padded batch.

Composed of registered ops, so it serves both modes and differentiates: the lookup
(`lookup_table_v2`), bag ids from the offsets (a scatter-add of the bag starts and a running
sum), and `segment_pool` over them (ops/segment.py). As torch: a 2-D input is a batch of
equal-length bags; a 1-D input is cut into bags at `offsets` (with include_last_offset, the last
bag runs to the end of the input); an empty bag reads zeros; ids equal to padding_idx are left
out of their bag (not counted in its mean); per_sample_weights scale the rows, mode='sum' only.
The maximum's gradient is shared by tied entries, so a row repeated in a bag gets torch's
gradient once.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import functions as F
from ...dispatch import apply_op, is_tensor
from ...eager import no_grad
from ...tensor.everyday import bincount
from ...tensor.math import cumsum
from ...tensor.search import where

__all__ = ["embedding_bag"]

_MODES = ("sum", "mean", "max")


def embedding_bag(input: Any, weight: Any, offsets: Any = None, max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Any = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Any:
    """[bags, dim]: each bag's rows of `weight` reduced by `mode` ('sum', 'mean', 'max').

    max_norm renormalises the looked-up rows of an eager weight in place first, as torch does;
    scale_grad_by_freq divides each row's gradient by its count in the batch (sum and mean);
    `sparse` is accepted, the gradient is dense."""
    _check_arguments(input, weight, offsets, mode, per_sample_weights, scale_grad_by_freq)
    rows = int(weight.shape[0])
    padding_idx = _padding_row(padding_idx, rows)
    if max_norm is not None:
        _renorm_rows(input, weight, float(max_norm), float(norm_type))
    flat, ids, bags = _bags(input, offsets, include_last_offset)
    values = apply_op("lookup_table_v2", {"W": weight, "Ids": flat})
    if scale_grad_by_freq:
        freq = F.cast(F.gather(bincount(flat, minlength=rows), flat), values.dtype)
        scaled = F.divide(values, F.unsqueeze(freq, [1]))
        values = F.add(scaled, F.subtract(values, scaled).detach())     # the value kept, the gradient / freq
    if per_sample_weights is not None:
        values = F.multiply(values, F.unsqueeze(F.reshape(per_sample_weights, [-1]), [1]))
    if padding_idx is None:
        return _pool(values, ids, bags, mode.upper())
    keep = F.not_equal(flat, F.full([1], padding_idx, flat.dtype))
    counted = _pool(F.unsqueeze(F.cast(keep, values.dtype), [1]), ids, bags, "SUM")    # [bags, 1]
    if mode == "max":
        lowest = F.full_like(values, -np.inf)
        out = _pool(where(F.unsqueeze(keep, [1]), values, lowest), ids, bags, "MAX")
        return where(F.greater_than(counted, F.zeros_like(counted)), out, F.zeros_like(out))  # padding only: 0
    total = _pool(where(F.unsqueeze(keep, [1]), values, F.zeros_like(values)), ids, bags, "SUM")
    if mode == "sum":
        return total
    return F.divide(total, F.maximum(counted, F.ones_like(counted)))


def _check_arguments(input: Any, weight: Any, offsets: Any, mode: str, per_sample_weights: Any,
                     scale_grad_by_freq: bool) -> None:
    if mode not in _MODES:
        raise ValueError(f"embedding_bag: mode must be one of {list(_MODES)}, got {mode!r}")
    if len(weight.shape) != 2:
        raise ValueError(f"embedding_bag: weight must be 2-D [num_embeddings, embedding_dim], got shape "
                         f"{list(weight.shape)}")
    if not str(input.dtype).startswith("int"):
        raise TypeError(f"embedding_bag: input must hold int32 or int64 ids, got {input.dtype} "
                        f"(shape {list(input.shape)})")
    if len(input.shape) == 2 and offsets is not None:
        raise ValueError(f"embedding_bag: a 2-D input (shape {list(input.shape)}) is a batch of equal-length bags; "
                         f"offsets must be None")
    if len(input.shape) == 1 and offsets is None:
        raise ValueError(f"embedding_bag: a 1-D input (shape {list(input.shape)}) needs offsets, the start of each bag")
    if len(input.shape) not in (1, 2):
        raise ValueError(f"embedding_bag: input must be 1-D (with offsets) or 2-D, got shape {list(input.shape)}")
    if offsets is not None and (len(offsets.shape) != 1 or not str(offsets.dtype).startswith("int")):
        raise ValueError(f"embedding_bag: offsets must be a 1-D integer tensor, got shape {list(offsets.shape)}, "
                         f"{offsets.dtype}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights is only supported for mode='sum' "
                                      f"(got mode={mode!r}), as in torch")
        if list(per_sample_weights.shape) != list(input.shape):
            raise ValueError(f"embedding_bag: per_sample_weights (shape {list(per_sample_weights.shape)}) must have "
                             f"input's shape {list(input.shape)}")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("embedding_bag: max mode does not support scaling the gradient by the frequency")


def _padding_row(padding_idx: int | None, rows: int) -> int | None:
    if padding_idx is None:
        return None
    if not -rows <= int(padding_idx) < rows:
        raise ValueError(f"embedding_bag: padding_idx {padding_idx} is out of range for {rows} rows")
    return int(padding_idx) % rows


def _bags(input: Any, offsets: Any, include_last_offset: bool) -> tuple[Any, Any, int]:
    """(the ids as 1-D, each id's bag number, the number of bags or -1 when unknown until run time)."""
    if offsets is None:   # 2-D: bag i is row i; the row numbers by a running count down the rows
        ids = F.subtract(cumsum(F.ones_like(input), axis=0), F.ones_like(input))
        return F.reshape(input, [-1]), F.reshape(ids, [-1]), int(input.shape[0])
    if is_tensor(offsets) and is_tensor(input):
        _check_offsets(offsets.numpy(), int(input.shape[0]), include_last_offset)
    starts = F.slice(offsets, [0], [0], [-1]) if include_last_offset else offsets
    starts = F.cast(starts, "int64") if starts.dtype != "int64" else starts
    flat = input
    # bag number of position j = (the number of bag starts <= j) - 1: starts scattered into
    # counts over positions 0..n (a start may equal n: an empty last bag), then summed along
    target = F.concat([F.cast(flat, "int64"), F.full([1], 0, "int64")])
    marks = apply_op("gather_grad", {"X": F.ones_like(starts), "Index": starts, "Target": target}, {"axis": 0})
    ids = F.subtract(cumsum(F.slice(marks, [0], [0], [-1]), axis=0), F.ones_like(flat, "int64"))
    bags = int(offsets.shape[0]) - int(bool(include_last_offset)) if offsets.shape[0] >= 0 else -1
    if bags < 0:   # the bag count rides along with the ids (see _pool)
        return flat, (ids, F.reshape(F.sum(F.ones_like(starts)), [1])), -1
    return flat, ids, bags


def _check_offsets(offsets: np.ndarray, length: int, include_last_offset: bool) -> None:
    """torch's checks of eager offsets, and sortedness (torch reads unsorted offsets wrongly)."""
    if offsets.size == 0 or (include_last_offset and offsets.size < 1):
        return
    if offsets[0] != 0:
        raise ValueError(f"embedding_bag: offsets[0] has to be 0 (the first bag starts at position 0), got "
                         f"{int(offsets[0])}")
    if offsets[-1] > length:
        raise ValueError(f"embedding_bag: offsets[-1] can not be greater than input's length {length}, got "
                         f"{int(offsets[-1])}")
    drops = np.flatnonzero(offsets[1:] < offsets[:-1])
    if drops.size:
        i = int(drops[0])
        raise ValueError(f"embedding_bag: offsets must be non-decreasing, but offsets[{i}] = {int(offsets[i])} > "
                         f"offsets[{i + 1}] = {int(offsets[i + 1])}")


def _pool(values: Any, ids: Any, bags: int, pooltype: str) -> Any:
    """segment_pool into `bags` rows. Unknown until run time (a Program's offsets of length -1),
    ids comes with the bag count: one zero row with that id is appended, so trailing empty bags
    exist, and cut off again."""
    attrs = {"pooltype": pooltype, "split_ties": True}
    if not isinstance(ids, tuple):   # known, or a 2-D input's unknown rows (never an empty bag)
        return apply_op("segment_pool", {"X": values, "SegmentIds": ids}, {**attrs, "num_segments": bags})[0]
    ids, count = ids
    extra = F.full([1, int(values.shape[1])], 0.0, values.dtype)
    out = apply_op("segment_pool", {"X": F.concat([values, extra]), "SegmentIds": F.concat([ids, count])}, attrs)[0]
    return F.slice(out, [0], [0], [-1])


def _renorm_rows(input: Any, weight: Any, max_norm: float, norm_type: float) -> None:
    """torch's embedding_renorm_: the rows `input` names whose norm exceeds max_norm are scaled
    down to it, in the weight itself (eager only: a Program's weight has no value yet)."""
    if not (is_tensor(input) and is_tensor(weight)):
        raise ValueError("embedding_bag: max_norm renormalises the weight in place, which needs eager Tensors; "
                         "in a Program, renormalise the weight yourself")
    with no_grad():
        table = weight._array
        rows = np.unique(input.numpy())
        norms = np.linalg.norm(table[rows], ord=norm_type, axis=1)
        scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        table[rows] = table[rows] * scale[:, None].astype(table.dtype)
