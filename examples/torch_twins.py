"""PyTorch twins of the example models, built from a fluidgrad model's current weights.

tests/test_models.py checks that each twin computes the same forward, gradients and training
step as the fluidgrad model; benchmarks/bench_gpt.py times the two against each other. Each
twin lists `pairs`: (fluidgrad parameter, torch parameter, transposed), since fluidgrad's
Linear weight is [in, out] (Paddle's layout) and torch's is [out, in].
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF


class _Twin(torch.nn.Module):
    """Records which fluidgrad Tensor each torch parameter was copied from."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple] = []

    def param(self, tensor, transposed: bool = False) -> torch.nn.Parameter:
        value = tensor.numpy().T if transposed else tensor.numpy()
        out = torch.nn.Parameter(torch.tensor(np.array(value)))
        self.pairs.append((tensor, out, transposed))
        return out

    def linear(self, layer) -> torch.nn.Linear:
        out = torch.nn.Linear(*layer.weight.shape)
        out.weight = self.param(layer.weight, transposed=True)
        out.bias = self.param(layer.bias)
        return out

    def layer_norm(self, layer) -> torch.nn.LayerNorm:
        out = torch.nn.LayerNorm(layer.weight.shape[0], eps=layer.epsilon)
        out.weight, out.bias = self.param(layer.weight), self.param(layer.bias)
        return out

    def conv(self, layer) -> torch.nn.Conv2d:
        out = torch.nn.Conv2d(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride,
                              layer.padding, bias=layer.bias is not None)
        out.weight = self.param(layer.weight)
        if layer.bias is not None:
            out.bias = self.param(layer.bias)
        return out

    def batch_norm(self, layer) -> torch.nn.BatchNorm2d:
        out = torch.nn.BatchNorm2d(layer.num_features, eps=layer.epsilon, momentum=1.0 - layer.momentum)
        out.weight, out.bias = self.param(layer.weight), self.param(layer.bias)
        out.running_mean.copy_(torch.tensor(layer._mean.numpy()))
        out.running_var.copy_(torch.tensor(layer._variance.numpy()))
        return out


# ---------------------------------------------------------------- examples/char_gpt.py
class TorchCharGPT(_Twin):
    def __init__(self, model) -> None:
        super().__init__()
        self.vocab_size, self.n_head = model.config.vocab_size, model.config.n_head
        self.tok_emb = torch.nn.Embedding(model.config.vocab_size, model.config.n_embd)
        self.tok_emb.weight = self.param(model.tok_emb.weight)
        self.pos_emb = self.param(model.pos_emb)
        self.blocks = torch.nn.ModuleList()
        for block in model.blocks:
            attn = block.attn
            self.blocks.append(torch.nn.ModuleDict({
                "ln1": self.layer_norm(block.ln1), "ln2": self.layer_norm(block.ln2),
                "q": self.linear(attn.q_proj), "k": self.linear(attn.k_proj), "v": self.linear(attn.v_proj),
                "out": self.linear(attn.out_proj), "fc": self.linear(block.fc), "proj": self.linear(block.proj)}))
        self.ln_f, self.head = self.layer_norm(model.ln_f), self.linear(model.head)

    def attention(self, block, x: torch.Tensor) -> torch.Tensor:
        b, t, e = x.shape
        heads = [block[n](x).view(b, t, self.n_head, e // self.n_head).transpose(1, 2) for n in "qkv"]
        y = TF.scaled_dot_product_attention(*heads, is_causal=True)
        return block["out"](y.transpose(1, 2).reshape(b, t, e))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok_emb(idx) + self.pos_emb[:idx.shape[1]]
        for block in self.blocks:
            x = x + self.attention(block, block["ln1"](x))
            x = x + block["proj"](TF.gelu(block["fc"](block["ln2"](x)), approximate="tanh"))
        return self.head(self.ln_f(x))

    def loss(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return TF.cross_entropy(self(idx).reshape(-1, self.vocab_size), targets.reshape(-1))


# ---------------------------------------------------------------- examples/digits_resnet.py
class TorchDigitsResNet(_Twin):
    def __init__(self, model) -> None:
        super().__init__()
        self.stem, self.bn = self.conv(model.stem), self.batch_norm(model.bn)
        self.blocks = torch.nn.ModuleList()
        for block in (model.block1, model.block2):
            parts = {"conv1": self.conv(block.conv1), "bn1": self.batch_norm(block.bn1),
                     "conv2": self.conv(block.conv2), "bn2": self.batch_norm(block.bn2)}
            if block.skip is not None:
                parts["skip_conv"], parts["skip_bn"] = self.conv(block.skip[0]), self.batch_norm(block.skip[1])
            self.blocks.append(torch.nn.ModuleDict(parts))
        self.fc = self.linear(model.fc)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        h = TF.relu(self.bn(self.stem(images)))
        for block in self.blocks:
            out = block["bn2"](block["conv2"](TF.relu(block["bn1"](block["conv1"](h)))))
            skip = block["skip_bn"](block["skip_conv"](h)) if "skip_conv" in block else h
            h = TF.relu(out + skip)
        return self.fc(h.mean(dim=(2, 3)))

    def loss(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return TF.cross_entropy(self(images), labels)


# ---------------------------------------------------------------- examples/digits_unet.py
class TorchDigitsUNet(_Twin):
    def __init__(self, model) -> None:
        super().__init__()
        self.stages = torch.nn.ModuleDict()
        for name in ("enc1", "enc2", "bottom", "dec2", "dec1"):
            stage = getattr(model, name)
            norm = stage.norm
            if hasattr(norm, "num_groups"):
                torch_norm = torch.nn.GroupNorm(norm.num_groups, norm.num_channels, eps=norm.epsilon)
                torch_norm.weight, torch_norm.bias = self.param(norm.weight), self.param(norm.bias)
            else:
                torch_norm = self.batch_norm(norm)
            self.stages[name] = torch.nn.Sequential(self.conv(stage.conv), torch_norm, torch.nn.ReLU())
        up = model.up2
        self.up2 = torch.nn.ConvTranspose2d(up.in_channels, up.out_channels, up.kernel_size, up.stride)
        self.up2.weight, self.up2.bias = self.param(up.weight), self.param(up.bias)
        self.out = self.conv(model.out)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        skip1 = self.stages["enc1"](images)
        skip2 = self.stages["enc2"](TF.max_pool2d(skip1, 2))
        h = self.stages["bottom"](TF.max_pool2d(skip2, 2))
        h = self.stages["dec2"](torch.cat([self.up2(h), skip2], dim=1))
        h = TF.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.stages["dec1"](torch.cat([h, skip1], dim=1)))

    def loss(self, noisy: torch.Tensor, clean: torch.Tensor) -> torch.Tensor:
        return TF.mse_loss(self(noisy), clean)


def train_torch(model: torch.nn.Module, data_batches, lr: float = 3e-3) -> list[float]:
    """The same loop as the fluidgrad examples' `train`: Adam, one step per batch."""
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for x, y in data_batches:
        loss = model.loss(torch.from_numpy(x), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
