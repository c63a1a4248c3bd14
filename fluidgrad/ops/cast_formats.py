"""Casts into the 8-bit float formats with ONNX's semantics (the `cast` op's kernel).

NumPy's `astype` (through ml_dtypes) rounds to nearest even and sends values beyond the format's
largest finite value to NaN (or to Inf for float8_e5m2): ONNX's `saturate=0`. ONNX's default,
`saturate=1`, clamps them (Inf included) to the largest finite value instead, which is what
quantisation wants. float8_e8m0fnu (a power of two: an exponent alone) rounds as `round_mode`
says: "up" (ONNX's default), "down" or "nearest", on the float32 bits.
"""
from __future__ import annotations

import numpy as np

LARGEST = {"float8_e4m3fn": 448.0, "float8_e4m3fnuz": 240.0, "float8_e5m2": 57344.0, "float8_e5m2fnuz": 57344.0}
ROUND_MODES = ("up", "down", "nearest")


def cast(x: np.ndarray, dtype: str, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    if saturate and dtype in LARGEST:
        return _saturate(x, dtype)
    if dtype == "float8_e8m0fnu":
        return _to_e8m0(x, saturate, round_mode)
    return x.astype(dtype, copy=False)


def _saturate(x: np.ndarray, dtype: str) -> np.ndarray:
    if x.dtype.kind not in "fiub":  # bfloat16 and the other ml_dtypes floats clip in float32
        x = x.astype(np.float32)
    return np.clip(x, -LARGEST[dtype], LARGEST[dtype]).astype(dtype)


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """The float32 exponent, rounded by the mantissa bits; NaN and Inf give the NaN code 0xFF."""
    if round_mode not in ROUND_MODES:
        raise ValueError(f"op cast: round_mode must be one of {ROUND_MODES}, got {round_mode!r}")
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = exponent == 0xFF
    if round_mode == "up":
        round_up = (bits & 0x7FFFFF) > 0
    elif round_mode == "nearest":
        guard, rest = (bits & 0x400000) > 0, (bits & 0x3FFFFF) > 0
        round_up = guard & (rest | (exponent > 0))
    else:
        round_up = np.zeros(bits.shape, bool)
    round_up &= ~special
    if saturate:
        round_up &= exponent != 0xFE  # the largest exponent stays (no overflow into NaN)
    exponent = np.where(special, 0xFF, exponent + round_up).astype(np.uint8)
    return exponent.view("float8_e8m0fnu")
