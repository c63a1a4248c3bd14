"""Optimizers, learning-rate schedulers (`fluidgrad.optimizer.lr`) and gradient clipping."""
from .. import lr
from ..nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .adam_variants import NAdam, RAdam
from .adaptive import Adadelta, Adagrad, Adamax, RMSprop, RMSProp, Rprop
from .lbfgs import LBFGS
from .optimizer import SGD, Adam, AdamW, Momentum, Optimizer

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ClipGradByGlobalNorm", "ClipGradByNorm",
           "ClipGradByValue", "LBFGS", "Momentum", "NAdam", "Optimizer", "RAdam", "RMSProp", "RMSprop", "Rprop", "lr"]
