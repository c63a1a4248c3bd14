"""Each rank's share of the data: `shard` for arrays, `DistributedBatchSampler` (a BatchSampler of
`fluidgrad.io`, where it lives) for datasets."""
from __future__ import annotations

from typing import Any

from ..io.sampler import DistributedBatchSampler, check_rank
from ..ops.comm import get_world

__all__ = ["DistributedBatchSampler", "shard"]


def shard(array: Any, rank: int | None = None, world: int | None = None) -> Any:
    """Rank `rank`'s contiguous part of `array` (split along axis 0 into `world` equal parts).

    The concatenation of the parts in rank order is `array` without its last
    `len(array) % world` rows (dropped so that every rank gets the same count: averaged
    gradients then equal the gradient of the whole batch)."""
    rank = get_world().rank if rank is None else int(rank)
    world = get_world().size if world is None else int(world)
    check_rank("shard", rank, world)
    size = len(array) // world
    if size == 0:
        raise ValueError(f"shard: {len(array)} row(s) cannot give each of {world} ranks a row")
    return array[rank * size:(rank + 1) * size]

