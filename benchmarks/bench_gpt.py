"""The char-level GPT's training step (examples/char_gpt.py): fluidgrad eager and static
(jit.to_static) against the same model in PyTorch eager, from the same weights, in one process.

    python benchmarks/bench_gpt.py [--rounds 5] [--steps 5] [--threads 1] [--embd 32] [--layers 2]

One step = forward, loss, backward and an Adam update, on a fixed batch. The contenders take
turns, `--steps` steps each per round; the table gives each one's median time per step over
the rounds and its ratio to PyTorch's (goal for fluidgrad: at most 1.5x at one thread).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from common import limit_threads, print_table  # noqa: E402  (sets OMP_WAIT_POLICY before torch loads)

import torch  # noqa: E402

import char_gpt  # noqa: E402
import fluidgrad as fg  # noqa: E402
import torch_twins  # noqa: E402


def fluid_step(model, static: bool):
    opt = fg.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    loss_fn = fg.jit.to_static(model.loss) if static else model.loss

    def step(x, y):
        loss = loss_fn(fg.to_tensor(x), fg.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
    return step


def torch_step(twin):
    opt = torch.optim.Adam(twin.parameters(), lr=1e-3)

    def step(x, y):
        loss = twin.loss(torch.from_numpy(x), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--embd", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--block", type=int, default=32)
    args = parser.parse_args()
    data, chars = char_gpt.encode()
    fg.seed(0)
    config = char_gpt.Config(len(chars), block_size=args.block, n_embd=args.embd, n_head=4, n_layer=args.layers)
    models = {name: char_gpt.CharGPT(config) for name in ("eager", "static")}
    models["static"].set_state_dict(models["eager"].state_dict())
    twin = torch_twins.TorchCharGPT(models["eager"])
    x, y = next(char_gpt.batches(data, 1, args.batch, args.block))
    with limit_threads(args.threads):
        contenders = {"PyTorch eager": torch_step(twin), "fluidgrad eager": fluid_step(models["eager"], False),
                      "fluidgrad static": fluid_step(models["static"], True)}
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for step in contenders.values():
            step(x, y)                                     # warm up (and trace the static one)
        for _ in range(args.rounds):
            for name, step in contenders.items():
                start = time.perf_counter()
                for _ in range(args.steps):
                    step(x, y)
                times[name].append((time.perf_counter() - start) / args.steps)
    base = statistics.median(times["PyTorch eager"])
    rows = [(name, f"{statistics.median(t) * 1e3:.2f}", f"{min(t) * 1e3:.2f}", f"{statistics.median(t) / base:.2f}x")
            for name, t in times.items()]
    print_table(f"char GPT training step (batch {args.batch}, block {args.block}, embd {args.embd}, "
                f"{args.layers} layers, {args.threads} thread(s), median of {args.rounds} rounds)",
                ["contender", "median ms/step", "best ms/step", "vs PyTorch"], rows)


if __name__ == "__main__":
    main()
