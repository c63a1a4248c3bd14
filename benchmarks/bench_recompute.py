"""Recompute (issue 15): what checkpoints buy in memory and cost in time, beside PyTorch's
`torch.utils.checkpoint` at the same segments.

    python benchmarks/bench_recompute.py [--quick] [--threads 1]

A 64-layer MLP (width 1024, batch 256, float32), one SGD training step:
  * peak activation bytes: the values the forward computes and their recomputed copies, alive at
    once (fluidgrad: from the plan's liveness, `Executor.run(return_stats=True)`; PyTorch: the
    growth of `torch.cuda`-less CPU allocations is not exposed, so its column is RSS only);
  * peak RSS growth of a fresh process over the step (each contender in its own process);
  * step time, contenders timed in alternation in one process.
Segments: fluidgrad's "auto" choice, and 8 segments of 8 layers (checkpoints after every 8th
layer), which PyTorch's `checkpoint_sequential(..., 8)` also uses.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import interleaved_best, limit_threads, print_table  # noqa: E402

SEGMENTS = 8


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def fluid_step(depth: int, width: int, batch: int, checkpoints: str):
    """A static training step; checkpoints: 'none', 'auto' or 'segments'."""
    import fluidgrad as fg
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, width], "float32")
        h, outputs = x, []
        for _ in range(depth):
            h = fg.static.nn.fc(h, width, activation="relu")
            outputs.append(h)
        loss = fg.mean(h)
        chosen = {"none": None, "auto": "auto",
                  "segments": outputs[depth // SEGMENTS - 1:depth - 1:depth // SEGMENTS]}[checkpoints]
        fg.optimizer.SGD(0.001).minimize(loss, checkpoints=chosen)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.random.default_rng(0).standard_normal((batch, width)).astype("float32")}

    def step(stats: bool = False):
        return exe.run(main, feed=feed, fetch_list=[loss], scope=scope, return_stats=stats)
    return step


def torch_step(depth: int, width: int, batch: int, checkpoints: str):
    import torch
    from torch.utils.checkpoint import checkpoint_sequential
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(batch, width)

    def step(stats: bool = False):
        opt.zero_grad(set_to_none=True)
        if checkpoints == "none":
            out = model(x)
        else:
            out = checkpoint_sequential(model, SEGMENTS, x, use_reentrant=False)
        loss = out.mean()
        loss.backward()
        opt.step()
        return loss
    return step


def _child(args: argparse.Namespace) -> None:
    """One contender in a fresh process: RSS growth over its first steps."""
    with limit_threads(1):
        make = fluid_step if args.child.startswith("fluidgrad") else torch_step
        step = make(args.depth, args.width, args.batch, args.child.split(":")[1])
        before = _rss_bytes()
        stats = None
        for _ in range(3):
            result = step(True) if args.child.startswith("fluidgrad") else step()
            if args.child.startswith("fluidgrad"):
                stats = result[1]
        print(json.dumps({"rss_growth": _peak_rss_bytes() - before,
                          "activation": stats.peak_activation_bytes if stats else None,
                          "live": stats.peak_live_bytes if stats else None}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", default=None)
    parser.add_argument("--depth", type=int, default=64)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    if args.quick:
        args.depth, args.width, args.batch = 16, 256, 64
    if args.child:
        _child(args)
        return
    names = ["fluidgrad:none", "fluidgrad:auto", "fluidgrad:segments", "torch:none", "torch:segments"]
    memory = {}
    for name in names:
        out = subprocess.run([sys.executable, __file__, "--child", name, "--depth", str(args.depth),
                              "--width", str(args.width), "--batch", str(args.batch)],
                             capture_output=True, text=True, check=True)
        memory[name] = json.loads(out.stdout.strip().splitlines()[-1])
    with limit_threads(args.threads):
        steps = {name: (fluid_step if name.startswith("fluidgrad") else torch_step)(
            args.depth, args.width, args.batch, name.split(":")[1]) for name in names}
        times = interleaved_best(steps, rounds=3 if args.quick else 5)
    rows = []
    for name in names:
        base = "fluidgrad:none" if name.startswith("fluidgrad") else "torch:none"
        mem = memory[name]
        act = f"{mem['activation'] / 2**20:.0f} MiB ({mem['activation'] / memory[base]['activation']:.2f}x)" \
            if mem["activation"] is not None else "-"
        rss = f"{mem['rss_growth'] / 2**20:.0f} MiB ({mem['rss_growth'] / memory[base]['rss_growth']:.2f}x)"
        rows.append([name, act, rss, f"{times[name] * 1e3:.0f} ms ({times[name] / times[base]:.2f}x)"])
    print_table(f"{args.depth}-layer MLP, width {args.width}, batch {args.batch}, one SGD step, "
                f"{args.threads} thread(s)", ["contender", "peak activations (plan)", "peak RSS growth",
                                              "step time (vs no checkpoints)"], rows)


if __name__ == "__main__":
    main()
