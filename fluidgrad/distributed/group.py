"""The process group and environment objects of Paddle 2 and PyTorch, for the one group fluidgrad has.

fluidgrad's collectives run over every rank of the job (MPI's world): `new_group()` over every
rank and `get_group()` return that group, and the collectives take it as `group=` (or None).
A group of some ranks only would need a communicator of its own for each collective; it is
refused with an error rather than silently reducing over every rank.
`ParallelEnv()` says where this process stands (Paddle's `paddle.distributed.ParallelEnv`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..ops.comm import get_world

_LOCAL_RANK_VARS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "SLURM_LOCALID")


class Group:
    """Every rank of the job (Paddle's `Group`: `rank`, `ranks`, `nranks`, `world_size`, `id`)."""

    id = 0
    name = "_default_pg"

    @property
    def rank(self) -> int:
        return get_world().rank

    @property
    def nranks(self) -> int:
        return get_world().size

    world_size = nranks

    @property
    def ranks(self) -> list[int]:
        return list(range(get_world().size))

    def is_member(self) -> bool:
        return True

    def get_group_rank(self, rank: int) -> int:
        """A global rank's rank in this group (the same: the group is every rank), -1 outside."""
        return rank if 0 <= rank < get_world().size else -1

    def __repr__(self) -> str:
        return f"Group(id=0, ranks={self.ranks})"


_WORLD_GROUP = Group()


def new_group(ranks: Sequence[int] | None = None, backend: str | None = None, timeout: Any = None) -> Group:
    """The group of every rank (`ranks` None or all of them); a group of some ranks is refused."""
    world = get_world()
    if ranks is not None and sorted(int(r) for r in ranks) != list(range(world.size)):
        raise NotImplementedError(f"new_group(ranks={list(ranks)}): fluidgrad has one process group, every rank "
                                  f"of the job ({list(range(world.size))}); collectives over some ranks are not "
                                  f"supported")
    if backend not in (None, "mpi"):
        raise ValueError(f"new_group: fluidgrad communicates over MPI; backend must be None or 'mpi', got {backend!r}")
    return _WORLD_GROUP


def get_group(id: int = 0) -> Group:
    """The group of every rank (id 0), the one group there is."""
    if id != 0:
        raise ValueError(f"get_group: fluidgrad has one process group, id 0 (every rank), got id {id}")
    return _WORLD_GROUP


def check_group(group: Any, what: str) -> None:
    """`group=` of a collective: None or the group of every rank."""
    if group is not None and group is not _WORLD_GROUP:
        raise ValueError(f"{what}: group must be None or new_group() / get_group() (every rank: fluidgrad has "
                         f"one process group), got {group!r}")


class ParallelEnv:
    """Where this process stands in the job: `rank`, `world_size` (`nranks`), `local_rank`
    (its rank among the ranks on this machine, from the MPI launcher; 0 without one)."""

    @property
    def rank(self) -> int:
        return get_world().rank

    @property
    def world_size(self) -> int:
        return get_world().size

    nranks = world_size

    @property
    def local_rank(self) -> int:
        for name in _LOCAL_RANK_VARS:
            value = os.environ.get(name, "")
            if value.isdigit():
                return int(value)
        if get_world().size == 1:
            return 0
        raise RuntimeError(f"ParallelEnv.local_rank: the launcher set none of {list(_LOCAL_RANK_VARS)}")
