"""The NumPy kernels of convolution, pooling and normalisation against PyTorch's, at 1 or T threads.

    python benchmarks/bench_nn_ops.py [--quick] [--rounds N] [--threads T]

--threads T caps NumPy's BLAS and PyTorch at T threads; the Winograd conv follows BLAS's count
(ops/threads.py). Issue 12's targets hold at one and at two threads.

Each row is one kernel call on the same float32 arrays in both libraries. The two contenders
alternate within each round (each timed as the best of a few calls), and the table shows the
median over rounds of each and of the per-round ratio, so a burst of load from elsewhere on a
shared machine hits both alike. PyTorch's gradients are timed through the same aten backward
kernels its autograd calls (convolution_backward, max_pool2d_with_indices_backward,
native_layer_norm_backward, native_batch_norm_backward), not forward + backward minus forward.
Issue 12's targets: conv2d forward and both gradients (3x3, 32-64 channels, batch 32) <= 1.5x,
max_pool2d gradient <= 1.5x, layer_norm <= 1.5x. The path column says which kernel ran: 3x3
stride-1 convolutions with 8 or more input channels take Winograd F(2x2, 3x3) when numba is
installed (FLUIDGRAD_NUMBA=0 shows the im2col path), the others im2col + GEMM.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import limit_threads, print_table  # noqa: E402  (sets OMP_WAIT_POLICY before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

from fluidgrad.ops import accel  # noqa: E402
from fluidgrad.ops import conv as conv_ops  # noqa: E402
from fluidgrad.ops import norm as norm_ops  # noqa: E402
from fluidgrad.ops import pooling as pool_ops  # noqa: E402

Row = tuple[str, Callable[[], object], Callable[[], object]]
PATH_OF = {}   # row name -> which fluidgrad path ran (conv: winograd or im2col; numba or NumPy)
CONV_SIZES = {"32x32x16x16 -> 64": (32, 32, 16, 64), "32x64x16x16 -> 64": (32, 64, 16, 64),
              "demo conv2 64x16x4x4 -> 32": (64, 16, 4, 32), "demo conv1 64x1x8x8 -> 16": (64, 1, 8, 16)}


CLOCK = time.perf_counter


def _best(fn: Callable[[], object], number: int) -> float:
    best = float("inf")
    for _ in range(number):
        start = CLOCK()
        fn()
        best = min(best, CLOCK() - start)
    return best


def measure(ours: Callable[[], object], theirs: Callable[[], object], rounds: int, number: int):
    """Median seconds of each contender and median per-round ratio, contenders alternating."""
    ours(), theirs()
    a, b = [], []
    for _ in range(rounds):
        a.append(_best(ours, number))
        b.append(_best(theirs, number))
    return statistics.median(a), statistics.median(b), statistics.median(x / y for x, y in zip(a, b))


def conv_rows(label: str, n: int, c: int, h: int, o: int) -> list[Row]:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((n, c, h, h), dtype=np.float32), rng.standard_normal((o, c, 3, 3), dtype=np.float32)
    dout = rng.standard_normal((n, o, h, h), dtype=np.float32)
    xt, wt, dt = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(dout)
    pad = {"paddings": [1, 1]}
    geo = conv_ops._windows(x.shape, w.shape, 1, [1, 1], 1, "EXPLICIT")
    path = "winograd (numba)" if conv_ops._winograd(geo, 1, c, x, w) else "im2col"

    def torch_backward(mask):
        return lambda: torch.ops.aten.convolution_backward(dt, xt, wt, None, [1, 1], [1, 1], [1, 1], False, [0, 0],
                                                           1, mask)
    for op in ("forward", "input grad", "filter grad"):
        PATH_OF[f"{label}: conv2d {op}"] = path
    return [
        (f"{label}: conv2d forward", lambda: conv_ops.conv_kernel(x, w, **pad), lambda: TF.conv2d(xt, wt, padding=1)),
        (f"{label}: conv2d input grad", lambda: conv_ops.conv_input_grad_kernel(dout, w, x, **pad),
         torch_backward([True, False, False])),
        (f"{label}: conv2d filter grad", lambda: conv_ops.conv_filter_grad_kernel(dout, x, w, **pad),
         torch_backward([False, True, False])),
    ]


def pool_rows(label: str, n: int, c: int, h: int) -> list[Row]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, c, h, h), dtype=np.float32)
    xt = torch.from_numpy(x)
    attrs = {"ksize": [2, 2], "strides": [2, 2]}
    out, mask = pool_ops.max_pool_with_index_kernel(x, **attrs)
    dout = rng.standard_normal(out.shape, dtype=np.float32)
    t_out, t_idx = TF.max_pool2d(xt, 2, return_indices=True)
    dt = torch.from_numpy(dout)
    PATH_OF[f"{label}: max_pool2d 2x2 forward (with argmax)"] = ("one pass (numba)" if accel.enabled()
                                                                  else "NumPy offset passes")
    PATH_OF[f"{label}: max_pool2d 2x2 grad"] = "scatter (numba)" if accel.enabled() else "scatter (NumPy)"
    return [
        (f"{label}: max_pool2d 2x2 forward (with argmax)", lambda: pool_ops.max_pool_with_index_kernel(x, **attrs),
         lambda: TF.max_pool2d(xt, 2, return_indices=True)),
        (f"{label}: max_pool2d 2x2 grad", lambda: pool_ops.max_pool_index_grad_kernel(mask, dout, x, False),
         lambda: torch.ops.aten.max_pool2d_with_indices_backward(dt, xt, [2, 2], [2, 2], [0, 0], [1, 1], False,
                                                                  t_idx)),
    ]


def norm_rows() -> list[Row]:
    """The norm kernels on each path they can take: numba's one-pass loops (when installed) and NumPy."""
    paths = {"numba": True, "NumPy": False} if accel.enabled() else {"NumPy": False}
    rows = []
    for path, on in paths.items():
        for name, ours, theirs in _norm_rows():
            PATH_OF[f"{name} [{path}]"] = "one-pass loops (numba)" if on else "NumPy"
            rows.append((f"{name} [{path}]", _on_path(on, ours), theirs))
    return rows


