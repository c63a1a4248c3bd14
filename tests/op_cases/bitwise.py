"""Op cases of fluidgrad/ops/bitwise.py: shifts and bitcast (integer results, no gradient)."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import ints, rand


def _python_shift(left, arithmetic=True):
    """Reference built from Python integers: out-of-range shifts give 0, or the sign when
    shifting a signed value right arithmetically (the ONNX reference's rule)."""
    def fn(X, Y):
        x, y = np.broadcast_arrays(np.asarray(X), np.asarray(Y))
        bits = np.iinfo(x.dtype).bits
        out = np.empty(x.shape, x.dtype)
        for i, (a, s) in enumerate(zip(x.reshape(-1).tolist(), y.reshape(-1).tolist())):
            if not 0 <= s < bits:
                value = -1 if (not left and arithmetic and a < 0) else 0
            elif left:
                value = (a << s) & ((1 << bits) - 1)
            elif arithmetic:
                value = a >> s
            else:
                value = (a % (1 << bits)) >> s
            value %= 1 << bits
            out.reshape(-1)[i] = np.array(value, dtype=f"u{x.dtype.itemsize}").view(x.dtype)
        return [out]
    return fn


_SIGNED = np.array([[-128, -7, -1, 0], [1, 5, 100, 127]], dtype=np.int8)
_AMOUNTS = np.array([[0, 1, 3, 7], [8, 9, -1, -3]], dtype=np.int8)  # 8 and up, and negatives: outside the width

CASES = [
    OpCase("bitwise_left_shift", {"X": ints(1000, 3, 4) - 500, "Y": ints(20, 4)},
           torch_fn=lambda X, Y: T.bitwise_left_shift(X, Y), grad=False),
    OpCase("bitwise_right_shift", {"X": ints(1000, 3, 4) - 500, "Y": ints(20, 3, 4)},
           torch_fn=lambda X, Y: T.bitwise_right_shift(X, Y), grad=False),
    OpCase("bitwise_left_shift", {"X": _SIGNED, "Y": _AMOUNTS}, id="bitwise_left_shift-int8-outside-width",
           numpy_fn=_python_shift(left=True), grad=False),
    OpCase("bitwise_right_shift", {"X": _SIGNED, "Y": _AMOUNTS}, id="bitwise_right_shift-int8-outside-width",
           numpy_fn=_python_shift(left=False), grad=False),
    OpCase("bitwise_right_shift", {"X": _SIGNED, "Y": _AMOUNTS}, {"is_arithmetic": False},
           id="bitwise_right_shift-logical", numpy_fn=_python_shift(left=False, arithmetic=False), grad=False),
    OpCase("bitwise_right_shift", {"X": np.array([200, 17, 255], dtype=np.uint8), "Y": np.array([1, 4, 9], np.uint8)},
           id="bitwise_right_shift-uint8", numpy_fn=_python_shift(left=False), grad=False),
    OpCase("bitcast", {"X": ints(1 << 20, 3, 4)}, {"dtype": "float64"},
           torch_fn=lambda X: X.view(T.float64), grad=False),
    OpCase("bitcast", {"X": (rand(2, 3) * 100).astype(np.int32)}, {"dtype": "float32"}, id="bitcast-int32",
           torch_fn=lambda X: X.view(T.float32), grad=False),
    OpCase("bitcast", {"X": np.array(-3, dtype=np.int8)}, {"dtype": "uint8"}, id="bitcast-0d",
           numpy_fn=lambda X: [np.asarray(X).view(np.uint8)], grad=False),
]
