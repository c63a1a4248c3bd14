"""ctc_loss forward + gradient against PyTorch's, one thread: the kernels and the functional.

    python benchmarks/bench_ctc.py [--rounds N] [--threads T]

Rows: the op's kernels (loss and log alphas, then the gradient by the beta recursion) against
PyTorch's ctc_loss forward + autograd.grad on the same float32 log-probabilities, on the
compiled (numba) path and on the NumPy path; contenders alternate within each round, the
table shows medians (the machine is shared: quote ratios, not times).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import limit_threads, print_table  # noqa: E402  (sets OMP_WAIT_POLICY before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

from fluidgrad.ops import accel  # noqa: E402
from fluidgrad.ops.ctc import ctc_loss_grad_kernel, ctc_loss_kernel  # noqa: E402

SHAPES = {"speech-like T=50 N=16 C=20 S=10": (50, 16, 20, 10), "T=200 N=8 C=30 S=40": (200, 8, 30, 40)}


def _best(fn, number: int = 3) -> float:
    best = float("inf")
    for _ in range(number):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _row(label: str, shape: tuple[int, int, int, int], numba: bool, rounds: int) -> list[str]:
    steps, batch, classes, max_label = shape
    rng = np.random.default_rng(0)
    log_probs = np.log(rng.dirichlet(np.ones(classes), size=(steps, batch))).astype(np.float32)
    labels = rng.integers(1, classes, size=(batch, max_label))
    input_lengths = np.full(batch, steps)
    label_lengths = rng.integers(max_label // 2, max_label + 1, size=batch)
    ones = np.ones(batch, np.float32)

    def ours():
        loss, alpha = ctc_loss_kernel(log_probs, labels, input_lengths, label_lengths)
        return ctc_loss_grad_kernel(log_probs, labels, input_lengths, label_lengths, alpha, loss, ones)

    t_log_probs = torch.tensor(log_probs, requires_grad=True)
    t_args = [torch.tensor(a) for a in (labels, input_lengths, label_lengths)]

    def theirs():
        loss = TF.ctc_loss(t_log_probs, *t_args, reduction="sum")
        return torch.autograd.grad(loss, t_log_probs)

    with accel.use_numba(numba):
        ours(), theirs()
        a, b = [], []
        for _ in range(rounds):
            a.append(_best(ours))
            b.append(_best(theirs))
    ratio = statistics.median(x / y for x, y in zip(a, b))
    path = "numba" if numba else "NumPy"
    return [f"{label} [{path}]", f"{statistics.median(a) * 1e3:.3f}", f"{statistics.median(b) * 1e3:.3f}",
            f"{ratio:.2f}x"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    paths = [True, False] if accel.enabled() else [False]
    with limit_threads(args.threads):
        rows = [_row(label, shape, numba, args.rounds) for label, shape in SHAPES.items() for numba in paths]
    print_table(f"ctc_loss forward + gradient vs PyTorch (ms per call, median of {args.rounds} alternating rounds, "
                f"{args.threads} thread(s))", ["shape", "fluidgrad", "PyTorch", "ratio"], rows)


if __name__ == "__main__":
    main()
