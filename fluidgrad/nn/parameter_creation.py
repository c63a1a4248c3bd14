"""paddle.create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None)
at the top level: one call for both modes, as Paddle's. In eager mode it is a trainable Tensor
(`nn.create_parameter`, what a Layer's weights are); inside `program_guard` (or after
`enable_static()`) a Parameter of the main program initialised by the startup program
(`static.create_parameter`, where a name already used returns that parameter)."""
from __future__ import annotations

from typing import Any, Sequence

from ..framework import in_dynamic_mode
from ..initializer import Initializer
from ..static import create_parameter as _static_parameter
from .layer import create_parameter as _eager_parameter


def create_parameter(shape: Sequence[int], dtype: Any, name: str | None = None, attr: Any = None,
                     is_bias: bool = False, default_initializer: Initializer | None = None) -> Any:
    """A parameter of `shape` and `dtype`: a trainable Tensor in eager mode, a Parameter of the
    main program in static mode; `attr` (a ParamAttr or a name) and `default_initializer` choose
    its initial value (Xavier uniform, zeros for a bias, when neither does)."""
    if in_dynamic_mode():
        return _eager_parameter(shape, dtype, attr=attr, is_bias=is_bias, default_initializer=default_initializer,
                                name=name)
    return _static_parameter(shape, dtype, name=name, attr=attr, is_bias=is_bias,
                             default_initializer=default_initializer)
