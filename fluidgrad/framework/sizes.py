"""The one reading of a size list (`zeros([2, 3])`, `x.reshape(-1, 4)`, `expand`, `tile`, ...).

A size must be an integer: a Python or NumPy int, or a one-element integer tensor (`x.shape[0]`
of an eager tensor, `n` computed by tensor ops), as PyTorch takes them. A float is refused, not
truncated: `zeros([n / 2])` is the usual slip for `n // 2`, and int() would silently give a
tensor of another size. A bool is refused too (PyTorch refuses `zeros([True])`). Negative sizes
mean something only where the function says so (`-1`: inferred by reshape, kept by expand);
anything else below 0 is refused naming the function and the shape.

Sizes known only when a traced program runs (`RuntimeDim`, an int; a `TracedSize` becomes one) pass
through as they are.
"""
from __future__ import annotations

import operator
from typing import Any

from .runtime_dims import RuntimeDim, RuntimeFloat, library_form


def _one_size(caller: str, value: Any, shape: Any) -> int:
    value = library_form(value)   # x.shape[0] as the traced function read it
    if isinstance(value, RuntimeDim):
        return value
    if isinstance(value, RuntimeFloat):
        raise TypeError(f"{caller}: sizes must be integers, got {value.describe()} in {_show(shape)}: a number "
                        f"known only when the program runs, and not an integer; a size computed by division "
                        f"needs // ({value.describe()} with // instead of /)")
    dtype = getattr(value, "dtype", None)
    if isinstance(value, bool) or type(value).__name__ == "bool_" or str(dtype) == "bool":
        raise TypeError(f"{caller}: sizes must be integers, got the bool {value!r} in {_show(shape)}")
    if hasattr(value, "block") and not hasattr(value, "numpy"):   # a static Variable: no value yet
        return int(value)    # (its own TypeError says so)
    try:
        return operator.index(value)
    except TypeError:
        kind = type(value).__name__ if dtype is None else f"{dtype} tensor"
        raise TypeError(f"{caller}: sizes must be integers, got {_plain(value)!r} (a {kind}) in {_show(shape)}; a size "
                        f"computed by division needs // (n // 2), or int() if truncation is meant") from None


def _plain(value: Any) -> Any:
    """A tensor as its values (a size list's repr stays short)."""
    return value.tolist() if hasattr(value, "tolist") and hasattr(value, "numpy") else value


def _show(shape: Any) -> str:
    try:
        return f"the shape {[_plain(v) for v in shape]!r}"
    except TypeError:
        return f"the shape {_plain(shape)!r}"


def checked_sizes(caller: str, shape: Any, negative: str = "") -> list[int]:
    """`shape` (one int, or a list / tuple / 1-D tensor of them) as a list of ints, refusing what
    is not a size. `negative` is what -1 may mean here: "" (nothing: every size >= 0), "infer"
    (reshape: inferred), "keep" (expand: -1 keeps that axis), "any" (the caller
    checks the range itself)."""
    if hasattr(shape, "tolist") and hasattr(shape, "numpy"):   # a tensor of sizes (never a static Variable)
        items = shape.tolist()
        items = items if isinstance(items, list) else [items]
    else:
        try:
            items = list(shape) if getattr(shape, "ndim", 1) != 0 else [shape]
        except TypeError:   # one number
            items = [shape]
    sizes = [_one_size(caller, value, shape) for value in items]
    if negative == "any":
        return sizes
    allowed = -1 if negative else 0
    bad = [d for d in sizes if d < allowed and not isinstance(d, RuntimeDim)]
    if bad:
        meaning = {"infer": ", or -1 (inferred)", "keep": ", or -1 (that axis kept)"}.get(negative, "")
        raise ValueError(f"{caller}: shape {sizes} has an invalid size ({bad[0]}); sizes must be >= 0{meaning}")
    return sizes   # (two -1 in a reshape: the op's shape rule refuses them, naming x and its shape)
