"""TransformedDistribution(base, transforms): the law of y = t_n(...t_1(x)), x ~ base
(torch.distributions.TransformedDistribution, paddle.distribution.TransformedDistribution).

Shapes, rsample and log_prob follow torch's algorithm: the base is expanded and its batch axes
reinterpreted as event axes where the transforms need them; log_prob inverts the transforms one
by one, subtracting each Jacobian term summed over the event axes at that place, and adds the
base's log_prob. All of it is registered ops, so gradients reach the base's and the transforms'
parameters, and rsample's draws, in both modes.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..tensor.keywords import paddle_or_torch
from .base import Distribution, as_param, draw_shape, is_value, sum_rightmost
from .independent import Independent
from .transform import ComposeTransform, Transform

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The base distribution pushed through `transforms` (one Transform or a list, applied in order)."""

    def __init__(self, base_distribution: Distribution | None = None, transforms: Any = None,
                 validate_args: bool | None = None, *, base: Distribution | None = None) -> None:
        base_distribution = paddle_or_torch("TransformedDistribution", "base", base, "base_distribution",
                                            base_distribution)
        if not isinstance(base_distribution, Distribution):
            raise TypeError(f"TransformedDistribution: base_distribution must be a Distribution, got "
                            f"{type(base_distribution).__name__}")
        transforms = [transforms] if isinstance(transforms, Transform) else list(transforms or [])
        for transform in transforms:
            if not isinstance(transform, Transform):
                raise TypeError(f"TransformedDistribution: transforms must be Transforms, got "
                                f"{type(transform).__name__}")
        self.transforms = transforms
        chain = ComposeTransform(transforms)
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(f"TransformedDistribution: the base's shape {base_shape} has fewer axes than the "
                             f"transforms' domain needs ({chain.domain.event_dim})")
        forward_shape = chain.forward_shape(base_shape)
        expanded = chain.inverse_shape(forward_shape)
        if list(expanded) != list(base_shape):
            base_distribution = base_distribution.expand(expanded[:len(expanded) - base_event_dim])
        reinterpreted = chain.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        self._support = chain.codomain
        event_dim = max(chain.codomain.event_dim, base_event_dim + chain.codomain.event_dim - chain.domain.event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """Base draws pushed through the transforms: differentiable in the parameters of both."""
        x = self.base_dist.rsample(draw_shape(shape, sample_shape))
        for transform in self.transforms:
            x = transform(x)
        return x

    def sample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        x = self.base_dist.sample(draw_shape(shape, sample_shape))
        for transform in self.transforms:
            x = transform(x)
        return x.detach()

    def log_prob(self, value: Any) -> Any:
        """log p(value): the base's log_prob at the inverse image, minus the Jacobian terms."""
        value = value if is_value(value) else as_param(value)
        if self._support.check is not None:
            self._check_value(value, self._support.check, self._support.name)
        for transform in self.transforms:
            if not transform.bijective:
                raise NotImplementedError(f"TransformedDistribution.log_prob: {type(transform).__name__} is not a "
                                          f"bijection, it has no log_abs_det_jacobian, so the density is not defined "
                                          f"by this formula (torch refuses it too)")
        event_dim = len(self.event_shape)
        log_prob: Any = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                event_dim - transform.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotone(self, value: Any) -> Any:
        """The base's cdf turned around where the transforms decrease (their signs' product)."""
        sign: Any = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Any) -> Any:
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        return self._monotone(self.base_dist.cdf(value))

    def icdf(self, value: Any) -> Any:
        value = self.base_dist.icdf(self._monotone(value))
        for transform in self.transforms:
            value = transform(value)
        return value

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> "TransformedDistribution":
        """The same transforms over the base expanded to the batch shape they map back to (torch's)."""
        batch_shape = [int(d) for d in ([batch_shape] if isinstance(batch_shape, int) else batch_shape)]
        shape = batch_shape + self.event_shape
        for transform in reversed(self.transforms):
            shape = transform.inverse_shape(shape)
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        return TransformedDistribution(self.base_dist.expand(base_batch), self.transforms,
                                       validate_args=self._validate_args)
