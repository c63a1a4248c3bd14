"""RNN through `while_loop` (issue 3): forward + backward time against PyTorch eager and
hand-written NumPy, plus the time of `append_backward` on the loop program.

    python benchmarks/bench_rnn.py [--quick] [--steps 50] [--hidden 128] [--batch 32]

h_t = tanh(x_t W + h_{t-1} U), x_t gathered from a [T, B, D] input by the loop counter,
loss = mean(h_T^2); one iteration computes the loss and the gradients of W and U. Every
contender runs in this process on the same data, so the ratios hold on a noisy machine.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fluidgrad as fg  # noqa: E402
from common import print_table  # noqa: E402
from fluidgrad import static  # noqa: E402
from fluidgrad.static.control_flow import increment  # noqa: E402


def build_program(steps: int, batch: int, inputs: int, hidden: int) -> tuple:
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = static.data("x", [steps, batch, inputs])
        h0 = static.data("h0", [batch, hidden])
        W = static.create_parameter([inputs, hidden], "float32", name="W")
        U = static.create_parameter([hidden, hidden], "float32", name="U")
        n = fg.full([], steps, "int64")

        def body(i, h):
            return increment(i, in_place=False), fg.tanh(fg.matmul(fg.gather(x, i), W) + fg.matmul(h, U))

        _, h_last = static.nn.while_loop(lambda i, h: i < n, body, [fg.full([], 0, "int64"), h0])
        loss = fg.mean(h_last * h_last)
        start = time.perf_counter()
        params_grads = fg.append_backward(loss)
        backward_seconds = time.perf_counter() - start
    grads = {p.name: g for p, g in params_grads}
    return main, startup, loss, [grads["W"], grads["U"]], backward_seconds


def numpy_step(x, h0, W, U):
    hs = [h0]
    for t in range(x.shape[0]):
        hs.append(np.tanh(x[t] @ W + hs[-1] @ U))
    h = hs[-1]
    loss = (h * h).mean()
    dh = 2.0 * h / h.size
    dW, dU = np.zeros_like(W), np.zeros_like(U)
    for t in range(x.shape[0], 0, -1):
        da = dh * (1.0 - hs[t] * hs[t])
        dW += x[t - 1].T @ da
        dU += hs[t - 1].T @ da
        dh = da @ U.T
    return loss, dW, dU


def torch_step(torch, x, h0, W, U):
    h = h0
    for t in range(x.shape[0]):
        h = torch.tanh(x[t] @ W + h @ U)
    loss = (h * h).mean()
    dW, dU = torch.autograd.grad(loss, [W, U])
    return loss, dW, dU


def interleaved_best(contenders: dict, repeat: int) -> dict:
    """Best time of each contender, running them in turn each round: on a shared machine a
    burst of load then hits every contender alike instead of whichever ran during it."""
    for fn in contenders.values():
        fn()
    best = {name: float("inf") for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (CI smoke run)")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--inputs", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=30, help="rounds (each runs every contender once)")
    parser.add_argument("--threads", type=int, default=0,
                        help="limit BLAS and PyTorch to this many threads (default: the libraries' own)")
    args = parser.parse_args()
    import torch
    if args.threads:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads)
        torch.set_num_threads(args.threads)
    repeat = 3 if args.quick else args.repeat
    steps, batch, inputs, hidden = args.steps, args.batch, args.inputs, args.hidden

    main_program, startup, loss, grads, backward_seconds = build_program(steps, batch, inputs, hidden)
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(steps, batch, inputs)).astype(np.float32)
    h0 = rng.normal(size=(batch, hidden)).astype(np.float32)
    W, U = np.asarray(scope["W"]), np.asarray(scope["U"])
    feed = {"x": x, "h0": h0}

    def run_fluidgrad():
        return exe.run(main_program, feed=feed, fetch_list=[loss] + grads, scope=scope)

    tx, th0 = torch.from_numpy(x), torch.from_numpy(h0)
    tW, tU = torch.from_numpy(W.copy()).requires_grad_(), torch.from_numpy(U.copy()).requires_grad_()

    ours, ref = run_fluidgrad(), numpy_step(x, h0, W, U)
    theirs = torch_step(torch, tx, th0, tW, tU)
    for a, b, c, what in zip(ours, ref, theirs, ("loss", "dW", "dU")):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-6, err_msg=f"{what}: fluidgrad vs NumPy")
        np.testing.assert_allclose(c.detach().numpy(), b, rtol=2e-3, atol=1e-6, err_msg=f"{what}: torch vs NumPy")

    forward_program = main_program.clone(for_test=True)  # without the backward ops
    times = interleaved_best({
        "ours": run_fluidgrad,
        "forward": lambda: exe.run(forward_program, feed=feed, fetch_list=[loss.name], scope=scope),
        "torch": lambda: torch_step(torch, tx, th0, tW, tU),
        "numpy": lambda: numpy_step(x, h0, W, U)}, repeat)
    t_ours, t_forward, t_torch, t_numpy = (times[k] for k in ("ours", "forward", "torch", "numpy"))
    rows = [["fluidgrad while_loop (forward + backward)", f"{t_ours * 1e3:.2f}", "1.00",
             f"{t_ours / t_torch:.2f}", f"{t_ours / t_numpy:.2f}"],
            ["fluidgrad while_loop (forward only)", f"{t_forward * 1e3:.2f}", f"{t_forward / t_ours:.2f}",
             f"{t_forward / t_torch:.2f}", f"{t_forward / t_numpy:.2f}"],
            ["PyTorch eager (forward + backward)", f"{t_torch * 1e3:.2f}", f"{t_torch / t_ours:.2f}", "1.00",
             f"{t_torch / t_numpy:.2f}"],
            ["hand-written NumPy (forward + backward)", f"{t_numpy * 1e3:.2f}", f"{t_numpy / t_ours:.2f}",
             f"{t_numpy / t_torch:.2f}", "1.00"]]
    print_table(f"RNN T={steps}, input {inputs}, hidden {hidden}, batch {batch}, float32: loss + dW + dU "
                f"(best of {repeat})", ["contender", "ms", "vs fluidgrad", "vs PyTorch", "vs NumPy"], rows)
    print_table("append_backward on the loop program", ["ops in block 0", "grad block ops", "ms"],
                [[len(main_program.global_block().ops), len(main_program.blocks[-1].ops),
                  f"{backward_seconds * 1e3:.2f}"]])


if __name__ == "__main__":
    main()
