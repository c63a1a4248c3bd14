"""Transforms of random variables (torch.distributions.transforms, paddle.distribution's
Transform family): y = forward(x), x = inverse(y), log|det dy/dx| = log_abs_det_jacobian(x, y),
composed of registered ops so that TransformedDistribution's rsample and log_prob differentiate.

Both spellings: torch's `t(x)`, `t.inv`, `log_abs_det_jacobian(x, y)`, `domain` / `codomain`
(here only their name and event rank) and `sign`; Paddle's `forward`, `inverse`,
`forward_log_det_jacobian(x)`, `inverse_log_det_jacobian(y)`, `forward_shape`, `inverse_shape`.
A transform that is not a bijection (AbsTransform, SoftmaxTransform) has no Jacobian term: asking
for it is a NotImplementedError naming the transform, as in torch.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..functions import abs, add, concat, divide, exp, full_like, log, multiply, pow, sigmoid, sign, sum, tanh
from ..functions import slice as _slice
from ..functions import max as _max
from ..nn.functional.activation import log_sigmoid, softplus
from ..tensor.math import atanh, clip, cumprod, cumsum, log1p
from .base import as_param, broadcast_shape, is_value, sum_rightmost

__all__ = ["Transform", "AbsTransform", "AffineTransform", "ChainTransform", "ComposeTransform", "ExpTransform",
           "IndependentTransform", "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "StickBreakingTransform",
           "TanhTransform"]


class Space:
    """What torch calls a transform's domain or codomain constraint, reduced to what fluidgrad uses:
    its name, its event rank, and (for validate_args) a test of eager values."""

    def __init__(self, name: str, event_dim: int = 0, check: Callable[[np.ndarray], Any] | None = None) -> None:
        self.name, self.event_dim, self.check = name, int(event_dim), check

    def __repr__(self) -> str:
        return f"{self.name}(event_dim={self.event_dim})"


REAL = Space("real")
POSITIVE = Space("positive", check=lambda v: v > 0)
UNIT_INTERVAL = Space("unit_interval", check=lambda v: (v >= 0) & (v <= 1))
OPEN_SYMMETRIC = Space("interval(-1, 1)", check=lambda v: (v >= -1) & (v <= 1))
REAL_VECTOR = Space("real_vector", 1)
SIMPLEX = Space("simplex", 1, check=lambda v: np.all(v >= 0, -1) & (np.abs(v.sum(-1) - 1) < 1e-6))


def _tensor(x: Any) -> Any:
    return x if is_value(x) else as_param(x)


class Transform:
    """The base: subclasses give _forward, _inverse and, when bijective, _log_abs_det_jacobian."""

    bijective = True
    domain: Space = REAL
    codomain: Space = REAL

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError(f"{type(self).__name__}: cache_size must be 0 or 1, got {cache_size}")
        self._inv: Transform | None = None

    # -- torch's spellings
    def __call__(self, x: Any) -> Any:
        return self.forward(x)

    @property
    def inv(self) -> "Transform":
        """The inverse transform (t.inv.inv is t)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def event_dim(self) -> int:
        return self.domain.event_dim

    @property
    def sign(self) -> Any:
        """+1 or -1 where the transform increases or decreases (monotone transforms only)."""
        raise NotImplementedError(f"{type(self).__name__} is not monotone: it has no sign")

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        """log |dy/dx| at x (y = forward(x)), summed over the domain's event axes."""
        if not self.bijective:
            raise NotImplementedError(f"{type(self).__name__} is not a bijection: it has no log_abs_det_jacobian "
                                      f"(so a TransformedDistribution using it has no log_prob)")
        return self._log_abs_det_jacobian(_tensor(x), _tensor(y))

    # -- Paddle's spellings
    def forward(self, x: Any) -> Any:
        return self._forward(_tensor(x))

    def inverse(self, y: Any) -> Any:
        return self._inverse(_tensor(y))

    def forward_log_det_jacobian(self, x: Any) -> Any:
        return self.log_abs_det_jacobian(x, self.forward(x))

    def inverse_log_det_jacobian(self, y: Any) -> Any:
        return -self.log_abs_det_jacobian(self.inverse(y), y)

    def forward_shape(self, shape: Sequence[int]) -> list[int]:
        return list(shape)

    def inverse_shape(self, shape: Sequence[int]) -> list[int]:
        return list(shape)

    def _forward(self, x: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def _inverse(self, y: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.inverse")

    def _log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.log_abs_det_jacobian")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    """t.inv: forward and inverse exchanged, the Jacobian term negated."""

    def __init__(self, transform: Transform) -> None:
        super().__init__()
        self._inv = transform
        self.bijective = transform.bijective

    @property
    def domain(self) -> Space:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> Space:  # type: ignore[override]
        return self._inv.domain

    @property
    def sign(self) -> Any:
        return self._inv.sign

    def _forward(self, x: Any) -> Any:
        return self._inv.inverse(x)

    def _inverse(self, y: Any) -> Any:
        return self._inv.forward(y)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Sequence[int]) -> list[int]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> list[int]:
        return self._inv.forward_shape(shape)

    def __repr__(self) -> str:
        return f"{self._inv!r}.inv"


class ExpTransform(Transform):
    """y = exp(x)."""
    codomain = POSITIVE
    sign = 1

    def _forward(self, x: Any) -> Any:
        return exp(x)

    def _inverse(self, y: Any) -> Any:
        return log(y)

    def _log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return x


class SigmoidTransform(Transform):
    """y = sigmoid(x); the inverse clips y into the open interval first, as torch's clamp_probs."""
    codomain = UNIT_INTERVAL
    sign = 1

    def _forward(self, x: Any) -> Any:
        return sigmoid(x)

    def _inverse(self, y: Any) -> Any:
        eps = float(np.finfo(y.dtype).eps)
        y = clip(y, eps, 1 - eps)
        return log(y) - log1p(-y)

    def _log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); log|dy/dx| = 2 (log 2 - x - softplus(-2x)), stable for large |x| (torch's form)."""
    codomain = OPEN_SYMMETRIC
    sign = 1

    def _forward(self, x: Any) -> Any:
        return tanh(x)

    def _inverse(self, y: Any) -> Any:
        return atanh(y)

    def _log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    """y = |x|; not a bijection: inverse(y) is y (torch's choice; Paddle's gives (-y, y)), and
    there is no log_abs_det_jacobian."""
    bijective = False
    codomain = POSITIVE

    def _forward(self, x: Any) -> Any:
        return abs(x)

    def _inverse(self, y: Any) -> Any:
        return y


class AffineTransform(Transform):
    """y = loc + scale * x (loc, scale numbers or tensors, broadcast); event_dim: the rightmost
    axes the Jacobian term is summed over."""

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.loc = loc if is_value(loc) or isinstance(loc, (int, float)) else as_param(loc)
        self.scale = scale if is_value(scale) or isinstance(scale, (int, float)) else as_param(scale)
        self._event_dim = int(event_dim)
        self.domain = self.codomain = Space("real" if not event_dim else "real_vector", event_dim)

    @property
    def sign(self) -> Any:
        return (1 if self.scale > 0 else -1 if self.scale < 0 else 0) if isinstance(self.scale, (int, float)) \
            else sign(self.scale)

    def _forward(self, x: Any) -> Any:
        return self.loc + self.scale * x

    def _inverse(self, y: Any) -> Any:
        return (y - self.loc) / self.scale

    def _log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        if isinstance(self.scale, (int, float)):
            result = full_like(x, math.log(math.fabs(self.scale)))
        else:
            result = log(abs(self.scale)) + full_like(x, 0.0)    # broadcast to x's shape, as torch's expand
        return sum_rightmost(result, self._event_dim)

    def forward_shape(self, shape: Sequence[int]) -> list[int]:
        return broadcast_shape("AffineTransform", shape, *[list(getattr(v, "shape", [])) for v in (self.loc, self.scale)])

    inverse_shape = forward_shape

    def __repr__(self) -> str:
        return f"AffineTransform(event_dim={self._event_dim})"


class PowerTransform(Transform):
    """y = x ** exponent on (0, inf) (Paddle's `power`, torch's `exponent`)."""
    domain = codomain = POSITIVE

    def __init__(self, exponent: Any = None, cache_size: int = 0, *, power: Any = None) -> None:
        super().__init__(cache_size)
        if (exponent is None) == (power is None):
            raise TypeError("PowerTransform: give exponent (torch) or power (Paddle), exactly one")
        value = exponent if power is None else power
        self.exponent = value if is_value(value) or isinstance(value, (int, float)) else as_param(value)

    @property
    def power(self) -> Any:
        return self.exponent

    @property
    def sign(self) -> Any:
        return (1 if self.exponent > 0 else -1) if isinstance(self.exponent, (int, float)) else sign(self.exponent)

    def _forward(self, x: Any) -> Any:
        return pow(x, self.exponent)

    def _inverse(self, y: Any) -> Any:
        return pow(y, 1.0 / self.exponent)

    def _log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return log(abs(multiply(divide(y, x), self.exponent)))

    def forward_shape(self, shape: Sequence[int]) -> list[int]:
        return broadcast_shape("PowerTransform", shape, list(getattr(self.exponent, "shape", [])))

    inverse_shape = forward_shape


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last axis; not a bijection (inverse(y) = log(y), one preimage), so
    there is no log_abs_det_jacobian (torch's)."""
    bijective = False
    domain = REAL_VECTOR
    codomain = SIMPLEX

    def _forward(self, x: Any) -> Any:
        probs = exp(x - _max(x, axis=-1, keepdim=True))
        return probs / sum(probs, axis=-1, keepdim=True)

    def _inverse(self, y: Any) -> Any:
        return log(y)


class StickBreakingTransform(Transform):
    """R^K -> the (K+1)-simplex by stick breaking: each coordinate, shifted by log(K - i), takes the
    sigmoid's share of what is left (torch's and Paddle's). A bijection onto the simplex."""
    domain = REAL_VECTOR
    codomain = SIMPLEX

    @staticmethod
    def _log_offsets(x: Any, count: int) -> Any:
        """log(K - i) for i = 0..K-1, as x's dtype, shaped to x's last axis."""
        return as_param(np.log(np.arange(count, 0, -1, dtype=np.float64)), str(x.dtype))

    def _forward(self, x: Any) -> Any:
        count = int(x.shape[-1])
        z = sigmoid(x - self._log_offsets(x, count))
        eps = float(np.finfo(z.dtype).eps)
        z = clip(z, eps, 1 - eps)                                    # torch's _clipped_sigmoid
        left = cumprod(1 - z, dim=-1)
        ones = full_like(_last(z), 1.0)
        return concat([z, ones], axis=-1) * concat([ones, left], axis=-1)

    def _inverse(self, y: Any) -> Any:
        count = int(y.shape[-1]) - 1
        crop = _drop_last(y, count)
        rest = 1 - cumsum(crop, axis=-1)
        rest = clip(rest, float(np.finfo(y.dtype).tiny), None)
        return log(crop) - log(rest) + self._log_offsets(y, count)

    def _log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        count = int(x.shape[-1])
        shifted = x - self._log_offsets(x, count)
        return sum(-shifted + log_sigmoid(shifted) + log(_drop_last(y, count)), axis=-1)

    def forward_shape(self, shape: Sequence[int]) -> list[int]:
        return list(shape[:-1]) + [int(shape[-1]) + 1]

    def inverse_shape(self, shape: Sequence[int]) -> list[int]:
        return list(shape[:-1]) + [int(shape[-1]) - 1]


def _last(x: Any) -> Any:
    return _slice(x, [len(x.shape) - 1], [int(x.shape[-1]) - 1], [int(x.shape[-1])])


def _drop_last(y: Any, count: int) -> Any:
    return _slice(y, [len(y.shape) - 1], [0], [count])


class IndependentTransform(Transform):
    """The base transform with its last `reinterpreted_batch_ndims` axes read as event axes: the
    Jacobian term summed over them (torch's IndependentTransform; Paddle's
    IndependentTransform(base, reinterpreted_batch_rank))."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int | None = None,
                 cache_size: int = 0, *, base: Transform | None = None,
                 reinterpreted_batch_rank: int | None = None) -> None:
        super().__init__(cache_size)
        self.base_transform = base if base is not None else base_transform
        count = reinterpreted_batch_rank if reinterpreted_batch_rank is not None else reinterpreted_batch_ndims
        if not isinstance(count, int) or count < 0:
            raise ValueError(f"IndependentTransform: reinterpreted_batch_ndims must be a non-negative int, got {count!r}")
        self.reinterpreted_batch_ndims = count
        self.bijective = self.base_transform.bijective
        self.domain = Space(self.base_transform.domain.name, self.base_transform.domain.event_dim + count)
        self.codomain = Space(self.base_transform.codomain.name, self.base_transform.codomain.event_dim + count,
                              self.base_transform.codomain.check)

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _forward(self, x: Any) -> Any:
        return self.base_transform.forward(x)

    def _inverse(self, y: Any) -> Any:
        return self.base_transform.inverse(y)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: Sequence[int]) -> list[int]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> list[int]:
        return self.base_transform.inverse_shape(shape)


class ComposeTransform(Transform):
    """parts[-1](...parts[0](x)): torch's ComposeTransform(parts), Paddle's ChainTransform(transforms).
    The Jacobian terms add, each summed over the event axes the composition has at its place."""

    def __init__(self, parts: Sequence[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size)
        parts = list(parts)
        for part in parts:
            if not isinstance(part, Transform):
                raise TypeError(f"{type(self).__name__}: every part must be a Transform, got {type(part).__name__}")
        self.parts = parts
        self.bijective = all(p.bijective for p in parts)
        self.domain, self.codomain = self._spaces()

    @property
    def transforms(self) -> list[Transform]:
        return list(self.parts)

    def _spaces(self) -> tuple[Space, Space]:
        """torch's rule: the event rank each end needs for every part to see its own."""
        if not self.parts:
            return REAL, REAL
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim = max(event_dim - part.codomain.event_dim + part.domain.event_dim, part.domain.event_dim)
        domain = Space(self.parts[0].domain.name, event_dim)
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim - part.domain.event_dim + part.codomain.event_dim, part.codomain.event_dim)
        last = self.parts[-1].codomain
        return domain, Space(last.name, event_dim, last.check)

    @property
    def sign(self) -> Any:
        result: Any = 1
        for part in self.parts:
            result = result * part.sign
        return result

    def _forward(self, x: Any) -> Any:
        for part in self.parts:
            x = part.forward(x)
        return x

    def _inverse(self, y: Any) -> Any:
        for part in reversed(self.parts):
            y = part.inverse(y)
        return y

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        if not self.parts:
            return full_like(_tensor(x), 0.0)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total, event_dim = None, self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            term = sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
            total = term if total is None else add(total, term)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: Sequence[int]) -> list[int]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return list(shape)

    def inverse_shape(self, shape: Sequence[int]) -> list[int]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return list(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}([{', '.join(map(repr, self.parts))}])"


class ChainTransform(ComposeTransform):
    """Paddle's name of ComposeTransform: ChainTransform(transforms)."""

    def __init__(self, transforms: Sequence[Transform], cache_size: int = 0) -> None:
        super().__init__(transforms, cache_size)

