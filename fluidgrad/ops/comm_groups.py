"""Process groups of some ranks: an MPI communicator of their own, named by a ring id.

`create(ranks)` is called by every rank of the job in the same order (as PyTorch's and Paddle's
`new_group`): the ranks first agree on the group (one small all-gather over the job, waited on
as every collective is, so a rank that failed or never comes ends the job instead of leaving the
others in MPI's blocking `Split`), then split MPI's world. Ring id 0 is the job's world; ids 1,
2, ... are the groups in the order they were made, the same on every rank, so an op's `ring_id`
attribute names its group. A rank outside the group gets the id with no communicator.

`GroupComm` offers the array collectives of `World` (the same methods, borrowed) on the group's
communicator, with group ranks; every wait goes through the world's `wait`, which polls for a
failed rank and times out, and which stops only for the members leaving normally.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .comm import CollectiveMismatchError, World, get_world


class GroupComm:
    """Some ranks' communicator: `rank` / `size` within the group, `ranks` its global ranks."""

    def __init__(self, world: World, comm: Any, ranks: list[int]) -> None:
        self.world, self.mpi, self.comm, self.ranks = world, world.mpi, comm, ranks
        self.size = len(ranks)
        self.rank = ranks.index(world.rank)
        self.comm_seconds = 0.0

    def wait(self, request: Any, what: str, peers: Any = None) -> None:
        self.world.wait(request, what, self.ranks if peers is None else peers)

    def global_rank(self, rank: int) -> int:
        return self.ranks[rank]

    def _check_rank(self, rank: int, what: str) -> None:
        if not 0 <= rank < self.size:
            raise ValueError(f"{what}: group rank {rank} is outside the group of ranks {self.ranks}")

    mpi_op = World.mpi_op
    start_all_reduce = World.start_all_reduce
    all_reduce = World.all_reduce
    broadcast = World.broadcast
    all_gather = World.all_gather
    reduce_scatter = World.reduce_scatter
    all_to_all = World.all_to_all
    gather = World.gather
    all_to_all_v = World.all_to_all_v
    barrier = World.barrier
    all_gather_object = World.all_gather_object
    check_same_layout = World.check_same_layout


_GROUPS: list[tuple[list[int], GroupComm | None]] = []  # ring id i + 1: (global ranks, comm or None)


def create(ranks: Sequence[int], what: str = "new_group") -> int:
    """A new group of the global `ranks` (sorted, distinct); returns its ring id. Collective over
    the job: every rank calls it with the same ranks."""
    world = get_world()
    ranks = sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks) or not ranks or not all(0 <= r < world.size for r in ranks):
        raise ValueError(f"{what}: ranks must be distinct ranks of the job (0 to {world.size - 1}), at least one, "
                         f"got {ranks}")
    ring_id = len(_GROUPS) + 1
    if world.size > 1:
        every = world.all_gather_object((ring_id, ranks), what)
        for rank, theirs in enumerate(every):
            if theirs != (ring_id, ranks):
                raise CollectiveMismatchError(
                    f"{what}: rank {rank} makes group {theirs[0]} of ranks {theirs[1]}, rank {world.rank} makes "
                    f"group {ring_id} of ranks {ranks}; every rank must make the same groups in the same order")
    comm = None
    if world.comm is not None:  # every rank is here (the all-gather above): MPI's blocking split is safe
        member = world.rank in ranks
        sub = world.comm.Split(0 if member else world.mpi.UNDEFINED, key=world.rank)
        comm = GroupComm(world, sub, ranks) if member else None
    elif world.rank in ranks:  # a world of one
        comm = GroupComm(world, None, ranks)
    _GROUPS.append((ranks, comm))
    return ring_id


def ranks_of(ring_id: int) -> list[int]:
    """The global ranks of group `ring_id` (0: the whole job)."""
    if ring_id == 0:
        return list(range(get_world().size))
    return list(_entry(ring_id, "ranks_of")[0])


def ring(ring_id: int, what: str) -> World | GroupComm:
    """The communicator of group `ring_id` for this rank (a member's); an error naming `what`
    on a rank outside it."""
    if ring_id == 0:
        return get_world()
    ranks, comm = _entry(ring_id, what)
    if comm is None:
        raise ValueError(f"{what}: rank {get_world().rank} is not in group {ring_id} (ranks {ranks}); only its "
                         f"members may run its collectives")
    return comm


def _entry(ring_id: int, what: str) -> tuple[list[int], GroupComm | None]:
    if not 0 < ring_id <= len(_GROUPS):
        raise ValueError(f"{what}: there is no process group with ring id {ring_id} "
                         f"(groups made so far: 0 to {len(_GROUPS)})")
    return _GROUPS[ring_id - 1]
