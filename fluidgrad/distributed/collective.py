"""The collectives of `fluidgrad.distributed` on Tensors, Variables and NumPy arrays.

Eager Tensors and NumPy arrays are updated in place (as Paddle's `all_reduce` and
`broadcast`) and returned (a Python or NumPy number, which cannot change, comes back reduced); a static Variable gets an op in the current block (`c_allreduce_*`,
`c_broadcast`, ...) writing the same variable, so the Program shows the communication.
With a world of one (no launcher) every collective is the identity.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..dispatch import apply_op, is_tensor
from ..framework import Variable, default_main_program
from ..ops.comm import REDUCE_OPS, get_world


def init_parallel_env() -> None:
    """Join the launcher's process group (a world of one without a launcher). Idempotent."""
    get_world()


def get_rank() -> int:
    """This process's rank, 0 to world size - 1 (0 without a launcher)."""
    return get_world().rank


def get_world_size() -> int:
    """How many processes train together (1 without a launcher)."""
    return get_world().size


def barrier() -> None:
    """Wait until every rank gets here."""
    get_world().barrier()


def _check_op(op: str) -> str:
    op = op.lower() if isinstance(op, str) else op
    if op not in REDUCE_OPS:
        raise ValueError(f"all_reduce: op must be one of {list(REDUCE_OPS)}, got {op!r}")
    return op


def _values(x: Any, what: str) -> np.ndarray:
    """The array behind `x`: a Tensor's, an array, or a number's (returned as a number)."""
    if is_tensor(x):
        return np.asarray(x.data)
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


def _append_in_place(op_type: str, x: Variable, attrs: dict[str, Any]) -> Variable:
    default_main_program().current_block().append_op(op_type, {"X": x}, {"Out": x}, attrs)
    return x


def all_reduce(x: Any, op: str = "sum", group: Any = None, sync_op: bool = True) -> Any:
    """Reduce `x` over every rank ("sum", "max", "min" or "avg"), in place; returns `x` (a
    number `x` cannot change in place: the reduced number is returned)."""
    op = _check_op(op)
    if isinstance(x, Variable):
        return _append_in_place(f"c_allreduce_{op}", x, {})
    array = _values(x, "all_reduce")
    _check_reducible(array, op, "all_reduce")
    _check_writable(x, "all_reduce")
    return _in_place(x, get_world().all_reduce(array, op))


def broadcast(x: Any, src: int = 0, group: Any = None, sync_op: bool = True) -> Any:
    """Give every rank rank `src`'s value of `x`, in place; returns `x` (a number is returned
    as a new number)."""
    world = get_world()
    world._check_rank(int(src), "broadcast")
    if isinstance(x, Variable):
        return _append_in_place("c_broadcast", x, {"root": int(src)})
    _check_writable(x, "broadcast")
    return _in_place(x, world.broadcast(_values(x, "broadcast"), int(src)))


def all_gather(tensor_or_list: Any, tensor: Any = None, group: Any = None, sync_op: bool = True) -> list[Any]:
    """Every rank's `x`, in rank order: `all_gather(x)` returns the list; Paddle's form
    `all_gather(tensor_list, x)` also fills `tensor_list`."""
    out_list, x = (tensor_or_list, tensor) if tensor is not None else (None, tensor_or_list)
    world = get_world()
    if isinstance(x, Variable):
        # split, not coalesce / uncoalesce: the first axis may be known only at run time
        gathered = apply_op("c_allgather", {"X": x}, {"nranks": world.size})
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


def reduce_scatter(x: Any, op: str = "sum", group: Any = None, sync_op: bool = True) -> Any:
    """`x` reduced over ranks and split along axis 0 into world-size parts; rank r gets part r."""
    op = _check_op(op)
    world = get_world()
    if isinstance(x, Variable):
        if op != "sum":
            raise ValueError(f"reduce_scatter in a Program supports op='sum', got {op!r}")
        return apply_op("c_reducescatter", {"X": x}, {"nranks": world.size})
    array = _values(x, "reduce_scatter")
    _check_reducible(array, op, "reduce_scatter")
    return _like(x, world.reduce_scatter(array, op))


def _like(x: Any, array: np.ndarray) -> Any:
    if is_tensor(x):
        return type(x)(np.array(array))
    return np.array(array)
