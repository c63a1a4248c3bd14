"""fluidgrad.incubate (paddle.incubate): the names Paddle kept there, here the segment reductions
(the same functions as fluidgrad.geometric's)."""
from ..geometric import segment_max, segment_mean, segment_min, segment_sum

__all__ = ["segment_max", "segment_mean", "segment_min", "segment_sum"]
