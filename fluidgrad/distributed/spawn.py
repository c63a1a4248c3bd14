"""`spawn(func, args=(), nprocs=N)`: run `func(*args)` on N ranks from an ordinary Python process
(Paddle 2's `paddle.distributed.spawn`; `pass_rank=True` calls `func(rank, *args)`, as PyTorch's
`torch.multiprocessing.spawn`).

The ranks are started through `fluidgrad launch` (MPI's launcher from the `dist` extra), each
running spawn_rank.py: it imports `func` by module and qualified name (a function defined in the
script being run is found by loading that script as `__mp_main__`, as Python's multiprocessing
does, so its `if __name__ == "__main__":` part does not run again), joins the job and calls it.
So `func` must be importable: a lambda or a function defined inside another is refused. A rank
that raises or dies makes `spawn` raise `RankFailedError` naming it (the launcher's own report,
within the launcher's bounded time); each rank's output passes through as it comes.
"""
from __future__ import annotations

import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..ops.comm import RankFailedError, launched
from .launch import run_job

_OPTIONS = ("threads", "timeout")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding this fluidgrad


def _where(func: Callable[..., Any]) -> tuple[str, str, str | None]:
    """(module, qualified name, the script's path when the module is __main__)."""
    module, name = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
    if not callable(func) or module is None or name is None:
        raise TypeError(f"spawn: func must be a function defined at the top level of a module, got {func!r}")
    if "<lambda>" in name or "<locals>" in name:
        raise ValueError(f"spawn: func {name} cannot be found by the new ranks (each imports it by module and "
                         f"name): a lambda or a function defined inside another is not importable; define it at "
                         f"the top level of a module or of the script")
    path = None
    if module == "__main__":
        path = getattr(sys.modules["__main__"], "__file__", None)
        if path is None:
            raise ValueError(f"spawn: func {name} is defined in an interactive session; the new ranks import it, "
                             f"so define it in a module or a script file")
        path = str(Path(path).resolve())
    return module, name, path


class SpawnContext:
    """What `spawn(..., join=False)` returns: `join(timeout=None)` waits (True once every rank
    ended; False if `timeout` seconds passed first) and raises if a rank failed."""

    def __init__(self, name: str, nprocs: int, command: list[str], options: dict[str, Any], payload: Path) -> None:
        self.name, self.nprocs, self._payload = name, nprocs, payload
        self._result: tuple[int, str] | None = None
        self._thread = threading.Thread(target=self._run, args=(command, options), daemon=True)
        self._thread.start()

    def _run(self, command: list[str], options: dict[str, Any]) -> None:
        try:
            self._result = run_job(self.nprocs, command, options.get("threads", 1), timeout=options.get("timeout"))
        except Exception as exc:  # noqa: BLE001 (reported by join)
            self._result = (1, f"the launcher failed: {type(exc).__name__}: {exc}")
        finally:
            self._payload.unlink(missing_ok=True)

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        status, failure = self._result
        if status != 0:
            raise RankFailedError(f"spawn({self.name}): {failure or f'the job exited with status {status}'}")
        return True


def spawn(func: Callable[..., Any], args: Sequence[Any] = (), nprocs: int = -1, join: bool = True,
          daemon: bool = False, pass_rank: bool = False, **options: Any) -> SpawnContext:
    """Run `func(*args)` (`pass_rank`: `func(rank, *args)`) on `nprocs` ranks (-1: one per core
    this process may use) and wait for them (`join=False`: return at once; `.join()` waits).
    `args` must be picklable. Options: `threads` (BLAS threads per rank, default 1), `timeout`
    (seconds a rank may wait in one collective). Returns the context (joined)."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"spawn: unknown options {unknown}; fluidgrad's spawn takes {list(_OPTIONS)}")
    if launched():
        raise RuntimeError("spawn starts ranks of its own: call it from a process that no MPI launcher started "
                           "(this one is a rank of a launched job already)")
    if nprocs == -1:
        nprocs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    nprocs = int(nprocs)
    if nprocs < 1:
        raise ValueError(f"spawn: nprocs must be at least 1 (or -1: one per core), got {nprocs}")
    module, name, path = _where(func)
    try:  # (pickled apart: the ranks load func's module before they unpickle what may refer to it)
        pickled_args = pickle.dumps(tuple(args))
    except Exception as exc:
        raise TypeError(f"spawn: args must be picklable (each rank gets a copy): {type(exc).__name__}: {exc}") from None
    with tempfile.NamedTemporaryFile("wb", prefix="fluidgrad-spawn-", suffix=".pkl", delete=False) as f:
        pickle.dump({"module": module, "name": name, "path": path, "args": pickled_args, "pass_rank": pass_rank,
                     "sys_path": list(sys.path)}, f)
    bootstrap = (f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
                 f"from fluidgrad.distributed.spawn_rank import main; main(sys.argv[1])")
    command = ["--", sys.executable, "-c", bootstrap, f.name]
    context = SpawnContext(name, nprocs, command, options, Path(f.name))
    if join:
        context.join()
    return context
