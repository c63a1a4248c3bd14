"""Paddle 2's high-level API: fluidgrad.Model (prepare / fit / evaluate / predict / save / load)
and its callbacks (`fluidgrad.callbacks`).

- model.py: Model, training and evaluation loops over Datasets or DataLoaders, eager mode.
- callbacks.py: Callback and the ones Model uses: ProgBarLogger, LRScheduler, ModelCheckpoint,
  EarlyStopping.
"""
from . import callbacks
from .model import Model

__all__ = ["Model", "callbacks"]
