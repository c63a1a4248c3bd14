"""Every kernel one training step of the two example models runs (examples/char_gpt.py and
examples/digits_unet.py), at the exact shapes, against the PyTorch CPU kernel doing the same.

    python benchmarks/bench_model_kernels.py [--rounds 15] [--threads 1] [--model gpt|unet|both]

The op list is not written by hand: the script runs two static training steps of each model
(jit.to_static, Adam) with every registered kernel wrapped, and records each kernel call of the
second step (op type, input arrays, attrs). Inline expressions and in-place forms are switched
off while recording, so ops the executor writes out (elementwise add, relu, ...) are caught too.
Each distinct call (op, shapes, attrs) becomes a row, timed against its PyTorch twin (an aten
kernel taking the same inputs), the contenders alternating, median ms per call over the rounds.
"path" says whether the kernel ran a compiled loop (numba, ops/accel.py) or NumPy only; the
NumPy column is the same kernel with numba switched off. Issue 11's goal: every ratio <= 2x.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from common import limit_threads, print_table  # noqa: E402  (sets OMP_WAIT_POLICY before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

import char_gpt  # noqa: E402
import digits_unet  # noqa: E402
import fluidgrad as fg  # noqa: E402
from fluidgrad.executor import plan as executor_plan  # noqa: E402
from fluidgrad.framework.op_def import _REGISTRY  # noqa: E402
from fluidgrad.ops import accel  # noqa: E402

GOAL = 2.0


# ---------------------------------------------------------------- recording the op list
class Call:
    """One distinct kernel call of a training step: its inputs (copied), attrs and count."""

    def __init__(self, model: str, op_type: str, args: tuple, attrs: dict) -> None:
        self.model, self.op_type, self.args, self.attrs, self.count = model, op_type, args, attrs, 1

    def key(self) -> tuple:
        return (self.model, self.op_type, _describe(self.args), repr(sorted(self.attrs.items())))


def _copy(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    return value


def _describe(args: tuple) -> str:
    parts = []
    for a in args:
        if isinstance(a, np.ndarray):
            parts.append(str(list(a.shape)).replace(" ", ""))
        elif isinstance(a, list):
            parts.append("[" + ",".join(str(list(x.shape)).replace(" ", "") for x in a) + "]")
        elif a is None:
            parts.append("-")
    return " ".join(parts)


def record_step(model_name: str) -> list[Call]:
    """The kernel calls of the second static training step of one example model."""
    recording = {"on": False}
    calls: dict[tuple, Call] = {}
    saved = {name: (od.kernel, od.inline) for name, od in _REGISTRY.items()}
    reuse = executor_plan.REUSE_BUFFERS

    def wrap(op_type: str, kernel: Callable) -> Callable:
        def recorded(*args, **attrs):
            if recording["on"] and "op" not in attrs:
                call = Call(model_name, op_type, _copy(args), dict(attrs))
                known = calls.setdefault(call.key(), call)
                if known is not call:
                    known.count += 1
            return kernel(*args, **attrs)
        return recorded

    try:
        for name, od in _REGISTRY.items():
            if od.kernel is not None and not od.needs_runtime:
                od.kernel, od.inline = wrap(name, od.kernel), None
        executor_plan.REUSE_BUFFERS = False   # in-place forms skip the kernel call: record them too
        fg.seed(0)
        if model_name == "gpt":
            data, chars = char_gpt.encode()
            model = char_gpt.CharGPT(char_gpt.Config(len(chars)))
            batches = list(char_gpt.batches(data, 2, 16, model.config.block_size))
            train = char_gpt.train
        else:
            rng = np.random.default_rng(0)
            images = rng.random((64, 1, 8, 8)).astype("float32")
            model = digits_unet.DigitsUNet()
            batches = list(digits_unet.batches(images, 2, 32))[:2]
            train = digits_unet.train

        def batch_stream():
            yield batches[0]               # traces the Program, compiles the plan
            recording["on"] = True
            yield batches[1]
        train(model, batch_stream(), static=True)
    finally:
        recording["on"] = False
        for name, (kernel, inline) in saved.items():
            _REGISTRY[name].kernel, _REGISTRY[name].inline = kernel, inline
        executor_plan.REUSE_BUFFERS = reuse
    return list(calls.values())


# ---------------------------------------------------------------- the PyTorch twins
def _t(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, list):
        return [_t(v) for v in value]
    return value


def _like(fluid_out: Any, t: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """PyTorch materialises the result when fluidgrad's kernel does (a copy), else keeps a view."""
    copies = isinstance(fluid_out, np.ndarray) and fluid_out.base is None
    return (lambda r: r.contiguous()) if copies else (lambda r: r)


