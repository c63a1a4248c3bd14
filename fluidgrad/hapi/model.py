"""fluidgrad.Model (paddle.Model, Paddle 2's high-level API): a network with its optimizer, loss
and metrics, trained by fit(), measured by evaluate(), run by predict(), in eager mode.

    model = fluidgrad.Model(net)
    model.prepare(Adam(parameters=net.parameters()), nn.CrossEntropyLoss(), metric.Accuracy())
    model.fit(train_dataset, eval_dataset, batch_size=64, epochs=5, verbose=1)
    model.evaluate(test_dataset)        # {"loss": [...], "acc": ...}

Data: a Dataset (batched here by a DataLoader with batch_size / shuffle / drop_last), a
DataLoader, or any iterable of batches. Each batch is flattened into a list of fields: the first
ones are the network's inputs (as many as `inputs` specs, else as many as forward() requires),
the rest its labels; the loss is called as loss(*outputs, *labels), each metric's compute
likewise. Evaluation reports the sample-weighted mean loss over the data (Paddle's logs hold the
last batch's) and the metrics accumulated over all batches.
"""
from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Iterable
from typing import Any, Callable, Sequence

import numpy as np

from ..eager import Tensor, no_grad, to_tensor
from ..functions import add_n
from ..io import DataLoader, Dataset, IterableDataset
from ..jit import save as jit_save
from ..metric import Metric
from ..nn import Layer
from ..nn.model_summary import summary as layer_summary
from ..optimizer import Optimizer
from ..serialization import load as load_state, save as save_state
from ..static import InputSpec
from .callbacks import Callback, EarlyStopping, LRScheduler, ModelCheckpoint, ProgBarLogger

__all__ = ["Model"]


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _flatten(batch: Any) -> list[Any]:
    """A batch's fields in order: nested lists / tuples ([inputs], [labels]) flattened."""
    if isinstance(batch, (list, tuple)):
        return [field for item in batch for field in _flatten(item)]
    if isinstance(batch, dict):
        raise TypeError("Model: a batch is a list of fields (inputs, then labels), got a dict; give a "
                        "collate_fn returning a list")
    return [batch]


