"""decorate (paddle.amp.decorate): prepare models and optimizers for a mixed-precision level.

Level O1 leaves both as they are (auto_cast casts per op; parameters stay float32), which is what
Paddle's O1 does too. Level O2 would cast the models' parameters to float16 and give the
optimizers float32 master weights: not supported, refused by name rather than training float16
parameters with float16 updates."""
from __future__ import annotations

from typing import Any


def decorate(models: Any, optimizers: Any = None, level: str = "O1", dtype: str = "float16",
             master_weight: bool | None = None, save_dtype: str | None = None, **_: Any) -> Any:
    """`models` (and `optimizers`, when given: `(models, optimizers)`) ready for `level`."""
    if level not in ("O1", "O2"):
        raise ValueError(f"amp.decorate: level must be 'O1' or 'O2', got {level!r}")
    if level == "O2":
        raise NotImplementedError("amp.decorate: level 'O2' (float16 parameters with float32 master weights in "
                                  "the optimizer) is not supported; use level 'O1' with auto_cast")
    if dtype not in ("float16", "bfloat16"):
        raise ValueError(f"amp.decorate: dtype must be 'float16' or 'bfloat16', got {dtype!r}")
    return models if optimizers is None else (models, optimizers)