def _pad2(p: list[int]) -> tuple[int, int]:
    return (p[0], p[2]) if len(p) == 4 else tuple(p)


def _reduce_dims(x_shape, t_shape) -> list[int]:
    lead = len(x_shape) - len(t_shape)
    return list(range(lead)) + [lead + i for i, n in enumerate(t_shape) if n == 1 and x_shape[lead + i] != 1]


def twin(call: Call, fluid_out: Any) -> Callable[[], Any] | None:
    """A zero-argument callable running PyTorch's kernel for the same work, or None."""
    a, k, op = [_t(x) for x in call.args], call.attrs, call.op_type
    aten = torch.ops.aten
    if op in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div"):
        fn = {"elementwise_add": torch.add, "elementwise_sub": torch.sub, "elementwise_mul": torch.mul,
              "elementwise_div": torch.div}[op]
        return lambda: fn(a[0], a[1])
    if op in ("relu", "square", "assign"):
        fn = {"relu": torch.relu, "square": torch.square, "assign": torch.clone}[op]
        return lambda: fn(a[0])
    if op == "scale":
        return (lambda: torch.mul(a[0], k["scale"])) if k["bias"] == 0 else (lambda: a[0].mul(k["scale"]).add_(k["bias"]))
    if op == "sum":
        def add_all():
            out = torch.add(a[0][0], a[0][1])
            for more in a[0][2:]:
                out.add_(more)
            return out
        return add_all
    if op == "mean":
        return lambda: a[0].mean()
    if op == "reduce_sum":
        return lambda: torch.sum(a[0], k["axis"], keepdim=k["keepdim"])
    if op == "reduce_as":
        dims, shape = _reduce_dims(a[0].shape, a[1].shape), a[1].shape
        return lambda: torch.sum(a[0], dims).reshape(shape)
    if op == "unreduce":
        scale = 1.0 / (a[1].numel() / max(a[0].numel(), 1)) if k["mean"] else 1.0
        shape, done = a[1].shape, _like(fluid_out, a[0])
        return lambda: done((a[0] * scale).expand(shape))
    if op in ("reshape", "reshape_as"):
        shape, done = fluid_out.shape, _like(fluid_out, a[0])
        return lambda: done(a[0].reshape(shape))
    if op == "transpose":
        done = _like(fluid_out, a[0])
        return lambda: done(a[0].permute(k["perm"]))
    if op == "slice":
        index = [slice(None)] * a[0].dim()
        for ax, s, e in zip(k["axes"], k["starts"], k["ends"]):
            index[ax] = slice(s, e)
        done = _like(fluid_out, a[0])
        return lambda: done(a[0][tuple(index)])
    if op == "slice_grad" and len(k["axes"]) == 1 and not k["strides"]:
        sizes, ax = list(a[1].shape), k["axes"][0]
        return lambda: aten.slice_backward(a[0], sizes, ax, k["starts"][0], k["ends"][0], 1)
    if op == "concat":
        return lambda: torch.cat(a[0], k["axis"])
    if op == "split":
        done = _like(fluid_out[0], a[0])
        return lambda: [done(p) for p in torch.split(a[0], k["num_or_sections"], k["axis"])]
    if op == "matmul":
        x, y = a
        x, y = (x.mT if k["transpose_x"] else x), (y.mT if k["transpose_y"] else y)
        return lambda: torch.matmul(x, y)
    if op == "gather" and k["axis"] == 0:
        return lambda: TF.embedding(a[1], a[0])
    if op == "gather_grad" and k["axis"] == 0:
        rows = a[2].shape[0]
        return lambda: aten.embedding_dense_backward(a[0], a[1], rows, -1, False)
    if op == "gelu":
        approx = "tanh" if k["approximate"] else "none"
        return lambda: TF.gelu(a[0], approximate=approx)
    if op == "gelu_grad":
        approx = "tanh" if k["approximate"] else "none"
        return lambda: aten.gelu_backward(a[1], a[0], approximate=approx)
    if op == "relu_grad":
        return lambda: aten.threshold_backward(a[1], a[0], 0)
    if op == "attention_softmax":
        x, mask, scale, causal = a[0], a[1], k["scale"], k["causal"]
        upper = torch.ones(x.shape[-2], x.shape[-1], dtype=torch.bool).triu(1)

        def attention():
            s = x * scale
            if mask is not None:
                s = s + mask
            if causal:
                s = s.masked_fill_(upper, float("-inf"))
            return torch.softmax(s, -1)
        return attention
    if op == "softmax_grad":
        return lambda: torch._softmax_backward_data(a[1], a[0], k["axis"], a[0].dtype)
    if op == "softmax_with_cross_entropy" and not k["soft_label"]:
        label = a[1].reshape(-1)
        return lambda: TF.cross_entropy(a[0], label, reduction="none")
    if op == "softmax_with_cross_entropy_grad":
        label, classes = a[1].reshape(-1), a[0].shape[-1]
        return lambda: (a[0] - TF.one_hot(label, classes)) * a[2]
    if op == "layer_norm":
        shape = a[0].shape[k["begin_norm_axis"]:]
        return lambda: torch.native_layer_norm(a[0], shape, a[1], a[2], k["epsilon"])
    if op == "layer_norm_grad":
        x, w, dy = a[0], a[1], a[4]
        shape = x.shape[k["begin_norm_axis"]:]
        b = None if w is None else torch.zeros_like(w)
        _, mean, rstd = torch.native_layer_norm(x, shape, w, b, k["epsilon"])
        mask = [True, w is not None, w is not None]
        return lambda: aten.native_layer_norm_backward(dy, x, shape, mean, rstd, w, b, mask)
    if op == "batch_norm" and k["data_layout"] == "NCHW":
        rm, rv = a[3].clone(), a[4].clone()
        return lambda: torch.native_batch_norm(a[0], a[1], a[2], rm, rv, True, 1 - k["momentum"], k["epsilon"])
    if op == "batch_norm_grad" and k["data_layout"] == "NCHW":
        x, w, dy = a[0], a[1], a[4]
        rm, rv = torch.zeros_like(w), torch.ones_like(w)
        _, mean, invstd = torch.native_batch_norm(x, w, torch.zeros_like(w), rm, rv, True, 0.1, k["epsilon"])
        return lambda: aten.native_batch_norm_backward(dy, x, w, rm, rv, mean, invstd, True, k["epsilon"],
                                                       [True, True, True])
    if op in ("conv2d", "conv2d_input_grad", "conv2d_filter_grad", "conv2d_transpose") and k["data_format"] == "NCHW":
        stride, pad, dil, groups = k["strides"], _pad2(k["paddings"]), k["dilations"], k["groups"]
        if op == "conv2d":
            return lambda: TF.conv2d(a[0], a[1], a[2], stride, pad, dil, groups)
        if op == "conv2d_transpose":
            out_pad = k.get("output_padding") or [0, 0]
            return lambda: TF.conv_transpose2d(a[0], a[1], a[2], stride, pad, out_pad, groups, dil)
        dout, w, x = (a[0], a[1], a[2]) if op == "conv2d_input_grad" else (a[0], a[2], a[1])
        mask = [True, False, False] if op == "conv2d_input_grad" else [False, True, False]
        return lambda: aten.convolution_backward(dout, x, w, None, stride, pad, dil, False, [0, 0], groups, mask)
    if op == "max_pool2d_with_index" and not k["adaptive"] and not k["global_pooling"]:
        return lambda: aten.max_pool2d_with_indices(a[0], k["ksize"], k["strides"], _pad2(k["paddings"]))
    if op == "max_pool_index_grad" and not k["overlapping"]:
        dout, x = a[1], a[2]
        size = [x.shape[2] // dout.shape[2], x.shape[3] // dout.shape[3]]
        _, index = aten.max_pool2d_with_indices(x, size, size)
        return lambda: aten.max_pool2d_with_indices_backward(dout, x, size, size, [0, 0], [1, 1], False, index)
    if op == "interpolate" and k["mode"] == "bilinear" and k["scales"]:
        return lambda: TF.interpolate(a[0], scale_factor=k["scales"], mode="bilinear",
                                      align_corners=k["align_corners"])
    if op == "interpolate_grad" and k["mode"] == "bilinear" and k["scales"]:
        dout, x = a
        sh, sw = k["scales"]
        return lambda: aten.upsample_bilinear2d_backward(dout, list(dout.shape[2:]), list(x.shape),
                                                         k["align_corners"], sh, sw)
    if op == "adam":
        p, g, m, v = (x.clone() for x in a[:4])
        step = torch.tensor(1.0)
        lr = float(call.args[6].reshape(-1)[0])
        return lambda: torch._fused_adam_([p], [g], [m], [v], [], [step], lr=lr, beta1=k["beta1"],
                                          beta2=k["beta2"], weight_decay=k["weight_decay"], eps=k["epsilon"],
                                          amsgrad=False, maximize=False)
    if op == "fill_constant":
        dtype = getattr(torch, k["dtype"]) if isinstance(k["dtype"], str) else None
        return lambda: torch.full(list(k["shape"]), k["value"], dtype=dtype)
    return None


# ---------------------------------------------------------------- timing
_JIT_CODE = accel.jit(lambda: None).__code__


def path_of(fn: Callable[[], Any]) -> str:
    """"numba" when the call enters a compiled loop (an accel.jit wrapper), else "NumPy"."""
    entered = []

    def watch(frame, event, arg):
        if event == "call" and frame.f_code is _JIT_CODE:
            entered.append(True)
    sys.setprofile(watch)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return "numba" if entered else "NumPy"


def fluid_call(call: Call, kernel: Callable) -> Callable[[], Any]:
    args, attrs = call.args, call.attrs
    return lambda: kernel(*args, **attrs)


def median_ms(contenders: dict[str, tuple[Callable[[], Any], bool]], rounds: int) -> dict[str, float]:
    """Median ms per call of each contender (a callable, and whether fluidgrad's compiled loops
    are on while it runs: switched outside the timed calls), timed in alternation; each sample
    repeats the call enough times to last ~0.3 ms, so timer resolution does not matter."""
    numbers = {}
    for name, (fn, numba_on) in contenders.items():
        with accel.use_numba(numba_on):
            fn()
            start = time.perf_counter()
            fn()
            numbers[name] = max(1, int(3e-4 / max(time.perf_counter() - start, 1e-7)))
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, (fn, numba_on) in contenders.items():
            n = numbers[name]
            with accel.use_numba(numba_on):
                start = time.perf_counter()
                for _ in range(n):
                    fn()
                samples[name].append((time.perf_counter() - start) / n * 1e3)
    return {name: statistics.median(s) for name, s in samples.items()}


def rows_for(calls: list[Call], rounds: int) -> tuple[list[tuple], dict[str, float]]:
    rows, totals = [], {"fluidgrad": 0.0, "NumPy": 0.0, "PyTorch": 0.0}
    for call in calls:
        kernel = _REGISTRY[call.op_type].kernel
        out = kernel(*call.args, **call.attrs)
        reference = twin(call, out)
        default = accel.enabled()
        path = path_of(fluid_call(call, kernel)) if default else "NumPy"
        contenders = {"fluidgrad": (fluid_call(call, kernel), default)}
        if path == "numba":
            contenders["NumPy"] = (fluid_call(call, kernel), False)
        if reference is not None:
            contenders["PyTorch"] = (reference, default)
        ms = median_ms(contenders, rounds)
        ratio = ms["fluidgrad"] / ms["PyTorch"] if "PyTorch" in ms else None
        for name in totals:
            totals[name] += call.count * ms.get(name, ms["fluidgrad"] if name == "NumPy" else 0.0)
        flag = "" if ratio is None else ("OVER 2x" if ratio > GOAL else "ok")
        rows.append((call.model, call.op_type, _describe(call.args), call.count, path, f"{ms['fluidgrad']:.4f}",
                     f"{ms['NumPy']:.4f}" if "NumPy" in ms else "-",
                     f"{ms['PyTorch']:.4f}" if "PyTorch" in ms else "no twin",
                     "-" if ratio is None else f"{ratio:.2f}x", flag))
    return rows, totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", choices=("gpt", "unet", "both"), default="both")
    parser.add_argument("--op", default=None, help="only rows of this op type (e.g. conv2d_filter_grad)")
    parser.add_argument("--over", action="store_true", help="print only the rows over 2x")
    args = parser.parse_args()
    models = ("gpt", "unet") if args.model == "both" else (args.model,)
    with limit_threads(args.threads):
        for model in models:
            calls = [c for c in record_step(model) if args.op in (None, c.op_type)]
            calls.sort(key=lambda c: c.op_type)
            rows, totals = rows_for(calls, args.rounds)
            over = [r for r in rows if r[-1] == "OVER 2x"]
            shown = over if args.over else rows
            print_table(f"{model}: every kernel of one static training step vs PyTorch (ms per call, median "
                        f"of {args.rounds} alternating rounds, {args.threads} thread(s)); {len(over)} of "
                        f"{len(rows)} rows over {GOAL:g}x",
                        ["model", "op", "input shapes", "calls/step", "path", "fluidgrad ms", "NumPy ms",
                         "PyTorch ms", "ratio", "goal"], shown)
            print(f"\n{model}: sum over the step (calls x ms): fluidgrad {totals['fluidgrad']:.3f} ms, "
                  f"NumPy path {totals['NumPy']:.3f} ms, PyTorch twins {totals['PyTorch']:.3f} ms")


if __name__ == "__main__":
    main()
