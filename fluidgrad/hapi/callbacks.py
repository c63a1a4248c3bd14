"""Callbacks of fluidgrad.Model's fit / evaluate / predict (paddle.callbacks): hooks called at the
start and end of each run, epoch and batch, with the logs so far ({"loss": [...], metric names,
"step", "batch_size"}).

Model adds, unless given one of the same kind: ProgBarLogger (prints progress when verbose),
LRScheduler (steps the optimizer's scheduler after every training batch, Paddle's default) and
ModelCheckpoint (saves to save_dir when one is given). EarlyStopping stops fit when a monitored
evaluation value stops improving.
"""
from __future__ import annotations

import numbers
import os
import time
from typing import Any

import numpy as np

from ..lr import LRScheduler as _Scheduler
from ..lr.plateau import ReduceOnPlateau

__all__ = ["Callback", "EarlyStopping", "LRScheduler", "ModelCheckpoint", "ProgBarLogger"]


class Callback:
    """Base class: override the hooks you need. `self.model` is the Model, `self.params` holds
    {"epochs", "steps", "verbose", "metrics"} of the current run."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def set_model(self, model: Any) -> None:
        self.model = model

    def on_train_begin(self, logs: dict | None = None) -> None: ...
    def on_train_end(self, logs: dict | None = None) -> None: ...
    def on_eval_begin(self, logs: dict | None = None) -> None: ...
    def on_eval_end(self, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_begin(self, step: int, logs: dict | None = None) -> None: ...
    def on_train_batch_end(self, step: int, logs: dict | None = None) -> None: ...
    def on_eval_batch_begin(self, step: int, logs: dict | None = None) -> None: ...
    def on_eval_batch_end(self, step: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, step: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, step: int, logs: dict | None = None) -> None: ...


def _format(logs: dict[str, Any], names: list[str]) -> str:
    parts = []
    for name in names:
        value = logs.get(name)
        if isinstance(value, (list, tuple, np.ndarray)):
            value = " ".join(f"{float(v):.4f}" for v in np.asarray(value).reshape(-1))
        elif isinstance(value, numbers.Number):
            value = f"{float(value):.4f}"
        if value is not None:
            parts.append(f"{name}: {value}")
    return " - ".join(parts)


class ProgBarLogger(Callback):
    """Prints the logs: verbose=1 once per epoch (and evaluation), verbose=2 also every
    `log_freq` steps; verbose=0 prints nothing."""

    def __init__(self, log_freq: int = 1, verbose: int = 2) -> None:
        super().__init__()
        self.log_freq, self.verbose = max(1, int(log_freq)), int(verbose)
        self._started = 0.0
        self._eval_steps: int | None = None

    def _line(self, step: int, logs: dict[str, Any], steps: int | None) -> str:
        elapsed = (time.perf_counter() - self._started) / max(step, 1) * 1000
        return f"step {step}/{steps if steps is not None else '?'} - " + \
            _format(logs, self.params.get("metrics", [])) + f" - {elapsed:.0f}ms/step"

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._started = time.perf_counter()
        if self.verbose:
            print(f"Epoch {epoch + 1}/{self.params.get('epochs')}")

    def on_train_batch_end(self, step: int, logs: dict | None = None) -> None:
        if self.verbose == 2 and (step + 1) % self.log_freq == 0:
            print(self._line(step + 1, logs or {}, self.params.get("steps")))

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.verbose and logs and "step" in logs:
            print(self._line(logs["step"] + 1, logs, self.params.get("steps")))

    def on_eval_begin(self, logs: dict | None = None) -> None:
        self._started = time.perf_counter()
        self._eval_steps = (logs or {}).get("steps")
        if self.verbose:
            print("Eval begin...")

    def on_eval_end(self, logs: dict | None = None) -> None:
        if self.verbose and logs:
            print(self._line(logs.get("step", 0) + 1, logs, self._eval_steps))
            print(f"Eval samples: {logs.get('samples', 0)}")


class LRScheduler(Callback):
    """Steps the optimizer's learning-rate scheduler after every training batch (by_step) or
    every epoch (by_epoch), as paddle.callbacks.LRScheduler. ReduceOnPlateau, which needs a
    metric, is left to the user's own callback."""

    def __init__(self, by_step: bool = True, by_epoch: bool = False) -> None:
        super().__init__()
        if by_step == by_epoch:
            raise ValueError("callbacks.LRScheduler: exactly one of by_step and by_epoch must be True")
        self.by_step, self.by_epoch = bool(by_step), bool(by_epoch)

    def _step(self) -> None:
        optimizer = getattr(self.model, "_optimizer", None)
        scheduler = getattr(optimizer, "_learning_rate", None)
        if isinstance(scheduler, _Scheduler) and not isinstance(scheduler, ReduceOnPlateau):
            scheduler.step()

    def on_train_batch_end(self, step: int, logs: dict | None = None) -> None:
        if self.by_step:
            self._step()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.by_epoch:
            self._step()


