"""torch.utils: `fluidgrad.utils.data` is torch.utils.data (fluidgrad.io's data loading under
torch's names)."""
from . import data

__all__ = ["data"]
