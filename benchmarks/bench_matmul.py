"""matmul at the GEMM shapes of the MLP (784-512-512-10, batch 1 and 64) and a small GPT
(d=128, 4 heads, seq 64, batch 16, vocab 65): forward and both gradient products, fluidgrad's
kernel against plain NumPy (np.matmul on the same operands, what fluidgrad did before) and
PyTorch, at one thread, timed in alternation. Then the MLP training step at batch 1, where the
weight gradient is an outer product (K = 1), static and eager, against PyTorch and NumPy.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_matmul.py [--quick] [--threads N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_core import _mlp_numpy
from common import interleaved_best, limit_threads, print_table

import fluidgrad as fg
from fluidgrad.ops import get_op_def


def _products(batch_rows: int) -> list[tuple[str, tuple, tuple, bool, bool]]:
    """(what, x shape, y shape, transpose_x, transpose_y) as the forward and the grad maker emit them."""
    rows = []
    for b in (1, batch_rows):
        for k, n in ((784, 512), (512, 512), (512, 10)):
            rows += [(f"MLP b={b} {k}x{n} forward", (b, k), (k, n), False, False),
                     (f"MLP b={b} {k}x{n} dW = x^T dY", (b, k), (b, n), True, False),
                     (f"MLP b={b} {k}x{n} dX = dY W^T", (b, n), (k, n), False, True)]
    m = 1024  # GPT: batch 16 x seq 64 rows
    for name, k, n in (("qkv", 128, 384), ("ff1", 128, 512), ("ff2", 512, 128), ("head", 128, 65)):
        rows += [(f"GPT {name} forward", (m, k), (k, n), False, False),
                 (f"GPT {name} dW", (m, k), (m, n), True, False),
                 (f"GPT {name} dX", (m, n), (k, n), False, True)]
    bh, t, d = 64, 64, 32
    rows += [("GPT attention QK^T", (bh, t, d), (bh, t, d), False, True),
             ("GPT attention PV", (bh, t, t), (bh, t, d), False, False),
             ("GPT attention dV = P^T dO", (bh, t, t), (bh, t, d), True, False),
             ("GPT attention dK = dS^T Q", (bh, t, t), (bh, t, d), True, False)]
    return rows


def bench_products(rounds: int, quick: bool) -> None:
    import torch
    kernel = get_op_def("matmul").kernel
    rng = np.random.default_rng(0)
    table = []
    for what, xs, ys, tx, ty in _products(64):
        if quick and what.startswith("MLP b=64"):
            continue
        x, y = rng.random(xs, dtype=np.float32), rng.random(ys, dtype=np.float32)
        xv = np.swapaxes(x, -1, -2) if tx else x
        yv = np.swapaxes(y, -1, -2) if ty else y
        tx_t, ty_t = torch.from_numpy(x), torch.from_numpy(y)
        tx_t, ty_t = (tx_t.mT if tx else tx_t), (ty_t.mT if ty else ty_t)
        np.testing.assert_allclose(kernel(x, y, tx, ty), np.matmul(xv, yv), rtol=1e-4)
        flops = 2 * np.prod(np.matmul(np.zeros(xv.shape[-2:]), np.zeros(yv.shape[-2:])).shape) * xv.shape[-1] \
            * (xv.shape[0] if xv.ndim == 3 else 1)
        number = max(1, int(2e7 // max(flops, 1)))
        contenders = {"fluidgrad": lambda a=(x, y, tx, ty): kernel(*a), "numpy": lambda a=(xv, yv): np.matmul(*a),
                      "torch": lambda a=(tx_t, ty_t): torch.matmul(*a)}
        ratios = {"numpy": [], "torch": []}
        best = {}
        for _ in range(3):  # three alternating rounds; the table gives medians of their ratios
            best = interleaved_best(contenders, rounds=rounds, number=number)
            for other, found in ratios.items():
                found.append(best["fluidgrad"] / best[other])
        table.append([what, f"{list(xv.shape)} @ {list(yv.shape)}", f"{best['fluidgrad'] * 1e6:.1f}",
                      f"{statistics.median(ratios['numpy']):.2f}", f"{statistics.median(ratios['torch']):.2f}"])
    print_table(f"matmul products, float32 (threads: {torch.get_num_threads()})",
                ["product", "operands (as multiplied)", "fluidgrad µs", "vs np.matmul", "vs PyTorch"], table)


def _static_mlp(batch: int):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        xv = fg.static.data("x", [None, 784])
        lv = fg.static.data("label", [None, 1], "int64")
        h = fg.static.nn.fc(xv, 512, activation="relu")
        h = fg.static.nn.fc(h, 512, activation="relu")
        logits = fg.static.nn.fc(h, 10)
        loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(logits, lv))
        fg.optimizer.SGD(0.01).minimize(loss)
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    return main, loss, scope, exe, [scope[p.name].copy() for p in main.all_parameters()]


def bench_mlp_batch1(rounds: int) -> None:
    import torch
    rng = np.random.default_rng(0)
    x = rng.random((1, 784), dtype=np.float32)
    labels = rng.integers(0, 10, (1, 1))
    main, loss, scope, exe, params = _static_mlp(1)
    feed = {"x": x, "label": labels}

    model = fg.nn.Sequential(fg.nn.Linear(784, 512), fg.nn.ReLU(), fg.nn.Linear(512, 512), fg.nn.ReLU(),
                             fg.nn.Linear(512, 10))
    for p, value in zip(model.parameters(), params):
        p.data[...] = value
    opt = fg.optimizer.SGD(0.01, parameters=model.parameters())
    ex, el = fg.to_tensor(x), fg.to_tensor(labels)

    def eager_step():
        out = fg.mean(fg.nn.functional.softmax_with_cross_entropy(model(ex), el))
        out.backward()
        opt.step()
        opt.clear_grad()

    tw = [torch.tensor(p.copy(), requires_grad=True) for p in params]
    tx, tl = torch.tensor(x), torch.tensor(labels[:, 0])
    topt = torch.optim.SGD(tw, lr=0.01)

    def torch_step():
        h1 = torch.relu(tx @ tw[0] + tw[1])
        h2 = torch.relu(h1 @ tw[2] + tw[3])
        loss_t = torch.nn.functional.cross_entropy(h2 @ tw[4] + tw[5], tl)
        topt.zero_grad()
        loss_t.backward()
        topt.step()

    np_params = [p.copy() for p in params]
    contenders = {"hand-written NumPy": lambda: _mlp_numpy(np_params, x, labels, 0.01),
                  "fluidgrad static": lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope),
                  "fluidgrad eager": eager_step, "PyTorch eager": torch_step}
    per_round = {name: [] for name in contenders}
    for _ in range(3):
        best = interleaved_best(contenders, rounds=rounds, number=20)
        for name in contenders:
            per_round[name].append(best[name] / best["PyTorch eager"])
    rows = [[name, f"{statistics.median(r):.2f}"] for name, r in per_round.items()]
    print_table(f"MLP 784-512-512-10 training step, batch 1, float32 (threads: {torch.get_num_threads()}); "
                f"median of 3 alternating rounds", ["implementation", "time / PyTorch eager"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer shapes and repeats")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    rounds = 3 if args.quick else 7
    with limit_threads(args.threads):
        bench_products(rounds, args.quick)
        bench_mlp_batch1(rounds)


if __name__ == "__main__":
    main()
