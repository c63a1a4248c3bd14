"""Core benchmarks (issue 2): backward-building time, an MLP training step, executor per-op cost.

    python benchmarks/bench_core.py [--quick]

Every comparison runs in the same process, so the ratios hold on a noisy machine.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fluidgrad as fg  # noqa: E402
from fluidgrad import demo  # noqa: E402
from fluidgrad.executor import plan  # noqa: E402
from common import interleaved_best, limit_threads, print_table  # noqa: E402


def fc_stack(depth: int, width: int = 16) -> fg.Variable:
    x = fg.static.data("x", [None, width])
    h = x
    for _ in range(depth):
        h = fg.relu(fg.static.nn.fc(h, width))
    return fg.mean(h)


def bench_append_backward(depths: list[int]) -> None:
    """Forward build (`static.nn.fc` + relu per layer) and `append_backward`, best of a few fresh
    programs. The previous round's program is collected before each build, so that freeing it
    is not charged to the next one. Per op: the forward time over the ops of the main and
    startup programs it appends, the backward time over the grad ops it appends."""
    rows, previous = [], None
    for depth in depths:
        forward = backward = float("inf")
        for _ in range(3 if depth <= 1000 else 2):
            main, startup = fg.Program(), fg.Program()
            gc.collect()
            with fg.program_guard(main, startup):
                start = time.perf_counter()
                loss = fc_stack(depth)
                middle = time.perf_counter()
                n_forward = len(main.global_block().ops) + len(startup.global_block().ops)
                n_main = len(main.global_block().ops)
                fg.append_backward(loss)
                end = time.perf_counter()
            forward, backward = min(forward, middle - start), min(backward, end - middle)
        n_backward = len(main.global_block().ops) - n_main
        growth = f"x{backward / previous:.1f}" if previous else ""
        rows.append([depth, len(main.global_block().ops), f"{forward:.3f}", f"{backward:.3f}", growth,
                     f"{forward / n_forward * 1e6:.1f}", f"{backward / n_backward * 1e6:.1f}"])
        previous = backward
    print_table("building fc stacks (matmul + add + relu per layer, width 16): forward, then append_backward",
                ["depth", "ops after backward", "forward build s", "append_backward s", "backward growth",
                 "forward µs per op", "backward µs per grad op"], rows)


def _mlp_numpy(params, x, labels, lr):
    w1, b1, w2, b2, w3, b3 = params
    h1p = x @ w1 + b1
    h1 = np.maximum(h1p, 0)
    h2p = h1 @ w2 + b2
    h2 = np.maximum(h2p, 0)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    softmax = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.log(softmax[np.arange(n), labels[:, 0]]).mean()
    dlogits = softmax
    dlogits[np.arange(n), labels[:, 0]] -= 1
    dlogits /= n
    dw3, db3 = h2.T @ dlogits, dlogits.sum(0)
    dh2 = (dlogits @ w3.T) * (h2p > 0)
    dw2, db2 = h1.T @ dh2, dh2.sum(0)
    dh1 = (dh2 @ w2.T) * (h1p > 0)
    dw1, db1 = x.T @ dh1, dh1.sum(0)
    for p, g in zip(params, (dw1, db1, dw2, db2, dw3, db3)):
        p -= lr * g
    return loss


def bench_mlp_step(repeat: int, batch: int = 64) -> None:
    rng = np.random.default_rng(0)
    x = rng.random((batch, 784), dtype=np.float32)
    labels = rng.integers(0, 10, (batch, 1))
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        xv = fg.static.data("x", [None, 784])
        lv = fg.static.data("label", [None, 1], "int64")
        h = fg.static.nn.fc(xv, 512, activation="relu")
        h = fg.static.nn.fc(h, 512, activation="relu")
        logits = fg.static.nn.fc(h, 10)
        loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(logits, lv)) if hasattr(fg, "nn") else \
            fg.mean(fg.dispatch.apply_op("softmax_with_cross_entropy", {"Logits": logits, "Label": lv})[1])
        try:
            fg.optimizer.SGD(0.01).minimize(loss)
            how = "sgd ops"
        except AttributeError:
            fg.append_backward(loss)
            how = "append_backward only"
    scope = fg.Scope()
    exe = fg.Executor()
    exe.run(startup, scope=scope)
    feed = {"x": x, "label": labels}
    params = [scope[p.name].copy() for p in main.all_parameters()]
    contenders = {
        "hand-written NumPy": lambda: _mlp_numpy(params, x, labels, 0.01),
        f"fluidgrad Executor ({how})": lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope),
    }
    try:
        import torch
        tw = [torch.tensor(p.copy(), requires_grad=True) for p in params]
        tx, tl = torch.tensor(x), torch.tensor(labels[:, 0])
        opt = torch.optim.SGD(tw, lr=0.01)

        def torch_step():
            h1 = torch.relu(tx @ tw[0] + tw[1])
            h2 = torch.relu(h1 @ tw[2] + tw[3])
            loss_t = torch.nn.functional.cross_entropy(h2 @ tw[4] + tw[5], tl)
            opt.zero_grad()
            loss_t.backward()
            opt.step()
        contenders["PyTorch eager"] = torch_step
    except ImportError:
        pass
    medians = _interleaved_median(contenders, rounds=repeat, number=5)
    numpy_time = medians["hand-written NumPy"]
    torch_time = medians.get("PyTorch eager", float("nan"))
    rows = [[name, f"{t * 1e3:.3f}", f"{t / numpy_time:.2f}", f"{t / torch_time:.2f}"] for name, t in medians.items()]
    import torch
    print_table(f"MLP 784-512-512-10 training step, batch {batch}, float32 (threads: {torch.get_num_threads()}; "
                f"medians of {repeat} interleaved rounds)",
                ["implementation", "ms per step", "ratio to NumPy", "ratio to PyTorch"], rows)


def _mlp_program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        xv = fg.static.data("x", [None, 784])
        lv = fg.static.data("label", [None, 1], "int64")
        h = fg.static.nn.fc(xv, 512, activation="relu")
        h = fg.static.nn.fc(h, 512, activation="relu")
        loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(fg.static.nn.fc(h, 10), lv))
        fg.optimizer.SGD(0.01).minimize(loss)
    return main, startup, loss


def _cnn_program():
    net = demo.build_static("cnn", learning_rate=0.01)
    return net["main"], net["startup"], net["loss"]


def _compiled_step(build, feed, reuse: bool):
    """A training step whose plan was compiled with buffer reuse on or off; and its RunStats."""
    main, startup, loss = build()
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    saved, plan.REUSE_BUFFERS = plan.REUSE_BUFFERS, reuse
    try:
        _, stats = exe.run(main, feed=feed, fetch_list=[loss], scope=scope, return_stats=True)
    finally:
        plan.REUSE_BUFFERS = saved
    return (lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)), stats


def _interleaved_median(contenders: dict, rounds: int, number: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for fn in contenders.values():
        fn()
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(t) for name, t in times.items()}


def bench_buffer_reuse(repeat: int) -> None:
    """Peak live bytes (Executor.run(return_stats=True)) and step time, the plan compiled without
    and with buffer reuse (in-place elementwise ops, shape-only reads freed early)."""
    rng = np.random.default_rng(0)
    images, labels, *_ = demo.load_data(0)
    models = {
        "MLP 784-512-512-10, b=64, SGD": (_mlp_program, {"x": rng.random((64, 784), dtype=np.float32),
                                                         "label": rng.integers(0, 10, (64, 1))}),
        "demo CNN, b=32, Adam": (_cnn_program, {"image": images[:32], "label": labels[:32]}),
    }
    rows = []
    for model, (build, feed) in models.items():
        before, before_stats = _compiled_step(build, feed, reuse=False)
        after, after_stats = _compiled_step(build, feed, reuse=True)
        times = _interleaved_median({"before": before, "after": after}, rounds=repeat, number=5)
        rows.append([model, f"{before_stats.peak_live_bytes / 2**20:.2f}", f"{after_stats.peak_live_bytes / 2**20:.2f}",
                     f"{after_stats.peak_live_bytes / before_stats.peak_live_bytes:.2f}",
                     f"{times['before'] * 1e3:.2f}", f"{times['after'] * 1e3:.2f}",
                     f"{times['after'] / times['before']:.2f}"])
    print_table("buffer reuse: peak live bytes and step time (medians of interleaved rounds)",
                ["training step", "peak MiB before", "peak MiB after", "ratio", "ms before", "ms after",
                 "ratio"], rows)


def bench_per_op(n_ops: int, repeat: int) -> None:
    """A chain alternating `h * a` and `h + b` on 1-element arrays: forward and backward."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [1], "float64")
        a = fg.static.data("a", [1], "float64")
        b = fg.static.data("b", [1], "float64")
        x.stop_gradient = False
        h = x
        for i in range(n_ops):
            h = h * a if i % 2 == 0 else h + b
        grad_x = fg.gradients(h, x)[0]
    exe = fg.Executor()
    feed = {"x": np.ones(1), "a": np.full(1, 1.0001), "b": np.full(1, 0.001)}

    def plain_numpy():
        """The least a NumPy programmer would write: forward, then the chain rule by hand
        (d(h*a)/dh = a; d(h+b)/dh = 1 costs nothing)."""
        h, av, bv = feed["x"], feed["a"], feed["b"]
        for i in range(n_ops):
            h = h * av if i % 2 == 0 else h + bv
        g = np.ones(1)
        for i in reversed(range(n_ops)):
            if i % 2 == 0:
                g = g * av
        return h, g
    best = interleaved_best({"plain NumPy": plain_numpy,
                             "fluidgrad Executor": lambda: exe.run(main, feed=feed, fetch_list=[h, grad_x])},
                            rounds=repeat)
    numpy_time = best["plain NumPy"]
    rows = [[name, f"{t / n_ops * 1e6:.2f}", f"{t / numpy_time:.2f}"] for name, t in best.items()]
    print_table(f"executor per-op cost, forward + backward, chain of {n_ops} ops on 1-element arrays",
                ["implementation", "µs per op", "ratio to NumPy"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS / PyTorch threads for the MLP (default: each library's own default)")
    args = parser.parse_args()
    depths = [10, 100, 1000] if args.quick else [10, 100, 1000, 3000]
    bench_append_backward(depths)
    with limit_threads(args.threads):
        bench_mlp_step(repeat=3 if args.quick else 15)
        bench_mlp_step(repeat=3 if args.quick else 15, batch=1)
        bench_buffer_reuse(repeat=3 if args.quick else 9)
    bench_per_op(1000, repeat=5 if args.quick else 20)


if __name__ == "__main__":
    main()
