"""The char-level GPT's training step (examples/char_gpt.py): fluidgrad eager and static
(jit.to_static) against the same model in PyTorch eager, from the same weights, in one process.

    python benchmarks/bench_gpt.py [--rounds 5] [--steps 5] [--threads 1] [--embd 32] [--layers 2]
    python benchmarks/bench_gpt.py --kernels     # the softmax kernels alone: before fusion, NumPy, numba


One step = forward, loss, backward and an Adam update, on a fixed batch. The contenders take
turns, `--steps` steps each per round; the table gives each one's median time per step over
the rounds and its ratio to PyTorch's (goal for fluidgrad: at most 1.5x at one thread).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from common import limit_threads, print_table  # noqa: E402  (sets OMP_WAIT_POLICY before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import char_gpt  # noqa: E402
import fluidgrad as fg  # noqa: E402
import torch_twins  # noqa: E402
from common import interleaved_best  # noqa: E402
from fluidgrad.ops import accel, get_op_def  # noqa: E402


def fluid_step(model, static: bool):
    opt = fg.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    loss_fn = fg.jit.to_static(model.loss) if static else model.loss

    def step(x, y):
        loss = loss_fn(fg.to_tensor(x), fg.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
    return step


def torch_step(twin):
    opt = torch.optim.Adam(twin.parameters(), lr=1e-3)

    def step(x, y):
        loss = twin.loss(torch.from_numpy(x), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


# ---------------------------------------------------------------- the softmax kernels alone
def _softmax_before(x):
    """The kernels before fusion (several full-size temporaries), kept here to measure against."""
    shifted = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_grad_before(out, dout):
    return out * (dout - (dout * out).sum(axis=-1, keepdims=True))


def _swce_before(logits, label):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return np.exp(log_softmax), -np.take_along_axis(log_softmax, label, -1)


def _swce_grad_before(softmax, label, dloss):
    one_hot = (label == np.arange(softmax.shape[-1])).astype(softmax.dtype)
    return (softmax - one_hot) * dloss


def kernel_rows(batch: int, block: int, heads: int, vocab: int, rounds: int) -> list[tuple]:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(batch, heads, block, block)).astype("float32")
    dscores = rng.normal(size=scores.shape).astype("float32")
    logits = rng.normal(size=(batch * block, vocab)).astype("float32")
    label = rng.integers(0, vocab, size=(batch * block, 1))
    dloss = rng.normal(size=(batch * block, 1)).astype("float32")
    names = ("softmax", "softmax_grad", "attention_softmax", "softmax_with_cross_entropy",
             "softmax_with_cross_entropy_grad")
    kernel = {name: get_op_def(name).kernel for name in names}
    probs = kernel["softmax"](scores)
    soft = kernel["softmax_with_cross_entropy"](logits, label)[0]
    t = {k: torch.from_numpy(v) for k, v in dict(scores=scores, dscores=dscores, probs=probs, logits=logits,
                                                  label=label[:, 0], soft=soft, dloss=dloss).items()}
    upper = torch.ones(block, block, dtype=torch.bool).triu(1)
    cases = {
        f"softmax {list(scores.shape)}": (lambda: _softmax_before(scores), lambda: kernel["softmax"](scores),
                                          lambda: torch.softmax(t["scores"], -1)),
        f"softmax gradient {list(scores.shape)}": (
            lambda: _softmax_grad_before(probs, dscores), lambda: kernel["softmax_grad"](probs, dscores),
            lambda: torch._softmax_backward_data(t["dscores"], t["probs"], -1, torch.float32)),
        f"causal attention softmax {list(scores.shape)}": (
            None, lambda: kernel["attention_softmax"](scores, None, 0.125, True),
            lambda: torch.softmax((t["scores"] * 0.125).masked_fill(upper, float("-inf")), -1)),
        f"softmax + cross-entropy {list(logits.shape)}": (
            lambda: _swce_before(logits, label), lambda: kernel["softmax_with_cross_entropy"](logits, label),
            lambda: torch.nn.functional.cross_entropy(t["logits"], t["label"], reduction="none")),
        f"its gradient {list(logits.shape)}": (
            lambda: _swce_grad_before(soft, label, dloss),
            lambda: kernel["softmax_with_cross_entropy_grad"](soft, label, dloss),
            lambda: (t["soft"] - torch.nn.functional.one_hot(t["label"], vocab)) * t["dloss"]),
    }
    rows = []
    paths = {"numba": True, "NumPy": False} if accel.enabled() else {"NumPy": False}
    for name, (before, after, reference) in cases.items():
        contenders = {path: _on_path(on, after) for path, on in paths.items()}
        contenders.update({"torch": reference, **({"before": before} if before else {})})
        best = interleaved_best(contenders, rounds=rounds, number=1)
        ratios = {path: f"{best[path] / best['torch']:.2f}x" if path in best else "-" for path in ("NumPy", "numba")}
        times = {path: f"{best[path] * 1e6:.0f}" if path in best else "-" for path in ("NumPy", "numba")}
        rows.append((name, f"{best['before'] * 1e6:.0f}" if before else "-", times["NumPy"], times["numba"],
                     f"{best['torch'] * 1e6:.0f}", ratios["NumPy"], ratios["numba"]))
    return rows


def _on_path(numba_on: bool, kernel):
    """The kernel (or step) with fluidgrad's compiled loops (ops/accel.py) switched on or off."""
    def run(*args):
        with accel.use_numba(numba_on):
            return kernel(*args)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--embd", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--kernels", action="store_true", help="time the fused softmax kernels instead")
    args = parser.parse_args()
    if args.kernels:
        with limit_threads(args.threads):
            rows = kernel_rows(args.batch, args.block, 4, len(char_gpt.encode()[1]), max(args.rounds, 50))
        print_table(f"softmax kernels at the GPT's shapes (us per call, best of interleaved rounds, "
                    f"{args.threads} thread(s)); fluidgrad's NumPy path and its numba path (`fast` extra)",
                    ["kernel", "before fusion", "NumPy", "numba", "PyTorch", "NumPy / PyTorch",
                     "numba / PyTorch"], rows)
        return
    data, chars = char_gpt.encode()
    fg.seed(0)
    config = char_gpt.Config(len(chars), block_size=args.block, n_embd=args.embd, n_head=4, n_layer=args.layers)
    paths = {"numba": True, "NumPy": False} if accel.enabled() else {"NumPy": False}
    models = {(mode, path): char_gpt.CharGPT(config) for mode in ("eager", "static") for path in paths}
    first = next(iter(models.values()))
    for model in models.values():
        model.set_state_dict(first.state_dict())
    twin = torch_twins.TorchCharGPT(first)
    x, y = next(char_gpt.batches(data, 1, args.batch, args.block))
    with limit_threads(args.threads):
        contenders = {"PyTorch eager": torch_step(twin)}
        for (mode, path), model in models.items():   # fluidgrad with and without its compiled kernels
            contenders[f"fluidgrad {mode}, {path} path"] = _on_path(paths[path], fluid_step(model, mode == "static"))
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for step in contenders.values():
            step(x, y)                                     # warm up (and trace the static one)
        for _ in range(args.rounds):
            for name, step in contenders.items():
                start = time.perf_counter()
                for _ in range(args.steps):
                    step(x, y)
                times[name].append((time.perf_counter() - start) / args.steps)
    base = statistics.median(times["PyTorch eager"])
    rows = [(name, f"{statistics.median(t) * 1e3:.2f}", f"{min(t) * 1e3:.2f}", f"{statistics.median(t) / base:.2f}x")
            for name, t in times.items()]
    print_table(f"char GPT training step (batch {args.batch}, block {args.block}, embd {args.embd}, "
                f"{args.layers} layers, {args.threads} thread(s), median of {args.rounds} rounds)",
                ["contender", "median ms/step", "best ms/step", "vs PyTorch"], rows)


if __name__ == "__main__":
    main()
