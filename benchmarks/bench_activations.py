"""Activations at the GPT's MLP shape ([1024, 512] float32): forward + backward in eager mode,
fluidgrad's fused ops against the same function written as a chain of registered ops and
against PyTorch, one thread, timed in alternation (medians of three rounds). This is the
measurement behind "one fused op per activation" (ops/activation.py).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_activations.py [--quick]
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import interleaved_best, limit_threads, print_table

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad.ops import accel


def _composed_gelu(x):
    return fg.scale(x * (fg.erf(fg.scale(x, 1 / math.sqrt(2))) + 1.0), 0.5)


def _composed_silu(x):
    return x * fg.sigmoid(x)


def _composed_softplus(x):
    return fg.log1p(fg.exp(-fg.abs(x))) + fg.relu(x)


def _composed_log_sigmoid(x):
    return fg.scale(_composed_softplus(fg.scale(x, -1.0)), -1.0)


def _composed_mish(x):
    return x * fg.tanh(_composed_softplus(x))


CASES = {  # name -> (fused, composed or None, PyTorch)
    "gelu": (F.gelu, _composed_gelu, "gelu"),
    "gelu tanh": (lambda x: F.gelu(x, approximate=True), None, "gelu_tanh"),
    "silu": (F.silu, _composed_silu, "silu"),
    "softplus": (F.softplus, _composed_softplus, "softplus"),
    "log_sigmoid": (F.log_sigmoid, _composed_log_sigmoid, "logsigmoid"),
    "mish": (F.mish, _composed_mish, "mish"),
    "elu": (F.elu, None, "elu"),
    "hardswish": (F.hardswish, None, "hardswish"),
    "selu (elu + scale)": (F.selu, None, "selu"),
}


def _step(fn, x, cotangent):
    def run():
        x.grad = None
        fg.sum(fn(x) * cotangent).backward()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import torch
    import torch.nn.functional as TF
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1024, 512)).astype(np.float32)
    x, cotangent = fg.to_tensor(data, stop_gradient=False), fg.to_tensor(rng.random((1024, 512), dtype=np.float32))
    tx, tc = torch.tensor(data, requires_grad=True), torch.tensor(cotangent.numpy())
    rows = []
    with limit_threads(1):
        for name, (fused, composed, torch_name) in CASES.items():
            tfn = (lambda t: TF.gelu(t, approximate="tanh")) if torch_name == "gelu_tanh" else getattr(TF, torch_name)

            def torch_step(tfn=tfn):
                tx.grad = None
                (tfn(tx) * tc).sum().backward()
            contenders = {"fused": _on_path(False, _step(fused, x, cotangent)), "torch": torch_step}
            if accel.enabled():
                contenders["fused numba"] = _on_path(True, _step(fused, x, cotangent))
            if composed is not None:
                contenders["composed"] = _step(composed, x, cotangent)
            ratios = {k: [] for k in contenders}
            for _ in range(3):
                best = interleaved_best(contenders, rounds=3 if args.quick else 7, number=3)
                for k, found in ratios.items():
                    found.append(best[k] / best["torch"])
            rows.append([name, f"{statistics.median(ratios['fused']):.2f}",
                         f"{statistics.median(ratios['fused numba']):.2f}" if "fused numba" in ratios else "-",
                         f"{statistics.median(ratios['composed']):.2f}" if composed else "-"])
    print_table("activation forward + backward, eager, [1024, 512] float32, time / PyTorch (threads: 1)",
                ["activation", "fused op, NumPy path", "fused op, numba path", "chain of registered ops"], rows)


def _on_path(numba_on: bool, step):
    """The step with fluidgrad's compiled loops (ops/accel.py, GELU so far) switched on or off."""
    def run():
        with accel.use_numba(numba_on):
            step()
    return run


if __name__ == "__main__":
    main()
