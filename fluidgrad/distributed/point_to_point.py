"""Point-to-point messages between two ranks, eager only: blocking `send(x, dst)` / `recv(x, src)`
(Paddle 2's and PyTorch's) and non-blocking `isend` / `irecv` (also `send` / `recv` with
`sync_op=False`), which return a `P2PTask` with `wait()` and `is_completed()` (PyTorch's `Work`,
Paddle's task); `batch_isend_irecv([P2POp(dist.isend, x, peer), ...])` starts several at once.

Each message is a small header (the sender's shape, dtype and byte count) and then the bytes,
each on a tag of its own, both posted at once (MPI matches messages between two ranks in the
order they were posted, so several messages in flight cannot cross). A receiver whose tensor
has another shape or dtype still takes the message (the sender is not left waiting) and raises
`CollectiveMismatchError` naming both ranks' layouts. Waits poll for a failed peer as every
collective's do (ops/comm.py: `World.wait`), so a rank that never sends ends the job, no hang.
`dst` / `src` are global ranks (PyTorch's `group_dst=` / `group_src=`: ranks in `group`).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..dispatch import is_tensor
from ..framework import Variable
from ..ops.comm import CollectiveMismatchError, RankFailedError, get_world
from .collective import Task
from .group import check_group, comm_of, to_group_rank

_TAG = 7393  # header tags 7393 + 2 * tag, payloads one more (FAILURE_TAG is 7391)
_MAX_USER_TAG = 10000
_HEADER_BYTES = 512


class P2PTask(Task):
    """A message under way: `wait()` completes it (True), `is_completed()` lets MPI progress and
    says whether it is done. A receive writes into its tensor when it completes."""

    def __init__(self, comm: Any, requests: list[Any], what: str, peer: int,
                 finish: Callable[[], None] | None = None, keep: Any = None) -> None:
        self.comm, self.requests, self.what, self.peer, self._finish, self._keep = (
            comm, requests, what, peer, finish, keep)
        self._done = not requests and finish is None

    def is_completed(self) -> bool:
        if self._done:
            return True
        try:
            done = all(request.Test() for request in self.requests)
        except self.comm.mpi.Exception:  # a receive too short for what was sent: wait() says so
            done = True
        return self.wait() if done else False

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            if self._finish is not None:
                self._finish()
            else:
                for request in self.requests:
                    self.comm.wait(request, self.what, [self.peer])
            self._done, self._keep = True, None
        return True


def _array(x: Any, what: str) -> np.ndarray:
    if isinstance(x, Variable):
        raise TypeError(f"{what} works on Tensors and NumPy arrays (eager), got Variable {x.name}")
    if is_tensor(x):
        return np.asarray(x._array)
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"{what}: expects a Tensor or a NumPy array, got {type(x).__name__}")


def _layout(array: np.ndarray) -> str:
    return f"shape {list(array.shape)} ({array.dtype})"


def _route(group: Any, rank: int | None, group_rank: int | None, tag: int, what: str, role: str) -> Any:
    """(communicator, peer's rank in it, peer's global rank, header tag), or None outside the group."""
    comm = comm_of(group, what)
    if comm is None:
        return None
    peer = to_group_rank(group, rank, group_rank, what, role)
    global_peer = check_group(group, what).ranks[peer]
    if peer == comm.rank:
        raise ValueError(f"{what}: {role}={global_peer} is this rank; send and recv go from one rank to another")
    if not 0 <= int(tag) < _MAX_USER_TAG:
        raise ValueError(f"{what}: tag must be an integer from 0 to {_MAX_USER_TAG - 1}, got {tag}")
    return comm, peer, global_peer, _TAG + 2 * int(tag)


def isend(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
          group_dst: int | None = None) -> P2PTask | None:
    """Start sending `tensor` to rank `dst` (which receives it with `recv` / `irecv`); the task's
    `wait()` returns once it is sent. Do not change `tensor` before then. None on a rank outside
    `group` (PyTorch's)."""
    array = np.ascontiguousarray(_array(tensor, "isend"))
    route = _route(group, dst, group_dst, tag, "send", "dst")
    if route is None:
        return None
    comm, peer, global_peer, header_tag = route
    header = json.dumps([list(array.shape), array.dtype.name, array.nbytes]).encode()
    if len(header) > _HEADER_BYTES:
        raise ValueError(f"send: an array of {array.ndim} dimensions is more than a message header can describe")
    buffer = np.zeros(_HEADER_BYTES, np.uint8)
    buffer[:len(header)] = np.frombuffer(header, np.uint8)
    payload = array.reshape(-1).view(np.uint8)
    requests = [comm.comm.Isend(buffer, dest=peer, tag=header_tag),
                comm.comm.Isend(payload, dest=peer, tag=header_tag + 1)]
    return P2PTask(comm, requests, f"send to rank {global_peer}", global_peer, keep=(buffer, payload))


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
          group_src: int | None = None) -> P2PTask | None:
    """Start receiving into `tensor` (in place) what rank `src` sends; the task's `wait()` returns
    once `tensor` holds it. `tensor` must have the shape and dtype of what is sent. None on a
    rank outside `group` (PyTorch's)."""
    target = _array(tensor, "irecv")
    route = _route(group, src, group_src, tag, "recv", "src")
    if route is None:
        return None
    comm, peer, global_peer, header_tag = route
    if isinstance(tensor, np.ndarray) and not tensor.flags.writeable:
        raise ValueError(f"recv: the array given ({_layout(target)}) is read-only")
    what = f"recv from rank {global_peer}"
    header = np.zeros(_HEADER_BYTES, np.uint8)
    payload = np.empty(target.nbytes, np.uint8)
    requests = [comm.comm.Irecv(header, source=peer, tag=header_tag),
                comm.comm.Irecv(payload, source=peer, tag=header_tag + 1)]

    def finish() -> None:
        comm.wait(requests[0], what, [global_peer])
        shape, dtype_name, _ = json.loads(header.tobytes().rstrip(b"\0"))
        if list(target.shape) != shape or target.dtype.name != dtype_name:
            try:  # take the bytes (MPI reports a longer message as truncated), so the sender goes on
                comm.wait(requests[1], what, [global_peer])
            except RankFailedError as exc:
                if not isinstance(exc.__cause__, comm.mpi.Exception):
                    raise
            raise CollectiveMismatchError(f"recv: rank {global_peer} sent shape {shape} ({dtype_name}), rank "
                                          f"{get_world().rank} receives "
                                          f"into {_layout(target)}; the shapes and dtypes must match")
        comm.wait(requests[1], what, [global_peer])
        value = payload.view(target.dtype).reshape(target.shape)
        if is_tensor(tensor):
            tensor.set_value(value)
        else:
            tensor[...] = value
    return P2PTask(comm, requests, what, global_peer, finish)


