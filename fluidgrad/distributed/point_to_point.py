"""`send(x, dst)` / `recv(x, src)`: one rank's Tensor or array to another (Paddle 2's and PyTorch's
blocking point-to-point calls), eager only.

Each message is a small header (the sender's shape, dtype and byte count) and then the bytes, so
a receiver whose tensor has another shape or dtype takes the bytes anyway (the sender is not left
waiting) and raises `CollectiveMismatchError` naming both ranks' layouts. Waits poll for a failed
peer as every collective's do (ops/comm.py), so a rank that never sends ends the job, no hang.
Sending blocks until the receiver takes the message when it is large (MPI's rendezvous): order the
calls so that each send meets its recv (rank 0 sends then receives, rank 1 receives then sends).
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..dispatch import is_tensor
from ..framework import Variable
from ..ops.comm import CollectiveMismatchError, World, get_world
from .group import check_group

_TAG = 7393  # (FAILURE_TAG is 7391)
_HEADER_BYTES = 512


def _array(x: Any, what: str) -> np.ndarray:
    if isinstance(x, Variable):
        raise TypeError(f"{what} works on Tensors and NumPy arrays (eager), got Variable {x.name}")
    if is_tensor(x):
        return np.asarray(x._array)
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"{what}: expects a Tensor or a NumPy array, got {type(x).__name__}")


def _peer(world: World, rank: int, what: str, role: str) -> int:
    rank = int(rank)
    world._check_rank(rank, what)
    if rank == world.rank:
        raise ValueError(f"{what}: {role}={rank} is this rank; send and recv go from one rank to another")
    return rank


def _layout(array: np.ndarray) -> str:
    return f"shape {list(array.shape)} ({array.dtype})"


def send(x: Any, dst: int = 0, group: Any = None, sync_op: bool = True) -> None:
    """Send `x` to rank `dst`, which calls `recv(y, src=this rank)`; returns once it is sent."""
    check_group(group, "send")
    array = np.ascontiguousarray(_array(x, "send"))
    world = get_world()
    dst = _peer(world, dst, "send", "dst")
    header = json.dumps([list(array.shape), array.dtype.name, array.nbytes]).encode()
    if len(header) > _HEADER_BYTES:
        raise ValueError(f"send: an array of {array.ndim} dimensions is more than a message header can describe")
    buffer = np.zeros(_HEADER_BYTES, np.uint8)
    buffer[:len(header)] = np.frombuffer(header, np.uint8)
    world.wait(world.comm.Isend(buffer, dest=dst, tag=_TAG), f"send to rank {dst}")
    world.wait(world.comm.Isend(array.reshape(-1).view(np.uint8), dest=dst, tag=_TAG), f"send to rank {dst}")


def recv(x: Any, src: int = 0, group: Any = None, sync_op: bool = True) -> Any:
    """Receive into `x` (in place) what rank `src` sends with `send`; returns `x`. `x` must have
    the shape and dtype of what is sent."""
    check_group(group, "recv")
    target = _array(x, "recv")
    world = get_world()
    src = _peer(world, src, "recv", "src")
    if isinstance(x, np.ndarray) and not x.flags.writeable:
        raise ValueError(f"recv: the array given ({_layout(target)}) is read-only")
    buffer = np.zeros(_HEADER_BYTES, np.uint8)
    world.wait(world.comm.Irecv(buffer, source=src, tag=_TAG), f"recv from rank {src}")
    shape, dtype_name, nbytes = json.loads(buffer.tobytes().rstrip(b"\0"))
    payload = np.empty(nbytes, np.uint8)
    world.wait(world.comm.Irecv(payload, source=src, tag=_TAG), f"recv from rank {src}")
    if list(target.shape) != shape or target.dtype.name != dtype_name:
        raise CollectiveMismatchError(f"recv: rank {src} sent shape {shape} ({dtype_name}), rank {world.rank} "
                                      f"receives into {_layout(target)}; the shapes and dtypes must match")
    value = payload.view(target.dtype).reshape(target.shape)
    if is_tensor(x):
        x.set_value(value.copy())
    else:
        x[...] = value
    return x
