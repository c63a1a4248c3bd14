"""Optimizers, learning-rate schedulers (`fluidgrad.optimizer.lr`) and gradient clipping."""
from .. import lr
from ..nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .optimizer import SGD, Adam, AdamW, Momentum, Optimizer

__all__ = ["SGD", "Adam", "AdamW", "ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "Momentum",
           "Optimizer", "lr"]