def send(tensor: Any, dst: int | None = None, group: Any = None, sync_op: bool = True, tag: int = 0,
         group_dst: int | None = None) -> P2PTask | None:
    """Send `tensor` to rank `dst`, which calls `recv(y, src=this rank)`; returns once it is sent
    (`sync_op=False`: at once, with the task, as `isend`)."""
    task = isend(tensor, dst, group, tag, group_dst)
    if task is None or not sync_op:
        return task
    task.wait()
    return None


def recv(tensor: Any, src: int | None = None, group: Any = None, sync_op: bool = True, tag: int = 0,
         group_src: int | None = None) -> Any:
    """Receive into `tensor` (in place) what rank `src` sends with `send`; returns `tensor`
    (`sync_op=False`: the task, as `irecv`). `tensor` must have the shape and dtype of what is sent."""
    task = irecv(tensor, src, group, tag, group_src)
    if task is None or not sync_op:
        return task
    task.wait()
    return tensor


class P2POp:
    """One message of `batch_isend_irecv`: `P2POp(dist.isend, x, peer)` or `P2POp(dist.irecv, y, peer)`
    (PyTorch's and Paddle's); `peer` is a global rank (`group_peer=`: a rank in `group`)."""

    def __init__(self, op: Callable[..., Any], tensor: Any, peer: int | None = None, group: Any = None,
                 tag: int = 0, group_peer: int | None = None) -> None:
        if op not in (isend, irecv):
            raise ValueError(f"P2POp: op must be dist.isend or dist.irecv, got {op!r}")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list: Sequence[P2POp]) -> list[P2PTask]:
    """Start every message of the list (none waits for another) and return their tasks."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("batch_isend_irecv: expects a non-empty list of P2POp")
    tasks = [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]
    return [t for t in tasks if t is not None]
