"""The collectives of `fluidgrad.distributed` on Tensors, Variables and NumPy arrays.

Eager Tensors and NumPy arrays are updated in place (as Paddle's `all_reduce` and
`broadcast`) and returned (a Python or NumPy number, which cannot change, comes back reduced); a static Variable gets an op in the current block (`c_allreduce_*`,
`c_broadcast`, ...) writing the same variable, so the Program shows the communication.
With a world of one (no launcher) every collective is the identity.

The spellings of Paddle 2 and PyTorch: `op=ReduceOp.SUM` (or "sum"), `group=None` (the job's
group) or a group of some ranks from `new_group(ranks)` (group.py; `src=` / `dst=` are global
ranks, PyTorch's `group_src=` / `group_dst=` group ranks; a rank outside the group does nothing
and gets None, as in PyTorch), and `sync_op=False` / `async_op=True`, which return a `Task` that
is already complete (these collectives block until done; point-to-point `isend` / `irecv` do
not, point_to_point.py).
"""
from __future__ import annotations

import enum
import numbers
from typing import Any

import numpy as np

from ..dispatch import apply_op, is_tensor
from ..framework import Variable, default_main_program
from ..ops.comm import REDUCE_OPS, current_world, get_world
from .group import check_group, comm_of, to_group_rank


class ReduceOp(str, enum.Enum):
    """How a collective combines the ranks' values: `ReduceOp.SUM`, `MAX`, `MIN`, `PROD`
    (PyTorch's `PRODUCT` too) and `AVG`, as Paddle 2 and PyTorch name them; each equals its
    lower-case name, so `op="sum"` works as well."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"
    PRODUCT = "prod"
    AVG = "avg"


class Task:
    """What `sync_op=False` (Paddle) or `async_op=True` (PyTorch) returns: the collective has
    completed already (fluidgrad's collectives block), so `wait()` returns at once."""

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def _finish(result: Any, sync_op: bool, async_op: bool) -> Any:
    return Task() if async_op or not sync_op else result


def init_parallel_env() -> None:
    """Join the launcher's process group (a world of one without a launcher). Idempotent."""
    get_world()


def is_initialized() -> bool:
    """Whether this process has joined its process group: `init_parallel_env()`, or anything
    that joins it on first use (a collective, `get_rank()`, `DataParallel`)."""
    return current_world() is not None


def get_rank(group: Any = None) -> int:
    """This process's rank, 0 to world size - 1 (0 without a launcher); with `group`, its rank
    in the group (-1 outside it, as PyTorch and Paddle)."""
    return int(check_group(group, "get_rank").rank)


def get_world_size(group: Any = None) -> int:
    """How many processes train together (1 without a launcher); with `group`, how many ranks
    the group has (-1 on a rank outside it, as PyTorch and Paddle)."""
    return check_group(group, "get_world_size").nranks


def barrier(group: Any = None) -> None:
    """Wait until every rank (of `group`) gets here."""
    comm = comm_of(group, "barrier")
    if comm is not None:
        comm.barrier()


def _check_op(op: Any, what: str = "all_reduce") -> str:
    """The op's name ("sum", ...), from a ReduceOp or a string in any case."""
    name = op.value if isinstance(op, ReduceOp) else op.lower() if isinstance(op, str) else op
    if name not in REDUCE_OPS:
        raise ValueError(f"{what}: op must be one of {list(REDUCE_OPS)} (or ReduceOp.SUM, ...), got {op!r}")
    return name


def _values(x: Any, what: str) -> np.ndarray:
    """The array behind `x`: a Tensor's, an array, or a number's (returned as a number)."""
    if is_tensor(x):
        return np.asarray(x._array)
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (numbers.Number, np.generic)):
        return np.asarray(x)
    raise TypeError(f"{what}: expects a Tensor, a Variable, a NumPy array or a number, got {type(x).__name__}")


def _check_reducible(array: np.ndarray, op: str, what: str) -> None:
    """Numbers only (MPI would fail on booleans), and an average only of floating-point values
    (the same refusal in a world of one as in a job of many)."""
    kind = f"{array.dtype} values of shape {list(array.shape)}"
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.number):
        raise TypeError(f"{what}: collectives reduce numbers, got {kind}")
    if op == "avg" and not np.issubdtype(array.dtype, np.inexact):
        raise TypeError(f"{what}: op='avg' needs floating-point values, got {kind}; cast them, or use op='sum'")


def _in_place(x: Any, value: np.ndarray) -> Any:
    """`x` holding `value` (Tensors and arrays in place; a number is returned as a new number)."""
    if is_tensor(x):
        x.set_value(value)
        return x
    if isinstance(x, np.ndarray):
        x[...] = value
        return x
    return value[()] if isinstance(x, np.generic) else value.item()


