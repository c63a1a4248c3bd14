"""torch.optim.lr_scheduler: fluidgrad.optimizer.lr_scheduler's schedulers (StepLR, OneCycleLR,
ReduceLROnPlateau, ...) under torch's module path."""
from ..optimizer.lr_scheduler import *  # noqa: F401,F403
from ..optimizer.lr_scheduler import __all__  # noqa: F401
