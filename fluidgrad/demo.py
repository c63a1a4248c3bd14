"""The `fluidgrad demo` main job: train a small CNN on scikit-learn's 8x8 digits, end to end.

It exercises every layer of the framework a user touches: builders write a Program, the
optimizer appends backward and Adam update ops, the Executor runs one plan per batch,
`save_inference_model` prunes and saves the model, and `viz.draw` pictures the training
program. After each epoch it measures loss and accuracy on the training and test sets; they
are printed and drawn as training curves (`training.png`, with matplotlib). The data set ships
with scikit-learn (1797 images), so nothing is downloaded.
"""
from __future__ import annotations

import contextlib
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

import fluidgrad as fg
from fluidgrad import nn, viz
from fluidgrad.eager import no_grad, to_tensor
from fluidgrad.optimizer import Adam
from fluidgrad.nn import functional as F

MODEL_PREFIX = "digits"          # the inference model is saved as <out>/digits.pdmodel.json + .pdparams...
PICTURE_NAME = "train_program"   # the training program's picture: <out>/train_program.svg
EAGER_PICTURE_NAME = "inference_program"  # eager mode has no training Program; it draws the saved one


CURVES_NAME = "training.png"     # loss and accuracy per epoch, train and test
CHECKPOINT_NAME = "digits_eager.safetensors"  # eager mode: model and optimizer state (fluidgrad.save)


@dataclass
class EpochStats:
    """One epoch: mean loss and accuracy over the training batches, and on the test set after it."""

    epoch: int
    train_loss: float
    train_accuracy: float
    test_loss: float
    test_accuracy: float

    def line(self, epochs: int) -> str:
        return (f"epoch {self.epoch:2d}/{epochs}: train loss {self.train_loss:.4f} accuracy {self.train_accuracy:.3f}"
                f" | test loss {self.test_loss:.4f} accuracy {self.test_accuracy:.3f}")


@dataclass
class DemoResult:
    test_accuracy: float
    seconds: float
    model_path: Path | None
    picture_path: Path | None
    history: list[EpochStats] = field(default_factory=list)
    curves_path: Path | None = None
    checkpoint_path: Path | None = None


def load_data(seed: int = 0, test_fraction: float = 0.2) -> tuple[np.ndarray, ...]:
    """Digits as float32 images [N, 1, 8, 8] in [0, 1] and int64 labels [N, 1]; a stratified split."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        raise SystemExit("fluidgrad demo needs scikit-learn: pip install 'fluidgrad[demo]'") from None
    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")[:, None, :, :]
    labels = digits.target.astype("int64")[:, None]
    x_train, x_test, y_train, y_test = train_test_split(images, labels, test_size=test_fraction,
                                                        random_state=seed, stratify=digits.target)
    return x_train, y_train, x_test, y_test


def blas_threads(limit: int | None = 1) -> Any:
    """Cap BLAS threads while training (a context manager).

    The demo's matrices are tiny (32 x 144 @ 144 x 16): a second OpenBLAS thread costs more
    in hand-offs than it saves, and on a busy 2-core machine its spin-waiting made a step
    up to 10x slower. threadpoolctl comes with scikit-learn; without it nothing changes.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limit, user_api="blas")


class _RunningStats:
    """Mean loss and accuracy over the examples seen so far in an epoch, for the progress bar."""

    def __init__(self, bar: Any) -> None:
        self.bar, self.seen, self.correct, self.total_loss = bar, 0, 0, 0.0

    def epoch(self, number: int, test_logits: np.ndarray, test_labels: np.ndarray) -> EpochStats:
        return EpochStats(number, self.total_loss / max(self.seen, 1), self.correct / max(self.seen, 1),
                          cross_entropy(test_logits, test_labels), accuracy(test_logits, test_labels))

    def update(self, loss: Any, logits: np.ndarray, labels: np.ndarray) -> None:
        self.seen += len(labels)
        self.correct += int((logits.argmax(axis=1) == labels[:, 0]).sum())
        self.total_loss += float(loss) * len(labels)
        if hasattr(self.bar, "set_postfix"):
            self.bar.set_postfix(loss=f"{self.total_loss / self.seen:.4f}", acc=f"{self.correct / self.seen:.3f}",
                                 refresh=False)


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    return float((logits.argmax(axis=1) == labels[:, 0]).mean())


def cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean softmax cross-entropy, computed stably (the test set's loss, from its logits)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), labels[:, 0]].mean())


def draw_curves(history: list[EpochStats], path: Path) -> Path | None:
    """Loss and accuracy per epoch, train and test, as a PNG; None (and a note) without matplotlib."""
    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: no training curves without matplotlib (pip install 'fluidgrad[demo]')", file=sys.stderr)
        return None
    epochs = [h.epoch for h in history]
    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(10, 4))
    loss_axes.plot(epochs, [h.train_loss for h in history], "o-", label="train")
    loss_axes.plot(epochs, [h.test_loss for h in history], "s-", label="test")
    loss_axes.set(title="cross-entropy loss", xlabel="epoch", ylabel="loss")
    accuracy_axes.plot(epochs, [h.train_accuracy for h in history], "o-", label="train")
    accuracy_axes.plot(epochs, [h.test_accuracy for h in history], "s-", label="test")
    accuracy_axes.set(title="accuracy", xlabel="epoch", ylabel="accuracy", ylim=(0, 1.02))
    for axes in (loss_axes, accuracy_axes):
        axes.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
        axes.legend()
    figure.tight_layout()
    temporary = path.with_name(f".{path.name}.tmp.png")
    figure.savefig(temporary, dpi=100)
    plt.close(figure)
    temporary.replace(path)  # atomic: a reader sees the old picture or the whole new one
    return path


