"""Eager-mode benchmarks, every competitor in the same run.

1. Per-op overhead: a chain of 1000 ops alternating `h * a` and `h + b` on 1-element float64
   tensors, forward + backward of d(h)/d(x), in microseconds per op: fluidgrad eager vs
   PyTorch eager, HIPS autograd, and plain NumPy (forward, then the chain rule by hand).
2. An MLP 784-512-512-10 training step (forward, softmax cross-entropy, backward, SGD
   update) at batch 64 in float32: fluidgrad eager vs PyTorch eager.

    /work/venv/bin/python benchmarks/bench_eager.py [--quick]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidgrad as fg  # noqa: E402
from common import best_time, print_table  # noqa: E402


def _chain(h, a, b, n_ops):
    for i in range(n_ops):
        h = h * a if i % 2 == 0 else h + b
    return h


def bench_per_op(n_ops: int, repeat: int) -> None:
    import autograd
    import autograd.numpy as anp  # noqa: F401  (autograd boxes NumPy calls)
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
    times = {name: best_time(fn, repeat=repeat) for name, fn in
             (("plain NumPy", plain_numpy), ("fluidgrad eager", ours), ("PyTorch eager", torch_eager),
              ("HIPS autograd", hips))}
    base = times["PyTorch eager"]
    rows = [[name, f"{t / n_ops * 1e6:.2f}", f"{t / base:.2f}", f"{t / times['plain NumPy']:.1f}"]
            for name, t in times.items()]
    print_table(f"eager per-op cost, forward + backward, chain of {n_ops} ops on 1-element tensors",
                ["implementation", "µs per op", "ratio to PyTorch", "ratio to NumPy"], rows)


def bench_mlp_step(repeat: int, batch: int = 64) -> None:
    import torch
    from fluidgrad.dispatch import apply_op
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    weights = [rng.uniform(-0.05, 0.05, (i, o)).astype(np.float32) for i, o in zip(sizes, sizes[1:])]
    biases = [np.zeros(o, np.float32) for o in sizes[1:]]
    x_np = rng.standard_normal((batch, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, (batch,)).astype(np.int64)
    lr = 0.01

    params = [fg.to_tensor(a, stop_gradient=False) for pair in zip(weights, biases) for a in pair]
    x, y = fg.to_tensor(x_np), fg.to_tensor(y_np.reshape(-1, 1))

    def ours():
        h = x
        for i in range(3):
            h = fg.matmul(h, params[2 * i]) + params[2 * i + 1]
            if i < 2:
                h = fg.relu(h)
        loss = fg.mean(apply_op("softmax_with_cross_entropy", {"Logits": h, "Label": y})[1])
        loss.backward()
        with fg.no_grad():
            for p in params:
                p.data = p.data - lr * p.grad.data
                p.grad = None
        return loss

    t_params = [torch.tensor(a, requires_grad=True) for pair in zip(weights, biases) for a in pair]
    tx, ty = torch.tensor(x_np), torch.tensor(y_np)

    def torch_step():
        h = tx
        for i in range(3):
            h = h @ t_params[2 * i] + t_params[2 * i + 1]
            if i < 2:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, ty)
        loss.backward()
        with torch.no_grad():
            for p in t_params:
                p -= lr * p.grad
                p.grad = None
        return loss

    ours_loss, torch_loss = float(ours().numpy()), float(torch_step().detach())
    if abs(ours_loss - torch_loss) > 1e-4 * max(1.0, abs(torch_loss)):
        raise AssertionError(f"losses differ: fluidgrad {ours_loss} vs PyTorch {torch_loss}")
    t_ours = best_time(ours, repeat=repeat)
    t_torch = best_time(torch_step, repeat=repeat)
    rows = [["PyTorch eager", f"{t_torch * 1e3:.2f}", "1.00"],
            ["fluidgrad eager", f"{t_ours * 1e3:.2f}", f"{t_ours / t_torch:.2f}"]]
    print_table(f"MLP 784-512-512-10 training step, batch {batch}, float32",
                ["implementation", "ms per step", "ratio to PyTorch"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    bench_per_op(1000, repeat=5 if args.quick else 20)
    bench_mlp_step(repeat=5 if args.quick else 20)


if __name__ == "__main__":
    main()