class ModelCheckpoint(Callback):
    """Saves the model (Model.save, training=True) to `save_dir/<epoch>` every `save_freq` epochs
    and to `save_dir/final` at the end of training; nothing without a save_dir."""

    def __init__(self, save_freq: int = 1, save_dir: str | None = None) -> None:
        super().__init__()
        self.save_freq, self.save_dir = max(1, int(save_freq)), save_dir

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_dir and (epoch + 1) % self.save_freq == 0:
            self.model.save(os.path.join(self.save_dir, str(epoch)))

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.save_dir:
            self.model.save(os.path.join(self.save_dir, "final"))


class EarlyStopping(Callback):
    """Stops fit when the evaluation value `monitor` has not improved by more than `min_delta`
    for `patience` evaluations (fit needs eval_data); `mode` "min", "max" or "auto" (max for
    names containing "acc"). With save_best_model and fit's save_dir, the best model is saved to
    `save_dir/best_model`."""

    def __init__(self, monitor: str = "loss", mode: str = "auto", patience: int = 0, verbose: int = 1,
                 min_delta: float = 0, baseline: float | None = None, save_best_model: bool = True) -> None:
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got {mode!r}")
        self.monitor, self.patience, self.verbose = monitor, int(patience), int(verbose)
        self.baseline, self.save_best_model = baseline, bool(save_best_model)
        self.larger_is_better = mode == "max" or (mode == "auto" and "acc" in monitor)
        self.min_delta = abs(float(min_delta)) * (1 if self.larger_is_better else -1)
        self.save_dir: str | None = None
        self._reset()

    def _reset(self) -> None:
        self.wait_epoch, self.stopped_epoch = 0, 0
        worst = -np.inf if self.larger_is_better else np.inf
        self.best_value = self.baseline if self.baseline is not None else worst

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._reset()

    def _improved(self, value: float) -> bool:
        delta = value - self.min_delta - self.best_value
        return delta > 0 if self.larger_is_better else delta < 0

    def on_eval_end(self, logs: dict | None = None) -> None:
        if not logs or self.monitor not in logs:
            raise KeyError(f"EarlyStopping: monitor {self.monitor!r} is not among the evaluation logs "
                           f"{sorted(k for k in (logs or {}) if k not in ('step', 'batch_size', 'samples'))}")
        value = float(np.asarray(logs[self.monitor]).reshape(-1)[0])
        if self._improved(value):
            self.best_value, self.wait_epoch = value, 0
            if self.save_best_model and self.save_dir:
                self.model.save(os.path.join(self.save_dir, "best_model"))
            return
        self.wait_epoch += 1
        if self.wait_epoch > self.patience:
            self.model.stop_training = True
            if self.verbose:
                print(f"Early stopping: {self.monitor} has not improved on {self.best_value:.4f} for "
                      f"{self.wait_epoch} evaluations")
