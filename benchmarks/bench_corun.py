"""Do two processes on this machine slow each other down? (issue 14's "no all-reduce" row)

    python benchmarks/bench_corun.py [--rounds 3] [--steps 200]

A 2-rank data-parallel step can only be as fast as one rank's step when two processes doing the
same work side by side do not slow each other. This runs, with one BLAS thread each, the two
kinds of work an MLP step is mostly made of: GEMMs of the MLP's shapes (64x784 @ 784x512, then
@ 512x512) and memory-bound passes over a 2.7 MB float32 array (its gradient's size: scale,
then subtract, as an SGD update does); and the whole training step of bench_dist.py's MLP
(static and eager mode, plain SGD, no MPI: what one rank of a 2-rank job computes, with no
communication). Each kind runs alone, then as two processes at once; the rounds alternate.
Wall time and CPU time are both shown: on a loaded machine two processes wait for cores far
more than one does, so there only the CPU time says whether they slow each other's work.
A ratio near 1.0 says the cores, caches and memory bandwidth are not the limit; the whole step
touches more memory than the two kernels (fresh activations and gradients each step, the
parameters read twice and updated), so it is the one to compare with bench_dist's
"no all-reduce" row.
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

from bench_dist import STEPPERS, alone  # noqa: E402
from common import print_table  # noqa: E402

PARAMETERS = 784 * 512 + 512 * 512 + 512 * 10  # the MLP's weights, as one flat gradient


def work(kind: str, steps: int) -> list[float]:
    """Median and 10th percentile ms of one step of `kind` (ten GEMM pairs, ten update passes,
    or one MLP training step): wall time, then CPU time (what the step cost when it ran, without the time it
    lost its core to other processes: the measure that still means something on a loaded
    machine)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 784), dtype=np.float32)
    w1 = rng.standard_normal((784, 512), dtype=np.float32)
    w2 = rng.standard_normal((512, 512), dtype=np.float32)
    param = rng.standard_normal(PARAMETERS, dtype=np.float32)
    grad = param.copy()

    def kernels() -> None:
        for _ in range(10):
            if kind == "gemm":
                (x @ w1) @ w2
            else:
                np.multiply(grad, 0.01, out=grad)
                np.subtract(param, grad, out=param)

    step = STEPPERS[kind](alone) if kind in STEPPERS else kernels
    for _ in range(steps // 6):
        step()
    times, cpu = [], []
    for _ in range(steps):
        start, worked = time.perf_counter(), time.thread_time()
        step()
        times.append(time.perf_counter() - start)
        cpu.append(time.thread_time() - worked)
    return [float(v) * 1e3 for samples in (times, cpu) for v in np.percentile(samples, [50, 10])]


def launch(kind: str, copies: int, steps: int) -> list[list[float]]:
    """Run `copies` worker processes at once; each one's step times in ms (see `work`)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", kind, "--steps", str(steps)],
                              stdout=subprocess.PIPE, text=True, env=env) for _ in range(copies)]
    results = []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"bench_corun: a {kind} worker exited with {proc.returncode}")
        results.append([float(v) for v in out.split()])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--worker", choices=["gemm", "memory", *STEPPERS], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(*work(args.worker, args.steps))
        return
    rows = []
    for kind, what in (("gemm", "GEMMs 64x784 @ 784x512 @ 512x512, x10"),
                       ("memory", f"SGD-like passes over {PARAMETERS * 4 / 1e6:.1f} MB float32, x10"),
                       *((mode, f"the whole MLP training step, {mode} mode (bench_dist's 1 rank)") for mode in STEPPERS)):
        alone, together = [], []
        for _ in range(args.rounds):  # alone and together take turns
            alone += launch(kind, 1, args.steps)
            together += launch(kind, 2, args.steps)
        a, t = np.median(alone, axis=0), np.median(together, axis=0)  # over processes: wall, wall p10, cpu, cpu p10
        rows.append([what, f"{a[0]:.3f}", f"{t[0]:.3f}", f"{t[0] / a[0]:.2f}x", f"{t[1] / a[1]:.2f}x",
                     f"{a[2]:.3f}", f"{t[2]:.3f}", f"{t[2] / a[2]:.2f}x", f"{t[3] / a[3]:.2f}x"])
    print_table(f"two processes side by side, one BLAS thread each (per process the median and 10th percentile of "
                f"{args.steps} steps; then the median over {args.rounds} rounds)",
                ["work", "alone ms / step", "two at once ms / step", "ratio", "ratio (p10)", "alone cpu ms",
                 "two at once cpu ms", "cpu ratio", "cpu ratio (p10)"], rows)


if __name__ == "__main__":
    main()
