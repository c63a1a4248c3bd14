"""Optimizers, learning-rate schedulers (`fluidgrad.optimizer.lr`) and gradient clipping."""
from .. import lr
from ..nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .adaptive import Adadelta, Adagrad, Adamax, RMSProp
from .optimizer import SGD, Adam, AdamW, Momentum, Optimizer

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ClipGradByGlobalNorm", "ClipGradByNorm",
           "ClipGradByValue", "Momentum", "Optimizer", "RMSProp", "lr"]
