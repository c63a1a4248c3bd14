"""A small character-level GPT, trained on text this file ships, in eager or static mode.

    python examples/char_gpt.py [--steps 300] [--static]

Token and position embeddings, pre-norm blocks of causal multi-head attention and a GELU
MLP, a final layer norm and a linear head: GPT-2's shape at toy size. `--static` traces the
loss with `jit.to_static`, so each step runs a Program on the Executor (forward, and the
backward built by `append_backward`) instead of the eager tape. tests/test_models.py trains it
in both modes against a PyTorch twin (examples/torch_twins.py) from the same initial weights.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: BLAS threads cost more than they give

import numpy as np  # noqa: E402

import fluidgrad as fg  # noqa: E402
import fluidgrad.nn.functional as F  # noqa: E402
from fluidgrad import nn  # noqa: E402
from fluidgrad.nn.layers.transformer import gelu_tanh  # noqa: E402
from fluidgrad.optimizer import Adam  # noqa: E402

TEXT = """\
the sea was calm and the moon was high. the old keeper climbed the stairs of the light
and wound the clock that turned the lamp. each night he wrote the same line in his book:
the sea was calm, the lamp was lit, the ships went by. one night the sea was not calm.
the wind came from the north and the waves rose over the rocks. the keeper climbed the
stairs and wound the clock and the lamp turned and turned. in the morning he wrote in his
book: the sea was wild, the lamp was lit, the ships went by. and the ships went by.
"""


class Config:
    """The model's sizes; the defaults train in seconds on one core."""

    def __init__(self, vocab_size: int, block_size: int = 32, n_embd: int = 32, n_head: int = 4,
                 n_layer: int = 2) -> None:
        self.vocab_size, self.block_size = vocab_size, block_size
        self.n_embd, self.n_head, self.n_layer = n_embd, n_head, n_layer


class Block(nn.Layer):
    """x + attn(ln1(x)), then x + mlp(ln2(x)): the pre-norm transformer block."""

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.attn = nn.MultiHeadAttention(config.n_embd, config.n_head)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, is_causal=True)
        return x + self.proj(gelu_tanh(self.fc(self.ln2(x))))


class CharGPT(nn.Layer):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = self.create_parameter([config.block_size, config.n_embd],
                                             default_initializer=fg.initializer.Normal(0.0, 0.02))
        self.blocks = nn.LayerList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size)

    def forward(self, idx):
        """idx [batch, time] int64 -> logits [batch, time, vocab]."""
        length = idx.shape[1]
        x = self.tok_emb(idx) + fg.slice(self.pos_emb, [0], [0], [length])
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def loss(self, idx, targets):
        logits = self.forward(idx)
        return F.cross_entropy(fg.reshape(logits, [-1, self.config.vocab_size]), fg.reshape(targets, [-1]))


def encode(text: str = TEXT) -> tuple[np.ndarray, list[str]]:
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    return np.array([index[c] for c in text], dtype=np.int64), chars


def batches(data: np.ndarray, steps: int, batch: int, block: int, seed: int = 0):
    """`steps` (inputs, targets) pairs of random windows; targets are the inputs shifted by one."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        starts = rng.integers(0, len(data) - block - 1, size=batch)
        x = np.stack([data[s:s + block] for s in starts])
        y = np.stack([data[s + 1:s + block + 1] for s in starts])
        yield x, y


def train(model: CharGPT, data_batches, lr: float = 3e-3, static: bool = False) -> list[float]:
    """One Adam step per batch; returns the losses. static=True runs each step as a Program."""
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


def sample(model: CharGPT, chars: list[str], prompt: str, length: int = 120) -> str:
    """Greedy continuation of `prompt`, one character at a time."""
    index = {c: i for i, c in enumerate(chars)}
    ids = [index[c] for c in prompt]
    with fg.no_grad():
        for _ in range(length):
            window = np.array([ids[-model.config.block_size:]], dtype=np.int64)
            logits = model(fg.to_tensor(window)).numpy()
            ids.append(int(logits[0, -1].argmax()))
    return "".join(chars[i] for i in ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--static", action="store_true", help="run each step as a traced Program")
    args = parser.parse_args()
    data, chars = encode()
    fg.seed(0)
    model = CharGPT(Config(len(chars)))
    losses = train(model, batches(data, args.steps, 16, model.config.block_size), static=args.static)
    for step in range(0, args.steps, max(args.steps // 6, 1)):
        print(f"step {step:4d}  loss {np.mean(losses[step:step + 10]):.3f}")
    print(sample(model, chars, "the sea "))


if __name__ == "__main__":
    main()
