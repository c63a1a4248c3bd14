"""torch.return_types: the named tuples of the functions that give a value and where it came from.

`values, indices = x.topk(2)` and `x.topk(2).indices` (PyTorch) and `x.topk(2)[1]` (Paddle 2,
whose functions return plain tuples) all work on one object: a namedtuple named as torch's class
(`topk(values=..., indices=...)`), which is a tuple in every other respect, in both modes (the
items are Tensors or Variables). One class per function, as torch has, so code that tells the
results apart by type (or by their repr) can."""
from __future__ import annotations

from collections import namedtuple

_VALUES_INDICES = ["values", "indices"]

topk = namedtuple("topk", _VALUES_INDICES)
kthvalue = namedtuple("kthvalue", _VALUES_INDICES)
sort = namedtuple("sort", _VALUES_INDICES)
max = namedtuple("max", _VALUES_INDICES)
min = namedtuple("min", _VALUES_INDICES)
cummax = namedtuple("cummax", _VALUES_INDICES)
cummin = namedtuple("cummin", _VALUES_INDICES)
median = namedtuple("median", _VALUES_INDICES)
nanmedian = namedtuple("nanmedian", _VALUES_INDICES)
aminmax = namedtuple("aminmax", ["min", "max"])
