"""More of PyTorch's Tensor methods that training code calls, each a small mapping onto public
functions (so it serves Tensors and Variables and differentiates through their ops): the
hand-written optimizer and EMA updates (`v.addcmul_(g, g, value=1 - b2)`,
`p.addcdiv_(m, denom, value=-lr)`, `ema.lerp_(p, 1 - decay)`), `x.fill_diagonal_(0)`, the
element sizes (`x.element_size()`, `x.nelement()`, `x.itemsize`, `x.nbytes`), `x.select(1, 0)`,
`x.unflatten(1, (2, 3))`, `x.ravel()`, `x.unfold(dim, size, step)`, `x.sum_to_size(...)`,
`x.aminmax(dim=)`, `x.take_along_dim(i, dim)`, `x.mv(v)`, the in-place forms of the elementwise
functions (`x.log_()`, `x.neg_()`, ...), and the function methods torch has and Paddle 2 lacks
(`x.addmm(a, b)`, `x.logaddexp(y)`, `x.nansum(dim=1)`, `x.cummax(dim)`, ...)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import complex_math, functions
from ..dispatch import apply_op
from ..framework import normalize_dtype
from ..framework.dtypes import is_float
from ..indexing import constant
from . import (composed, counting, diagonals, everyday, inplace, linalg, logic, manipulation, math, pieces,
               products, return_types, search, special)
from . import covariance, max_norm, quantiles, runs
from .keywords import paddle_or_torch

MinMax = return_types.aminmax


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def _axis(x: Any, dim: int, what: str) -> int:
    rank = len(x.shape)
    if not -max(rank, 1) <= int(dim) < max(rank, 1):
        raise IndexError(f"{what}: dim {dim} is out of range for {_describe(x)}")
    return int(dim) % max(rank, 1)


# ---- hand-written optimizer updates
def addcmul(x: Any, tensor1: Any, tensor2: Any, *, value: float = 1.0) -> Any:
    """x + value * tensor1 * tensor2 (Adam's second moment: v.addcmul_(g, g, value=1 - beta2))."""
    return functions.add(x, functions.multiply(functions.multiply(tensor1, tensor2), value))


def addcdiv(x: Any, tensor1: Any, tensor2: Any, *, value: float = 1.0) -> Any:
    """x + value * tensor1 / tensor2 (Adam's step: p.addcdiv_(m, v.sqrt() + eps, value=-lr))."""
    return functions.add(x, functions.multiply(functions.divide(tensor1, tensor2), value))


def fill_diagonal(x: Any, fill_value: float, wrap: bool = False) -> Any:
    """x with `fill_value` on its main diagonal (all axes of one size beyond 2-D; a tall matrix
    restarts the diagonal after a blank row with wrap=True, as torch's)."""
    shape = tuple(x.shape)
    if len(shape) < 2 or -1 in shape or (len(shape) > 2 and len(set(shape)) != 1):
        raise ValueError(f"fill_diagonal_: needs a matrix or a tensor whose axes all have one known size, got "
                         f"{_describe(x)}")
    mask = np.zeros(shape, bool)
    if len(shape) == 2:
        np.fill_diagonal(mask, True, wrap=wrap)
    else:
        mask[(np.arange(shape[0]),) * len(shape)] = True
    return search.where(constant(mask, x), functions.full_like(x, fill_value), x)


def index_copy(x: Any, dim: int, index: Any, source: Any) -> Any:
    """x with source's slices written at the 1-D `index` along dim (torch's x.index_copy); the
    gradient reaches x where nothing was written, and source. A negative index is an error (torch's)."""
    return _index_copy(x, dim, index, source, False)


def _index_copy(x: Any, dim: int, index: Any, source: Any, wrap_negative: bool) -> Any:
    axis = _axis(x, dim, "index_copy")
    rank = len(x.shape)
    if len(index.shape) != 1 or len(source.shape) != rank:
        raise ValueError(f"index_copy: index {_describe(index)} must be 1-D and source {_describe(source)} of x's "
                         f"rank ({_describe(x)})")
    shape = [1] * rank
    shape[axis] = -1
    where_to = manipulation.expand_as(functions.reshape(index, shape), source) if rank > 1 else index
    return search._put_along(x, where_to, source, axis, wrap_negative=wrap_negative)


def index_fill(x: Any, dim: int, index: Any, value: Any) -> Any:
    """x with `value` (a number or a one-element tensor) in the slices at `index` along dim; a
    negative index counts from the end (torch's index_fill does, unlike its index_copy)."""
    axis = _axis(x, dim, "index_fill")
    if len(index.shape) != 1:
        raise ValueError(f"index_fill: index {_describe(index)} must be 1-D")
    picked = apply_op("gather", {"X": x, "Index": index}, {"axis": axis, "wrap_negative": True})
    filled = functions.full_like(picked, value) if not hasattr(value, "shape") else \
        functions.add(functions.full_like(picked, 0.0), functions.cast(value, x.dtype))
    return _index_copy(x, axis, index, filled, True)


# ---- sizes
def element_size(x: Any) -> int:
    """The bytes of one element (torch's x.element_size(), x.itemsize)."""
    return int(np.dtype(normalize_dtype(x.dtype)).itemsize) if x.dtype != "bfloat16" else 2


def nbytes(x: Any) -> int:
    """The bytes of all elements (torch's x.nbytes); refused while a size is unknown."""
    if -1 in tuple(x.shape):
        raise ValueError(f"x.nbytes: {_describe(x)} has a size known only at run time")
    return int(np.prod(x.shape, dtype=np.int64)) * element_size(x)


def is_signed(x: Any) -> bool:
    """Whether x's dtype holds negative values (floats and signed integers)."""
    return normalize_dtype(x.dtype) not in ("bool", "uint8")


def is_same_size(x: Any, other: Any) -> bool:
    return tuple(x.shape) == tuple(other.shape)


# ---- shapes
def select(x: Any, dim: int, index: int) -> Any:
    """x indexed at `index` along dim, that axis removed (torch's x.select(1, 0) is x[:, 0])."""
    axis = _axis(x, dim, "select")
    size, index = x.shape[axis], int(index)
    if size >= 0 and not -size <= index < size:
        raise IndexError(f"select: index {index} is out of range for axis {axis} of {_describe(x)}")
    if size < 0 and index < 0:   # counted from an end known only at run time
        return x[(slice(None),) * axis + (index,)]
    start = index + size if index < 0 else index
    return functions.squeeze(functions.slice(x, [axis], [start], [start + 1]), [axis])


def unflatten(x: Any, dim: int, sizes: Any) -> Any:
    """Axis dim split into `sizes` (one may be -1), as torch's x.unflatten(1, (2, 3))."""
    axis = _axis(x, dim, "unflatten")
    sizes = [int(s) for s in sizes]
    shape = list(x.shape)
    return functions.reshape(x, shape[:axis] + sizes + shape[axis + 1:])


def ravel(x: Any) -> Any:
    """x as one axis (of an eager Tensor a view where torch's is one: fluidgrad/views.py)."""
    return functions.reshape(x, [-1])


def unfold(x: Any, dimension: int, size: int, step: int) -> Any:
    """The windows of `size` entries every `step` along `dimension`, as a new last axis (torch's
    x.unfold: [.., L, ..] -> [.., (L - size) // step + 1, .., size]); gathered with
    index_select, so the gradient adds up over overlapping windows."""
    axis = _axis(x, dimension, "unfold")
    length = x.shape[axis] if x.shape else 1
    if size <= 0 or step <= 0 or length < 0 or size > length:
        raise ValueError(f"unfold: size {size} and step {step} must be positive, the size at most axis {axis} of "
                         f"{_describe(x)} (of known length)")
    windows = (length - size) // step + 1
    index = (np.arange(windows)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    if not x.shape:
        return functions.reshape(x, [1])
    picked = search.index_select(x, constant(index.astype("int64"), x), axis)
    shape = list(x.shape)
    picked = functions.reshape(picked, shape[:axis] + [windows, size] + shape[axis + 1:])
    return composed.moveaxis(picked, axis + 1, -1)


def sum_to_size(x: Any, *size: Any) -> Any:
    """x summed down to `size`, a shape x broadcasts from (torch's x.sum_to_size, the reverse of
    expand)."""
    target = [int(s) for s in (size[0] if len(size) == 1 and not isinstance(size[0], (int, np.integer)) else size)]
    shape = list(x.shape)
    lead = len(shape) - len(target)
    if lead < 0 or any(t not in (1, s) for t, s in zip(target, shape[lead:])):
        raise ValueError(f"sum_to_size: {_describe(x)} does not expand from size {target}")
    if lead:
        x = functions.sum(x, list(range(lead)))
    kept = [i for i, (t, s) in enumerate(zip(target, shape[lead:])) if t == 1 and s != 1]
    return functions.sum(x, kept, keepdim=True) if kept else x


def aminmax(x: Any, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """The named pair (min, max) over dim (all entries when None)."""
    return MinMax(math.amin(x, dim, keepdim), math.amax(x, dim, keepdim))


def take_along_dim(x: Any, indices: Any, dim: int | None = None) -> Any:
    """torch's x.take_along_dim(indices, dim): take_along_axis, over the flattened x when dim is None;
    a negative index counts from the end here, as in torch (not in torch.gather / take_along_axis)."""
    if dim is None:
        return search._taken_along(functions.reshape(x, [-1]), functions.reshape(indices, [-1]), 0, True)
    return search._taken_along(x, indices, int(dim), True)


def msort(x: Any) -> Any:
    """x sorted along its first axis."""
    return search.sort(x, 0)


def mv(x: Any, vec: Any) -> Any:
    """The product of the matrix x and the vector vec."""
    if len(x.shape) != 2 or len(vec.shape) != 1:
        raise ValueError(f"mv: needs a matrix and a vector, got {_describe(x)} and {_describe(vec)}")
    return functions.matmul(x, vec)


def float_power(x: Any, exponent: Any) -> Any:
    """x ** exponent in float64 (torch's float_power)."""
    return functions.pow(functions.cast(x, "float64"), functions.cast(exponent, "float64")
                         if hasattr(exponent, "dtype") else float(exponent))


def exp2(x: Any) -> Any:
    """2 ** x elementwise."""
    return functions.pow(2.0, x if is_float(normalize_dtype(x.dtype)) else functions.cast(x, "float32"))


def positive(x: Any) -> Any:
    """+x: x itself."""
    return x


def nelement(x: Any) -> int:
    """The number of elements (torch's x.nelement(), x.numel())."""
    return int(x.size)


def fliplr(x: Any) -> Any:
    """x with axis 1 reversed."""
    return manipulation.flip(x, 1)


def flipud(x: Any) -> Any:
    """x with axis 0 reversed."""
    return manipulation.flip(x, 0)


def isposinf(x: Any) -> Any:
    """Where x is +inf."""
    return functions.logical_and(logic.isinf(x), functions.greater_than(x, 0))


def isneginf(x: Any) -> Any:
    """Where x is -inf."""
    return functions.logical_and(logic.isinf(x), functions.less_than(x, 0))


def swapped(x: Any, dim0: int, dim1: int) -> Any:
    """x with two axes swapped."""
    return x.transpose(int(dim0), int(dim1))


def _cast(dtype: str) -> Callable[[Any], Any]:
    def method(x: Any) -> Any:
        return x if normalize_dtype(x.dtype) == dtype else functions.cast(x, dtype)
    method.__name__ = method.__qualname__ = f"cast_to_{dtype}"
    method.__doc__ = f"x cast to {dtype} (x itself when it has it)."
    return method


def _keywords(fn: Callable[..., Any], **aliases: str) -> Callable[..., Any]:
    """fn, also taking torch's keyword names (dim= for axis=, ...)."""
    aliases = {"dim": "axis", **aliases}

    def method(x: Any, *args: Any, **kwargs: Any) -> Any:
        for torch_name, name in aliases.items():
            if torch_name in kwargs:
                kwargs[name] = paddle_or_torch(fn.__name__, name, kwargs.pop(name, None), torch_name,
                                               kwargs.pop(torch_name))
        return fn(x, *args, **kwargs)
    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    method.__wrapped__ = fn  # type: ignore[attr-defined]
    return method


METHODS: dict[str, Callable[..., Any]] = {
    "addcmul": addcmul, "addcdiv": addcdiv, "element_size": element_size, "nelement": nelement,
    "is_signed": is_signed, "is_same_size": is_same_size, "select": select, "unflatten": unflatten,
    "ravel": ravel, "unfold": unfold, "sum_to_size": sum_to_size, "aminmax": aminmax,
    "take_along_dim": take_along_dim, "index_copy": index_copy, "index_fill": index_fill, "msort": msort, "mv": mv, "float_power": float_power, "exp2": exp2,
    "positive": positive, "fix": math.trunc, "absolute": functions.abs, "sgn": functions.sign,
    "arccos": math.acos, "arcsin": math.asin, "arctan": math.atan, "arctan2": math.atan2, "arccosh": math.acosh,
    "arcsinh": math.asinh, "arctanh": math.atanh, "fliplr": fliplr,
    "flipud": flipud, "argwhere": search.nonzero,
    "byte": _cast("uint8"), "char": _cast("int8"), "short": _cast("int16"), "bfloat16": _cast("bfloat16"),
    "cfloat": _cast("complex64"), "cdouble": _cast("complex128"),
    # functions torch also has as methods (dim= beside axis=)
    "addmm": products.addmm, "baddbmm": products.baddbmm, "dist": products.dist, "inner": products.inner,
    "diag_embed": products.diag_embed,
    "kron": composed.kron, "diff": _keywords(composed.diff), "rot90": _keywords(composed.rot90, dims="axes"),
    "quantile": quantiles.quantile, "logcumsumexp": _keywords(composed.logcumsumexp),
    "logaddexp": everyday.logaddexp, "hypot": everyday.hypot, "nansum": _keywords(everyday.nansum),
    "nanmean": _keywords(everyday.nanmean), "cummax": _keywords(everyday.cummax),
    "cummin": counting.cummin, "nanmedian": counting.nanmedian, "histc": counting.histc, "bincount": everyday.bincount,
    "lgamma": special.lgamma, "digamma": special.digamma, "frac": special.frac, "heaviside": special.heaviside,
    "polygamma": special.polygamma, "take": pieces.take, "tensor_split": pieces.tensor_split,
    "real": complex_math.real, "imag": complex_math.imag, "conj": complex_math.conj,
    "det": linalg.det, "isposinf": isposinf, "isneginf": isneginf,
    "nanquantile": quantiles.nanquantile, "renorm": max_norm.renorm, "unique_consecutive": runs.unique_consecutive,
    "cov": covariance.cov, "corrcoef": covariance.corrcoef,
}
PROPERTIES = {"itemsize": element_size, "nbytes": nbytes}

# in place: x = f(x, ...) written into x (the in-place rules of tensor/inplace.py)
_IN_PLACE_OF = {
    "addcmul_": addcmul, "addcdiv_": addcdiv, "fill_diagonal_": fill_diagonal, "lerp_": composed.lerp,
    "nan_to_num_": composed.nan_to_num, "addmm_": products.addmm, "neg_": everyday.neg, "negative_": everyday.neg,
    "log_": functions.log, "log1p_": math.log1p, "log2_": math.log2, "log10_": math.log10, "expm1_": math.expm1,
    "sin_": functions.sin, "cos_": functions.cos, "tan_": math.tan, "asin_": math.asin, "acos_": math.acos,
    "atan_": math.atan, "sinh_": math.sinh, "cosh_": math.cosh, "erf_": math.erf, "sign_": functions.sign,
    "trunc_": math.trunc, "frac_": special.frac, "fmod_": math.fmod, "remainder_": functions.remainder,
    "atan2_": math.atan2, "hypot_": everyday.hypot, "logit_": math.logit, "tril_": search.tril, "triu_": search.triu,
    "cumsum_": _keywords(math.cumsum), "cumprod_": math.cumprod, "index_put_": search.index_put,
    "renorm_": max_norm.renorm,
    "lgamma_": special.lgamma, "digamma_": special.digamma, "exp2_": exp2, "fix_": math.trunc,
    "absolute_": functions.abs, "float_power_": float_power, "index_copy_": index_copy, "index_fill_": index_fill,
}
IN_PLACE: dict[str, Callable[..., Any]] = {name: inplace._computed(fn, name) for name, fn in _IN_PLACE_OF.items()}
# in place, x's shape changing: t_(), transpose_(0, 1), swapaxes_(0, 1)
RESHAPING: dict[str, Callable[..., Any]] = {
    "t_": inplace._reshaping(diagonals.t, "t_"),
    "transpose_": inplace._reshaping(swapped, "transpose_"),
    "swapaxes_": inplace._reshaping(swapped, "swapaxes_"), "swapdims_": inplace._reshaping(swapped, "swapdims_"),
}
