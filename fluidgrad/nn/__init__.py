from . import functional  # noqa: F401
from .layer import Layer, create_parameter  # noqa: F401
from .layers import *  # noqa: F401,F403  (Linear, Conv2D, Sequential, ...)