def batches(n: int, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


# ---------------------------------------------------------------- static mode

def cnn(image: fg.Variable) -> fg.Variable:
    """conv3x3(16)-relu-maxpool2 -> conv3x3(32)-relu-maxpool2 -> fc(10): 8x8 -> 4x4 -> 2x2."""
    h = fg.static.nn.conv2d(image, num_filters=16, filter_size=3, padding=1, activation="relu")
    h = F.max_pool2d(h, kernel_size=2)
    h = fg.static.nn.conv2d(h, num_filters=32, filter_size=3, padding=1, activation="relu")
    h = F.max_pool2d(h, kernel_size=2)
    return fg.static.nn.fc(h, 10)


def mlp(image: fg.Variable) -> fg.Variable:
    """fc(64)-relu -> fc(10) on the flattened 64 pixels."""
    hidden = fg.static.nn.fc(image, 64, activation="relu")
    return fg.static.nn.fc(hidden, 10)


def build_static(model: str, learning_rate: float) -> dict[str, Any]:
    """The training and test programs: logits, mean cross-entropy loss, Adam."""
    build = {"cnn": cnn, "mlp": mlp}[model]
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        image = fg.static.data("image", [None, 1, 8, 8])
        label = fg.static.data("label", [None, 1], "int64")
        logits = build(image)
        test_program = main.clone(for_test=True)  # logits only: no loss, no label feed needed
        loss = fg.mean(F.softmax_with_cross_entropy(logits, label))
        Adam(learning_rate).minimize(loss)
    return dict(main=main, startup=startup, test=test_program, image=image, label=label, logits=logits, loss=loss)


def train_static(epochs: int, model: str = "cnn", batch_size: int = 32, learning_rate: float = 0.01,
                 seed: int = 0, progress: Callable[..., Iterator] | None = None,
                 out_dir: Path | None = None, on_epoch: Callable[[EpochStats], Any] | None = None) -> DemoResult:
    """Train, evaluate on the held-out fifth after each epoch (`on_epoch` sees the numbers), save
    the inference model, the picture and the training curves."""
    with blas_threads(1):
        return _train_static(epochs, model, batch_size, learning_rate, seed, progress, out_dir, on_epoch)


def _train_static(epochs: int, model: str, batch_size: int, learning_rate: float, seed: int,
                  progress: Callable[..., Iterator] | None, out_dir: Path | None,
                  on_epoch: Callable[[EpochStats], Any] | None = None) -> DemoResult:
    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_data(seed)
    fg.seed(seed)
    net = build_static(model, learning_rate)
    scope = fg.Scope()
    exe = fg.Executor()
    exe.run(net["startup"], scope=scope)
    rng = np.random.default_rng(seed)
    history: list[EpochStats] = []
    for epoch in range(1, epochs + 1):
        bar = _bar(progress, batches(len(x_train), batch_size, rng), epoch, epochs)
        stats = _RunningStats(bar)
        for idx in bar:
            loss, logits = exe.run(net["main"], feed={"image": x_train[idx], "label": y_train[idx]},
                                   fetch_list=[net["loss"], net["logits"]], scope=scope)
            stats.update(loss, logits, y_train[idx])
        (logits,) = exe.run(net["test"], feed={"image": x_test}, fetch_list=[net["logits"]], scope=scope)
        _record(history, stats.epoch(epoch, logits, y_test), on_epoch)
    result = DemoResult(history[-1].test_accuracy, time.perf_counter() - start, None, None, history)
    if out_dir is not None:
        result.model_path, result.picture_path = _save(out_dir, net, exe, scope)
        result.curves_path = draw_curves(history, out_dir / CURVES_NAME)
    return result


def _record(history: list[EpochStats], stats: EpochStats, on_epoch: Callable[[EpochStats], Any] | None) -> None:
    history.append(stats)
    if on_epoch is not None:
        on_epoch(stats)


def _bar(progress: Callable[..., Iterator] | None, items: list, epoch: int, epochs: int) -> Iterator:
    if progress is None:
        return iter(items)
    return progress(items, desc=f"epoch {epoch}/{epochs}", unit="batch")


def _save(out_dir: Path, net: dict[str, Any], exe: fg.Executor, scope: fg.Scope,
          picture_name: str = PICTURE_NAME) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = out_dir / MODEL_PREFIX
    fg.static.save_inference_model(prefix, [net["image"]], [net["logits"]], exe, program=net["main"], scope=scope)
    picture = out_dir / f"{picture_name}.svg"
    if shutil.which("dot") is None:  # the interactive page needs no Graphviz
        picture = picture.with_suffix(".html")
        print(f"note: Graphviz's `dot` is not installed, so the picture is the interactive page {picture} "
              f"(open it in a browser; install Graphviz for SVG: apt-get install graphviz / brew install graphviz)",
              file=sys.stderr)
    viz.draw(net["main"], picture)
    return Path(str(prefix) + fg.io.MODEL_SUFFIX), picture


# ---------------------------------------------------------------- eager mode

# parameter names and shapes of the demo networks, in the order the eager Layers hold them
PARAMETER_SHAPES = {
    "cnn": {"conv1.w": [16, 1, 3, 3], "conv1.b": [16], "conv2.w": [32, 16, 3, 3], "conv2.b": [32],
            "fc.w": [128, 10], "fc.b": [10]},
    "mlp": {"fc1.w": [64, 64], "fc1.b": [64], "fc2.w": [64, 10], "fc2.b": [10]},
}


def eager_network(model: str) -> Any:
    """The demo networks as eager Layers (the same architecture as `cnn` / `mlp` above)."""
    if model == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return nn.Sequential(nn.Conv2D(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
                         nn.Conv2D(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
                         nn.Flatten(), nn.Linear(128, 10))


def functional_forward(model: str, image: Any, p: dict[str, Any]) -> Any:
    """The demo networks written with functions only: runs on Tensors or appends ops to a Program.

    Used to write an eagerly trained network as a static Program for `save_inference_model`.
    """
    if model == "mlp":
        h = fg.relu(fg.matmul(fg.reshape(image, [-1, 64]), p["fc1.w"]) + p["fc1.b"])
        return fg.matmul(h, p["fc2.w"]) + p["fc2.b"]
    h = F.max_pool2d(fg.relu(F.conv2d(image, p["conv1.w"], p["conv1.b"], padding=1)), 2)
    h = F.max_pool2d(fg.relu(F.conv2d(h, p["conv2.w"], p["conv2.b"], padding=1)), 2)
    return fg.matmul(fg.reshape(h, [-1, 128]), p["fc.w"]) + p["fc.b"]


def layer_arrays(model: str, net: Any) -> dict[str, np.ndarray]:
    """The eager network's parameters under `functional_forward`'s names (shapes checked)."""
    params = net.parameters()
    shapes = PARAMETER_SHAPES[model]
    if [list(p.shape) for p in params] != list(shapes.values()):
        raise ValueError(f"demo: the {model} Layers hold parameters of shapes {[list(p.shape) for p in params]}, "
                         f"expected {list(shapes.values())}")
    return {name: p.numpy() for name, p in zip(shapes, params)}


def train_eager(epochs: int, model: str = "cnn", batch_size: int = 32, learning_rate: float = 0.01,
                seed: int = 0, progress: Callable[..., Iterator] | None = None,
                out_dir: Path | None = None, on_epoch: Callable[[EpochStats], Any] | None = None) -> DemoResult:
    """The same training, define-by-run: Layers, loss.backward(), Adam.step().

    The model and optimizer state are saved with `fluidgrad.save` (a checkpoint to resume
    from); the trained weights are also saved as an inference model, by writing the same
    network as a static Program (functional_forward on Variables) over parameters holding them.
    """
    with blas_threads(1):
        return _train_eager(epochs, model, batch_size, learning_rate, seed, progress, out_dir, on_epoch)


def _train_eager(epochs: int, model: str, batch_size: int, learning_rate: float, seed: int,
                 progress: Callable[..., Iterator] | None, out_dir: Path | None,
                 on_epoch: Callable[[EpochStats], Any] | None = None) -> DemoResult:
    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_data(seed)
    fg.seed(seed)
    net = eager_network(model)
    optimizer = Adam(learning_rate, parameters=net.parameters())
    rng = np.random.default_rng(seed)
    history: list[EpochStats] = []
    for epoch in range(1, epochs + 1):
        bar = _bar(progress, batches(len(x_train), batch_size, rng), epoch, epochs)
        stats = _RunningStats(bar)
        for idx in bar:
            logits = net(to_tensor(x_train[idx]))
            loss = fg.mean(F.softmax_with_cross_entropy(logits, to_tensor(y_train[idx])))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            stats.update(loss, logits.numpy(), y_train[idx])
        with no_grad():
            test_logits = net(to_tensor(x_test)).numpy()
        _record(history, stats.epoch(epoch, test_logits, y_test), on_epoch)
    result = DemoResult(history[-1].test_accuracy, time.perf_counter() - start, None, None, history)
    if out_dir is not None:
        result.model_path, result.picture_path = _save_eager(out_dir, model, layer_arrays(model, net))
        result.checkpoint_path = out_dir / CHECKPOINT_NAME
        fg.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(), "epochs": epochs},
                result.checkpoint_path)
        result.curves_path = draw_curves(history, out_dir / CURVES_NAME)
    return result


def _save_eager(out_dir: Path, model: str, arrays: dict[str, np.ndarray]) -> tuple[Path, Path]:
    """Write the network as a static Program over parameters holding the eager weights, and save it."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        image = fg.static.data("image", [None, 1, 8, 8])
        params = {k: fg.static.create_parameter(v.shape, "float32", name=k) for k, v in arrays.items()}
        logits = functional_forward(model, image, params)
    scope = fg.Scope()
    scope.vars.update(arrays)
    net = dict(main=main, image=image, logits=logits)
    return _save(out_dir, net, fg.Executor(), scope, EAGER_PICTURE_NAME)
