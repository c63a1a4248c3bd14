"""A small U-Net that denoises scikit-learn's 8x8 digits, trained in eager or static mode.

    python examples/digits_unet.py [--epochs 4] [--static]     # needs scikit-learn

The task: given a digit with Gaussian noise added (sigma 0.4, on pixels in [0, 1]), predict the
clean digit, pixel by pixel (mean squared error). The U-Net: an encoder of 3x3 convolutions with
batch norm at 8x8 and 4x4 (max pooling between), a 2x2 bottleneck, and a decoder that goes back
up with a transposed convolution (2x2 -> 4x4) and a bilinear interpolation (4x4 -> 8x8), each
followed by a concatenation with the encoder's output at that resolution (the skip
connections) and a 3x3 convolution with group norm; a 1x1 convolution gives the image. It has
to beat two honest baselines: returning the noisy input (error sigma^2 = 0.16) and the mean
training digit. `--static` traces the training loss with `jit.to_static` (batch-norm statistics
included), so each step runs a Program. tests/test_models.py checks it against a PyTorch
twin (examples/torch_twins.py) and trains it in both modes.
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

NOISE = 0.4


class ConvNormReLU(nn.Layer):
    """relu(norm(conv3x3(x))): batch norm in the encoder, group norm (4 groups) in the decoder."""

    def __init__(self, in_channels: int, out_channels: int, norm: str) -> None:
        super().__init__()
        self.conv = nn.Conv2D(in_channels, out_channels, 3, padding=1, bias_attr=False)
        self.norm = nn.BatchNorm2D(out_channels) if norm == "batch" else nn.GroupNorm(4, out_channels)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


class DigitsUNet(nn.Layer):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.enc1 = ConvNormReLU(1, width, "batch")                        # 8x8
        self.enc2 = ConvNormReLU(width, 2 * width, "batch")                # 4x4
        self.bottom = ConvNormReLU(2 * width, 4 * width, "batch")          # 2x2
        self.up2 = nn.Conv2DTranspose(4 * width, 2 * width, 2, stride=2)   # 2x2 -> 4x4
        self.dec2 = ConvNormReLU(4 * width, 2 * width, "group")            # [up2, enc2] -> 4x4
        self.dec1 = ConvNormReLU(3 * width, width, "group")                # [up(dec2), enc1] -> 8x8
        self.out = nn.Conv2D(width, 1, 1)

    def forward(self, images):
        """images [batch, 1, 8, 8] -> images [batch, 1, 8, 8]."""
        skip1 = self.enc1(images)
        skip2 = self.enc2(F.max_pool2d(skip1, 2))
        h = self.bottom(F.max_pool2d(skip2, 2))
        h = self.dec2(fg.concat([self.up2(h), skip2], axis=1))
        h = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        h = self.dec1(fg.concat([h, skip1], axis=1))
        return self.out(h)

    def loss(self, noisy, clean):
        return F.mse_loss(self.forward(noisy), clean)


def load_data(seed: int = 0):
    """(x_train, x_test): clean images in [0, 1], [N, 1, 8, 8] float32."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")[:, None]
    x_train, x_test = train_test_split(images, test_size=0.25, random_state=seed, stratify=digits.target)
    return x_train, x_test


def add_noise(clean: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (clean + NOISE * rng.standard_normal(clean.shape)).astype("float32")


def batches(x, epochs: int, batch: int = 32, seed: int = 0):
    """(noisy, clean) pairs; every epoch draws new noise."""
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for start in range(0, len(order) - batch + 1, batch):
            clean = x[order[start:start + batch]]
            yield add_noise(clean, rng), clean


def train(model: DigitsUNet, data_batches, lr: float = 3e-3, static: bool = False) -> list[float]:
    """One Adam step per batch; returns the losses. static=True runs each step as a Program."""
    model.train()
    opt = Adam(learning_rate=lr, parameters=model.parameters())
    loss_fn = fg.jit.to_static(model.loss) if static else model.loss
    losses = []
    for noisy, clean in data_batches:
        loss = loss_fn(fg.to_tensor(noisy), fg.to_tensor(clean))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses


def denoising_errors(model: DigitsUNet, x_train, x_test, seed: int = 1) -> dict[str, float]:
    """Mean squared error on noisy test digits: the model's, and the two baselines'."""
    noisy = add_noise(x_test, np.random.default_rng(seed))
    model.eval()
    with fg.no_grad():
        denoised = model(fg.to_tensor(noisy)).numpy()
    return {"model": float(np.mean((denoised - x_test) ** 2)),
            "noisy input": float(np.mean((noisy - x_test) ** 2)),
            "mean digit": float(np.mean((x_train.mean(axis=0) - x_test) ** 2))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--static", action="store_true", help="run each step as a traced Program")
    args = parser.parse_args()
    x_train, x_test = load_data()
    fg.seed(0)
    model = DigitsUNet()
    losses = train(model, batches(x_train, args.epochs), static=args.static)
    print(f"first loss {losses[0]:.4f}, last loss {np.mean(losses[-10:]):.4f}")
    for name, error in denoising_errors(model, x_train, x_test).items():
        print(f"test error, {name}: {error:.4f}")


if __name__ == "__main__":
    main()
