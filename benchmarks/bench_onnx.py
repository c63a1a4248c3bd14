"""ONNX: import time of a 100-layer model; the demo CNN's inference as written in fluidgrad, as
imported from its ONNX export, and in onnxruntime.

    python benchmarks/bench_onnx.py [--quick]

The imported program is an ordinary fluidgrad Program (the same ops), so its speed should
equal the original's. Contenders alternate in one process (interleaved_best), so the ratios
hold on a loaded machine; absolute times do not.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import fluidgrad as fg  # noqa: E402
from common import interleaved_best, limit_threads, print_table  # noqa: E402
from fluidgrad import demo  # noqa: E402
from fluidgrad.onnx import export_program, import_model  # noqa: E402


def deep_model(layers: int, width: int = 64) -> onnx.ModelProto:
    """`layers` x (Gemm + Relu), each with its own weight and bias."""
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        inits += [numpy_helper.from_array(rng.normal(size=(width, width)).astype("float32") * 0.1, f"w{i}"),
                  numpy_helper.from_array(np.zeros(width, "float32"), f"b{i}")]
        nodes += [helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [f"g{i}"]),
                  helper.make_node("Relu", [f"g{i}"], [f"h{i}"])]
        prev = f"h{i}"
    graph = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def import_time(layers: int, repeat: int) -> list:
    model = deep_model(layers)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "deep.onnx"
        onnx.save(model, path)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            import_model(path, fg.Scope())
            times.append(time.perf_counter() - start)
    return [f"{layers} x (Gemm, Relu): {2 * layers} nodes, {2 * layers} initializers", f"{min(times) * 1e3:.0f} ms",
            f"{np.median(times) * 1e3:.0f} ms"]


def cnn_inference(batch: int, rounds: int) -> list[list]:
    net = demo.build_static("cnn", 0.01)
    scope = fg.Scope()
    exe = fg.Executor()
    exe.run(net["startup"], scope=scope)
    images = np.random.default_rng(0).normal(size=(batch, 1, 8, 8)).astype("float32")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cnn.onnx"
        export_program(path, [net["image"]], [net["logits"]], program=net["test"], scope=scope)
        imported_scope = fg.Scope()
        imported, feeds, fetches = import_model(path, imported_scope)
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    contenders = {
        "fluidgrad, the demo's own Program": lambda: exe.run(net["test"], feed={"image": images},
                                                            fetch_list=[net["logits"]], scope=scope),
        "fluidgrad, imported from ONNX": lambda: exe.run(imported, feed={feeds[0]: images}, fetch_list=fetches,
                                                         scope=imported_scope),
        "onnxruntime 1 thread": lambda: session.run(None, {"image": images}),
    }
    best = interleaved_best(contenders, rounds=rounds)
    base = best["fluidgrad, the demo's own Program"]
    return [[name, f"{seconds * 1e3:.2f} ms", f"{seconds / base:.2f}"] for name, seconds in best.items()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    with limit_threads(1):
        print_table("Import of a 100-layer ONNX model (fluidgrad.onnx.import_model, file to Program)",
                    ["model", "best", "median"], [import_time(100, 3 if args.quick else 7)])
        print_table("Demo CNN inference, batch 64 (ratio to the demo's own Program)",
                    ["contender", "best per batch", "ratio"], cnn_inference(64, 5 if args.quick else 20))


if __name__ == "__main__":
    main()
