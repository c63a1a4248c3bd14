"""Random tensors (Paddle's `paddle.rand`, `randn`, `randint`, `randperm`, `uniform`, `normal`) and
draws from given probabilities (`multinomial`, `bernoulli`).

They draw from the generator `fluidgrad.seed` resets (or a program's `random_seed`, or their own
non-zero `seed`; see ops/random.py). Like `fluidgrad.full` they return Tensors, except inside
`program_guard` (or after `enable_static()`), where they append an op that draws on every run.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..dispatch import apply_op
from ..framework import normalize_dtype
from ..functions import full_like
from ..framework.dtypes import get_default_dtype
from ..framework.sizes import checked_sizes
from ..framework.torch_forms import created, sizes_and_dtype
from ..indexing import create

__all__ = ["bernoulli", "multinomial", "rand", "randn", "standard_normal", "randint", "randperm", "uniform", "normal",
           "rand_like", "randn_like"]


def _sizes(caller: str, shape: Any) -> list[int]:
    return [int(d) for d in checked_sizes(caller, shape)]


def _float_dtype(caller: str, dtype: Any) -> str:
    name = normalize_dtype(dtype or get_default_dtype())
    if name not in ("float16", "bfloat16", "float32", "float64"):
        raise TypeError(f"{caller}: dtype must be a floating type, got {name}")
    return name


def uniform(shape: Sequence[int], dtype: Any = None, min: float = -1.0, max: float = 1.0, seed: int = 0,
            name: str | None = None) -> Any:
    """Values drawn uniformly from [min, max)."""
    if not min < max:
        raise ValueError(f"uniform: min ({min}) must be less than max ({max})")
    return create("uniform_random", {"shape": _sizes("uniform", shape), "dtype": _float_dtype("uniform", dtype),
                                     "min": float(min), "max": float(max), "seed": int(seed)})


def rand(*size: Any, shape: Any = None, dtype: Any = None, name: str | None = None, device: Any = None,
         requires_grad: bool = False) -> Any:
    """Values drawn uniformly from [0, 1): rand([2, 3], dtype) (Paddle) or rand(2, 3, dtype=...) (PyTorch)."""
    shape, dtype = sizes_and_dtype("rand", size, dtype, shape)
    out = create("uniform_random", {"shape": _sizes("rand", shape), "dtype": _float_dtype("rand", dtype),
                                    "min": 0.0, "max": 1.0, "seed": 0})
    return created(out, "rand", device, requires_grad)


def normal(mean: float = 0.0, std: float = 1.0, shape: Sequence[int] | None = None, name: str | None = None) -> Any:
    """Values drawn from the normal distribution N(mean, std^2), of the default float dtype (numbers only: a Tensor
    mean or std per element is not supported)."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (mean, std)):
        raise TypeError(f"normal: mean and std must be numbers, got {type(mean).__name__} and {type(std).__name__}")
    if std < 0:
        raise ValueError(f"normal: std must be >= 0, got {std}")
    return create("gaussian_random", {"shape": _sizes("normal", [1] if shape is None else shape),
                                      "dtype": get_default_dtype(), "mean": float(mean), "std": float(std), "seed": 0})


def randn(*size: Any, shape: Any = None, dtype: Any = None, name: str | None = None, device: Any = None,
          requires_grad: bool = False) -> Any:
    """Values drawn from the standard normal distribution: randn([2, 3], dtype) or randn(2, 3, dtype=...)."""
    shape, dtype = sizes_and_dtype("randn", size, dtype, shape)
    out = create("gaussian_random", {"shape": _sizes("randn", shape), "dtype": _float_dtype("randn", dtype),
                                     "mean": 0.0, "std": 1.0, "seed": 0})
    return created(out, "randn", device, requires_grad)


standard_normal = randn


def randn_like(x: Any, dtype: Any = None, name: str | None = None, *, device: Any = None,
               requires_grad: bool = False) -> Any:
    """randn of x's shape and (float) dtype (torch.randn_like: the noise of VAEs and diffusion)."""
    return randn(list(x.shape), dtype=dtype or x.dtype, device=device, requires_grad=requires_grad)


def rand_like(x: Any, dtype: Any = None, name: str | None = None, *, device: Any = None,
              requires_grad: bool = False) -> Any:
    """rand of x's shape and (float) dtype (torch.rand_like)."""
    return rand(list(x.shape), dtype=dtype or x.dtype, device=device, requires_grad=requires_grad)


def randint(low: int = 0, high: Any = None, shape: Any = (1,), dtype: Any = None, name: str | None = None, *,
            size: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Integers drawn uniformly from [low, high) (from [0, low) when `high` is None), int64 by
    default: Paddle's randint(low, high, shape) and PyTorch's randint(low, high, size) /
    randint(high, size) (a sequence second is the size) / size=."""
    if high is not None and not isinstance(high, (int, np.integer)):   # torch's randint(high, size)
        if size is not None or shape != (1,):
            raise TypeError(f"randint: high must be an integer, got {high!r}")
        low, high, size = 0, low, high
    if size is not None:
        if shape != (1,):
            raise TypeError("randint: give the shape once, as shape= (Paddle) or size= (PyTorch)")
        shape = size
    if high is None:
        low, high = 0, low
    if not int(low) < int(high):
        raise ValueError(f"randint: low ({low}) must be less than high ({high})")
    name_ = normalize_dtype(dtype or "int64")
    if name_ not in ("int32", "int64"):
        raise TypeError(f"randint: dtype must be int32 or int64, got {name_}")
    out = create("randint", {"shape": _sizes("randint", shape), "dtype": name_, "low": int(low),
                             "high": int(high), "seed": 0})
    return created(out, "randint", device, requires_grad)


def randperm(n: int, dtype: Any = "int64", name: str | None = None) -> Any:
    """A random permutation of 0 .. n-1."""
    n, = checked_sizes("randperm", [n], negative="any")
    if n < 0:
        raise ValueError(f"randperm: n must be >= 0, got {n}")
    name_ = normalize_dtype(dtype)
    if name_ not in ("int32", "int64", "float32", "float64"):
        raise TypeError(f"randperm: dtype must be int32, int64, float32 or float64, got {name_}")
    return create("randperm", {"n": int(n), "dtype": name_, "seed": 0})


def multinomial(x: Any, num_samples: int = 1, replacement: bool = False, name: str | None = None) -> Any:
    """num_samples category indices (int64) per row of x (1-D, or 2-D: one distribution per row),
    drawn with probabilities proportional to x's non-negative entries (paddle.multinomial,
    torch.multinomial); without replacement no category repeats within a row."""
    return apply_op("multinomial", {"X": x}, {"num_samples": int(num_samples), "replacement": bool(replacement),
                                              "seed": 0})


def bernoulli(x: Any, p: float | None = None, name: str | None = None) -> Any:
    """1 with probability x (or with probability p everywhere, when given), else 0, per element,
    in x's dtype (paddle.bernoulli, torch.bernoulli). No gradient flows back to x."""
    probabilities = x if p is None else full_like(x, float(p))
    return apply_op("bernoulli", {"X": probabilities}, {"seed": 0})
