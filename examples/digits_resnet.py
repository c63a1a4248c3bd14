"""A small ResNet on scikit-learn's 8x8 digits, trained in eager or static mode.

    python examples/digits_resnet.py [--epochs 4] [--static]     # needs scikit-learn

A convolutional stem, two residual blocks (3x3 convolutions with batch norm; the second
halves the resolution and widens the channels, with a 1x1 convolution on its skip path),
global average pooling and a linear classifier. `--static` traces the training loss with
`jit.to_static` (batch-norm statistics included), so each step runs a Program.
tests/test_models.py checks it against a PyTorch twin (examples/torch_twins.py).
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import fluidgrad as fg  # noqa: E402
import fluidgrad.nn.functional as F  # noqa: E402
from fluidgrad import nn  # noqa: E402
from fluidgrad.optimizer import Adam  # noqa: E402


class ResidualBlock(nn.Layer):
    """relu(bn2(conv2(relu(bn1(conv1(x))))) + skip(x)); skip is 1x1 conv + bn when the shape changes."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2D(in_channels, out_channels, 3, stride=stride, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(out_channels)
        self.conv2 = nn.Conv2D(out_channels, out_channels, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(out_channels)
        self.skip = None
        if stride != 1 or in_channels != out_channels:
            self.skip = nn.Sequential(nn.Conv2D(in_channels, out_channels, 1, stride=stride, bias_attr=False),
                                      nn.BatchNorm2D(out_channels))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (x if self.skip is None else self.skip(x)))


class DigitsResNet(nn.Layer):
    def __init__(self, width: int = 16, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2D(1, width, 3, padding=1, bias_attr=False)
        self.bn = nn.BatchNorm2D(width)
        self.block1 = ResidualBlock(width, width)
        self.block2 = ResidualBlock(width, 2 * width, stride=2)          # 8x8 -> 4x4
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, images):
        """images [batch, 1, 8, 8] -> logits [batch, classes]."""
        h = F.relu(self.bn(self.stem(images)))
        h = self.block2(self.block1(h))
        return self.fc(fg.mean(h, axis=[2, 3]))                         # global average pooling

    def loss(self, images, labels):
        return F.cross_entropy(self.forward(images), labels)


def load_data(seed: int = 0):
    """(x_train, x_test, y_train, y_test): images in [0, 1], [N, 1, 8, 8] float32; labels [N] int64."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")[:, None]
    return train_test_split(images, digits.target.astype("int64"), test_size=0.25, random_state=seed,
                            stratify=digits.target)


def batches(x, y, epochs: int, batch: int = 32, seed: int = 0):
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for start in range(0, len(order) - batch + 1, batch):
            index = order[start:start + batch]
            yield x[index], y[index]


def train(model: DigitsResNet, data_batches, lr: float = 3e-3, static: bool = False) -> list[float]:
    """One Adam step per batch; returns the losses. static=True runs each step as a Program."""
    model.train()
    opt = Adam(learning_rate=lr, parameters=model.parameters())
    loss_fn = fg.jit.to_static(model.loss) if static else model.loss
    losses = []
    for x, y in data_batches:
        loss = loss_fn(fg.to_tensor(x), fg.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses


def accuracy(model: DigitsResNet, x, y) -> float:
    model.eval()
    with fg.no_grad():
        logits = model(fg.to_tensor(x)).numpy()
    return float((logits.argmax(axis=1) == y).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--static", action="store_true", help="run each step as a traced Program")
    args = parser.parse_args()
    x_train, x_test, y_train, y_test = load_data()
    fg.seed(0)
    model = DigitsResNet()
    losses = train(model, batches(x_train, y_train, args.epochs), static=args.static)
    print(f"first loss {losses[0]:.3f}, last loss {np.mean(losses[-10:]):.3f}")
    print(f"test accuracy: {accuracy(model, x_test, y_test):.3f}")


if __name__ == "__main__":
    main()
