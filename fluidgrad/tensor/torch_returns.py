"""The functions whose PyTorch form (dim=) gives back something else than their Paddle form:
`max(x, dim=1)` / `min(x, dim=1)` / `sort(x, dim=1)` are torch's named pair (values, indices)
where Paddle's `max(x, axis=1)` / `sort(x, axis=1)` are the values alone, and `split(x, 2, dim=1)`
cuts parts of 2 entries (torch's split size) where Paddle's `split(x, 2, axis=1)` cuts 2 parts.
Paddle's spellings (axis=, or the axis as an argument) keep Paddle's meaning, so neither kind of
code gets other shapes than it wrote.

`fg.max` and the method `x.max` are these same functions (tensor/methods.py takes them from here)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import functions
from . import return_types, search
from .keywords import paddle_or_torch

__all__ = ["max", "min", "sort", "split"]

# torch.return_types.max / min / sort: what torch's max(x, dim=1) returns
VALUES_AND_INDICES = {"max": return_types.max, "min": return_types.min, "sort": return_types.sort}


def _one_axis(caller: str, axis: Any, dim: Any) -> int:
    if axis is not None:
        raise TypeError(f"{caller}: give axis= (Paddle) or dim= (PyTorch), not both")
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{caller}(dim=...): PyTorch's dim here is one axis (an int), got {dim!r}")
    return int(dim)


def _extreme(name: str, x: Any, dim: int, keepdim: bool) -> Any:
    """torch's max / min over dim: the values gathered at the arg-extreme indices, so the
    gradient goes to the chosen entry (the first on ties), as torch's."""
    indices = (search.argmax if name == "max" else search.argmin)(x, axis=dim, keepdim=True)
    values = search.take_along_axis(x, indices, dim)
    if not keepdim:
        values, indices = functions.squeeze(values, axis=[dim]), functions.squeeze(indices, axis=[dim])
    return VALUES_AND_INDICES[name](values, indices)


def max(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None, *, dim: Any = None) -> Any:
    """Paddle's max(x, axis=None, keepdim=False): the largest values (ties share the gradient);
    torch's max(x, dim=d, keepdim=False): the named pair (values, indices); max(x, y) is
    maximum(x, y), as torch's."""
    if dim is None:
        return functions.max(x, axis, keepdim)
    return _extreme("max", x, _one_axis("max", axis, dim), keepdim)


def min(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None, *, dim: Any = None) -> Any:
    """Paddle's min(x, axis=None, keepdim=False): the smallest values; torch's min(x, dim=d):
    the named pair (values, indices); min(x, y) is minimum(x, y)."""
    if dim is None:
        return functions.min(x, axis, keepdim)
    return _extreme("min", x, _one_axis("min", axis, dim), keepdim)


def sort(x: Any, axis: Any = None, descending: bool = False, stable: bool = False, name: str | None = None, *,
         dim: Any = None) -> Any:
    """Paddle's sort(x, axis=-1, descending=False): the sorted values; torch's sort(x, dim=d,
    descending=False, stable=False): the named pair (values, indices)."""
    if dim is None:
        return search.sort(x, -1 if axis is None else axis, descending, stable)
    dim = _one_axis("sort", axis, dim)
    indices = search.argsort(x, axis=dim, descending=descending, stable=stable)
    return VALUES_AND_INDICES["sort"](search.take_along_axis(x, indices, dim), indices)


def split(x: Any, num_or_sections: int | Sequence[int] | None = None, axis: Any = None, name: str | None = None, *,
          dim: Any = None, split_size_or_sections: int | Sequence[int] | None = None) -> list[Any]:
    """Paddle's split(x, n, axis=0): n equal parts (or parts of the listed sizes); torch's
    split(x, size, dim=d): parts of `size` entries, the last smaller (or of the listed sizes)."""
    sections = paddle_or_torch("split", "num_or_sections", num_or_sections, "split_size_or_sections",
                               split_size_or_sections)
    if sections is None:
        raise TypeError("split: give the number of parts or their sizes (num_or_sections / split_size_or_sections)")
    if dim is None:
        return functions.split(x, sections, 0 if axis is None else axis)
    dim = _one_axis("split", axis, dim)
    if isinstance(sections, (int, np.integer)):
        size, step = x.shape[dim], int(sections)
        if size < 0 or step <= 0:
            raise ValueError(f"split(dim={dim}): torch's split size {step} needs a positive size and a known "
                             f"axis; x has shape {list(x.shape)}")
        sections = [step] * (size // step) + ([size % step] if size % step else [])
    return functions.split(x, sections, dim)
