"""Optimizers, learning-rate schedulers (Paddle's `fluidgrad.optimizer.lr`, torch's
`fluidgrad.optimizer.lr_scheduler`) and gradient clipping."""
from .. import lr
from ..nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .adam_variants import NAdam, RAdam
from .adaptive import Adadelta, Adagrad, Adamax, RMSprop, RMSProp, Rprop
from . import lr_scheduler
from .lbfgs import LBFGS
from .basic import SGD, Adam, AdamW, Momentum
from .optimizer import Optimizer

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "ClipGradByGlobalNorm", "ClipGradByNorm",
           "ClipGradByValue", "LBFGS", "Momentum", "NAdam", "Optimizer", "RAdam", "RMSProp", "RMSprop", "Rprop", "lr", "lr_scheduler"]
