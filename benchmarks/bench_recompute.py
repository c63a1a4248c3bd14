"""Recompute (issue 15): what checkpoints buy in memory and cost in time, beside PyTorch's
`torch.utils.checkpoint` at the same segments.

    python benchmarks/bench_recompute.py [--quick] [--threads 1] [--only mlp|gpt] [--rounds 7]

Two models, one SGD training step each, float32:
  * a 64-layer MLP (width 1024, batch 256); segments: 8 of 8 layers (checkpoints after every
    8th layer), which PyTorch's `checkpoint_sequential(..., 8)` also uses;
  * the GPT of examples/char_gpt.py at a size where activations dominate (8 blocks, width 128,
    4 heads, sequence 256, batch 8), traced with `jit.to_static` and trained as a static Program;
    segments: one per transformer block (`fluidgrad.recompute(block, x)` while tracing marks
    them), PyTorch: `torch.utils.checkpoint.checkpoint` around each block of its twin
    (examples/torch_twins.py).
Columns:
  * peak activation bytes: the values the forward computes and their recomputed copies, alive at
    once (fluidgrad: from the plan's liveness, `Executor.run(return_stats=True)`; PyTorch does
    not expose its CPU allocations, so its column is RSS only);
  * peak RSS growth of a fresh process over three steps (each contender in its own process);
  * step time, contenders timed in alternation in one process (the order rotated each round):
    the median wall time, and the median CPU time of the process (at one thread the work
    itself, whatever else loads the machine).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from common import limit_threads, print_table  # noqa: E402

SEGMENTS = 8
VARIANTS = ["fluidgrad:none", "fluidgrad:auto", "fluidgrad:segments", "fluidgrad:selective", "torch:none",
            "torch:segments"]
KEEP = 0.05  # "selective": the same segments, plus values kept within 0.05x of the activation bytes


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak_rss() -> None:
    """Start the process's peak RSS (VmHWM) afresh (Linux >= 4.0); getrusage's ru_maxrss would
    not do: it carries the parent's peak over fork and exec."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ---------------------------------------------------------------- the MLP
def fluid_mlp_step(size: dict, checkpoints: str):
    """A static training step; checkpoints: 'none', 'auto' or 'segments'."""
    import fluidgrad as fg
    depth, width, batch = size["depth"], size["width"], size["batch"]
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, width], "float32")
        h, outputs = x, []
        for _ in range(depth):
            h = fg.static.nn.fc(h, width, activation="relu")
            outputs.append(h)
        loss = fg.mean(h)
        segments = outputs[depth // SEGMENTS - 1:depth - 1:depth // SEGMENTS]
        chosen = {"none": None, "auto": "auto", "segments": segments,
                  "selective": fg.RecomputePolicy(segments, KEEP)}[checkpoints]
        fg.optimizer.SGD(0.001).minimize(loss, checkpoints=chosen)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.random.default_rng(0).standard_normal((batch, width)).astype("float32")}

    def step(stats: bool = False):
        return exe.run(main, feed=feed, fetch_list=[loss], scope=scope, return_stats=stats)
    return step


