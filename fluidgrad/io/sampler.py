"""Samplers (paddle.io): the order of a map-style dataset's indices, and their grouping into batches.

`SequenceSampler` gives 0..n-1, `RandomSampler` a permutation drawn from fluidgrad's global
generator (`fluidgrad.seed` makes it repeatable), `SubsetRandomSampler` a permutation of given
indices, `WeightedRandomSampler` indices drawn by weight (rebalancing classes); `BatchSampler` groups a sampler's indices into
lists of `batch_size`. `DistributedBatchSampler` is a BatchSampler over this rank's share of the
indices (every rank the same number of batches), which a DataLoader takes as `batch_sampler`.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence, Sized
from typing import Any

import numpy as np

from ..ops.comm import get_world
from ..ops.random import generator

__all__ = ["Sampler", "SequenceSampler", "RandomSampler", "BatchSampler", "DistributedBatchSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]


class Sampler:
    """Yields dataset indices; subclass and define `__iter__` (and `__len__`)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__()")

    def __len__(self) -> int:
        return len(self.data_source)


class SequenceSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))


class RandomSampler(Sampler):
    """A fresh random order each pass (without replacement), or `num_samples` indices drawn with
    replacement; drawn from fluidgrad's global generator, or from `generator`, a NumPy Generator."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Any = None) -> None:
        super().__init__(data_source)
        if num_samples is not None and not replacement:
            raise ValueError("RandomSampler: num_samples is only for replacement=True")
        self.replacement, self.generator = replacement, generator
        self._num_samples = num_samples

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def __iter__(self) -> Iterator[int]:
        rng = self.generator if self.generator is not None else generator()
        n = len(self.data_source)
        if self.replacement:
            return iter(rng.integers(0, n, self.num_samples).tolist())
        return iter(rng.permutation(n).tolist())

    def __len__(self) -> int:
        return self.num_samples


def _positive_batch_size(what: str, batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"{what}: batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


class BatchSampler:
    """Lists of `batch_size` indices, from `sampler` or, given a `dataset`, from a sequence (or,
    with `shuffle`, a random) sampler over it; the last, shorter list is dropped with `drop_last`."""

    def __init__(self, dataset: Sized | None = None, sampler: Any = None, shuffle: bool = False,
                 batch_size: int = 1, drop_last: bool = False) -> None:
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler: give exactly one of dataset and sampler")
        if sampler is not None and shuffle:
            raise ValueError("BatchSampler: shuffle is for a dataset; a sampler already sets the order")
        self.batch_size = _positive_batch_size("BatchSampler", batch_size)
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.sampler = sampler if sampler is not None else \
            (RandomSampler(dataset) if shuffle else SequenceSampler(dataset))

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(int(index))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        full, rest = divmod(len(self.sampler), self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)


def check_rank(what: str, rank: int, world: int) -> None:
    """A rank must lie in a world of at least one rank."""
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"{what}: rank {rank} is outside a world of {world} rank(s)")


class DistributedBatchSampler(BatchSampler):
    """Batches of dataset indices for this rank (Paddle's sampler): every rank gets the same
    number of batches; the index list is padded by wrapping around to a multiple of the world
    size unless `drop_last`. With `shuffle`, call `set_epoch(e)` to reshuffle each epoch
    (the same permutation on every rank: seeded by `seed + epoch`, not the global generator)."""

    def __init__(self, dataset: Any, batch_size: int, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = False, drop_last: bool = False, seed: int = 0) -> None:
        self.batch_size = _positive_batch_size("DistributedBatchSampler", batch_size)
        self.n = dataset if isinstance(dataset, int) else len(dataset)
        self.shuffle, self.drop_last, self.seed = bool(shuffle), bool(drop_last), seed
        self.nranks = get_world().size if num_replicas is None else int(num_replicas)
        self.local_rank = get_world().rank if rank is None else int(rank)
        check_rank("DistributedBatchSampler", self.local_rank, self.nranks)
        self.epoch = 0
        per_rank = self.n // self.nranks if drop_last else -(-self.n // self.nranks)
        self.num_samples, self.total_size = per_rank, per_rank * self.nranks
        self.sampler = None  # the order is local_indices(), drawn per epoch

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def local_indices(self) -> np.ndarray:
        indices = np.arange(self.n)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(self.n)
        indices = np.resize(indices, self.total_size) if self.total_size > self.n else indices[:self.total_size]
        return indices[self.local_rank:self.total_size:self.nranks]

    def __iter__(self) -> Iterator[list[int]]:
        local = self.local_indices()
        for start in range(0, len(local), self.batch_size):
            batch = local[start:start + self.batch_size]
            if len(batch) == self.batch_size or not self.drop_last:
                yield batch.tolist()

    def __len__(self) -> int:
        full, rest = divmod(self.num_samples, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)


class SubsetRandomSampler(Sampler):
    """The given indices in a fresh random order each pass (a train / validation split of one
    dataset), drawn from fluidgrad's global generator, or from `generator`, a NumPy Generator."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        super().__init__(None)
        if len(indices) == 0:
            raise ValueError("SubsetRandomSampler: indices must not be empty")
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        rng = self.generator if self.generator is not None else generator()
        return iter([self.indices[i] for i in rng.permutation(len(self.indices))])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights` (rebalancing
    classes), with or without replacement; from fluidgrad's global generator or `generator`."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        super().__init__(None)
        weights = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if weights.ndim != 1 or not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"WeightedRandomSampler: weights must be a 1-D sequence of finite, non-negative "
                             f"numbers with a positive sum, got {weights.tolist()[:8]}")
        if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
            raise ValueError(f"WeightedRandomSampler: num_samples must be a positive integer, got {num_samples!r}")
        if not replacement and num_samples > int((weights > 0).sum()):
            raise ValueError(f"WeightedRandomSampler: {num_samples} samples without replacement, but only "
                             f"{int((weights > 0).sum())} weights are positive")
        self.weights, self.num_samples = weights, int(num_samples)
        self.replacement, self.generator = bool(replacement), generator

    def __iter__(self) -> Iterator[int]:
        rng = self.generator if self.generator is not None else generator()
        drawn = rng.choice(len(self.weights), self.num_samples, replace=self.replacement,
                           p=self.weights / self.weights.sum())
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples
