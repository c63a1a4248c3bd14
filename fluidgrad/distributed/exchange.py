"""All-to-all and gather: Paddle 2's `alltoall(in_list, out_list)` / `alltoall_single(in, out,
in_split_sizes, out_split_sizes)` and PyTorch's `all_to_all(out_list, in_list)` /
`all_to_all_single(out, in, output_split_sizes, input_split_sizes)` (each library's argument
order), and `gather(x, gather_list, dst)` (both libraries').

All-to-all: rank r's part j goes to rank j, which keeps it as its part r. On Tensors and arrays
it runs at once (MPI's all-to-all, `Alltoallv` when the parts differ in size); on Variables with
equal parts it appends op `c_alltoall` (its own gradient), so a Program carries it. `gather` is
eager only, like `scatter`. `group=` and a rank outside it behave as for every collective
(collective.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import apply_op
from ..framework import Variable, default_main_program
from .collective import _check_writable, _eager_only, _finish, _in_place, _like, _values
from .group import check_group, comm_of, to_group_rank


def _parts(tensors: Any, nranks: int, what: str, name: str) -> list[np.ndarray]:
    arrays = [_values(t, what) for t in (tensors if tensors is not None else [])]
    if len(arrays) != nranks:
        raise ValueError(f"{what}: {name} must hold one tensor per rank of the group ({nranks}), got {len(arrays)}")
    if len({a.dtype for a in arrays}) > 1:
        raise ValueError(f"{what}: the tensors of {name} must share one dtype, got {[str(a.dtype) for a in arrays]}")
    return arrays


def _fill(out_list: list[Any], received: list[np.ndarray], like: Any, what: str) -> list[Any]:
    """Received parts into the given output tensors (in place), or appended to an empty list."""
    if out_list:
        for r, (out, value) in enumerate(zip(out_list, received)):
            target = _values(out, what)
            if target.shape != value.shape or target.dtype != value.dtype:
                raise ValueError(f"{what}: output tensor {r} has shape {list(target.shape)} ({target.dtype}); rank "
                                 f"{r} of the group sends shape {list(value.shape)} ({value.dtype})")
            _check_writable(out, what)
            _in_place(out, value)
        return out_list
    out_list.extend(_like(like, value) for value in received)
    return out_list


def _list_exchange(comm: Any, inputs: list[Any], outputs: list[Any], what: str) -> list[Any]:
    arrays = _parts(inputs, comm.size, what, "the input list")
    if outputs:  # given tensors: their sizes say what each rank sends here
        targets = _parts(outputs, comm.size, what, "the output list")
        if targets[0].dtype != arrays[0].dtype:
            raise ValueError(f"{what}: the output tensors are {targets[0].dtype}, the input tensors "
                             f"{arrays[0].dtype}; they must match")
        flat = np.concatenate([a.reshape(-1) for a in arrays])
        got = comm.all_to_all_v(flat, [a.size for a in arrays], [t.size for t in targets], what)
        offsets = np.cumsum([0] + [t.size for t in targets])
        received = [got[offsets[r]:offsets[r + 1]].reshape(t.shape) for r, t in enumerate(targets)]
    else:
        if len({a.shape for a in arrays}) > 1:
            raise ValueError(f"{what}: without output tensors every part must have one shape, got "
                             f"{[list(a.shape) for a in arrays]}")
        received = list(comm.all_to_all(np.stack(arrays), what))
    return _fill(outputs, received, inputs[0], what)


def _variable_list(comm: Any, ring_id: int, inputs: list[Variable], outputs: list[Any]) -> list[Variable]:
    stacked = apply_op("stack", {"X": list(inputs)}, {"axis": 0})
    exchanged = apply_op("c_alltoall", {"X": stacked}, {"ring_id": ring_id})
    parts = apply_op("split", {"X": exchanged}, {"num_or_sections": comm.size, "axis": 0}, n_out=comm.size)
    parts = [apply_op("squeeze", {"X": p}, {"axes": [0]}) for p in parts]
    outputs.clear()
    outputs.extend(parts)
    return outputs


def alltoall(in_tensor_list: Any, out_tensor_list: Any = None, group: Any = None, sync_op: bool = True) -> Any:
    """Paddle 2's `alltoall(in_tensor_list, out_tensor_list)`: rank r's `in_tensor_list[j]`
    becomes rank j's `out_tensor_list[r]` (an empty list is filled; given tensors are written in
    place). Returns the output list."""
    comm = comm_of(group, "alltoall")
    if comm is None:
        return None
    outputs = out_tensor_list if out_tensor_list is not None else []
    if in_tensor_list and all(isinstance(t, Variable) for t in in_tensor_list):
        return _variable_list(comm, check_group(group, "alltoall").id, in_tensor_list, outputs)
    return _finish(_list_exchange(comm, list(in_tensor_list), outputs, "alltoall"), sync_op, False)


def all_to_all(output_tensor_list: list[Any], input_tensor_list: list[Any], group: Any = None,
               async_op: bool = False) -> Any:
    """PyTorch's `all_to_all(output_tensor_list, input_tensor_list)`: rank r's
    `input_tensor_list[j]` is written into rank j's `output_tensor_list[r]`."""
    comm = comm_of(group, "all_to_all")
    if comm is None:
        return None
    _list_exchange(comm, list(input_tensor_list), output_tensor_list, "all_to_all")
    return _finish(output_tensor_list, True, async_op)


def alltoall_single(in_tensor: Any, out_tensor: Any = None, in_split_sizes: Any = None, out_split_sizes: Any = None,
                    group: Any = None, sync_op: bool = True) -> Any:
    """Paddle 2's `alltoall_single`: `in_tensor` split along axis 0 (equal parts, or
    `in_split_sizes` rows for each rank), part j to rank j; `out_tensor` (written in place, or
    a new tensor returned when None) holds the parts received, in rank order."""
    return _single(in_tensor, out_tensor, in_split_sizes, out_split_sizes, group, "alltoall_single", not sync_op)


def all_to_all_single(output: Any, input: Any, output_split_sizes: Any = None, input_split_sizes: Any = None,
                      group: Any = None, async_op: bool = False) -> Any:
    """PyTorch's `all_to_all_single(output, input, output_split_sizes, input_split_sizes)`."""
    return _single(input, output, input_split_sizes, output_split_sizes, group, "all_to_all_single", async_op)


def _single(x: Any, out: Any, in_splits: Any, out_splits: Any, group: Any, what: str, async_op: bool) -> Any:
    comm = comm_of(group, what)
    if comm is None:
        return None
    if isinstance(x, Variable):
        if in_splits is not None or out_splits is not None:
            raise ValueError(f"{what} in a Program splits into equal parts (op c_alltoall); got split sizes "
                             f"{in_splits} / {out_splits}")
        attrs = {"ring_id": check_group(group, what).id}
        if out is None:
            return apply_op("c_alltoall", {"X": x}, attrs)
        default_main_program().current_block().append_op("c_alltoall", {"X": x}, {"Out": out}, attrs)
        return out
    array = _values(x, what)
    if in_splits is None and out_splits is None:
        result = comm.all_to_all(array, what)
    else:
        rows = array.shape[0] if array.ndim else 0
        if in_splits is None:
            if rows % comm.size:
                raise ValueError(f"{what}: the first axis of shape {list(array.shape)} must divide into "
                                 f"{comm.size} equal parts (one per rank) when no input split sizes are given")
            in_splits = [rows // comm.size] * comm.size
        result = comm.all_to_all_v(array, list(in_splits), None if out_splits is None else list(out_splits), what)
    if out is None:
        return _finish(_like(x, result), True, async_op)
    target = _values(out, what)
    if target.shape != result.shape or target.dtype != result.dtype:
        raise ValueError(f"{what}: the output has shape {list(target.shape)} ({target.dtype}); what this rank "
                         f"receives has shape {list(result.shape)} ({result.dtype})")
    _check_writable(out, what)
    return _finish(_in_place(out, result), True, async_op)


def gather(tensor: Any, gather_list: Any = None, dst: int | None = None, group: Any = None, sync_op: bool = True,
           async_op: bool = False, group_dst: int | None = None) -> Any:
    """Every rank's `tensor`, in rank order, into rank `dst`'s `gather_list` (given tensors are
    written in place, an empty list is filled; other ranks' list is not touched). Returns the
    list on `dst`, None elsewhere."""
    comm = comm_of(group, "gather")
    if comm is None:
        return None
    root = to_group_rank(group, dst, group_dst, "gather", "dst")
    _eager_only(tensor, "gather")
    stacked = comm.gather(_values(tensor, "gather"), root, "gather")
    if comm.rank != root:
        return _finish(None, sync_op, async_op)
    outputs = gather_list if gather_list is not None else []
    if outputs:
        _parts(outputs, comm.size, "gather", "gather_list (on the destination rank)")
    return _finish(_fill(outputs, list(stacked), tensor, "gather"), sync_op, async_op)

