"""What each rank of `spawn` runs (spawn.py): load the function by module and name, join the
job, call it. A function of the script that called `spawn` is found by loading that script as
module `__mp_main__` (also made `__main__`, so pickled arguments referring to it load), as Python's
multiprocessing does: its `if __name__ == "__main__":` part does not run again."""
from __future__ import annotations

import importlib
import importlib.util
import pickle
import sys
from typing import Any

from .collective import get_rank, init_parallel_env


def _load_module(module: str, path: str | None) -> Any:
    if module != "__main__":
        return importlib.import_module(module)
    spec = importlib.util.spec_from_file_location("__mp_main__", path)
    main_module = importlib.util.module_from_spec(spec)
    sys.modules["__mp_main__"] = sys.modules["__main__"] = main_module
    spec.loader.exec_module(main_module)
    return main_module


def main(payload_path: str) -> None:
    with open(payload_path, "rb") as f:
        payload = pickle.load(f)
    sys.path[:] = payload["sys_path"]
    init_parallel_env()  # first: from here on a failure is reported and names this rank
    target = _load_module(payload["module"], payload["path"])
    for part in payload["name"].split("."):
        target = getattr(target, part)
    args = pickle.loads(payload["args"])
    if payload["pass_rank"]:
        args = (get_rank(), *args)
    target(*args)
