"""torch.utils.data: fluidgrad.io's datasets, samplers and DataLoader under torch's names
(`from torch.utils.data import DataLoader, TensorDataset` reads the same here).

The classes are fluidgrad.io's own (paddle.io's names with torch's meaning; DataLoader takes
torch's keywords: batch_size=, shuffle=, sampler=, collate_fn=, num_workers=, ...). Where torch
spells a name otherwise it is named here: SequentialSampler is io.SequenceSampler, default_collate
io.default_collate_fn. BatchSampler is the one class with another signature (torch's
`BatchSampler(sampler, batch_size, drop_last)`, Paddle's `BatchSampler(dataset=None, sampler=None,
shuffle=False, batch_size=1, drop_last=False)`), so here it takes torch's."""
from __future__ import annotations

from typing import Iterable

from .. import io
from ..io import (ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler, Sampler,
                  Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler, get_worker_info, random_split)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "default_collate", "get_worker_info", "random_split"]

SequentialSampler = io.SequenceSampler
default_collate = io.default_collate_fn


class BatchSampler(io.BatchSampler):
    """torch's BatchSampler(sampler, batch_size, drop_last): lists of `batch_size` indices drawn
    from `sampler` (any iterable of indices), the last shorter one dropped with `drop_last`."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        super().__init__(sampler=sampler, batch_size=batch_size, drop_last=drop_last)
