"""Eager-mode benchmarks, every competitor in the same run.

1. Per-op overhead: a chain of 1000 ops alternating `h * a` and `h + b` on 1-element float64
   tensors, forward + backward of d(h)/d(x), in microseconds per op: fluidgrad eager vs
   PyTorch eager, HIPS autograd, and plain NumPy (forward, then the chain rule by hand).
2. The same on a chain of tanh, whose registered gradient is three ops (PyTorch fuses it).
3. An MLP 784-512-512-10 training step (forward, softmax cross-entropy, backward, SGD
   update, clear gradients) at batch 64 in float32, with each framework's Linear layers and
   SGD optimizer: fluidgrad eager vs PyTorch eager.

    /work/venv/bin/python benchmarks/bench_eager.py [--quick] [--threads 1]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidgrad as fg  # noqa: E402
from common import limit_threads, print_table  # noqa: E402


def _interleaved_best(fns, repeat: int, number: int = 1) -> list[float]:
    """Best time per call of each function, measured in alternation, so that a change in the
    machine's load during the run hits every competitor alike (a shared 2-core machine)."""
    import time
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def _chain(h, a, b, n_ops):
    for i in range(n_ops):
        h = h * a if i % 2 == 0 else h + b
    return h


def bench_per_op(n_ops: int, repeat: int) -> None:
    import autograd
    import torch
    x0, a0, b0 = np.ones(1), np.full(1, 1.0001), np.full(1, 0.001)

    def ours():
        x = fg.to_tensor(x0, stop_gradient=False)
        h = _chain(x, fg.to_tensor(a0), fg.to_tensor(b0), n_ops)
        h.backward()
        return x.grad

    def torch_eager():
        x = torch.tensor(x0, requires_grad=True)
        h = _chain(x, torch.tensor(a0), torch.tensor(b0), n_ops)
        h.backward()
        return x.grad

    grad_fn = autograd.grad(lambda x: _chain(x, a0, b0, n_ops).sum())

    def hips():
        return grad_fn(x0)

    def plain_numpy():
        h = _chain(x0, a0, b0, n_ops)
        g = np.ones(1)
        for i in reversed(range(n_ops)):
            if i % 2 == 0:
                g = g * a0
        return h, g

    expected = plain_numpy()[1]
    for name, fn in (("fluidgrad", ours), ("torch", torch_eager), ("autograd", hips)):
        got = fn()
        got = got.numpy() if hasattr(got, "numpy") else got
        if not np.allclose(np.asarray(got, dtype=np.float64), expected, rtol=1e-9):
            raise AssertionError(f"{name} computed a wrong gradient: {got} vs {expected}")
    names = ["plain NumPy", "fluidgrad eager", "PyTorch eager", "HIPS autograd"]
    times = dict(zip(names, _interleaved_best([plain_numpy, ours, torch_eager, hips], repeat=repeat)))
    base = times["PyTorch eager"]
    rows = [[name, f"{t / n_ops * 1e6:.2f}", f"{t / base:.2f}", f"{t / times['plain NumPy']:.1f}"]
            for name, t in times.items()]
    print_table(f"eager per-op cost, forward + backward, chain of {n_ops} ops on 1-element tensors",
                ["implementation", "µs per op", "ratio to PyTorch", "ratio to NumPy"], rows)


def bench_unary_chain(n_ops: int, repeat: int) -> None:
    """A chain of tanh: one op whose registered gradient is three ops (square, scale, mul),
    where PyTorch runs one fused backward kernel. Shown for honesty next to the main chain."""
    import torch
    x0 = np.full(1, 0.5)

    def ours():
        x = fg.to_tensor(x0, stop_gradient=False)
        h = x
        for _ in range(n_ops):
            h = fg.tanh(h)
        h.backward()
        return x.grad

    def torch_eager():
        x = torch.tensor(x0, requires_grad=True)
        h = x
        for _ in range(n_ops):
            h = torch.tanh(h)
        h.backward()
        return x.grad

    np.testing.assert_allclose(ours().numpy(), torch_eager().numpy(), rtol=1e-9)
    times = dict(zip(["fluidgrad eager", "PyTorch eager"], _interleaved_best([ours, torch_eager], repeat=repeat)))
    rows = [[name, f"{t / n_ops * 1e6:.2f}", f"{t / times['PyTorch eager']:.2f}"] for name, t in times.items()]
    print_table(f"eager per-op cost, forward + backward, chain of {n_ops} tanh on 1-element tensors",
                ["implementation", "µs per op", "ratio to PyTorch"], rows)


