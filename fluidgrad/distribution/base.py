"""The base of fluidgrad.distribution: shapes, parameter conversion, the methods every
distribution derives from its own (`sample` from `rsample`, `prob` from `log_prob`), and the
table of closed-form KL divergences that kl.py fills and register_kl extends.

A distribution is a few Tensors (or Variables) and formulas composed of registered ops, so
gradients flow into its parameters in both modes, and draws come from the generator that
`fluidgrad.seed` resets (a seeded Program's in static mode)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..eager import Tensor, no_grad, to_tensor
from ..framework import Variable
from ..framework.dtypes import get_default_dtype
from ..functions import cast, exp, log, sigmoid, sqrt, sum, zeros_like
from ..tensor.manipulation import broadcast_to
from ..tensor.math import clip, log1p
from ..tensor.search import where


def is_value(x: Any) -> bool:
    return isinstance(x, (Tensor, Variable))


def binary_probs_and_logits(name: str, probs: Any, logits: Any) -> tuple[Any, Any]:
    """(probs, logits) of a two-outcome law given exactly one of them: probs clipped by the
    dtype's eps before log-odds (torch's probs_to_logits(is_binary=True)), or sigmoid(logits)."""
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: give exactly one of probs and logits")
    if logits is not None:
        logits = as_param(logits)
        return sigmoid(logits), logits
    probs = as_param(probs)
    eps = float(np.finfo(probs.dtype).eps)
    clipped = clip(probs, eps, 1 - eps)
    return probs, log(clipped) - log1p(-clipped)


def as_param(value: Any, dtype: str | None = None) -> Any:
    """A Tensor or Variable as it is (cast to `dtype` when given and different); numbers, lists and
    arrays become a Tensor of `dtype`, else of the default float dtype."""
    if is_value(value):
        return value if dtype is None or value.dtype == dtype else cast(value, dtype)
    return to_tensor(np.asarray(value, dtype=dtype or get_default_dtype()))


def broadcast_shape(owner: str, *shapes: Sequence[int]) -> list[int]:
    """NumPy's broadcast of the shapes; -1 (unknown in a Program) meets only 1, -1 or itself."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for sizes in zip(*[[1] * (rank - len(s)) + list(s) for s in shapes]):
        known = {int(d) for d in sizes} - {1, -1}
        if len(known) > 1:
            raise ValueError(f"{owner}: the shapes {[list(s) for s in shapes]} do not broadcast together")
        out.append(known.pop() if known else (-1 if -1 in sizes else 1))
    return out


def params(owner: str, *values: Any) -> list[Any]:
    """The parameters converted to one dtype (the first Tensor's, else the default float) and
    broadcast to one shape, as torch.distributions' broadcast_all."""
    dtype = next((v.dtype for v in values if is_value(v)), None)
    tensors = [as_param(v, dtype) for v in values]
    shape = broadcast_shape(owner, *[t.shape for t in tensors])
    return [t if list(t.shape) == shape else broadcast_to(t, shape) for t in tensors]


def positive(owner: str, name: str, value: Any) -> None:
    """Refuse a non-positive scale / probability sum in eager mode (a Program's values come later)."""
    check(owner, name, value, lambda v: v > 0, "positive")


def check(owner: str, name: str, value: Any, ok: Callable[[np.ndarray], np.ndarray], what: str) -> None:
    """Refuse a parameter some of whose values fail `ok` (eager only: a Program's values come
    later), naming the distribution, the argument and the rule: torch's validate_args."""
    if isinstance(value, Tensor):
        values = value.numpy()
        if not np.all(ok(values)):
            raise ValueError(f"{owner}: {name} must be {what}, got {values} (shape {list(values.shape)})")


