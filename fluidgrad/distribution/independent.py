"""Independent(base, reinterpreted_batch_ndims): the base's rightmost batch axes read as event
axes, so log_prob and entropy sum over them (torch.distributions.Independent; Paddle's
Independent(base, reinterpreted_batch_rank)). A diagonal Gaussian policy is
Independent(Normal(mu, sigma), 1): one log-probability per action vector."""
from __future__ import annotations

from typing import Any, Sequence

from ..tensor.keywords import paddle_or_torch
from .base import Distribution, draw_shape, sum_rightmost


class Independent(Distribution):
    """The base distribution with its last `reinterpreted_batch_ndims` batch axes made event axes."""

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int | None = None,
                 validate_args: bool | None = None, *, reinterpreted_batch_rank: int | None = None,
                 base: Distribution | None = None) -> None:
        base_distribution = paddle_or_torch("Independent", "base", base, "base_distribution", base_distribution)
        count = paddle_or_torch("Independent", "reinterpreted_batch_rank", reinterpreted_batch_rank,
                                "reinterpreted_batch_ndims", reinterpreted_batch_ndims)
        if not isinstance(base_distribution, Distribution):
            raise TypeError(f"Independent: base_distribution must be a Distribution, got "
                            f"{type(base_distribution).__name__}")
        batch = base_distribution.batch_shape
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= len(batch):
            raise ValueError(f"Independent: reinterpreted_batch_ndims must be an integer in [0, {len(batch)}] (the "
                             f"base's batch_shape is {batch}), got {count!r}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, count
        split = len(batch) - count
        super().__init__(batch[:split], batch[split:] + base_distribution.event_shape, validate_args=validate_args)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def reinterpreted_batch_rank(self) -> int:
        return self.reinterpreted_batch_ndims

    @property
    def mean(self) -> Any:
        return self.base_dist.mean

    @property
    def variance(self) -> Any:
        return self.base_dist.variance

    @property
    def stddev(self) -> Any:
        return self.base_dist.stddev

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        return self.base_dist.rsample(draw_shape(shape, sample_shape))

    def sample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        return self.base_dist.sample(draw_shape(shape, sample_shape))

    def log_prob(self, value: Any) -> Any:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Any:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> "Independent":
        batch_shape = [int(d) for d in ([batch_shape] if isinstance(batch_shape, int) else batch_shape)]
        moved = self._event_shape[:self.reinterpreted_batch_ndims]
        return Independent(self.base_dist.expand(batch_shape + moved), self.reinterpreted_batch_ndims)
