"""Each rank's share of the data: `shard` for arrays, `DistributedBatchSampler` for datasets."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..ops.comm import get_world


def shard(array: Any, rank: int | None = None, world: int | None = None) -> Any:
    """Rank `rank`'s contiguous part of `array` (split along axis 0 into `world` equal parts).

    The concatenation of the parts in rank order is `array` without its last
    `len(array) % world` rows (dropped so that every rank gets the same count: averaged
    gradients then equal the gradient of the whole batch)."""
    rank = get_world().rank if rank is None else int(rank)
    world = get_world().size if world is None else int(world)
    _check_rank("shard", rank, world)
    size = len(array) // world
    if size == 0:
        raise ValueError(f"shard: {len(array)} row(s) cannot give each of {world} ranks a row")
    return array[rank * size:(rank + 1) * size]


def _check_rank(what: str, rank: int, world: int) -> None:
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"{what}: rank {rank} is outside a world of {world} rank(s)")


class DistributedBatchSampler:
    """Batches of dataset indices for this rank (Paddle's sampler): every rank gets the same
    number of batches; the index list is padded by wrapping around to a multiple of the world
    size unless `drop_last`. With `shuffle`, call `set_epoch(e)` to reshuffle each epoch
    (the same permutation on every rank)."""

    def __init__(self, dataset: Any, batch_size: int, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = False, drop_last: bool = False, seed: int = 0) -> None:
        if batch_size < 1:
            raise ValueError(f"DistributedBatchSampler: batch_size must be positive, got {batch_size}")
        self.n = dataset if isinstance(dataset, int) else len(dataset)
        self.batch_size, self.shuffle, self.drop_last, self.seed = int(batch_size), shuffle, drop_last, seed
        self.nranks = get_world().size if num_replicas is None else int(num_replicas)
        self.local_rank = get_world().rank if rank is None else int(rank)
        _check_rank("DistributedBatchSampler", self.local_rank, self.nranks)
        self.epoch = 0
        per_rank = self.n // self.nranks if drop_last else -(-self.n // self.nranks)
        self.num_samples, self.total_size = per_rank, per_rank * self.nranks

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
