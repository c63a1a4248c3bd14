"""Do two processes on this machine slow each other down? (issue 14's "no all-reduce" row)

    python benchmarks/bench_corun.py [--rounds 3] [--steps 300]

A 2-rank data-parallel step can only be as fast as one rank's step when two processes doing the
same work side by side do not slow each other. This runs the two kinds of work an MLP step is
made of, with one BLAS thread each: GEMMs of the MLP's shapes (64x784 @ 784x512, then @ 512x512)
and memory-bound passes over a 2.7 MB float32 array (its gradient's size: scale, then subtract,
as an SGD update does). Each kind runs alone, then as two processes at once; the rounds alternate.
A ratio near 1.0 says the cores, caches and memory bandwidth are not the limit, so whatever
slows a 2-rank step beyond that is the framework's or the benchmark's own doing.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_table  # noqa: E402

PARAMETERS = 784 * 512 + 512 * 512 + 512 * 10  # the MLP's weights, as one flat gradient


def work(kind: str, steps: int) -> float:
    """Median ms of one step of `kind` (ten GEMM pairs, or ten update passes)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 784), dtype=np.float32)
    w1 = rng.standard_normal((784, 512), dtype=np.float32)
    w2 = rng.standard_normal((512, 512), dtype=np.float32)
    param = rng.standard_normal(PARAMETERS, dtype=np.float32)
    grad = param.copy()

    def step() -> None:
        for _ in range(10):
            if kind == "gemm":
                (x @ w1) @ w2
            else:
                np.multiply(grad, 0.01, out=grad)
                np.subtract(param, grad, out=param)

    for _ in range(steps // 6):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def launch(kind: str, copies: int, steps: int) -> list[float]:
    """Run `copies` worker processes at once; their median step times in ms."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", kind, "--steps", str(steps)],
                              stdout=subprocess.PIPE, text=True, env=env) for _ in range(copies)]
    results = []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"bench_corun: a {kind} worker exited with {proc.returncode}")
        results.append(float(out))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--worker", choices=["gemm", "memory"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(work(args.worker, args.steps))
        return
    rows = []
    for kind, what in (("gemm", "GEMMs 64x784 @ 784x512 @ 512x512, x10"),
                       ("memory", f"SGD-like passes over {PARAMETERS * 4 / 1e6:.1f} MB float32, x10")):
        alone, together = [], []
        for _ in range(args.rounds):  # alone and together take turns
            alone += launch(kind, 1, args.steps)
            together += launch(kind, 2, args.steps)
        a, t = float(np.median(alone)), float(np.median(together))
        rows.append([what, f"{a:.3f}", f"{t:.3f}", f"{t / a:.2f}x"])
    print_table(f"two processes side by side, one BLAS thread each (medians of {args.rounds} rounds, "
                f"{args.steps} steps each)", ["work", "alone ms / step", "two at once ms / step", "ratio"], rows)


if __name__ == "__main__":
    main()
