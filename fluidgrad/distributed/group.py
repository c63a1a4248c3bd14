"""The process groups of Paddle 2 and PyTorch: the job's (id 0) and groups of some ranks.

`new_group(ranks)` is called by every rank, in the same order, with the same ranks (as in
PyTorch and Paddle); it makes an MPI communicator of those ranks (ops/comm_groups.py) and
returns a `Group`, on the ranks outside it too (`rank` -1, `is_member()` False). The
collectives take it as `group=`; ranks are global (`src=`, `dst=`, `group.ranks`) unless an
argument says otherwise (PyTorch's `group_src=` / `group_dst=`). A rank calling a collective on
a group it is not in does nothing and gets None, with a warning, as in PyTorch.
`ParallelEnv()` says where this process stands (Paddle's `paddle.distributed.ParallelEnv`).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

from ..ops import comm_groups
from ..ops.comm import World, get_world
from ..ops.comm_groups import GroupComm

_LOCAL_RANK_VARS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "SLURM_LOCALID")


class _Rank(int):
    """An int that may also be called: Paddle reads `group.rank`, PyTorch calls `group.rank()`."""

    def __call__(self) -> int:
        return int(self)


class Group:
    """Some ranks of the job (Paddle's `Group`: `rank`, `ranks`, `nranks`, `world_size`, `id`,
    `is_member()`, `get_group_rank(rank)`; PyTorch's `rank()` and `size()`). `rank` and
    `nranks` are -1 on a rank outside the group, as in Paddle (PyTorch's `get_rank(group)`)."""

    def __init__(self, ring_id: int = 0) -> None:
        self.id = ring_id
        self.name = "_default_pg" if ring_id == 0 else f"_group_{ring_id}"

    @property
    def ranks(self) -> list[int]:
        return comm_groups.ranks_of(self.id)

    def is_member(self) -> bool:
        return self.id == 0 or get_world().rank in self.ranks

    @property
    def rank(self) -> int:
        if self.id == 0:
            return _Rank(get_world().rank)
        return _Rank(self.ranks.index(get_world().rank) if self.is_member() else -1)

    @property
    def nranks(self) -> int:
        if self.id == 0:
            return get_world().size
        return len(self.ranks) if self.is_member() else -1

    world_size = nranks

    def size(self) -> int:
        """PyTorch's `group.size()`: how many ranks the group has."""
        return len(self.ranks)

    def get_group_rank(self, rank: int) -> int:
        """A global rank's rank in this group, -1 outside it (Paddle's)."""
        ranks = self.ranks
        return ranks.index(rank) if rank in ranks else -1

    def __repr__(self) -> str:
        return f"Group(id={self.id}, ranks={self.ranks})"


_WORLD_GROUP = Group(0)
_GROUPS: list[Group] = [_WORLD_GROUP]


def new_group(ranks: Sequence[int] | None = None, backend: str | None = None, timeout: Any = None,
              **_torch_options: Any) -> Group:
    """A group of the global `ranks` (None or every rank: the job's group). Every rank of the
    job calls it, in the same order, with the same ranks (a rank outside the group gets a Group
    whose `is_member()` is False)."""
    if backend not in (None, "mpi"):
        raise ValueError(f"new_group: fluidgrad communicates over MPI; backend must be None or 'mpi', got {backend!r}")
    world = get_world()
    if ranks is None or sorted(int(r) for r in ranks) == list(range(world.size)):
        return _WORLD_GROUP
    group = Group(comm_groups.create(ranks))
    _GROUPS.append(group)
    return group


def get_group(id: int = 0) -> Group:
    """The group with this id: 0 the job's, 1, 2, ... those `new_group` made, in order."""
    if not 0 <= id < len(_GROUPS):
        raise ValueError(f"get_group: no process group has id {id} (ids 0 to {len(_GROUPS) - 1}: 0 is every rank, "
                         f"then the groups new_group made)")
    return _GROUPS[id]


def check_group(group: Any, what: str) -> Group:
    """`group=` of a collective: None (the job's group) or a Group."""
    if group is None:
        return _WORLD_GROUP
    if not isinstance(group, Group):
        raise ValueError(f"{what}: group must be None or a Group from new_group() / get_group(), got {group!r}")
    return group


def comm_of(group: Any, what: str) -> World | GroupComm | None:
    """The communicator of `group` on this rank, or None (with PyTorch's warning) on a rank
    outside it: the caller then does nothing and returns None."""
    group = check_group(group, what)
    if not group.is_member():
        warnings.warn(f"Running {what} on global rank {get_world().rank} which does not belong to the given group "
                      f"(ranks {group.ranks})", stacklevel=3)
        return None
    return comm_groups.ring(group.id, what)


def to_group_rank(group: Any, rank: int | None, group_rank: int | None, what: str, role: str) -> int:
    """The group rank meant by a global `rank` (`src=` / `dst=`) or by `group_rank` (PyTorch's
    `group_src=` / `group_dst=`); an error naming `what` if it is not in the group."""
    group = check_group(group, what)
    ranks = group.ranks
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{what}: give {role}= or group_{role}=, not both")
        if not 0 <= int(group_rank) < len(ranks):
            raise ValueError(f"{what}: group_{role}={group_rank} is outside the group of ranks {ranks}")
        return int(group_rank)
    rank = 0 if rank is None else int(rank)
    if rank not in ranks:
        where = f"the world of {len(ranks)} rank(s)" if group.id == 0 else f"group {group.id} (ranks {ranks})"
        raise ValueError(f"{what}: rank {rank} is outside {where}")
    return ranks.index(rank)


def get_group_rank(group: Any, global_rank: int) -> int:
    """PyTorch's `dist.get_group_rank(group, global_rank)`: the rank in `group` of a global rank
    (an error if it is not in the group)."""
    group = check_group(group, "get_group_rank")
    if int(global_rank) not in group.ranks:
        raise ValueError(f"get_group_rank: global rank {global_rank} is not part of group {group!r}")
    return group.ranks.index(int(global_rank))


def get_global_rank(group: Any, group_rank: int) -> int:
    """PyTorch's `dist.get_global_rank(group, group_rank)`: the global rank of a group rank."""
    group = check_group(group, "get_global_rank")
    ranks = group.ranks
    if not 0 <= int(group_rank) < len(ranks):
        raise ValueError(f"get_global_rank: group rank {group_rank} is not part of group {group!r}")
    return ranks[int(group_rank)]


def get_process_group_ranks(group: Any) -> list[int]:
    """PyTorch's `dist.get_process_group_ranks(group)`: the group's global ranks."""
    return check_group(group, "get_process_group_ranks").ranks


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
