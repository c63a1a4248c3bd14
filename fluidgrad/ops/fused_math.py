"""`exp` and `row_max` for the compiled loops (ops/fused_softmax.py, ops/fused_activation.py).

Why: numba calls the C library's scalar exp for every element (it vectorises exp only with
Intel's SVML, which is not installed here), about ten times slower than NumPy's SIMD exp; and
LLVM does not vectorise a float max reduction without assuming that there are no NaNs. So:
- `exp` compiles to a Cephes-style polynomial (float32: degree 6; float64: a Pade form) with
  its power of two built from the exponent bits: only multiplies, adds and bit operations, so
  a loop over it vectorises. Within 2 ulp of NumPy's; NaN and +-inf kept; results below the
  smallest normal number flush to 0 (NumPy gives subnormals there).
- `row_max` reduces the float bits mapped to integers whose order is the floats' order: an
  integer max reduction vectorises. A row holding a NaN yields NaN (positive NaN) or a number
  (negative NaN); either way every value computed from the row's NaN stays NaN.

The plain Python forms below run when the loops run as Python (`.py_func`); `jit` registers the
compiled forms with numba (once, on the first call of a loop: `import fluidgrad` never imports
numba). numba's disk cache does not notice edits here: clear __pycache__/*.nbi after changing
this file.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from . import accel


def exp(x):
    """e ** x (compiled: the vectorisable polynomial)."""
    return np.exp(x)


def row_max(x, i):
    """The largest value of row i of the 2-D array x."""
    return x[i].max()


def jit(fn: Callable) -> Callable:
    """accel.jit for loops that call `exp` or `row_max`: those are registered before it compiles."""
    compiled = accel.jit(fn)

    @functools.wraps(fn)
    def call(*args):
        _register()
        return compiled(*args)

    call.py_func = fn
    return call


# Cody-Waite reduction x = n ln2 + r (ln2 in two parts) and the Cephes polynomials for exp(r)
_LOG2E = 1.4426950408889634
_LN2_HI32, _LN2_LO32, _BIG32, _SMALL32 = 0.693359375, -2.12194440e-4, 88.72283, -87.33654
_P32 = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
_LN2_HI64, _LN2_LO64 = 6.93145751953125e-1, 1.42860682030941723212e-6
_BIG64, _SMALL64 = 7.09782712893383996843e2, -7.08396418532264106224e2
_P64 = (1.26177193074810590878e-4, 3.02994407707441961300e-2, 9.99999999999999999910e-1)
_Q64 = (3.00198505138664455042e-6, 2.52448340349684104192e-3, 2.27265548208155028766e-1, 2.00000000000000000009e0)


@functools.cache
def _register() -> None:
    """Teach numba the compiled forms of `exp` and `row_max` (needs numba: the `fast` extra)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic, overload

    @intrinsic
    def bits_to_float(typingctx, bits):
        target = {types.int32: (types.float32, ir.FloatType()), types.int64: (types.float64, ir.DoubleType())}
        if bits not in target:
            return None
        out, llvm_type = target[bits]
        return out(bits), lambda context, builder, sig, args: builder.bitcast(args[0], llvm_type)

    @intrinsic
    def float_to_bits(typingctx, value):
        target = {types.float32: (types.int32, ir.IntType(32)), types.float64: (types.int64, ir.IntType(64))}
        if value not in target:
            return None
        out, llvm_type = target[value]
        return out(value), lambda context, builder, sig, args: builder.bitcast(args[0], llvm_type)

    # the polynomial must keep its evaluation order (no reassociation: that would undo the
    # two-step Cody-Waite subtraction); the calling loop's own flags do not reach it
    exact = {"fastmath": {"contract", "nsz"}}
    f32 = np.float32
    p0, p1, p2, p3, p4, p5 = (f32(c) for c in _P32)
    hi32, lo32, big32, small32, log2e32 = f32(_LN2_HI32), f32(_LN2_LO32), f32(_BIG32), f32(_SMALL32), f32(_LOG2E)

    def exp32(x):
        n = np.floor(x * log2e32 + f32(0.5))
        r = x - n * hi32
        r = r - n * lo32
        p = ((((p0 * r + p1) * r + p2) * r + p3) * r + p4) * r + p5
        y = p * r * r + r + f32(1)
        k = np.int32(min(max(n, f32(-126)), f32(128)))
        half = k >> 1                         # 2^k as two normal powers of two (k may be 128)
        y = y * bits_to_float(np.int32((half + 127) << 23)) * bits_to_float(np.int32((k - half + 127) << 23))
        y = f32(0) if x < small32 else y
        y = f32(np.inf) if x > big32 else y
        return x if x != x else y

    (a0, a1, a2), (b0, b1, b2, b3) = _P64, _Q64

    def exp64(x):
        n = np.floor(x * _LOG2E + 0.5)
        r = x - n * _LN2_HI64
        r = r - n * _LN2_LO64
        rr = r * r
        px = r * ((a0 * rr + a1) * rr + a2)
        qx = ((b0 * rr + b1) * rr + b2) * rr + b3
        y = 1.0 + 2.0 * (px / (qx - px))
        k = np.int64(min(max(n, -1022.0), 1024.0))
        half = k >> 1
        y = y * bits_to_float(np.int64((half + 1023) << 52)) * bits_to_float(np.int64((k - half + 1023) << 52))
        y = 0.0 if x < _SMALL64 else y
        y = np.inf if x > _BIG64 else y
        return x if x != x else y

    @overload(exp, jit_options=exact)
    def _exp(x):
        return {types.float32: exp32, types.float64: exp64}.get(x)

    # float bits -> integers in the floats' order: b ^ ((b >> 31) & 0x7fffffff) flips the
    # magnitude bits of negative floats; the map is its own inverse
    def row_max32(x, i):
        b = float_to_bits(x[i, 0])
        best = b ^ ((b >> np.int32(31)) & np.int32(0x7FFFFFFF))
        for j in range(x.shape[1]):
            b = float_to_bits(x[i, j])
            key = b ^ ((b >> np.int32(31)) & np.int32(0x7FFFFFFF))
            best = best if best >= key else key
        return bits_to_float(np.int32(best ^ ((best >> np.int32(31)) & np.int32(0x7FFFFFFF))))

    def row_max64(x, i):
        mask = np.int64(0x7FFFFFFFFFFFFFFF)
        b = float_to_bits(x[i, 0])
        best = b ^ ((b >> np.int64(63)) & mask)
        for j in range(x.shape[1]):
            b = float_to_bits(x[i, j])
            key = b ^ ((b >> np.int64(63)) & mask)
            best = best if best >= key else key
        return bits_to_float(np.int64(best ^ ((best >> np.int64(63)) & mask)))

    @overload(row_max, jit_options=exact)
    def _row_max(x, i):
        if isinstance(x, types.Array) and x.ndim == 2:
            return {types.float32: row_max32, types.float64: row_max64}.get(x.dtype)
        return None