def _on_path(numba_on: bool, kernel: Callable[[], object]) -> Callable[[], object]:
    def run():
        with accel.use_numba(numba_on):
            return kernel()
    return run


def _norm_rows() -> list[Row]:
    rng = np.random.default_rng(2)
    rows: list[Row] = []
    for rows_n, width in ((64, 1024), (2048, 128)):
        x = rng.standard_normal((rows_n, width), dtype=np.float32)
        scale, bias = rng.standard_normal(width, dtype=np.float32), rng.standard_normal(width, dtype=np.float32)
        dy = rng.standard_normal(x.shape, dtype=np.float32)
        xt, st, bt, dyt = (torch.from_numpy(a) for a in (x, scale, bias, dy))
        _, mean, var = norm_ops.layer_norm_kernel(x, scale, bias)
        _, t_mean, t_rstd = torch.ops.aten.native_layer_norm(xt, [width], st, bt, 1e-5)
        rows += [
            (f"layer_norm forward ({rows_n}x{width})", lambda x=x, s=scale, b=bias: norm_ops.layer_norm_kernel(x, s, b),
             lambda xt=xt, st=st, bt=bt, w=width: TF.layer_norm(xt, [w], st, bt)),
            (f"layer_norm grad ({rows_n}x{width})",
             lambda x=x, s=scale, m=mean, v=var, dy=dy: norm_ops.layer_norm_grad_kernel(x, s, m, v, dy),
             lambda xt=xt, st=st, bt=bt, dyt=dyt, m=t_mean, r=t_rstd, w=width: torch.ops.aten.native_layer_norm_backward(
                 dyt, xt, [w], m, r, st, bt, [True, True, True])),
        ]
    for shape in ((32, 32, 16, 16), (32, 8, 8, 8)):   # the second: the digits U-Net's first block
        rows += _batch_norm_rows(rng, shape)
    return rows + _group_norm_rows(rng, (32, 8, 8, 8), 4)


