"""torch's scatter_reduce and put: `x.scatter_reduce(dim, index, src, 'amax', include_self=False)`
(the segment max / mean / sum of graph networks) and `x.put_(index, source, accumulate=True)`
(writes into x read as a flat vector), with `torch.scatter_reduce` / `torch.put` and the in-place
forms. Both serve both modes and are differentiable (see ops/scatter_reduce.py)."""
from __future__ import annotations

import builtins
from typing import Any, Callable

from ..dispatch import apply_op
from ..functions import reshape
from . import inplace, search

__all__ = ["scatter_reduce", "put"]

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def _check_index(op: str, index: Any) -> None:
    if not hasattr(index, "shape") or "int" not in str(index.dtype):
        raise TypeError(f"{op}: index must be an integer tensor, got "
                        f"{_describe(index) if hasattr(index, 'shape') else repr(index)}")


def scatter_reduce(x: Any, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True) -> Any:
    """torch's x.scatter_reduce(dim, index, src, reduce, include_self=True): src's entries reduced
    ('sum', 'prod', 'mean', 'amax', 'amin') into x at `index` along dim, x's own entry taking part
    when include_self (entries no index reaches keep x). src is read where index is (it may be
    larger); a negative index is an error, as in torch; integer means floor, as torch's."""
    _check_index("scatter_reduce", index)
    if reduce not in _REDUCES:
        raise ValueError(f"scatter_reduce: reduce must be one of {list(_REDUCES)}, got {reduce!r}")
    if not hasattr(src, "shape"):
        raise TypeError(f"scatter_reduce: src must be a tensor, got {type(src).__name__}")
    if len(index.shape) != len(x.shape) or len(src.shape) != len(x.shape):
        raise ValueError(f"scatter_reduce: index {_describe(index)} and src {_describe(src)} must have the rank of "
                         f"x {_describe(x)}")
    if any(0 <= s < i for s, i in zip(src.shape, index.shape)):
        raise ValueError(f"scatter_reduce: index {_describe(index)} is larger than src {_describe(src)}")
    if tuple(src.shape) != tuple(index.shape):
        src = src[tuple(builtins.slice(0, int(n)) for n in index.shape)]   # torch reads src where index is
    return apply_op("scatter_reduce", {"X": x, "Index": index, "Src": src},
                    {"axis": int(dim), "reduce": reduce, "include_self": bool(include_self)})


def put(x: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """torch's x.put(index, source, accumulate=False): x read as a flat vector with source's
    entries written (or, with accumulate, added: repeated indices add up) at `index`; a negative
    index counts from the end, as in torch. source has as many entries as index and x's dtype."""
    _check_index("put", index)
    if not hasattr(source, "shape"):
        raise TypeError(f"put: source must be a tensor, got {type(source).__name__}")
    if source.dtype != x.dtype:
        raise TypeError(f"put: source {_describe(source)} must have the dtype of x {_describe(x)}")
    n_index, n_source = _numel(index), _numel(source)
    if n_index >= 0 and n_source >= 0 and n_index != n_source:
        raise ValueError(f"put: source {_describe(source)} must have as many entries as index {_describe(index)}")
    flat = search._put_along(reshape(x, [-1]), reshape(index, [-1]), reshape(source, [-1]), 0,
                             "add" if accumulate else "assign", wrap_negative=True)
    return apply_op("reshape_as", {"X": flat, "Target": x})


def _numel(x: Any) -> int:
    """The number of entries, -1 when a size is unknown (a static batch)."""
    n = 1
    for d in x.shape:
        if d < 0:
            return -1
        n *= int(d)
    return n


METHODS: dict[str, Callable[..., Any]] = {"scatter_reduce": scatter_reduce, "put": put}
IN_PLACE: dict[str, Callable[..., Any]] = {"scatter_reduce_": inplace._computed(scatter_reduce, "scatter_reduce_"),
                                           "put_": inplace._computed(put, "put_")}