class Distribution:
    """batch_shape: independent distributions side by side; event_shape: the shape of one draw.

    validate_args (torch's; default `Distribution.set_default_validate_args`, True): in eager
    mode, parameters outside their domain and log_prob values outside the support are a
    ValueError naming the distribution and the argument. `_arg_ranks` names the constructor
    arguments `expand` rebuilds the distribution from, with their event ranks."""

    has_rsample = False
    _validate_default = True
    _arg_ranks: dict[str, int] = {}

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = [int(d) for d in batch_shape]
        self._event_shape = [int(d) for d in event_shape]
        self._validate_args = Distribution._validate_default if validate_args is None else bool(validate_args)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions made afterwards (torch's name)."""
        Distribution._validate_default = bool(value)

    def _check_value(self, value: Any, ok: Callable[[np.ndarray], np.ndarray], support: str) -> None:
        """Refuse log_prob / cdf values outside the support (eager, with validate_args)."""
        if self._validate_args and isinstance(value, Tensor) and not np.all(ok(value.numpy())):
            raise ValueError(f"{type(self).__name__}: value must lie in the support ({support}), got "
                             f"{value.numpy()} (shape {list(value.shape)})")

    @property
    def mean(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def variance(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> Any:
        return sqrt(self.variance)

    def entropy(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.entropy")

    def cdf(self, value: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> "Distribution":
        """The same distribution repeated to `batch_shape` (torch's expand): its parameters broadcast."""
        if not self._arg_ranks:
            raise NotImplementedError(f"{type(self).__name__} has no expand")
        batch_shape = [int(d) for d in ([batch_shape] if isinstance(batch_shape, int) else batch_shape)]
        broadcast_shape(f"{type(self).__name__}.expand", self._batch_shape, batch_shape)
        arguments = {}
        for name, rank in self._arg_ranks.items():
            value = getattr(self, name)
            shape = batch_shape + list(value.shape[len(value.shape) - rank:])
            arguments[name] = value if list(value.shape) == shape else broadcast_to(value, shape)
        return type(self)(**arguments, validate_args=False)

    @property
    def batch_shape(self) -> list[int]:
        return list(self._batch_shape)

    @property
    def event_shape(self) -> list[int]:
        return list(self._event_shape)

    def _extended_shape(self, shape: Sequence[int] = ()) -> list[int]:
        if isinstance(shape, int):
            shape = [shape]
        return [int(d) for d in shape] + self._batch_shape + self._event_shape

    def rsample(self, shape: Sequence[int] = ()) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample (rsample); use sample")

    def sample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """Draws of shape `shape + batch_shape + event_shape`, outside the graph (no gradient)."""
        with no_grad():
            return self.rsample(shape if sample_shape is None else sample_shape).detach()

    def log_prob(self, value: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.log_prob")

    def prob(self, value: Any) -> Any:
        """The density (or mass) at value: exp(log_prob(value)) (paddle's Distribution.prob)."""
        return exp(self.log_prob(value))

    def kl_divergence(self, other: "Distribution") -> Any:
        """KL(self || other), as fluidgrad.distribution.kl_divergence (paddle's method)."""
        return kl_divergence(self, other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_shape={self._batch_shape}, event_shape={self._event_shape})"


# ---------------------------------------------------------------- the table of closed-form KL divergences (kl.py fills it)
_KL: dict[tuple[type, type], Callable[[Any, Any], Any]] = {}


def register_kl(p_type: type, q_type: type) -> Callable:
    """Decorator: `@register_kl(P, Q) def kl(p, q): ...` (torch's and paddle's name)."""
    def register(function: Callable) -> Callable:
        _KL[(p_type, q_type)] = function
        return function
    return register


def kl_divergence(p: Any, q: Any) -> Any:
    """KL(p || q), per batch element."""
    for (p_type, q_type), function in _KL.items():
        if isinstance(p, p_type) and isinstance(q, q_type):
            return function(p, q)
    raise NotImplementedError(f"kl_divergence: no formula for {type(p).__name__} || {type(q).__name__} "
                              f"(known pairs: {', '.join(f'{a.__name__}-{b.__name__}' for a, b in _KL)}); "
                              f"add one with register_kl")


# ---------------------------------------------------------------- pieces the families share
def draw_shape(shape: Sequence[int] | int, sample_shape: Sequence[int] | None) -> Sequence[int]:
    """The sample shape of rsample(shape) or rsample(sample_shape=...) (torch's keyword)."""
    return shape if sample_shape is None else sample_shape


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), 0 where x is 0 (torch.xlogy): a density's exponent at the edge of its support."""
    product = x * log(y)
    return where(x == 0, zeros_like(product), product)


def sum_rightmost(value: Any, count: int) -> Any:
    """value summed over its last `count` axes (an Independent's event axes)."""
    return value if count == 0 else sum(value, axis=list(range(-count, 0)))