def _batch_norm_rows(rng, shape) -> list[Row]:
    x = rng.standard_normal(shape, dtype=np.float32)
    c, z = np.ones(shape[1], dtype=np.float32), np.zeros(shape[1], dtype=np.float32)
    dy = rng.standard_normal(x.shape, dtype=np.float32)
    xt, ct, zt, dyt = (torch.from_numpy(a) for a in (x, c, z, dy))
    _, _, _, saved_mean, saved_inv = norm_ops.batch_norm_kernel(x, c, z, z.copy(), c.copy())
    _, t_mean, t_inv = torch.ops.aten.native_batch_norm(xt, ct, zt, zt.clone(), ct.clone(), True, 0.1, 1e-5)
    label = "x".join(map(str, shape))
    return [
        (f"batch_norm train forward ({label})", lambda: norm_ops.batch_norm_kernel(x, c, z, z.copy(), c.copy()),
         lambda: torch.ops.aten.native_batch_norm(xt, ct, zt, zt.clone(), ct.clone(), True, 0.1, 1e-5)),
        (f"batch_norm train grad ({label})",
         lambda: norm_ops.batch_norm_grad_kernel(x, c, saved_mean, saved_inv, dy),
         lambda: torch.ops.aten.native_batch_norm_backward(dyt, xt, ct, None, None, t_mean, t_inv, True, 1e-5,
                                                           [True, True, True])),
    ]


def _group_norm_rows(rng, shape, groups: int) -> list[Row]:
    """group_norm as fluidgrad runs it: layer_norm over [N, groups, rest] (the per-channel affine
    is a separate op), against PyTorch's group norm without weight."""
    n, c = shape[:2]
    positions = int(np.prod(shape[2:]))
    x = rng.standard_normal(shape, dtype=np.float32)
    dy = rng.standard_normal(shape, dtype=np.float32)
    grouped, dgrouped = x.reshape(n, groups, -1), dy.reshape(n, groups, -1)
    _, mean, var = norm_ops.layer_norm_kernel(grouped, begin_norm_axis=2)
    xt, dyt = torch.from_numpy(x), torch.from_numpy(dy)
    _, t_mean, t_rstd = torch.ops.aten.native_group_norm(xt, None, None, n, c, positions, groups, 1e-5)
    label = f"{'x'.join(map(str, shape))}, {groups} groups"
    return [
        (f"group_norm forward ({label})", lambda: norm_ops.layer_norm_kernel(grouped, begin_norm_axis=2),
         lambda: torch.ops.aten.native_group_norm(xt, None, None, n, c, positions, groups, 1e-5)),
        (f"group_norm grad ({label})",
         lambda: norm_ops.layer_norm_grad_kernel(grouped, None, mean, var, dgrouped, begin_norm_axis=2),
         lambda: torch.ops.aten.native_group_norm_backward(dyt, xt, t_mean, t_rstd, None, n, c, positions, groups,
                                                           [True, False, False])),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 7, quick 3)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and PyTorch threads (default 1)")
    parser.add_argument("--only", default="", help="run only rows whose name contains this text")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time the calling thread's CPU time (one thread only): on a loaded machine, the time "
                             "other processes hold the core is not counted")
    args = parser.parse_args()
    if args.cpu_time:
        if args.threads != 1:
            parser.error("--cpu-time measures one thread: use it with --threads 1")
        global CLOCK
        CLOCK = time.thread_time
    rounds = args.rounds or (3 if args.quick else 7)
    number = 3 if args.quick else 5
    with limit_threads(args.threads):
        rows: list[Row] = []
        for label, (n, c, h, o) in CONV_SIZES.items():
            rows += conv_rows(label, n, c, h, o)
        rows += pool_rows("32x64x16x16", 32, 64, 16) + pool_rows("demo 64x16x8x8", 64, 16, 8) + norm_rows()
        table = []
        for name, ours, theirs in rows:
            if args.only and args.only not in name:
                continue
            a, b, ratio = measure(ours, theirs, rounds, number)
            table.append((name, PATH_OF.get(name, ""), f"{a * 1e3:.3f}", f"{b * 1e3:.3f}", f"{ratio:.2f}x"))
    clock = "thread CPU time" if args.cpu_time else "wall time"
    print_table(f"fluidgrad NumPy kernels vs PyTorch (ms per call, {clock}, median of {rounds} alternating rounds, "
                f"{args.threads} thread(s))", ["kernel", "path", "fluidgrad", "PyTorch", "ratio"], table)


if __name__ == "__main__":
    main()
