"""torch.distributions.transforms' module name for fluidgrad.distribution.transform."""
from .transform import *  # noqa: F401,F403
from .transform import __all__  # noqa: F401
