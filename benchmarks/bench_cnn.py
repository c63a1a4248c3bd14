"""The `fluidgrad demo` CNN's training step (forward, backward, Adam) against the same CNN in PyTorch.

    python benchmarks/bench_cnn.py [--quick]

Network (as in fluidgrad/demo.py): conv3x3(1->16)-relu-maxpool2, conv3x3(16->32)-relu-maxpool2,
fc(128->10), softmax cross-entropy, Adam; float32 8x8 images. Rows: fluidgrad static (the
demo's own Program on the Executor), fluidgrad eager (the demo's eager Layers), PyTorch
eager. All run in this process on the same batches, so the ratios hold on a noisy machine.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fluidgrad as fg  # noqa: E402
from common import print_table  # noqa: E402
from fluidgrad import demo  # noqa: E402
from fluidgrad.nn import functional as F  # noqa: E402


def static_step(images: np.ndarray, labels: np.ndarray):
    net = demo.build_static("cnn", learning_rate=0.01)
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(net["startup"], scope=scope)
    feed = {"image": images, "label": labels}
    return lambda: exe.run(net["main"], feed=feed, fetch_list=[net["loss"]], scope=scope)


def eager_step(images: np.ndarray, labels: np.ndarray):
    from fluidgrad.optimizer import Adam
    net = demo.eager_network("cnn")
    optimizer = Adam(0.01, parameters=net.parameters())
    x, y = fg.to_tensor(images), fg.to_tensor(labels)

    def step():
        loss = fg.mean(F.softmax_with_cross_entropy(net(x), y))
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    return step


def torch_step(images: np.ndarray, labels: np.ndarray):
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.from_numpy(images), torch.from_numpy(labels[:, 0])

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return step


CLOCK = time.perf_counter


def alternating_medians(steps: dict, rounds: int, number: int) -> dict[str, tuple[float, float]]:
    """Per contender: the median over rounds of seconds per step (each round times `number` steps
    of every contender in turn), and the median of its per-round ratio to PyTorch."""
    for step in steps.values():
        for _ in range(3):
            step()
    per_round: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            start = CLOCK()
            for _ in range(number):
                step()
            per_round[name].append((CLOCK() - start) / number)
    torch_times = per_round["PyTorch eager"]
    return {name: (statistics.median(times), statistics.median(t / p for t, p in zip(times, torch_times)))
            for name, times in per_round.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--threads", type=int, nargs="*", default=None, help="thread counts (default: 1 and all)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time the calling thread's CPU time (with --threads 1 only): on a loaded machine, "
                             "the time other processes hold the core is not counted")
    args = parser.parse_args()
    if args.cpu_time:
        if args.threads != [1]:
            parser.error("--cpu-time measures one thread: use it with --threads 1")
        global CLOCK
        CLOCK = time.thread_time
    import torch
    from threadpoolctl import threadpool_limits
    rounds, number = (3, 5) if args.quick else (7, 10)
    x_train, y_train, _, _ = demo.load_data()
    default_threads = torch.get_num_threads()
    rows = []
    for threads in args.threads or (1, default_threads):  # 1: how `fluidgrad demo` runs (BLAS capped at one)
        torch.set_num_threads(threads)
        with threadpool_limits(threads, user_api="blas"):
            for batch in (32, 128):
                images, labels = x_train[:batch], y_train[:batch]
                steps = {name: make(images, labels) for name, make in [
                    ("fluidgrad static", static_step), ("fluidgrad eager", eager_step), ("PyTorch eager", torch_step)]}
                for name, (seconds, ratio) in alternating_medians(steps, rounds, number).items():
                    rows.append([threads, batch, name, f"{seconds * 1e3:.2f}", f"{ratio:.2f}x"])
    torch.set_num_threads(default_threads)
    print_table(f"demo CNN training step, median of {rounds} alternating rounds of {number} steps (torch "
                f"{torch.__version__}, numpy {np.__version__}; threads = BLAS threads for NumPy and "
                f"torch.set_num_threads)", ["threads", "batch", "implementation", "ms / step", "vs PyTorch"], rows)
    steps = -(-len(x_train) // 32)
    print(f"\n(one demo epoch is {steps} steps of batch 32)")


if __name__ == "__main__":
    main()
