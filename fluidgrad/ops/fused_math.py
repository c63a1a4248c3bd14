"""`exp` and `row_max` for the compiled loops (ops/fused_softmax.py, ops/fused_activation.py).

Why: numba calls the C library's scalar exp for every element (it vectorises exp only with
Intel's SVML, which is not installed here), about ten times slower than NumPy's SIMD exp; and
LLVM does not vectorise a float max reduction without assuming that there are no NaNs. So:
- `exp` compiles to a Cephes-style polynomial (float32: degree 6; float64: a Pade form) with
  its power of two built from the exponent bits: only multiplies, adds and bit operations, so
  a loop over it vectorises. exp(0) is exactly 1; float32 results are within 1.01 ulp of the
  exact value (NumPy's float32 exp: 2.5) and monotone, float64 ones within 1.8 ulp; NaN and
  +-inf kept; results below about 0.7 times the smallest normal number flush to 0 (NumPy gives
  subnormals there). tests/test_fused_edges.py measures these.
- `row_max` reduces the float bits mapped to integers whose order is the floats' order: an
  integer max reduction vectorises. A row holding a NaN yields NaN (positive NaN) or a number
  (negative NaN); either way every value computed from the row's NaN stays NaN.

The plain Python forms below run when the loops run as Python (`.py_func`); `jit` registers the
compiled forms with numba (once, on the first call of a loop: `import fluidgrad` never imports
numba). numba's disk cache checks only a loop's own file, so `jit` salts each loop's cache key
with this file's hash (accel.jit's `depends_on`): an edit here recompiles the loops that use it.
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
    compiled = accel.jit(fn, depends_on=(__file__,))

    @functools.wraps(fn)
    def call(*args):
        _register()
        return compiled(*args)

    call.py_func = fn
    return call


# Cody-Waite reduction x = n ln2 + r (ln2 in two parts) and the Cephes polynomials for exp(r)
_LOG2E = 1.4426950408889634
_LN2_HI32, _LN2_LO32 = 0.693359375, -2.12194440e-4
_P32 = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
_LN2_HI64, _LN2_LO64 = 6.93145751953125e-1, 1.42860682030941723212e-6
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

    @intrinsic
    def fma(typingctx, a, b, c):
        """a * b + c rounded once (llvm.fma): a call, which the loop's reassociation leaves whole."""
        if not (isinstance(a, types.Float) and a == b == c):
            return None

        def codegen(context, builder, sig, args):
            ty = args[0].type
            return builder.call(builder.module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty] * 3)),
                                args)
        return a(a, b, c), codegen

    # exp(x) = 2^n exp(s), n = round(x / ln2), s = x - n ln2 in [-ln2/2, ln2/2] (Cephes' own
    # reduction: x = 0 gives s = 0 and exactly 1, so a softmax row's largest entry weighs
    # exactly 1 and a log-softmax stays <= 0). 2^n is built from its exponent bits. x is clamped
    # so that n runs from one below the smallest normal exponent (bits 0: the result 0) to one
    # past the largest. That top n (results from just under the float's largest value, up to
    # inf) takes 2^(n-1) and doubles exp(s) by adding 1 to its exponent bits, an integer add:
    # the result stays one product of two factors, which reassociation cannot reorder into an
    # early overflow. So overflow, underflow and +-inf need no branch, and NaN passes through s
    # (`top` is 0 for it). The reduction and the polynomial are fused multiply-adds, which
    # reassociation leaves whole.
    f32 = np.float32
    p0, p1, p2, p3, p4, p5 = (f32(c) for c in _P32)
    hi32, lo32, log2e32 = f32(_LN2_HI32), f32(_LN2_LO32), f32(_LOG2E)

    def exp32(x):
        xc = min(max(x, f32(-88.0)), f32(89.0))
        n = np.floor(fma(xc, log2e32, f32(0.5)))     # -127 .. 128, or NaN
        m = -n
        s = fma(m, lo32, fma(m, hi32, xc))
        p = fma(fma(fma(fma(fma(p0, s, p1), s, p2), s, p3), s, p4), s, p5)
        y = fma(p * s, s, s) + f32(1)
        top = np.int32(n > f32(127))
        y = bits_to_float(np.int32(float_to_bits(y) + (top << 23)))
        k = np.int32(np.fmin(n, f32(127)))             # NaN -> 127 (y is NaN)
        return y * bits_to_float(np.int32((k + 127) << 23))

    (a0, a1, a2), (b0, b1, b2, b3) = _P64, _Q64

    def exp64(x):
        xc = min(max(x, -709.0), 710.0)
        n = np.floor(fma(xc, _LOG2E, 0.5))            # -1023 .. 1024, or NaN
        m = -n
        s = fma(m, _LN2_LO64, fma(m, _LN2_HI64, xc))
        ss = s * s
        ps = s * fma(fma(a0, ss, a1), ss, a2)
        qs = fma(fma(fma(b0, ss, b1), ss, b2), ss, b3)
        y = 1.0 + 2.0 * np.divide(ps, qs - ps)      # np.divide: no zero check, so it vectorises
        top = np.int64(n > 1023.0)
        y = bits_to_float(np.int64(float_to_bits(y) + (top << 52)))
        k = np.int64(np.fmin(n, 1023.0))
        return y * bits_to_float(np.int64((k + 1023) << 52))

    @overload(exp, inline="always")
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

    @overload(row_max)
    def _row_max(x, i):
        if isinstance(x, types.Array) and x.ndim == 2:
            return {types.float32: row_max32, types.float64: row_max64}.get(x.dtype)
        return None
