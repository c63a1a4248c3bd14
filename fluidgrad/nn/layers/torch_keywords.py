"""PyTorch's keyword names on the layers beside Paddle's (eps= for epsilon=, dim= for axis=,
affine=False for weight_attr=bias_attr=False, ...), so a torch model's constructor runs unchanged
while a Paddle one means what it did. One argument is given under one name: both is a TypeError,
never a silent pick (a Paddle argument left at its default counts as not given)."""
from __future__ import annotations

from typing import Any

from ..functional.spellings import either

__all__ = ['either', 'affine_attrs']


def affine_attrs(layer: str, weight_attr: Any, bias_attr: Any, affine: bool | None,
                 torch_name: str = "affine") -> tuple[Any, Any]:
    """(weight_attr, bias_attr) with torch's affine=False (no scale and no shift) folded in."""
    if affine is None:
        return weight_attr, bias_attr
    if weight_attr is not None or bias_attr is not None:
        raise TypeError(f"{layer}: give weight_attr= / bias_attr= or {torch_name}= (PyTorch's name), not both")
    return (None, None) if affine else (False, False)
