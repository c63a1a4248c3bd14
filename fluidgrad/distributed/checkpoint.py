"""Checkpoints in data-parallel training: rank 0 writes (atomically), every rank may read.

Parameters are the same on every rank, so one copy is the checkpoint; it does not depend on
the world size and loads in a job of any size (or in a single process). Saving is collective:
call it on every rank (not under `if rank == 0`); rank 0 writes, the others wait at a barrier
until the file is complete, so any rank may read it right after.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
from safetensors.numpy import load as read_arrays

from ..executor import Scope
from ..framework import Program
from ..io import load as load_program
from ..io import save as save_program
from ..ops.comm import get_world
from ..serialization import CheckpointError
from ..serialization import load as load_state
from ..serialization import save as save_state


def save(program: Program | None, path: str | os.PathLike, scope: Scope | None = None) -> None:
    """Static mode: `fluidgrad.io.save` (the program and its persistable values: parameters
    and optimizer state, complete even with `sharding=True`) on rank 0, then a barrier."""
    world = get_world()
    if world.rank == 0:
        save_program(program, path, scope)
    world.barrier()


def load(program: Program | None, path: str | os.PathLike, executor: Any = None, scope: Scope | None = None) -> None:
    """Static mode: every rank loads the same file (`fluidgrad.io.load`), whatever the world
    size that wrote it."""
    load_program(program, path, executor, scope)


def save_state_dict(state: Any, path: str | os.PathLike) -> None:
    """Eager mode: `fluidgrad.save(state, path)` on rank 0, then a barrier. `state` is what
    `fluidgrad.save` takes: a layer's or an optimizer's state dict, or a dict of them."""
    world = get_world()
    if world.rank == 0:
        save_state(_scalars_as_arrays(state), path)
    world.barrier()


def _scalars_as_arrays(state: Any) -> Any:
    """NumPy scalars as 0-D arrays, so that they come back with their dtype and shape `()`
    (`fluidgrad.save` alone stores them as Python numbers)."""
    if isinstance(state, np.generic):
        return np.asarray(state)
    if isinstance(state, dict):
        return {key: _scalars_as_arrays(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_scalars_as_arrays(value) for value in state)
    return state


def load_state_dict(path: str | os.PathLike) -> Any:
    """What `save_state_dict` wrote (`fluidgrad.load`: Tensors as Tensors), for
    `layer.set_state_dict` / `optimizer.set_state_dict`; a plain safetensors file of arrays
    (what earlier versions wrote) reads as a dict of arrays."""
    try:
        return load_state(path)
    except CheckpointError:
        try:
            with open(path, "rb") as f:
                return dict(read_arrays(f.read()))
        except Exception:
            raise CheckpointError(f"load_state_dict: {path} is not a checkpoint written by save_state_dict "
                                  f"or fluidgrad.save") from None

