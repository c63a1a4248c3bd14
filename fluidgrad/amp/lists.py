"""Which ops auto_cast runs in low precision and which it keeps in float32: Paddle 2's O1 lists
(paddle/amp/amp_lists.py) under fluidgrad's op names.

White: numerically safe and where the time goes (matrix products, convolutions): their float32
inputs are cast to the low-precision dtype. Black: numerically dangerous in float16 (exp, log,
sums and means, softmax, norms, losses) and ops whose effect shows downstream: their
low-precision inputs are cast back to float32. Every other op (gray) runs in the widest float
dtype among its inputs (Paddle's `use_promote`).
"""
from __future__ import annotations

FLOAT16_WHITE = frozenset({"conv1d", "conv2d", "einsum", "matmul", "max_pool2d_with_index"})  # Paddle's conv1d is a conv2d
FLOAT16_BLACK = frozenset({
    "tan", "acos", "asin", "sinh", "cosh", "atanh", "erfinv", "exp", "expm1", "log", "log10", "log2",
    "reciprocal", "rsqrt", "pow", "square", "reduce_sum", "mean", "reduce_mean", "reduce_prod", "cumprod",
    "cumsum", "p_norm", "layer_norm", "softmax", "softplus", "log_softmax", "softmax_with_cross_entropy",
    "cross_entropy",
    # Paddle's EXTRA_BLACK_LIST: their gradients are slower in low precision
    "interpolate", "lookup_table_v2", "scatter",
})
BFLOAT16_WHITE = frozenset({"conv2d", "einsum", "matmul"})
BFLOAT16_BLACK = frozenset({"interpolate", "lookup_table_v2", "scatter"})

LOW_PRECISION = ("float16", "bfloat16")


def white_list(dtype: str = "float16") -> frozenset[str]:
    """The ops run in `dtype` at level O1."""
    return FLOAT16_WHITE if dtype == "float16" else BFLOAT16_WHITE


def black_list(dtype: str = "float16") -> frozenset[str]:
    """The ops kept in float32 at level O1."""
    return FLOAT16_BLACK if dtype == "float16" else BFLOAT16_BLACK
