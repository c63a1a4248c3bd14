"""fluidgrad.geometric (paddle.geometric): segment reductions over sorted segment ids."""
from .segment import segment_max, segment_mean, segment_min, segment_sum

__all__ = ["segment_max", "segment_mean", "segment_min", "segment_sum"]
