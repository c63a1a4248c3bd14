"""paddle.static.CompiledProgram: how older Paddle scripts hand a program to the Executor
(`exe.run(CompiledProgram(main), feed=..., fetch_list=...)`). fluidgrad's Executor compiles
every program into a cached plan itself, so a CompiledProgram is the program it wraps; the
Executor runs that program (see Executor.run)."""
from __future__ import annotations

from typing import Any

from ..framework import Program
from ..ops.comm import get_world

__all__ = ["CompiledProgram"]


class CompiledProgram:
    """A Program as `Executor.run` takes it. build_strategy (Paddle's fusion and memory options)
    changes no value: the Executor makes its own plan."""

    def __init__(self, program_or_graph: Program, build_strategy: Any = None) -> None:
        if not isinstance(program_or_graph, Program):
            raise TypeError(f"CompiledProgram: expects a Program, got {type(program_or_graph).__name__}")
        self._program = program_or_graph
        self._build_strategy = build_strategy

    @property
    def program(self) -> Program:
        return self._program

    def with_data_parallel(self, loss_name: str | None = None, build_strategy: Any = None,
                           exec_strategy: Any = None, share_vars_from: Any = None, places: Any = None
                           ) -> "CompiledProgram":
        """One process on one CPU runs the program as it is (Paddle's data parallelism over one
        place); more places or processes are refused: fluidgrad's data parallelism is one process
        per rank, built by fluidgrad.distributed.DistributedOptimizer(optimizer).minimize(loss)
        and started by `fluidgrad launch -n N script.py`."""
        count = 1 if places is None else len(places) if isinstance(places, (list, tuple)) else 1
        if count != 1 or get_world().size != 1:
            raise NotImplementedError(
                f"CompiledProgram.with_data_parallel: {max(count, get_world().size)} places/processes; fluidgrad "
                f"runs data parallelism as one process per rank: minimize with "
                f"fluidgrad.distributed.DistributedOptimizer(optimizer) and start with `fluidgrad launch -n N`")
        return self