def _check_writable(x: Any, what: str) -> None:
    """An array written in place must be writable: say so before any rank communicates."""
    if isinstance(x, np.ndarray) and not x.flags.writeable:
        raise ValueError(f"{what}: the array given (shape {list(x.shape)}, {x.dtype}) is read-only, e.g. a "
                         f"parameter or optimizer state that a sharded optimizer keeps as a view of the node's one "
                         f"copy; pass the Tensor instead, or a copy and then assign the result "
                         f"(scope[name] = array)")


def _append_in_place(op_type: str, x: Variable, attrs: dict[str, Any], group: Any = None) -> Variable:
    attrs = {**attrs, "ring_id": check_group(group, op_type).id}
    default_main_program().current_block().append_op(op_type, {"X": x}, {"Out": x}, attrs)
    return x


def all_reduce(x: Any, op: str | ReduceOp = "sum", group: Any = None, sync_op: bool = True,
               async_op: bool = False) -> Any:
    """Reduce `x` over every rank ("sum", "max", "min", "prod" or "avg", or `ReduceOp.SUM`, ...),
    in place; returns `x` (a number `x` cannot change in place: the reduced number is returned)."""
    op = _check_op(op)
    comm = comm_of(group, "all_reduce")
    if comm is None:
        return None
    if isinstance(x, Variable):
        return _finish(_append_in_place(f"c_allreduce_{op}", x, {}, group), sync_op, async_op)
    array = _values(x, "all_reduce")
    _check_reducible(array, op, "all_reduce")
    _check_writable(x, "all_reduce")
    return _finish(_in_place(x, comm.all_reduce(array, op)), sync_op, async_op)


def reduce(x: Any, dst: int | None = None, op: str | ReduceOp = "sum", group: Any = None, sync_op: bool = True,
           async_op: bool = False, group_dst: int | None = None) -> Any:
    """Rank `dst` gets `x` reduced over every rank, in place; the other ranks' `x` is left as it
    was (an all-reduce underneath, kept by `dst` only). In a Program (op "sum" only, op
    `c_reduce_sum`) the other ranks' variable becomes zeros, as that op defines."""
    op = _check_op(op, "reduce")
    comm = comm_of(group, "reduce")
    if comm is None:
        return None
    root = to_group_rank(group, dst, group_dst, "reduce", "dst")
    if isinstance(x, Variable):
        if op != "sum":
            raise ValueError(f"reduce in a Program supports op='sum' (op c_reduce_sum), got {op!r}; "
                             f"all_reduce(x, op={op!r}) gives every rank the result")
        return _finish(_append_in_place("c_reduce_sum", x, {"root": root}, group), sync_op, async_op)
    array = _values(x, "reduce")
    _check_reducible(array, op, "reduce")
    _check_writable(x, "reduce")
    reduced = comm.all_reduce(array, op, what="reduce")
    return _finish(_in_place(x, reduced) if comm.rank == root else x, sync_op, async_op)


def broadcast(x: Any, src: int | None = None, group: Any = None, sync_op: bool = True, async_op: bool = False,
              group_src: int | None = None) -> Any:
    """Give every rank rank `src`'s value of `x`, in place; returns `x` (a number is returned
    as a new number)."""
    comm = comm_of(group, "broadcast")
    if comm is None:
        return None
    root = to_group_rank(group, src, group_src, "broadcast", "src")
    if isinstance(x, Variable):
        return _finish(_append_in_place("c_broadcast", x, {"root": root}, group), sync_op, async_op)
    _check_writable(x, "broadcast")
    return _finish(_in_place(x, comm.broadcast(_values(x, "broadcast"), root)), sync_op, async_op)


def all_gather(tensor_or_list: Any, tensor: Any = None, group: Any = None, sync_op: bool = True,
               async_op: bool = False) -> Any:
    """Every rank's `x`, in rank order: `all_gather(x)` returns the list; Paddle's and PyTorch's
    form `all_gather(tensor_list, x)` also fills `tensor_list`."""
    comm = comm_of(group, "all_gather")
    if comm is None:
        return None
    parts = _all_gather(tensor_or_list, tensor, comm, check_group(group, "all_gather").id)
    return _finish(parts, sync_op, async_op)


def _all_gather(tensor_or_list: Any, tensor: Any, world: Any, ring_id: int) -> list[Any]:
    out_list, x = (tensor_or_list, tensor) if tensor is not None else (None, tensor_or_list)
    if isinstance(x, Variable):
        # split, not coalesce / uncoalesce: the first axis may be known only at run time
        gathered = apply_op("c_allgather", {"X": x}, {"nranks": world.size, "ring_id": ring_id})
        parts = apply_op("split", {"X": gathered}, {"num_or_sections": world.size, "axis": 0}, n_out=world.size)
        if not x.shape:  # 0-D values were gathered as [nranks]
            parts = [apply_op("squeeze", {"X": p}, {"axes": [0]}) for p in parts]
    else:
        stacked = world.all_gather(_values(x, "all_gather"))
        parts = [_like(x, stacked[r]) for r in range(world.size)]
    if out_list is not None:
        out_list.clear()
        out_list.extend(parts)
    return list(parts)