def _wide_contenders(n_ops: int, shape: tuple[int, int]) -> dict:
    import torch
    rng = np.random.default_rng(0)
    x0, a0, b0 = rng.standard_normal(shape), rng.uniform(0.5, 1.5, shape), rng.standard_normal(shape) * 0.1

    def ours():
        x = fg.to_tensor(x0, stop_gradient=False)
        _chain(x, fg.to_tensor(a0), fg.to_tensor(b0), n_ops).sum().backward()
        return x.grad.numpy()

    ta, tb = torch.tensor(a0), torch.tensor(b0)

    def torch_eager():
        x = torch.tensor(x0, requires_grad=True)
        _chain(x, ta, tb, n_ops).sum().backward()
        return x.grad.numpy()

    return {"fluidgrad eager": ours, "PyTorch eager": torch_eager}


def bench_wide_chain(n_ops: int, rounds: int, shape: tuple[int, int] = (100, 100)) -> None:
    """Per-op time of the per-op benchmark's chain on (100, 100) float64 tensors, where the
    arrays cost more than the bookkeeping. Backward reads none of the intermediates (the
    gradient of `h * a` by h is `dout * a`; PyTorch saves only `a`), so a framework that saves
    only what its gradients read frees each one during the forward pass. Memory is measured
    in a fresh process per contender (`--memory-child`)."""
    import statistics
    import subprocess
    from common import interleaved_best
    import torch
    torch.set_num_threads(1)
    contenders = _wide_contenders(n_ops, shape)
    results = [fn() for fn in contenders.values()]
    np.testing.assert_allclose(results[0], results[1], rtol=1e-9)
    per_round = {name: [] for name in contenders}
    for _ in range(rounds):
        best = interleaved_best(contenders, rounds=3)
        for name in contenders:
            per_round[name].append(best[name])
    rows = []
    for name, times in per_round.items():
        out = subprocess.run([sys.executable, __file__, "--memory-child", name, "--ops", str(n_ops)],
                             capture_output=True, text=True, check=True).stdout.split()
        # each round's ratio to PyTorch's time in the same round: a burst of load elsewhere moves both
        ratios = sorted(t / base for t, base in zip(times, per_round["PyTorch eager"]))
        rows.append([name, f"{statistics.median(times) / n_ops * 1e6:.2f}", f"{statistics.median(ratios):.2f}",
                     f"{ratios[0]:.2f}-{ratios[-1]:.2f}", out[0], out[1]])
    print_table(f"eager chain of {n_ops} ops (h * a, h + b in turn) on {shape} float64 tensors, forward + backward, "
                f"one thread, {rounds} alternating rounds (goal, issue 12: at most 1.00x PyTorch per op)",
                ["implementation", "µs per op", "ratio to PyTorch (median of rounds)", "rounds' ratios",
                 "peak array MiB, forward + backward", "arrays alive after forward, MiB"], rows)


