"""paddle.nn.initializer: the initializers under the name Paddle 2 code imports them by
(`fluidgrad.nn.initializer.XavierUniform()`); they live in fluidgrad.initializer."""
from ..initializer import (Assign, Constant, Initializer, KaimingNormal, KaimingUniform, Normal, Orthogonal,  # noqa: F401
                           TruncatedNormal, Uniform, XavierNormal, XavierUniform, calculate_gain)
