"""The NumPy kernels of conv2d, pool2d, batch_norm, layer_norm and Adam against PyTorch's.

    python benchmarks/bench_nn_ops.py [--quick]

Each row times one kernel call (best of N, milliseconds) on the demo's sizes and on a larger
CNN layer, float32, BLAS and PyTorch both limited to one thread (the sizes are small; more
threads only add contention on a 2-core machine). Both run in this process on the same arrays,
so the ratio column holds on a noisy machine.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as TF

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import best_time, print_table  # noqa: E402
from fluidgrad.ops import nn as nn_ops  # noqa: E402
from fluidgrad.ops import norm as norm_ops  # noqa: E402
from fluidgrad.ops.optim import adam_kernel  # noqa: E402

SIZES = {"demo conv2 (64x16x4x4 -> 32)": (64, 16, 4, 32), "demo conv1 (64x1x8x8 -> 16)": (64, 1, 8, 16),
         "larger (32x32x16x16 -> 64)": (32, 32, 16, 64)}


def _conv_rows(n: int, c: int, h: int, o: int, repeat: int) -> list[tuple[str, float, float]]:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((n, c, h, h), dtype=np.float32), rng.standard_normal((o, c, 3, 3), dtype=np.float32)
    dout = rng.standard_normal((n, o, h, h), dtype=np.float32)
    xt, wt, dt = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(dout)
    pad = {"paddings": [1, 1]}
    pooled = rng.standard_normal((n, o, h, h), dtype=np.float32)
    pt = torch.from_numpy(pooled)
    pool = {"ksize": [2, 2], "strides": [2, 2]}
    pool_out = nn_ops.pool2d_kernel(pooled, **pool)
    return [
        ("conv2d forward", best_time(lambda: nn_ops.conv2d_kernel(x, w, **pad), repeat),
         best_time(lambda: TF.conv2d(xt, wt, padding=1), repeat)),
        ("conv2d input grad", best_time(lambda: nn_ops.conv2d_input_grad_kernel(dout, w, x, **pad), repeat),
         best_time(lambda: torch.nn.grad.conv2d_input(xt.shape, wt, dt, padding=1), repeat)),
        ("conv2d filter grad", best_time(lambda: nn_ops.conv2d_filter_grad_kernel(dout, x, w, **pad), repeat),
         best_time(lambda: torch.nn.grad.conv2d_weight(xt, wt.shape, dt, padding=1), repeat)),
        ("max_pool2d 2x2 forward", best_time(lambda: nn_ops.pool2d_kernel(pooled, **pool), repeat),
         best_time(lambda: TF.max_pool2d(pt, 2), repeat)),
        ("max_pool2d 2x2 grad", best_time(lambda: nn_ops.pool2d_grad_kernel(pooled, pool_out, **pool), repeat),
         _torch_backward(lambda t: TF.max_pool2d(t, 2), pooled, repeat)),
    ]


def _torch_backward(fn, array: np.ndarray, repeat: int) -> float:
    """Forward + backward in PyTorch minus the forward alone: the backward's time."""
    t = torch.from_numpy(array).requires_grad_(True)

    def both():
        out = fn(t)
        out.backward(torch.ones_like(out))
    return max(best_time(both, repeat) - best_time(lambda: fn(t), repeat), 0.0)


def _norm_rows(repeat: int) -> list[tuple[str, float, float]]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 16, 8, 8), dtype=np.float32)
    c = np.ones(16, dtype=np.float32)
    z = np.zeros(16, dtype=np.float32)
    xt, ct, zt = torch.from_numpy(x), torch.from_numpy(c), torch.from_numpy(z)
    rows = [("batch_norm train forward (64x16x8x8)",
             best_time(lambda: norm_ops.batch_norm_kernel(x, c, z, z, c), repeat),
             best_time(lambda: TF.batch_norm(xt, zt.clone(), ct.clone(), ct, zt, training=True), repeat))]
    flat = x.reshape(64, -1)
    scale = np.ones(flat.shape[1], dtype=np.float32)
    ft, st = torch.from_numpy(flat), torch.from_numpy(scale)
    rows.append(("layer_norm forward (64x1024)",
                 best_time(lambda: norm_ops.layer_norm_kernel(flat, scale, scale * 0), repeat),
                 best_time(lambda: TF.layer_norm(ft, [1024], st, st * 0), repeat)))
    return rows


def _adam_row(repeat: int) -> tuple[str, float, float]:
    rng = np.random.default_rng(2)
    p, g = rng.standard_normal(100_000, dtype=np.float32), rng.standard_normal(100_000, dtype=np.float32)
    m, v, one = np.zeros_like(p), np.zeros_like(p), np.array([0.9], dtype=np.float32)
    lr = np.array([1e-3], dtype=np.float32)
    param = torch.from_numpy(p.copy()).requires_grad_(True)
    param.grad = torch.from_numpy(g)
    optim = torch.optim.Adam([param], lr=1e-3, foreach=False)
    return ("adam update (100k params)", best_time(lambda: adam_kernel(p, g, m, v, one, one, lr), repeat),
            best_time(optim.step, repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeat = 3 if args.quick else 20
    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits
        limits = threadpool_limits(1, user_api="blas")
    except ImportError:
        limits = None
    rows = []
    for label, size in SIZES.items():
        rows += [(f"{label}: {name}", ours, theirs) for name, ours, theirs in _conv_rows(*size, repeat)]
    rows += _norm_rows(repeat) + [_adam_row(repeat)]
    table = [(name, f"{ours * 1e3:.3f}", f"{theirs * 1e3:.3f}", f"{ours / theirs:.1f}x" if theirs > 0 else "-")
             for name, ours, theirs in rows]
    print_table("fluidgrad NumPy kernels vs PyTorch (ms per call, one thread)",
                ["kernel", "fluidgrad", "PyTorch", "ratio"], table)
    if limits is not None:
        limits.restore_original_limits()


if __name__ == "__main__":
    main()
