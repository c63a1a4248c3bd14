"""How `fluidgrad launch` runs a rank's Python script: `python -m fluidgrad.distributed.run_script
train.py ARGS` runs it as `python train.py ARGS` would (the same `sys.argv`, `sys.path[0]` the
script's folder, `__name__ == "__main__"`, tracebacks starting in the script), in a frame that
sees how the script really ends, so that the launcher names a rank with its real exit status.

A `sys.exit(3)` that the script catches (argparse, a framework's own handling) ended nothing: the
status noted when it was raised is dropped when the script ends normally, and a `SystemExit`
raised without `sys.exit` is noted as it leaves the script. `os._exit(status)` skips every exit
handler: here it first leaves the rank's exit mark (ops/comm.py: `World.mark_exit`) and a note
that the exit skipped MPI's finalisation (`rank<r>.os_exit` in `$FLUIDGRAD_LAUNCH_DIR`), so the
launcher can name that rank when MPI then stops the others. Only for a rank that joined the job
(`fluidgrad.distributed.init_parallel_env()` or any collective); a program given after `--` runs
as it is.
"""
from __future__ import annotations

import builtins
import importlib.machinery
import io
import os
import sys
import types
from types import TracebackType
from typing import Any

from ..ops.comm import current_world

_os_exit = os._exit
_PID = os.getpid()


def _note_status(status: Any) -> None:
    """What the rank's exit mark will say (None: it ended normally, status 0)."""
    world = current_world()
    if world is not None:
        world.exit_status = status


def _exit_noting_status(status: int) -> None:
    """os._exit, leaving the exit mark and the os._exit note first (this process only: a forked
    child's os._exit is not the rank's)."""
    world = current_world()
    if world is not None and world.launch_dir is not None and os.getpid() == _PID:
        try:
            (world.launch_dir / f"rank{world.rank}.os_exit").write_text(str(status))
            world.exit_status = status
            world.mark_exit()
        except OSError:  # the launcher's folder is gone: it has stopped the job already
            pass
    _os_exit(status)


def _from_the_script(tb: TracebackType | None, script: str) -> TracebackType | None:
    """The traceback from the script's first frame on (without this module's)."""
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    return tb


def _execute(path: str) -> None:
    """The script as the module `__main__`, as Python runs it (pdb does the same)."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __builtins__=builtins, __cached__=None,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path))
    sys.modules["__main__"] = main
    with io.open_code(path) as f:
        code = compile(f.read(), path, "exec")
    exec(code, main.__dict__)


def run(script: str, args: list[str]) -> None:
    path = os.path.abspath(script)  # (Python's __file__ and tracebacks of a script are absolute)
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    os._exit = _exit_noting_status
    try:
        _execute(path)
    except SystemExit as exc:
        _note_status(exc.code)
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # Python's own ending, with the traceback from the script on
        tb = _from_the_script(exc.__traceback__, path)
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        raise SystemExit(1) from None
    _note_status(None)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m fluidgrad.distributed.run_script SCRIPT.py [ARGS]")
    run(sys.argv[1], sys.argv[2:])