def reduce_scatter(x: Any, tensor_list: Any = None, op: str | ReduceOp = "sum", group: Any = None,
                   sync_op: bool = True, async_op: bool = False) -> Any:
    """`reduce_scatter(x, op)`: `x` reduced over ranks and split along axis 0 into world-size
    parts; rank r gets part r (returned). Paddle's and PyTorch's form `reduce_scatter(out,
    tensor_list, op)`: rank r's `out` becomes the reduction of every rank's `tensor_list[r]`."""
    if isinstance(tensor_list, (str, ReduceOp)):  # reduce_scatter(x, "avg")
        tensor_list, op = None, tensor_list
    op = _check_op(op, "reduce_scatter")
    world = comm_of(group, "reduce_scatter")
    if world is None:
        return None
    if tensor_list is not None:
        return _finish(_reduce_scatter_into(x, list(tensor_list), op, world), sync_op, async_op)
    if isinstance(x, Variable):
        if op != "sum":
            raise ValueError(f"reduce_scatter in a Program supports op='sum', got {op!r}")
        return apply_op("c_reducescatter", {"X": x},
                        {"nranks": world.size, "ring_id": check_group(group, "reduce_scatter").id})
    array = _values(x, "reduce_scatter")
    _check_reducible(array, op, "reduce_scatter")
    return _finish(_like(x, world.reduce_scatter(array, op)), sync_op, async_op)


def _reduce_scatter_into(out: Any, parts: list[Any], op: str, world: Any) -> Any:
    _eager_only(out, "reduce_scatter")
    target = _values(out, "reduce_scatter")
    arrays = [_values(p, "reduce_scatter") for p in parts]
    _check_parts(arrays, target, world.size, "reduce_scatter", "tensor_list")
    stacked = np.stack(arrays)
    _check_reducible(stacked, op, "reduce_scatter")
    _check_writable(out, "reduce_scatter")
    return _in_place(out, world.reduce_scatter(stacked, op).reshape(target.shape))


def scatter(x: Any, tensor_list: Any = None, src: int | None = None, group: Any = None, sync_op: bool = True,
            async_op: bool = False, group_src: int | None = None) -> Any:
    """Rank r's `x` becomes rank `src`'s `tensor_list[r]` (r: the group rank), in place (the other
    ranks' `tensor_list` is not read); returns `x`."""
    world = comm_of(group, "scatter")
    if world is None:
        return None
    src = to_group_rank(group, src, group_src, "scatter", "src")
    _eager_only(x, "scatter")
    target = _values(x, "scatter")
    _check_writable(x, "scatter")
    if world.rank == int(src):
        arrays = [_values(p, "scatter") for p in (tensor_list if tensor_list is not None else [])]
        _check_parts(arrays, target, world.size, "scatter", "tensor_list (on the source rank)")
        stacked = np.stack(arrays)
    else:
        stacked = np.empty((world.size,) + target.shape, target.dtype)
    # rank src's parts reach every rank, which keeps its own: simple, and parts are small
    every = world.broadcast(stacked, int(src), what="scatter")
    return _finish(_in_place(x, every[world.rank]), sync_op, async_op)


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> list[Any]:
    """Every rank's picklable `obj`, in rank order, into `object_list` (cleared first)."""
    comm = comm_of(group, "all_gather_object")
    if comm is None:
        return None
    gathered = comm.all_gather_object(obj, "all_gather_object")
    object_list.clear()
    object_list.extend(gathered)
    return object_list


def broadcast_object_list(object_list: list[Any], src: int | None = None, group: Any = None,
                          group_src: int | None = None) -> list[Any]:
    """Every rank's `object_list` becomes rank `src`'s (picklable objects), in place."""
    comm = comm_of(group, "broadcast_object_list")
    if comm is None:
        return None
    src = to_group_rank(group, src, group_src, "broadcast_object_list", "src")
    # (small objects: gathering them all is the simplest exchange that cannot mismatch)
    theirs = comm.all_gather_object(list(object_list), "broadcast_object_list")[src]
    object_list[:] = theirs
    return object_list


def _eager_only(x: Any, what: str) -> None:
    if isinstance(x, Variable):
        raise TypeError(f"{what} works on Tensors and NumPy arrays (eager); in a Program use all_reduce, "
                        f"broadcast, all_gather or reduce_scatter, got Variable {x.name}")


def _check_parts(arrays: list[np.ndarray], target: np.ndarray, nranks: int, what: str, name: str) -> None:
    """One part per rank, each of the output's shape and dtype."""
    if len(arrays) != nranks:
        raise ValueError(f"{what}: {name} must hold one tensor per rank ({nranks}), got {len(arrays)}")
    for r, a in enumerate(arrays):
        if a.shape != target.shape or a.dtype != target.dtype:
            raise ValueError(f"{what}: {name}[{r}] has shape {list(a.shape)} ({a.dtype}); the output has "
                             f"shape {list(target.shape)} ({target.dtype}), and every part must match it")


def _like(x: Any, array: np.ndarray) -> Any:
    if is_tensor(x):
        return type(x)(np.array(array))
    return np.array(array)