def _memory_child(name: str, n_ops: int) -> None:
    """Print the peak bytes (MiB) of arrays alive during one forward + backward of the chain, and
    those alive when the forward ends. fluidgrad: NumPy's allocations, through tracemalloc;
    PyTorch (whose allocations tracemalloc does not see): the tensors its graph saved, through
    saved_tensors_hooks, plus the output (no peak: "-")."""
    import tracemalloc
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x0, a0, b0 = rng.standard_normal((100, 100)), rng.uniform(0.5, 1.5, (100, 100)), rng.standard_normal((100, 100))
    if name == "PyTorch eager":
        saved: dict[int, int] = {}

        def pack(t):
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t
        x = torch.tensor(x0, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            h = _chain(x, torch.tensor(a0), torch.tensor(b0), n_ops)
        print(f"- {(sum(saved.values()) + h.nbytes) / 2**20:.1f}")
        return
    x = fg.to_tensor(x0, stop_gradient=False)
    a, b = fg.to_tensor(a0), fg.to_tensor(b0)
    _chain(fg.to_tensor(x0, stop_gradient=False), a, b, 4).sum().backward()  # first-call set-up is not the chain's
    tracemalloc.start()
    h = _chain(x, a, b, n_ops)
    live = tracemalloc.get_traced_memory()[0]
    h.sum().backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{peak / 2**20:.1f} {live / 2**20:.1f}")


def bench_mlp_step(repeat: int, batch: int = 64) -> None:
    """nn.Linear layers + optimizer.SGD in both frameworks, same initial weights."""
    import torch
    from fluidgrad import nn
    from fluidgrad.nn import functional as F
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, (batch,)).astype(np.int64)
    lr = 0.01

    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = fg.optimizer.SGD(learning_rate=lr, parameters=model.parameters())
    x, y = fg.to_tensor(x_np), fg.to_tensor(y_np.reshape(-1, 1))

    def ours():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    t_model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                  torch.nn.ReLU(), torch.nn.Linear(512, 10))
    with torch.no_grad():
        for mine, theirs in zip([m for m in model if isinstance(m, nn.Linear)],
                                [m for m in t_model if isinstance(m, torch.nn.Linear)]):
            theirs.weight.copy_(torch.tensor(mine.weight.numpy().T))
            theirs.bias.copy_(torch.tensor(mine.bias.numpy()))
    t_opt = torch.optim.SGD(t_model.parameters(), lr=lr)
    tx, ty = torch.tensor(x_np), torch.tensor(y_np)

    def torch_step():
        loss = torch.nn.functional.cross_entropy(t_model(tx), ty)
        loss.backward()
        t_opt.step()
        t_opt.zero_grad()
        return loss

    ours_loss, torch_loss = float(ours().numpy()), float(torch_step().detach())
    if abs(ours_loss - torch_loss) > 1e-4 * max(1.0, abs(torch_loss)):
        raise AssertionError(f"losses differ: fluidgrad {ours_loss} vs PyTorch {torch_loss}")
    import statistics
    rounds = [_interleaved_best([ours, torch_step], repeat=max(repeat // 4, 2), number=5) for _ in range(5)]
    t_ours, t_torch = (statistics.median(r[i] for r in rounds) for i in (0, 1))
    ratios = sorted(r[0] / r[1] for r in rounds)
    rows = [["PyTorch eager (nn.Linear, optim.SGD)", f"{t_torch * 1e3:.2f}", "1.00", "1.00-1.00"],
            ["fluidgrad eager (nn.Linear, optimizer.SGD)", f"{t_ours * 1e3:.2f}", f"{statistics.median(ratios):.2f}",
             f"{ratios[0]:.2f}-{ratios[-1]:.2f}"]]
    goal = " (goal, issue 12: eager at most 1.20x PyTorch)" if batch == 1 else ""
    print_table(f"MLP 784-512-512-10 training step, batch {batch}, float32 (torch threads: {torch.get_num_threads()}); "
                f"medians of 5 alternating rounds{goal}",
                ["implementation", "ms per step", "ratio to PyTorch (median of rounds)", "rounds' ratios"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS / PyTorch threads for the MLP (default: each library's own default)")
    parser.add_argument("--ops", type=int, default=500, help="length of the (100, 100) chain")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=["per-op", "tanh", "wide", "mlp"], default=None)
    args = parser.parse_args()
    if args.memory_child:
        _memory_child(args.memory_child, args.ops)
        return
    if args.only in (None, "per-op"):
        bench_per_op(1000, repeat=5 if args.quick else 20)
    if args.only in (None, "tanh"):
        bench_unary_chain(1000, repeat=5 if args.quick else 20)
    if args.only in (None, "wide"):
        bench_wide_chain(args.ops, rounds=3 if args.quick else 11)
    if args.only in (None, "mlp"):
        with limit_threads(args.threads):
            for batch in (64, 1):
                bench_mlp_step(repeat=5 if args.quick else 20, batch=batch)


if __name__ == "__main__":
    main()
