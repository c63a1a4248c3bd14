"""Checkpoints in data-parallel training: rank 0 writes (atomically), every rank may read.

Parameters are the same on every rank, so one copy is the checkpoint; it does not depend on
the world size and loads in a job of any size (or in a single process). The other ranks wait
at a barrier until the file is complete.
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..dispatch import is_tensor
from ..executor import Scope
from ..framework import Program
from ..io import atomic_write, c_ordered, load_safetensors
from ..io import load as load_program
from ..io import save as save_program
from ..ops.comm import get_world
from ..serialization import CheckpointError
from ..serialization import load as load_structured
from ..serialization import save as save_structured


def save(program: Program | None, path: str | os.PathLike, scope: Scope | None = None) -> None:
    """Static mode: `fluidgrad.io.save` on rank 0, then a barrier."""
    world = get_world()
    if world.rank == 0:
        save_program(program, path, scope)
    world.barrier()


def load(program: Program | None, path: str | os.PathLike, executor: Any = None, scope: Scope | None = None) -> None:
    """Static mode: every rank loads the same file (`fluidgrad.io.load`)."""
    load_program(program, path, executor, scope)


def save_state_dict(state_dict: dict[str, Any], path: str | os.PathLike) -> None:
    """Eager mode: a state dict (Tensors or arrays) as one safetensors file, written by rank 0."""
    from safetensors.numpy import save as st_save
    world = get_world()
    if world.rank == 0:
        if all(is_tensor(v) or isinstance(v, np.ndarray) for v in state_dict.values()):
            arrays = {k: c_ordered(v.data if is_tensor(v) else v) for k, v in state_dict.items()}
            atomic_write(path, st_save(arrays))
        else:  # nested entries (an optimizer's "LR_Scheduler" dict): fluidgrad.save's structured file
            try:
                save_structured(_as_arrays(state_dict), path)
            except CheckpointError as err:
                raise CheckpointError(f"distributed.save_state_dict: {err}") from None
    world.barrier()


def load_state_dict(path: str | os.PathLike) -> dict[str, Any]:
    """What `save_state_dict` wrote, as arrays (for `layer.set_state_dict`), nested dicts as dicts."""
    with open(path, "rb") as f:
        raw = f.read()
    size = int.from_bytes(raw[:8], "little")
    if "fluidgrad.structure" in (json.loads(raw[8:8 + size]).get("__metadata__") or {}):
        return _as_arrays(load_structured(path))
    return dict(load_safetensors(raw))


def _as_arrays(value: Any) -> Any:
    """Tensors as arrays, through dicts and lists (the optimizer and scheduler states hold both)."""
    if is_tensor(value):
        return value.numpy()
    if isinstance(value, dict):
        return {k: _as_arrays(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_as_arrays(v) for v in value)
    return value
