"""Gradient clipping: moved to `fluidgrad.nn.clip` (where Paddle 2 keeps it); the old names stay."""
from .nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, GradientClipBase

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GradientClipBase"]
