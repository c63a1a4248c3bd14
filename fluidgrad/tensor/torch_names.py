"""torch's top-level names for functions fluidgrad has under another name (Paddle's, or so far only
as a Tensor method): `torch.mul(x, y)`, `torch.eq(x, y)`, `torch.div(x, y, rounding_mode='floor')`,
`torch.softmax(x, dim=1)`, `torch.permute(x, (1, 0))`, `torch.narrow(x, 1, 0, 2)`, ...

Each name is the very function the Tensor method of that name is (tensor/torch_methods.py,
torch_everyday.py, torch_arithmetic.py), so `torch.f(x, ...)` and `x.f(...)` agree and differentiate
alike, in both modes; none has math of its own. A name whose torch signature is not the fluidgrad
function's (torch.dropout's third argument is `train`, Paddle's `axis`; torch.conv_transpose2d's
order of groups and dilation; torch.svd's V) is left out rather than given another meaning."""
from __future__ import annotations

from typing import Any, Sequence

from .. import complex_math, functions, linalg
from ..nn import functional as F
from . import composed, everyday, math, search, torch_arithmetic, torch_everyday, torch_methods, torch_scatter

__all__ = [
    # arithmetic and comparison under torch's short names
    "mul", "sub", "div", "true_divide", "eq", "ne", "gt", "ge", "lt", "le", "greater", "less",
    "absolute", "negative", "positive", "sgn", "fix", "float_power", "exp2", "addcmul", "addcdiv",
    "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "arctan2", "clamp_min", "clamp_max",
    "isposinf", "isneginf",
    # shapes and selection
    "permute", "narrow", "movedim", "swapaxes", "swapdims", "select", "unflatten", "ravel", "fliplr", "flipud",
    "msort", "take_along_dim", "argwhere", "scatter_add", "index_copy", "index_fill", "adjoint", "aminmax",
    "mv", "ger", "concatenate", "conj_physical", "view_as_real", "view_as_complex", "is_signed",
    "scatter_reduce", "put",
    # linear algebra torch keeps at the top level too (torch.linalg's are fluidgrad.linalg's)
    "cholesky", "cholesky_solve", "matrix_power", "matrix_exp", "pinverse", "slogdet",
    # nn.functional's, where torch's top-level signature is theirs
    "softmax", "log_softmax", "conv1d", "conv2d", "conv3d", "cosine_similarity", "pairwise_distance",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "celu", "selu", "prelu", "hardshrink", "bilinear",
    "layer_norm", "adaptive_avg_pool1d",
]

mul, true_divide = functions.multiply, functions.divide
sub, div = torch_arithmetic.subtract, torch_methods.div          # alpha= / rounding_mode=
eq, ne, gt, ge = functions.equal, functions.not_equal, functions.greater_than, functions.greater_equal
lt, le, greater, less = functions.less_than, functions.less_equal, functions.greater_than, functions.less_than
absolute, negative, positive = functions.abs, everyday.neg, torch_everyday.positive
sgn, fix = functions.sign, math.trunc
float_power, exp2 = torch_everyday.float_power, torch_everyday.exp2
addcmul, addcdiv = torch_everyday.addcmul, torch_everyday.addcdiv
arccos, arccosh, arcsin, arcsinh = math.acos, math.acosh, math.asin, math.asinh
arctan, arctanh, arctan2 = math.atan, math.atanh, math.atan2
clamp_min, clamp_max = torch_methods.clamp_min, torch_methods.clamp_max
isposinf, isneginf = torch_everyday.isposinf, torch_everyday.isneginf

narrow, movedim = torch_methods.narrow, composed.moveaxis
swapaxes = swapdims = torch_methods.swapaxes
select, unflatten, ravel = torch_everyday.select, torch_everyday.unflatten, torch_everyday.ravel
fliplr, flipud, msort = torch_everyday.fliplr, torch_everyday.flipud, torch_everyday.msort
take_along_dim, argwhere, scatter_add = torch_everyday.take_along_dim, search.nonzero, torch_methods.scatter_add
index_copy, index_fill = torch_everyday.index_copy, torch_everyday.index_fill
adjoint, aminmax, mv = torch_arithmetic.matrix_adjoint, torch_everyday.aminmax, torch_everyday.mv
ger, concatenate = math.outer, functions.concat
conj_physical, view_as_real, view_as_complex = complex_math.conj, complex_math.as_real, complex_math.as_complex
is_signed = torch_everyday.is_signed
scatter_reduce, put = torch_scatter.scatter_reduce, torch_scatter.put

cholesky, cholesky_solve, slogdet = linalg.cholesky, linalg.cholesky_solve, linalg.slogdet
matrix_power, matrix_exp, pinverse = linalg.matrix_power, linalg.matrix_exp, linalg.pinv

softmax, log_softmax = F.softmax, F.log_softmax
conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
cosine_similarity, pairwise_distance = F.cosine_similarity, F.pairwise_distance
pixel_shuffle, pixel_unshuffle, channel_shuffle = F.pixel_shuffle, F.pixel_unshuffle, F.channel_shuffle
celu, selu, prelu, hardshrink = F.celu, F.selu, F.prelu, F.hardshrink
bilinear, layer_norm, adaptive_avg_pool1d = F.bilinear, F.layer_norm, F.adaptive_avg_pool1d


def permute(input: Any, dims: Sequence[int]) -> Any:
    """torch.permute(x, dims): x's axes in the order `dims` (Paddle's transpose(x, perm))."""
    return functions.transpose(input, list(dims))
