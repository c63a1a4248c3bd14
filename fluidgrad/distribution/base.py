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
from ..functions import cast, exp
from ..tensor.manipulation import broadcast_to


def is_value(x: Any) -> bool:
    return isinstance(x, (Tensor, Variable))


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
    if isinstance(value, Tensor) and not np.all(value.numpy() > 0):
        raise ValueError(f"{owner}: {name} must be positive, got {value.numpy()}")


class Distribution:
    """batch_shape: independent distributions side by side; event_shape: the shape of one draw."""

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = ()) -> None:
        self._batch_shape = [int(d) for d in batch_shape]
        self._event_shape = [int(d) for d in event_shape]

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
