"""DataLoader (paddle.io.DataLoader, torch.utils.data.DataLoader): batches of Tensors from a dataset.

    loader = DataLoader(TensorDataset([features, labels]), batch_size=32, shuffle=True)
    for epoch in range(3):
        for x, y in loader:          # a list [x_batch, y_batch] of Tensors
            ...

A map-style dataset is read through a `BatchSampler` (made from batch_size / shuffle /
drop_last, or given as `batch_sampler`, e.g. a DistributedBatchSampler); an IterableDataset is
batched in the order it yields. `collate_fn` (default: `default_collate_fn`) turns a list of
samples into one batch: Tensors and arrays are stacked along a new first axis, numbers become a
1-D Tensor, and tuples, lists and dicts are collated field by field. (A TensorDataset with the
default collate_fn is read one fancy index per tensor and batch: the same values, faster.)

Loading runs in the calling process: `num_workers` is accepted (scripts written for Paddle or
PyTorch set it) and means the same batches, read in order by this process; fluidgrad has no
worker processes, so `worker_init_fn` is never called.
"""
from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Callable

import numpy as np

from ..eager import Tensor
from .dataset import Dataset, IterableDataset, TensorDataset
from .sampler import BatchSampler, _positive_batch_size

__all__ = ["DataLoader", "default_collate_fn"]


def default_collate_fn(batch: Sequence[Any]) -> Any:
    """One batch from a list of samples: Tensors and arrays stacked on a new axis 0, numbers as a
    1-D Tensor, strings kept as a list, sequences and mappings collated field by field."""
    if not len(batch):
        raise ValueError("default_collate_fn: an empty batch")
    first = batch[0]
    if isinstance(first, Tensor):
        return Tensor(_stack([t.data for t in batch], "Tensors"))
    if isinstance(first, (np.ndarray, np.generic)) and not isinstance(first, (np.str_, np.bytes_)):
        return Tensor(_stack([np.asarray(a) for a in batch], "arrays"))
    if isinstance(first, numbers.Number):
        return Tensor(np.asarray(batch))
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, Mapping):
        return {key: default_collate_fn([sample[key] for sample in batch]) for key in first}
    if isinstance(first, Sequence):
        if any(len(sample) != len(first) for sample in batch):
            raise ValueError(f"default_collate_fn: samples of different lengths "
                             f"{sorted({len(sample) for sample in batch})} cannot be batched field by field")
        return [default_collate_fn(list(field)) for field in zip(*batch)]
    raise TypeError(f"default_collate_fn: cannot batch samples of type {type(first).__name__}; give collate_fn")


def _stack(arrays: list[np.ndarray], what: str) -> np.ndarray:
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"default_collate_fn: {what} of different shapes {sorted(map(list, shapes))} cannot be "
                         f"stacked into a batch; pad them or give collate_fn")
    return np.stack(arrays)


class DataLoader:
    """Iterate over batches of `dataset` (see the module docstring). Paddle's signature; the
    arguments without a meaning here (feed_list, places, return_list, use_buffer_reader,
    prefetch_factor, use_shared_memory, timeout, persistent_workers) are accepted and ignored."""

    def __init__(self, dataset: Any, feed_list: Any = None, places: Any = None, return_list: bool = True,
                 batch_sampler: Any = None, batch_size: int | None = 1, shuffle: bool = False,
                 drop_last: bool = False, collate_fn: Callable[[list], Any] | None = None, num_workers: int = 0,
                 use_buffer_reader: bool = True, prefetch_factor: int = 2, use_shared_memory: bool = True,
                 timeout: int = 0, worker_init_fn: Callable[[int], None] | None = None,
                 persistent_workers: bool = False, sampler: Any = None) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative integer, got {num_workers!r}")
        self.dataset, self.num_workers = dataset, num_workers
        self.collate_fn = collate_fn if collate_fn is not None else default_collate_fn
        self.iterable = isinstance(dataset, IterableDataset) or \
            (not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__"))
        if self.iterable:
            if batch_sampler is not None or sampler is not None or shuffle:
                raise ValueError("DataLoader: an IterableDataset has no indices, so batch_sampler, sampler and "
                                 "shuffle do not apply (shuffle inside the dataset's __iter__)")
            self.batch_sampler = None
            self.batch_size = None if batch_size is None else _positive_batch_size("DataLoader", batch_size)
            self.drop_last = bool(drop_last)
            return
        if not isinstance(dataset, Dataset) and not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
            raise TypeError(f"DataLoader: dataset must be a Dataset (or define __getitem__ and __len__), or an "
                            f"IterableDataset, got {type(dataset).__name__}")
        if batch_sampler is not None:
            if batch_size not in (1, None) or shuffle or drop_last or sampler is not None:
                raise ValueError("DataLoader: batch_sampler sets the batches; do not also give batch_size, "
                                 "shuffle, drop_last or sampler")
            self.batch_sampler = batch_sampler
        elif batch_size is None:
            self.batch_sampler = None  # samples one by one, not batched (PyTorch's batch_size=None)
        else:
            self.batch_sampler = BatchSampler(dataset if sampler is None else None, sampler, shuffle, batch_size,
                                              drop_last)
        self.batch_size = getattr(self.batch_sampler, "batch_size", None)
        self.drop_last = getattr(self.batch_sampler, "drop_last", False)

    def __iter__(self) -> Iterator[Any]:
        if self.iterable:
            return self._iterable_batches()
        if self.batch_sampler is None:
            return (self.dataset[i] for i in range(len(self.dataset)))
        if type(self.dataset) is TensorDataset and self.collate_fn is default_collate_fn:
            return self._tensor_batches()
        return (self.collate_fn([self.dataset[i] for i in indices]) for indices in self.batch_sampler)

    def _tensor_batches(self) -> Iterator[list[Tensor]]:
        """A TensorDataset's batches read by one fancy index per tensor: the values default_collate_fn
        would stack from the samples, without making a Tensor per sample."""
        tensors = self.dataset.tensors
        for indices in self.batch_sampler:
            rows = np.asarray(indices, dtype=np.int64)
            yield [Tensor(t.data[rows]) for t in tensors]

    def _iterable_batches(self) -> Iterator[Any]:
        if self.batch_size is None:
            yield from iter(self.dataset)
            return
        batch: list[Any] = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self.iterable:
            raise TypeError("DataLoader: an IterableDataset has no length")
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.dataset)
