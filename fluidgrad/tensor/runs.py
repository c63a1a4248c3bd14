"""unique_consecutive (torch.unique_consecutive / paddle.unique_consecutive): each run of equal
values (or equal slices along an axis) kept once, with where each element went and how long
each run is. Composed of registered ops (not_equal against the rolled input, nonzero, gather,
cumsum), so it serves both modes, its sizes known at run time as nonzero's; the values it keeps
carry gradients (a gather)."""
from __future__ import annotations

from typing import Any

from ..dispatch import apply_op, axis_of_input
from ..framework.torch_forms import torch_keywords
from ..functions import cast, concat, full_like, logical_or, not_equal, reshape, subtract
from ..functions import sum as _sum
from .manipulation import roll
from .math import any as _any
from .math import cumsum
from .search import nonzero

__all__ = ["unique_consecutive"]


def _run_starts(data: Any, axis: int) -> Any:
    """A bool vector over data's axis: True where a run starts (the first slice, and every slice
    that differs from the one before it in any element)."""
    changed = not_equal(data, roll(data, 1, axis))
    others = [a for a in range(len(data.shape)) if a != axis]
    if others:
        changed = _any(changed, axis=others)
    position = cumsum(cast(full_like(changed, True), "int64"), axis=0)
    return logical_or(changed, apply_op("equal", {"X": position, "Y": full_like(position, 1)}))


@torch_keywords
def unique_consecutive(x: Any, return_inverse: bool = False, return_counts: bool = False, axis: int | None = None,
                       dtype: str = "int64", name: str | None = None) -> Any:
    """x with each run of consecutive equal values kept once (x flattened; with `axis`, runs of
    equal slices along it), as torch.unique_consecutive / paddle.unique_consecutive. With
    return_inverse, also each element's (slice's) run number, of x's shape (of [x.shape[axis]]);
    with return_counts, each run's length; a tuple then, in that order. `dtype` (int64 or int32)
    is theirs."""
    if str(dtype) not in ("int64", "int32"):
        raise TypeError(f"unique_consecutive: dtype must be 'int64' or 'int32', got {dtype!r}")
    data, along = (reshape(x, [-1]), 0) if axis is None else (x, axis_of_input("unique_consecutive", x, axis))
    starts = _run_starts(data, along)
    first = reshape(nonzero(starts), [-1])
    results = [apply_op("gather", {"X": data, "Index": first}, {"axis": along})]
    if return_inverse:
        inverse = cumsum(cast(starts, "int64"), axis=0) - 1
        results.append(cast(reshape(inverse, list(x.shape)) if axis is None else inverse, dtype))
    if return_counts:
        total = _sum(cast(full_like(starts, True), "int64"), axis=0, keepdim=True)
        results.append(cast(subtract(concat([first[1:], total], 0), first), dtype))
    return results[0] if len(results) == 1 else tuple(results)
