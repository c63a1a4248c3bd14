"""Selection, indexing and shape-building kernels at the example models' shapes (the GPT's
[batch 16, heads 4, seq 64, seq 64] attention scores and [16, 64, 128] activations, the U-Net's
[16, 32, 16, 16] feature maps): forward + backward in eager mode against PyTorch, one thread,
timed in alternation (medians of three rounds).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_selection.py [--quick]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import interleaved_best, limit_threads, print_table

import fluidgrad as fg
import fluidgrad.nn.functional as F

RNG = np.random.default_rng(0)
SCORES = RNG.standard_normal((16, 4, 64, 64)).astype(np.float32)
ACTS = RNG.standard_normal((16, 64, 128)).astype(np.float32)
MAPS = RNG.standard_normal((16, 32, 16, 16)).astype(np.float32)
CAUSAL = np.tril(np.ones((64, 64), dtype=bool))
LOGITS = RNG.standard_normal((1024, 65)).astype(np.float32)
TOKENS = RNG.integers(0, 64, size=(16, 64)).astype(np.int64)


def cases(torch):
    """name -> (input array, fluidgrad fn, PyTorch fn, integer-only output)."""
    tmask = torch.tensor(CAUSAL)
    ttok = torch.tensor(TOKENS)
    return {
        "masked_fill causal [16,4,64,64]": (SCORES, lambda x: fg.masked_fill(x, _mask(x), -1e9),
                                            lambda x: x.masked_fill(~tmask, -1e9), False),
        "where [16,4,64,64]": (SCORES, lambda x: fg.where(_mask(x, True), x, fg.zeros_like(x)),
                               lambda x: torch.where(tmask, x, torch.zeros_like(x)), False),
        "tril [16,4,64,64]": (SCORES, lambda x: fg.tril(x), lambda x: torch.tril(x), False),
        "x[:, -1] of [16,64,128]": (ACTS, lambda x: x[:, -1], lambda x: x[:, -1], False),
        "x[:, ::2] of [16,64,128]": (ACTS, lambda x: x[:, ::2], lambda x: x[:, ::2], False),
        "flip axis 1 [16,64,128]": (ACTS, lambda x: fg.flip(x, 1), lambda x: torch.flip(x, [1]), False),
        "roll axis 1 [16,64,128]": (ACTS, lambda x: fg.roll(x, 3, 1), lambda x: torch.roll(x, 3, 1), False),
        "topk k=5 [1024,65]": (LOGITS, lambda x: fg.topk(x, 5)[0], lambda x: torch.topk(x, 5)[0], False),
        "sort [1024,65]": (LOGITS, lambda x: fg.sort(x), lambda x: torch.sort(x)[0], False),
        "argmax [1024,65]": (LOGITS, lambda x: fg.argmax(x, -1), lambda x: torch.argmax(x, -1), True),
        "take_along_axis [16,64,128]": (ACTS, lambda x: fg.take_along_axis(x, _tok(x), 2),
                                        lambda x: torch.gather(x, 2, ttok[..., None]), False),
        "tile [16,32,16,16] x(1,2,1,1)": (MAPS, lambda x: fg.tile(x, [1, 2, 1, 1]),
                                          lambda x: x.repeat(1, 2, 1, 1), False),
        "expand [16,64,1]->[16,64,128]": (ACTS[..., :1].copy(), lambda x: fg.expand(x, [16, 64, 128]),
                                          lambda x: x.expand(16, 64, 128), False),
        "pad constant [16,32,16,16]": (MAPS, lambda x: F.pad(x, [1, 1, 1, 1]),
                                       lambda x: torch.nn.functional.pad(x, (1, 1, 1, 1)), False),
        "pad reflect [16,32,16,16]": (MAPS, lambda x: F.pad(x, [1, 1, 1, 1], mode="reflect"),
                                      lambda x: torch.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect"), False),
        "pad replicate [16,32,16,16]": (MAPS, lambda x: F.pad(x, [1, 1, 1, 1], mode="replicate"),
                                        lambda x: torch.nn.functional.pad(x, (1, 1, 1, 1), mode="replicate"), False),
        "repeat_interleave 2 [16,64,128]": (ACTS, lambda x: fg.repeat_interleave(x, 2, 1),
                                            lambda x: x.repeat_interleave(2, 1), False),
    }


_CONSTANTS: dict = {}


def _mask(x, keep=False):
    key = ("mask", keep)
    if key not in _CONSTANTS:
        _CONSTANTS[key] = fg.to_tensor(CAUSAL if keep else ~CAUSAL)
    return _CONSTANTS[key]


def _tok(x):
    if "tok" not in _CONSTANTS:
        _CONSTANTS["tok"] = fg.to_tensor(TOKENS[..., None])
    return _CONSTANTS["tok"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import torch
    rows = []
    with limit_threads(1):
        for name, (array, fluid_fn, torch_fn, integer) in cases(torch).items():

            def fluid():
                x = fg.to_tensor(array, stop_gradient=integer)
                out = fluid_fn(x)
                if not integer:
                    fg.sum(out * fg.to_tensor(np.ones(out.shape, np.float32))).backward()

            def theirs():
                x = torch.tensor(array, requires_grad=not integer)
                out = torch_fn(x)
                if not integer:
                    (out * torch.ones(out.shape)).sum().backward()
            ratios = []
            for _ in range(1 if args.quick else 3):
                best = interleaved_best({"fluidgrad": fluid, "torch": theirs}, rounds=3 if args.quick else 8)
                ratios.append(best["fluidgrad"] / best["torch"])
            rows.append((name, "forward" if integer else "forward+backward", f"{best['fluidgrad'] * 1e3:.3f}",
                         f"{best['torch'] * 1e3:.3f}", f"{statistics.median(ratios):.2f}"))
    print_table("Selection and shape-building kernels, eager, one thread (ms; ratio = fluidgrad / PyTorch)",
                ["op", "what", "fluidgrad ms", "PyTorch ms", "ratio"], rows)


if __name__ == "__main__":
    main()