def _tensor(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else to_tensor(np.asarray(value))


def _numpy(value: Any) -> np.ndarray:
    return np.asarray(value.numpy()) if hasattr(value, "numpy") else np.asarray(value)


def _scalar(value: np.ndarray) -> float:
    return float(np.asarray(value).reshape(-1)[0])


def _specs(specs: Any, what: str) -> list[InputSpec] | None:
    if specs is None:
        return None
    specs = _as_list(specs)
    if isinstance(specs, dict) or not all(isinstance(s, InputSpec) for s in specs):
        raise TypeError(f"Model: {what} must be InputSpecs (fluidgrad.static.InputSpec), got "
                        f"{[type(s).__name__ for s in specs]}")
    return specs


def _required_inputs(network: Layer) -> int:
    """How many batch fields forward() takes: its positional parameters without a default
    (*args counts as one), at least one."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = inspect.signature(network.forward).parameters.values()
    count = sum(1 for p in params if (p.kind in kinds and p.default is p.empty)
                or p.kind == inspect.Parameter.VAR_POSITIONAL)
    return max(count, 1)


class Model:
    """A network (an nn.Layer) with what trains and measures it. `inputs` / `labels`: InputSpecs
    (optional in eager mode; `inputs` are needed by save(training=False) and summary())."""

    def __init__(self, network: Layer, inputs: Any = None, labels: Any = None) -> None:
        if not isinstance(network, Layer):
            raise TypeError(f"Model: network must be a fluidgrad.nn.Layer, got {type(network).__name__}")
        self.network = network
        self._inputs, self._labels = _specs(inputs, "inputs"), _specs(labels, "labels")
        self._optimizer: Optimizer | None = None
        self._loss: Callable[..., Any] | None = None
        self._metrics: list[Metric] = []
        self._saved_optimizer_state: dict[str, Any] | None = None   # loaded before prepare()
        self.stop_training = False

    # ------------------------------------------------------------------ configuration
    def prepare(self, optimizer: Optimizer | None = None, loss: Callable[..., Any] | None = None,
                metrics: Metric | Sequence[Metric] | None = None, amp_configs: Any = None) -> None:
        """Set the optimizer (needed by fit / train_batch), the loss (a Layer or function called
        as loss(*outputs, *labels)) and the metrics."""
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise TypeError(f"Model.prepare: optimizer must be a fluidgrad.optimizer.Optimizer, "
                            f"got {type(optimizer).__name__}")
        if loss is not None and not callable(loss):
            raise TypeError(f"Model.prepare: loss must be a Layer or a function, got {type(loss).__name__}")
        if isinstance(loss, type):   # callable, but calling it makes a loss Layer, not a loss value
            raise TypeError(f"Model.prepare: loss is the class {loss.__name__}, not a loss: pass an instance, "
                            f"{loss.__name__}()")
        metrics = _as_list(metrics)
        for metric in metrics:
            if not isinstance(metric, Metric):
                raise TypeError(f"Model.prepare: metrics must be fluidgrad.metric.Metric objects, "
                                f"got {type(metric).__name__}")
        if amp_configs not in (None, "O0"):
            raise NotImplementedError("Model.prepare: fluidgrad runs in float32 / float64 on the CPU; "
                                      f"amp_configs={amp_configs!r} (mixed precision) is not supported")
        self._optimizer, self._loss, self._metrics = optimizer, loss, metrics
        if optimizer is not None and self._saved_optimizer_state is not None:
            optimizer.set_state_dict(self._saved_optimizer_state)
            self._saved_optimizer_state = None

    def parameters(self, *args: Any, **kwargs: Any) -> list[Tensor]:
        return self.network.parameters(*args, **kwargs)

    def _metrics_name(self) -> list[str]:
        names = ["loss"] if self._loss is not None else []
        for metric in self._metrics:
            names.extend(_as_list(metric.name()))
        return names

    # ------------------------------------------------------------------ one batch
    def _forward(self, inputs: Any) -> list[Any]:
        return _as_list(self.network(*[_tensor(x) for x in _as_list(inputs)]))

    def _losses(self, outputs: list[Any], labels: list[Any]) -> list[Any]:
        return _as_list(self._loss(*(outputs + labels)))

    def _update_metrics(self, outputs: list[Any], labels: list[Any]) -> list[Any]:
        with no_grad():
            outputs = [o.detach() if isinstance(o, Tensor) else o for o in outputs]
            return [metric.update(*[_numpy(v) for v in _as_list(metric.compute(*(outputs + labels)))])
                    for metric in self._metrics]

    def train_batch(self, inputs: Any, labels: Any = None, update: bool = True) -> Any:
        """One training step: forward, loss, backward, and (update=True) the optimizer's step and
        cleared gradients (update=False accumulates them). Returns the losses as arrays, and with
        metrics (losses, the metrics' values on this batch)."""
        if self._optimizer is None or self._loss is None:
            raise RuntimeError("Model.train_batch: call prepare(optimizer, loss) first")
        self.network.train()
        labels = [_tensor(y) for y in _as_list(labels)]
        outputs = self._forward(inputs)
        losses = self._losses(outputs, labels)
        (losses[0] if len(losses) == 1 else add_n(losses)).backward()
        if update:
            self._optimizer.step()
            self.network.clear_gradients()
        metrics = self._update_metrics(outputs, labels)
        values = [_numpy(loss) for loss in losses]
        return (values, metrics) if metrics else values

    def eval_batch(self, inputs: Any, labels: Any = None) -> Any:
        """Losses (with a loss) and metric values of one batch, without gradients."""
        self.network.eval()
        labels = [_tensor(y) for y in _as_list(labels)]
        with no_grad():
            outputs = self._forward(inputs)
            losses = [_numpy(loss) for loss in self._losses(outputs, labels)] if self._loss is not None else []
        metrics = self._update_metrics(outputs, labels)
        if losses and metrics:
            return losses, metrics
        return losses if self._loss is not None else metrics

    def predict_batch(self, inputs: Any) -> list[np.ndarray]:
        """The network's outputs on one batch, as arrays."""
        self.network.eval()
        with no_grad():
            return [_numpy(o) for o in self._forward(inputs)]

    # ------------------------------------------------------------------ whole data sets
    def _loader(self, data: Any, batch_size: int, shuffle: bool, drop_last: bool, num_workers: int) -> Iterable:
        if isinstance(data, IterableDataset):
            return DataLoader(data, batch_size=batch_size, drop_last=drop_last, num_workers=num_workers)
        if isinstance(data, Dataset):
            return DataLoader(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                              num_workers=num_workers)
        if not isinstance(data, Iterable):
            raise TypeError(f"Model: data must be a Dataset, a DataLoader or an iterable of batches, "
                            f"got {type(data).__name__}")
        return data

    def _input_count(self) -> int:
        return len(self._inputs) if self._inputs is not None else _required_inputs(self.network)

    def _callbacks(self, callbacks: Any, **params: Any) -> "_CallbackList":
        given = _as_list(callbacks)
        for callback in given:
            if not isinstance(callback, Callback):
                raise TypeError(f"Model: callbacks must be fluidgrad.callbacks.Callback objects, "
                                f"got {type(callback).__name__}")
        save_dir = params.pop("save_dir", None)
        defaults: list[Callback] = []
        if not any(isinstance(c, ProgBarLogger) for c in given):
            defaults.append(ProgBarLogger(params.pop("log_freq", 10), params["verbose"]))
        if params.pop("mode") == "train":
            if not any(isinstance(c, LRScheduler) for c in given):
                defaults.append(LRScheduler())
            if not any(isinstance(c, ModelCheckpoint) for c in given):
                defaults.append(ModelCheckpoint(params.pop("save_freq", 1), save_dir))
            for callback in given:
                if isinstance(callback, EarlyStopping):
                    callback.save_dir = save_dir
        params.pop("log_freq", None), params.pop("save_freq", None)
        return _CallbackList(defaults + given, self, {**params, "metrics": self._metrics_name()})

    def _run_one_epoch(self, loader: Iterable, callbacks: "_CallbackList", mode: str,
                       update_every: int = 1, num_iters: int | None = None) -> dict[str, Any]:
        """Run `mode` ("train" or "eval") over the loader; returns the epoch's logs."""
        for metric in self._metrics:
            metric.reset()
        logs: dict[str, Any] = {}
        steps = _length(loader)
        loss_sum, samples = None, 0
        for step, batch in enumerate(loader):
            if num_iters is not None and step >= num_iters:
                break
            fields = _flatten(batch)
            count = self._input_count()
            batch_size = int(fields[0].shape[0]) if fields and len(getattr(fields[0], "shape", ())) else 1
            callbacks.call(f"on_{mode}_batch_begin", step, logs)
            if mode == "train":
                last = steps is not None and step + 1 == steps
                outs = self.train_batch(fields[:count], fields[count:], (step + 1) % update_every == 0 or last)
            else:
                outs = self.eval_batch(fields[:count], fields[count:])
            losses = (outs[0] if self._metrics else outs) if self._loss is not None else []
            if losses:
                batch_losses = np.array([_scalar(v) for v in losses])
                loss_sum = batch_losses * batch_size + (0 if loss_sum is None else loss_sum)
                logs["loss"] = list(batch_losses) if mode == "train" else list(loss_sum / (samples + batch_size))
            for metric in self._metrics:
                values = _as_list(metric.accumulate())
                logs.update(zip(_as_list(metric.name()), values))
            samples += batch_size
            logs.update(step=step, batch_size=batch_size, samples=samples)
            callbacks.call(f"on_{mode}_batch_end", step, logs)
        return logs

    def fit(self, train_data: Any = None, eval_data: Any = None, batch_size: int = 1, epochs: int = 1,
            eval_freq: int = 1, log_freq: int = 10, save_dir: str | None = None, save_freq: int = 1,
            verbose: int = 2, drop_last: bool = False, shuffle: bool = True, num_workers: int = 0,
            callbacks: Any = None, accumulate_grad_batches: int = 1, num_iters: int | None = None) -> None:
        """Train for `epochs` over train_data, evaluating on eval_data every `eval_freq` epochs;
        `accumulate_grad_batches` steps the optimizer every that many batches; `num_iters` stops
        after that many batches in all. A callback may end training early (model.stop_training)."""
        if train_data is None:
            raise ValueError("Model.fit: train_data is required")
        if int(accumulate_grad_batches) < 1:
            raise ValueError(f"Model.fit: accumulate_grad_batches must be >= 1, got {accumulate_grad_batches}")
        train_loader = self._loader(train_data, batch_size, shuffle, drop_last, num_workers)
        eval_loader = self._loader(eval_data, batch_size, False, False, num_workers) if eval_data is not None \
            else None
        callbacks = self._callbacks(callbacks, mode="train", epochs=epochs, steps=_length(train_loader),
                                    verbose=verbose, log_freq=log_freq, save_dir=save_dir, save_freq=save_freq)
        self.stop_training = False
        callbacks.call("on_train_begin", None)
        remaining = num_iters
        for epoch in range(epochs):
            callbacks.call("on_epoch_begin", epoch, None)
            logs = self._run_one_epoch(train_loader, callbacks, "train", int(accumulate_grad_batches), remaining)
            callbacks.call("on_epoch_end", epoch, logs)
            if remaining is not None:
                remaining -= logs.get("step", -1) + 1
            if eval_loader is not None and (epoch + 1) % eval_freq == 0:
                self._evaluate(eval_loader, callbacks)
            if self.stop_training or (remaining is not None and remaining <= 0):
                break
        callbacks.call("on_train_end", None)

    def _evaluate(self, loader: Iterable, callbacks: "_CallbackList", num_iters: int | None = None) -> dict:
        callbacks.call("on_eval_begin", {"steps": _length(loader), "metrics": self._metrics_name()})
        logs = self._run_one_epoch(loader, callbacks, "eval", num_iters=num_iters)
        callbacks.call("on_eval_end", logs)
        return {name: logs[name] for name in self._metrics_name() if name in logs}

    def evaluate(self, eval_data: Any, batch_size: int = 1, log_freq: int = 10, verbose: int = 2,
                 num_workers: int = 0, callbacks: Any = None, num_iters: int | None = None) -> dict[str, Any]:
        """{"loss": [mean loss over the samples, per loss], metric name: value over all batches}."""
        loader = self._loader(eval_data, batch_size, False, False, num_workers)
        callbacks = self._callbacks(callbacks, mode="eval", steps=_length(loader), verbose=verbose,
                                    log_freq=log_freq)
        return self._evaluate(loader, callbacks, num_iters)

    def predict(self, test_data: Any, batch_size: int = 1, num_workers: int = 0, stack_outputs: bool = False,
                verbose: int = 1, callbacks: Any = None) -> list[Any]:
        """The network's outputs over test_data: one list per output, holding each batch's array
        (stack_outputs=True: one array per output, the batches stacked). Batch fields past the
        inputs (labels) are ignored."""
        loader = self._loader(test_data, batch_size, False, False, num_workers)
        callbacks = self._callbacks(callbacks, mode="predict", steps=_length(loader), verbose=verbose)
        callbacks.call("on_predict_begin", None)
        outputs = []
        for step, batch in enumerate(loader):
            callbacks.call("on_predict_batch_begin", step, None)
            outputs.append(self.predict_batch(_flatten(batch)[:self._input_count()]))
            callbacks.call("on_predict_batch_end", step, {"step": step})
        callbacks.call("on_predict_end", None)
        per_output = [list(batches) for batches in zip(*outputs)]
        return [np.concatenate(b) if b[0].ndim else np.stack(b) for b in per_output] if stack_outputs \
            else per_output

    # ------------------------------------------------------------------ files
    def save(self, path: str, training: bool = True) -> None:
        """training=True: the parameters to `path.pdparams` and the optimizer's state to
        `path.pdopt` (fluidgrad.save files); False: the inference program (jit.save, needs the
        `inputs` specs)."""
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if not training:
            if self._inputs is None:
                raise ValueError("Model.save(training=False) traces the network: give Model(network, inputs="
                                 "[InputSpec(...)]) so the input shapes and dtypes are known")
            jit_save(self.network, path, input_spec=self._inputs)
            return
        save_state(self.network.state_dict(), path + ".pdparams")
        if self._optimizer is not None:
            state = self._optimizer.state_dict()
            if state:
                save_state(state, path + ".pdopt")

    def load(self, path: str, skip_mismatch: bool = False, reset_optimizer: bool = False) -> None:
        """Restore what save(path) wrote (a ".pdparams" suffix may be given). A parameter missing
        from the file or of another shape is an error, or skipped with a warning (skip_mismatch);
        the optimizer's state is restored too unless reset_optimizer (or kept for prepare())."""
        root, ext = os.path.splitext(path)
        if ext in (".pdparams", ".pdopt", ".pdmodel"):
            path = root
        if not os.path.exists(path + ".pdparams"):
            raise FileNotFoundError(f"Model.load: no parameters file {path + '.pdparams'}")
        saved = load_state(path + ".pdparams")
        matched = {}
        for key, param in self.network.state_dict().items():
            problem = None
            if key not in saved:
                problem = f"{key} is not in {path}.pdparams"
            elif list(saved[key].shape) != list(param.shape):
                problem = f"{key} has shape {list(saved[key].shape)} in the file, the network's is {list(param.shape)}"
            if problem is None:
                matched[key] = saved[key]
            elif skip_mismatch:
                warnings.warn(f"Model.load: skipped: {problem}")
            else:
                raise ValueError(f"Model.load: {problem} (skip_mismatch=True skips such entries)")
        self.network.set_state_dict(matched)
        if reset_optimizer or not os.path.exists(path + ".pdopt"):
            return
        state = load_state(path + ".pdopt")
        if self._optimizer is not None:
            self._optimizer.set_state_dict(state)
        else:
            self._saved_optimizer_state = state

    def summary(self, input_size: Any = None, dtype: Any = None) -> dict[str, int]:
        """fluidgrad.summary of the network on `input_size`, or on the `inputs` specs."""
        if input_size is None and self._inputs is None:
            raise ValueError("Model.summary: give input_size, or Model(network, inputs=[InputSpec(...)])")
        if input_size is None:
            input_size = [list(spec.shape) for spec in self._inputs]
            dtype = dtype if dtype is not None else [spec.dtype for spec in self._inputs]
        return layer_summary(self.network, input_size, dtype)


def _length(loader: Any) -> int | None:
    try:
        return len(loader)
    except TypeError:
        return None


class _CallbackList:
    """The run's callbacks, each told the model and the run's parameters, called in order."""

    def __init__(self, callbacks: list[Callback], model: Model, params: dict[str, Any]) -> None:
        self.callbacks = callbacks
        for callback in callbacks:
            callback.set_model(model)
            callback.set_params(params)

    def call(self, hook: str, *args: Any) -> None:
        for callback in self.callbacks:
            getattr(callback, hook)(*args)
