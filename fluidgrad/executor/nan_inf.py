"""The NaN/Inf check, one test for both modes: the executor's plans call it after each op
when compiled with `check_nan_inf`, the eager engine through its output-check hook."""
from __future__ import annotations

from typing import Any

import numpy as np


def non_finite(value: Any) -> str | None:
    """"NaN" or "Inf" when a float array (or NumPy float scalar) holds one, else None."""
    dtype = getattr(value, "dtype", None)
    if dtype is None or dtype.kind != "f" or np.isfinite(value).all():
        return None
    return "NaN" if np.isnan(value).any() else "Inf"
