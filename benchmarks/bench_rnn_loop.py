"""Training through the dynamic-length RNN loop (nn/layers/rnn_loop.py): does one step's memory and
time grow linearly with the sequence length T?

    python benchmarks/bench_rnn_loop.py [--quick] [--lengths 50 100 200 400] [--hidden 64]

One training step of `nn.LSTM(inputs, hidden)` in static mode: loss = mean(out^2), then
`append_backward` and an SGD update. "dynamic": the program is built once on
`static.data("x", [batch, -1, inputs])` (the time loop is a `while`, its gradient `while_grad`);
"fixed": a program per T built on `[batch, T, inputs]` (the steps unrolled into ordinary ops);
"torch": torch.nn.LSTM, forward + backward + SGD, the time reference. Peak memory is
tracemalloc's (NumPy reports its buffers to it) over one run after a warm-up, in a run of its
own (tracing slows Python down, so the times come from untraced runs: best of --repeat rounds,
each round running the three in turn, so that load from elsewhere hits them alike).
The last columns divide each value by the one at the previous T: a linear cost doubles
when T doubles, a quadratic one quadruples.
"""
from __future__ import annotations

import argparse
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import interleaved_best, limit_threads, print_table  # noqa: E402  (sets OMP_WAIT_POLICY first)

import fluidgrad as fg  # noqa: E402
from fluidgrad import nn, static  # noqa: E402


def build(layer: nn.LSTM, batch: int, length: int, inputs: int) -> tuple:
    """A training step on x of shape [batch, length, inputs] (length -1: known at the run)."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = static.data("x", [batch, length, inputs], "float32")
        out, _ = layer(x)
        loss = fg.mean(out * out)
        fg.optimizer.SGD(learning_rate=1e-3).minimize(loss)
    ops = [op.type for op in main.global_block().ops]
    assert ("while" in ops) == (length < 0), "the dynamic program must loop, the fixed one unroll"
    return main, startup, loss


def traced_peak(fn) -> int:
    """Peak bytes allocated (above the start) while fn runs, after one untraced warm-up."""
    fn()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def torch_step(torch, model, optimizer, x):
    optimizer.zero_grad()
    out, _ = model(x)
    (out * out).mean().backward()
    optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 100, 200, 400])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--inputs", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="BLAS and PyTorch threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="T = 10, 20 and one repeat (a smoke run)")
    args = parser.parse_args()
    lengths, repeat = ([10, 20], 1) if args.quick else (args.lengths, args.repeat)
    import torch
    with limit_threads(args.threads):
        rows = measure(torch, lengths, repeat, args.batch, args.inputs, args.hidden)
    header = ["T", "dynamic MB", "fixed MB", "dynamic ms", "fixed ms", "torch ms", "dynamic / torch",
              "dynamic MB x", "dynamic ms x"]
    print_table(f"one training step of LSTM({args.inputs}, {args.hidden}), batch {args.batch}, float32, "
                f"{args.threads} thread(s); x = growth from the previous T", header, rows)


def measure(torch, lengths: list[int], repeat: int, batch: int, inputs: int, hidden: int) -> list[list]:
    layer = nn.LSTM(inputs, hidden)
    dynamic = build(layer, batch, -1, inputs)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(dynamic[1], scope=scope)
    model = torch.nn.LSTM(inputs, hidden, batch_first=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    rows, previous = [], None
    for length in lengths:
        x = rng.standard_normal((batch, length, inputs)).astype("float32")
        fixed = build(layer, batch, length, inputs)
        exe.run(fixed[1], scope=scope)

        def run(program):
            return lambda: exe.run(program[0], feed={"x": x}, fetch_list=[program[2]], scope=scope)

        tx = torch.from_numpy(x)
        memory = [traced_peak(run(dynamic)), traced_peak(run(fixed))]
        best = interleaved_best({"dynamic": run(dynamic), "fixed": run(fixed),
                                 "torch": lambda: torch_step(torch, model, optimizer, tx)}, repeat)
        seconds = [best["dynamic"], best["fixed"], best["torch"]]
        growth = ["", ""] if previous is None else [f"{memory[0] / previous[0]:.2f}",
                                                    f"{seconds[0] / previous[1]:.2f}"]
        rows.append([length, f"{memory[0] / 2**20:.1f}", f"{memory[1] / 2**20:.1f}",
                     *(f"{s * 1e3:.1f}" for s in seconds), f"{seconds[0] / seconds[2]:.1f}", *growth])
        previous = (memory[0], seconds[0])
    return rows


if __name__ == "__main__":
    main()
