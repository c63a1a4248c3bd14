"""torch.distributions: fluidgrad.distribution's (paddle.distribution's) distributions and
kl_divergence under torch's module name, so `from torch.distributions import Normal` reads the same."""
from .distribution import *  # noqa: F401,F403
from .distribution import __all__  # noqa: F401
from .distribution import transforms  # noqa: F401,E402  (torch.distributions.transforms)
