"""PyTorch twins of the example models, built from a fluidgrad model's weights.

tests/test_models.py checks that each twin computes the same forward, gradients and training
step as the fluidgrad model; benchmarks/bench_gpt.py times the two against each other.
fluidgrad's Linear weight is [in, out] (Paddle's layout), torch's is [out, in].
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as TF


def _tensor(value) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.tensor(np.array(value.numpy())))


def _linear(layer) -> torch.nn.Linear:
    out = torch.nn.Linear(*layer.weight.shape, dtype=torch.from_numpy(layer.weight.numpy()).dtype)
    out.weight = torch.nn.Parameter(torch.tensor(layer.weight.numpy().T.copy()))
    out.bias = _tensor(layer.bias)
    return out


def _layer_norm(layer) -> torch.nn.LayerNorm:
    out = torch.nn.LayerNorm(layer.weight.shape[0], eps=layer.epsilon)
    out.weight, out.bias = _tensor(layer.weight), _tensor(layer.bias)
    return out


class TorchBlock(torch.nn.Module):
    def __init__(self, block) -> None:
        super().__init__()
        attn = block.attn
        self.n_head = attn.num_heads
        self.ln1, self.ln2 = _layer_norm(block.ln1), _layer_norm(block.ln2)
        self.q, self.k, self.v, self.out = (_linear(p) for p in (attn.q_proj, attn.k_proj, attn.v_proj,
                                                                  attn.out_proj))
        self.fc, self.proj = _linear(block.fc), _linear(block.proj)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, e = x.shape
        heads = [f(x).view(b, t, self.n_head, e // self.n_head).transpose(1, 2) for f in (self.q, self.k, self.v)]
        y = TF.scaled_dot_product_attention(*heads, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, e))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.proj(TF.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class TorchCharGPT(torch.nn.Module):
    """examples/char_gpt.py's CharGPT in PyTorch, with the given model's current weights."""

    def __init__(self, model) -> None:
        super().__init__()
        self.vocab_size = model.config.vocab_size
        self.tok_emb = torch.nn.Embedding(model.config.vocab_size, model.config.n_embd)
        self.tok_emb.weight = _tensor(model.tok_emb.weight)
        self.pos_emb = _tensor(model.pos_emb)
        self.blocks = torch.nn.ModuleList([TorchBlock(b) for b in model.blocks])
        self.ln_f, self.head = _layer_norm(model.ln_f), _linear(model.head)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok_emb(idx) + self.pos_emb[:idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def loss(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return TF.cross_entropy(self(idx).reshape(-1, self.vocab_size), targets.reshape(-1))


def train_torch(model: torch.nn.Module, data_batches, lr: float = 3e-3) -> list[float]:
    """The same loop as the fluidgrad examples' `train`: Adam, one step per batch."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for x, y in data_batches:
        loss = model.loss(torch.from_numpy(x), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