def torch_mlp_step(size: dict, checkpoints: str):
    import torch
    from torch.utils.checkpoint import checkpoint_sequential
    layers = []
    for _ in range(size["depth"]):
        layers += [torch.nn.Linear(size["width"], size["width"]), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(size["batch"], size["width"])

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


# ---------------------------------------------------------------- the GPT
def _gpt_model_and_batch(size: dict):
    import char_gpt

    import fluidgrad as fg
    data, chars = char_gpt.encode()
    fg.seed(0)
    config = char_gpt.Config(len(chars), block_size=size["seq"], n_embd=size["embd"], n_head=size["heads"],
                             n_layer=size["layers"])
    model = char_gpt.CharGPT(config)
    text = np.tile(data, size["seq"] // len(data) + 2)
    x, y = next(char_gpt.batches(text, 1, size["batch"], size["seq"]))
    return model, x, y


def fluid_gpt_step(size: dict, checkpoints: str):
    """The GPT traced with jit.to_static, then an SGD step appended to a copy of the trace."""
    import fluidgrad as fg
    import fluidgrad.nn.functional as F
    model, x, y = _gpt_model_and_batch(size)
    vocab = model.config.vocab_size

    def loss_fn(idx, targets):
        h = model.tok_emb(idx) + fg.slice(model.pos_emb, [0], [0], [idx.shape[1]])
        for block in model.blocks:
            h = block(h) if checkpoints in ("none", "auto") else fg.recompute(block, h)
        logits = model.head(model.ln_f(h))
        return F.cross_entropy(fg.reshape(logits, [-1, vocab]), fg.reshape(targets, [-1]))

    traced = fg.jit.to_static(loss_fn)
    traced(fg.to_tensor(x), fg.to_tensor(y))
    concrete = traced.concrete_program
    main, startup = concrete.main_program.clone(), fg.Program()
    with fg.program_guard(main, startup):
        loss = main.global_block().var(concrete.outputs[0].name)
        chosen = {"none": None, "auto": "auto", "segments": concrete.checkpoints,
                  "selective": fg.RecomputePolicy(concrete.checkpoints, KEEP)}[checkpoints]
        fg.optimizer.SGD(0.001).minimize(loss, checkpoints=chosen)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)  # the learning rate
    for name, tensor in concrete.parameters:
        scope[name] = np.array(tensor.numpy())
    feed = {concrete.inputs[0].name: x, concrete.inputs[1].name: y}

    def step(stats: bool = False):
        return exe.run(main, feed=feed, fetch_list=[loss], scope=scope, return_stats=stats)
    return step


def torch_gpt_step(size: dict, checkpoints: str):
    import torch
    import torch.nn.functional as TF
    import torch_twins
    from torch.utils.checkpoint import checkpoint
    model, x, y = _gpt_model_and_batch(size)
    twin = torch_twins.TorchCharGPT(model)
    opt = torch.optim.SGD(twin.parameters(), lr=0.001)
    idx, targets = torch.from_numpy(x), torch.from_numpy(y)

    def block_fn(block, h):
        h = h + twin.attention(block, block["ln1"](h))
        return h + block["proj"](TF.gelu(block["fc"](block["ln2"](h)), approximate="tanh"))

    def step(stats: bool = False):
        opt.zero_grad(set_to_none=True)
        h = twin.tok_emb(idx) + twin.pos_emb[:idx.shape[1]]
        for block in twin.blocks:
            h = block_fn(block, h) if checkpoints == "none" else checkpoint(block_fn, block, h, use_reentrant=False)
        logits = twin.head(twin.ln_f(h))
        loss = TF.cross_entropy(logits.reshape(-1, twin.vocab_size), targets.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return step


MODELS = {
    "mlp": (fluid_mlp_step, torch_mlp_step,
            {"depth": 64, "width": 1024, "batch": 256}, {"depth": 16, "width": 256, "batch": 64},
            lambda s: f"{s['depth']}-layer MLP, width {s['width']}, batch {s['batch']}"),
    "gpt": (fluid_gpt_step, torch_gpt_step,
            {"layers": 8, "embd": 128, "heads": 4, "seq": 256, "batch": 8},
            {"layers": 4, "embd": 32, "heads": 2, "seq": 64, "batch": 4},
            lambda s: f"char GPT, {s['layers']} blocks, width {s['embd']}, {s['heads']} heads, "
                      f"sequence {s['seq']}, batch {s['batch']}"),
}


def _make(model: str, contender: str, size: dict):
    fluid, torch_, *_ = MODELS[model]
    framework, checkpoints = contender.split(":")
    return (fluid if framework == "fluidgrad" else torch_)(size, checkpoints)


def _child(args: argparse.Namespace) -> None:
    """One contender in a fresh process: RSS growth over its first steps, and the plan's peaks."""
    model, contender = args.child.split("/")
    size = json.loads(args.size)
    with limit_threads(1):
        step = _make(model, contender, size)
        before = _rss_bytes()
        _reset_peak_rss()
        stats = None
        for _ in range(3):
            result = step(True)
            if contender.startswith("fluidgrad"):
                stats = result[1]
        print(json.dumps({"rss_growth": _peak_rss_bytes() - before,
                          "activation": stats.peak_activation_bytes if stats else None,
                          "live": stats.peak_live_bytes if stats else None}))


def _interleaved_medians(contenders: dict, rounds: int) -> tuple[dict, dict]:
    """Median wall and median process-CPU seconds per call of each contender, timed in
    alternation (round k runs every contender once, in an order rotated by k)."""
    for fn in contenders.values():
        fn()
    names = list(contenders)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for k in range(rounds):
        for name in names[k % len(names):] + names[:k % len(names)]:
            start, start_cpu = time.perf_counter(), time.process_time()
            contenders[name]()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return ({n: float(np.median(v)) for n, v in wall.items()}, {n: float(np.median(v)) for n, v in cpu.items()})


def _ratio_cell(value: float, base: float, unit: float, suffix: str) -> str:
    return f"{value / unit:.0f} {suffix} ({value / base:.2f}x)"


def bench(model: str, size: dict, threads: int, rounds: int) -> None:
    memory = {}
    for name in VARIANTS:
        out = subprocess.run([sys.executable, __file__, "--child", f"{model}/{name}", "--size", json.dumps(size)],
                             capture_output=True, text=True, check=True)
        memory[name] = json.loads(out.stdout.strip().splitlines()[-1])
    with limit_threads(threads):
        steps = {name: _make(model, name, size) for name in VARIANTS}
        times, cpu_times = _interleaved_medians(steps, rounds=rounds)
    rows = []
    for name in VARIANTS:
        base = "fluidgrad:none" if name.startswith("fluidgrad") else "torch:none"
        mem = memory[name]
        act = _ratio_cell(mem["activation"], memory[base]["activation"], 2**20, "MiB") \
            if mem["activation"] is not None else "-"
        rss = _ratio_cell(mem["rss_growth"], memory[base]["rss_growth"], 2**20, "MiB")
        rows.append([name, act, rss, _ratio_cell(times[name], times[base], 1e-3, "ms"),
                     _ratio_cell(cpu_times[name], cpu_times[base], 1e-3, "ms")])
    print_table(f"{MODELS[model][4](size)}, one SGD step, {threads} thread(s)",
                ["contender", "peak activations (plan)", "peak RSS growth", "step wall time", "step CPU time"], rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", choices=sorted(MODELS), default=None)
    parser.add_argument("--child", default=None)
    parser.add_argument("--size", default=None)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    for model in [args.only] if args.only else list(MODELS):
        size = MODELS[model][3] if args.quick else MODELS[model][2]
        bench(model, size, args.threads, rounds=args.rounds or (3 if args.quick else 7))


if __name__ == "__main__":
    main()
