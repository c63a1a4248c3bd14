"""torch.optim: fluidgrad's eager optimizers under torch's module name, so `torch.optim.Adam(
model.parameters(), lr=1e-3)` and `from torch.optim.lr_scheduler import StepLR` read the same here.

The classes are fluidgrad.optimizer's own (which take torch's keywords: lr=, betas=, eps=,
momentum=, weight_decay=; optimizer/keywords.py); this package only names them as torch does.
Paddle's names (Momentum, RMSProp, the gradient clips, `lr`) stay in fluidgrad.optimizer."""
from ..optimizer import (LBFGS, SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, NAdam, Optimizer, RAdam, RMSprop,
                         Rprop)
from . import lr_scheduler

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "LBFGS", "NAdam", "Optimizer", "RAdam",
           "RMSprop", "Rprop", "lr_scheduler"]
