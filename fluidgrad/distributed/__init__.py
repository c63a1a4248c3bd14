"""Data-parallel training over MPI (mpi4py + the mpich wheel: `pip install 'fluidgrad[dist]'`).

    fluidgrad launch -n 4 train.py        # or: python -m fluidgrad.distributed.launch -n 4 train.py

Without a launcher the process is a world of one: every collective is the identity and the
same script runs unchanged. mpi4py is imported only by a process an MPI launcher started.
"""
from ..ops.comm import CollectiveMismatchError, RankFailedError
from .checkpoint import load, load_state_dict, save, save_state_dict
from .collective import (
                         ReduceOp,
                         Task,
                         all_gather,
                         all_gather_object,
                         all_reduce,
                         barrier,
                         broadcast,
                         broadcast_object_list,
                         get_rank,
                         get_world_size,
                         init_parallel_env,
                         is_initialized,
                         reduce,
                         reduce_scatter,
                         scatter,
)
from .data import DistributedBatchSampler, shard
from .data_parallel import DataParallel
from .exchange import all_to_all, all_to_all_single, alltoall, alltoall_single, gather
from .group import (Group, ParallelEnv, get_global_rank, get_group, get_group_rank, get_process_group_ranks,
                    new_group)
from .point_to_point import P2POp, P2PTask, batch_isend_irecv, irecv, isend, recv, send
from .spawn import SpawnContext, spawn
from .eager_sharding import ShardedOptimizer, ZeroRedundancyOptimizer, group_sharded_parallel
from .optimizer import DistributedOptimizer

__all__ = ["CollectiveMismatchError", "DataParallel", "DistributedBatchSampler", "DistributedOptimizer", "Group",
           "P2POp", "P2PTask", "ParallelEnv", "RankFailedError", "ReduceOp", "ShardedOptimizer", "Task", "ZeroRedundancyOptimizer",
           "all_gather", "all_gather_object", "all_reduce", "barrier", "broadcast", "broadcast_object_list",
           "get_group", "get_rank", "get_world_size", "group_sharded_parallel", "init_parallel_env", "is_initialized",
           "load", "load_state_dict", "new_group", "recv", "reduce", "reduce_scatter", "save", "save_state_dict",
           "scatter", "send", "shard",
           "all_to_all", "all_to_all_single", "alltoall", "alltoall_single", "batch_isend_irecv", "gather",
           "get_global_rank", "get_group_rank", "get_process_group_ranks", "irecv", "isend", "SpawnContext", "spawn"]
