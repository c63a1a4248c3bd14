"""The `fluidgrad` command (also `python -m fluidgrad`).

    fluidgrad demo [--epochs N] [--out DIR] [--mode static|eager]   train a CNN on 8x8 digits
    fluidgrad show MODEL                                             print a saved program
    fluidgrad draw MODEL -o FILE                                     draw it (.svg/.png/.pdf/.dot/.html)
    fluidgrad export MODEL -o model.onnx [--opset N]                 a saved inference model to ONNX
    fluidgrad launch -n N SCRIPT [ARGS]                              run SCRIPT on N ranks (MPI)

MODEL is the path prefix given to `save` / `save_inference_model` (e.g. fluidgrad-demo/digits),
either of the model's two files, or the folder holding it; `show` and `draw` also take
an ONNX file (`.onnx`).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__, demo
from .distributed import get_rank, get_world_size
from .distributed.launch import add_arguments, check_arguments, launch
from .executor import Scope
from .io import MODEL_SUFFIX, PARAMS_SUFFIX, load_inference_model, read_model
from .onnx import export_program, import_model
from .ops.comm import launched
from .viz import draw

DEFAULT_OUT = "fluidgrad-demo"
MODELS = ("cnn", "mlp")  # the networks fluidgrad.demo defines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fluidgrad", description="fluidgrad: Programs, automatic backward "
                                     "building and an eager mode, on NumPy.")
    parser.add_argument("--version", action="version", version=f"fluidgrad {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="train a small CNN on scikit-learn's 8x8 digits (no download)",
                               description="Train a small CNN on scikit-learn's bundled 8x8 digits, print the "
                               "test accuracy, save the inference model and a picture of the training program.")
    demo.add_argument("--epochs", type=_positive_int, default=12, help="passes over the training set (default 12)")
    demo.add_argument("--out", default=DEFAULT_OUT, help=f"where to save model and picture (default ./{DEFAULT_OUT})")
    demo.add_argument("--mode", choices=("static", "eager"), default="static",
                      help="static: build a Program and run it on the Executor; eager: define-by-run tensors")
    demo.add_argument("--model", choices=MODELS, default="cnn", help="network to train (default cnn)")
    demo.add_argument("--batch-size", type=_positive_int, default=32, help="examples per step (default 32)")
    demo.add_argument("--lr", type=_positive_float, default=0.01, help="Adam learning rate, > 0 (default 0.01)")
    demo.add_argument("--seed", type=_non_negative_int, default=0)
    demo.add_argument("--no-progress", action="store_true", help="no progress bars")
    demo.add_argument("--nproc", type=_positive_int, default=1,
                      help="train data-parallel on N ranks over MPI (the `dist` extra); default 1")

    show = commands.add_parser("show", help="print a saved program")
    show.add_argument("model", help="a saved model: its path prefix, either of its two files, or its folder")

    draw = commands.add_parser("draw", help="draw a saved program (SVG, PNG, PDF by suffix, or DOT source)")
    draw.add_argument("model", help="a saved model: its path prefix, either of its two files, or its folder")
    draw.add_argument("-o", "--output", required=True,
                      help="picture file: .svg, .png, .pdf (Graphviz), .dot, or .html (interactive, no Graphviz)")
    _add_export_parser(commands)
    _add_launch_parser(commands)
    return parser


def _add_export_parser(commands: argparse._SubParsersAction) -> None:
    export = commands.add_parser("export", help="write a saved inference model as ONNX (needs fluidgrad[onnx])",
                                 description="Convert a model saved with save_inference_model to an ONNX file "
                                 "that onnxruntime (or any ONNX runtime) can run.")
    export.add_argument("model", help="path prefix of a model saved with save_inference_model")
    export.add_argument("-o", "--output", required=True, help="the ONNX file to write")
    export.add_argument("--opset", type=int, default=None, help="ONNX opset version (default: fluidgrad's)")


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise RuntimeError("ONNX support needs the onnx package: pip install 'fluidgrad[onnx]'") from None


def _export(args: argparse.Namespace) -> int:
    _require_onnx()
    scope = Scope()
    prefix = str(_model_path(args.model))[:-len(MODEL_SUFFIX)]
    program, feed_names, fetch_vars = load_inference_model(prefix, scope=scope)
    model = export_program(args.output, feed_names, fetch_vars, program=program, scope=scope,
                           opset_version=args.opset)
    print(f"wrote {args.output} (opset {model.opset_import[0].version}, {len(model.graph.node)} nodes, "
          f"{len(model.graph.initializer)} initializers)")
    return 0


def _read_any(given: str) -> tuple:
    """(path, program, feed names, fetch names) of a saved fluidgrad model or an ONNX file."""
    if _is_onnx(given):
        return (Path(given),) + _read_onnx(given)
    model = _model_path(given)
    return (model,) + tuple(read_model(model))


def _is_onnx(path: str) -> bool:
    return str(path).lower().endswith(".onnx")


def _read_onnx(path: str) -> tuple:
    """An ONNX file as (program, feed names, fetch names), imported into a throwaway scope."""
    _require_onnx()
    program, feed_names, fetch_vars = import_model(path, Scope())
    return program, feed_names, [v.name for v in fetch_vars]


def _number(kind: type, test: Any, what: str) -> Any:
    """An argparse type: the value must parse as `kind` and pass `test`, or a clear message."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not test(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return value
    return parse


_positive_int = _number(int, lambda v: v >= 1, "at least 1")
_non_negative_int = _number(int, lambda v: v >= 0, "0 or more")
_positive_float = _number(float, lambda v: 0 < v < float("inf"), "a positive finite number")


def _model_path(given: str) -> Path:
    """The model file of a saved model named by its prefix, either of its files, or its folder."""
    path = Path(given)
    if path.is_dir():
        models = sorted(path.glob(f"*{MODEL_SUFFIX}"))
        if len(models) != 1:
            found = ", ".join(m.name for m in models) or "none"
            raise ValueError(f"{path} is a folder; it must hold exactly one saved model (*{MODEL_SUFFIX}), "
                             f"found {found}: name the one you mean")
        return models[0]
    name = str(path)
    for suffix in (MODEL_SUFFIX, PARAMS_SUFFIX):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    model = Path(name + MODEL_SUFFIX)
    if not model.is_file():
        raise ValueError(f"no saved model at {given}: {model} does not exist (give a model's path prefix, "
                         f"its {MODEL_SUFFIX} or {PARAMS_SUFFIX} file, or the folder holding it)")
    return model


def _add_launch_parser(commands: Any) -> None:
    parser = commands.add_parser("launch", help="run a training script on N ranks over MPI (data parallel)",
                                 description="Run SCRIPT on N ranks with MPI's launcher (the `dist` extra); "
                                 "the script runs unchanged without it, as a world of one.")
    add_arguments(parser)
    parser.set_defaults(check=lambda args: check_arguments(parser, args))


def _launch(args: argparse.Namespace) -> int:
    args.check(args)
    return launch(args.nproc, [args.script, *args.args], args.threads, timeout=args.timeout)


def _demo_on_ranks(args: argparse.Namespace) -> int:
    """`demo --nproc N`: the same command on N ranks under the MPI launcher."""
    argv = ["demo", "--epochs", str(args.epochs), "--out", args.out, "--mode", args.mode, "--model", args.model,
            "--batch-size", str(args.batch_size), "--lr", str(args.lr), "--seed", str(args.seed),
            "--nproc", str(args.nproc)] + (["--no-progress"] if args.no_progress else [])
    return launch(args.nproc, [sys.executable, "-m", "fluidgrad", *argv])


def _demo(args: argparse.Namespace) -> int:
    if args.nproc > 1 and not launched():
        return _demo_on_ranks(args)
    if get_world_size() != args.nproc:
        raise ValueError(f"--nproc {args.nproc}, but this job has {get_world_size()} rank(s)")
    if get_rank() != 0:  # rank 0 reports; the others train quietly
        train = demo.train_static if args.mode == "static" else demo.train_eager
        train(args.epochs, model=args.model, batch_size=args.batch_size, learning_rate=args.lr, seed=args.seed)
        return 0
    progress = None
    if not args.no_progress:
        try:
            from tqdm import tqdm
        except ImportError:
            print("note: no progress bars without tqdm (pip install 'fluidgrad[demo]')", file=sys.stderr)
        else:
            def progress(items, **kwargs):
                return tqdm(items, leave=True, dynamic_ncols=True, **kwargs)
    train = demo.train_static if args.mode == "static" else demo.train_eager
    result = train(args.epochs, model=args.model, batch_size=args.batch_size, learning_rate=args.lr,
                   seed=args.seed, progress=progress, out_dir=Path(args.out),
                   on_epoch=lambda stats: print(stats.line(args.epochs), flush=True))
    if result.model_path is not None:
        print(f"saved the inference model to {result.model_path}")
    if result.picture_path is not None:
        kind = "training" if args.mode == "static" else "inference"
        print(f"saved a picture of the {kind} program to {result.picture_path}")
    if result.curves_path is not None:
        print(f"saved the training curves (loss and accuracy per epoch) to {result.curves_path}")
    if result.checkpoint_path is not None:
        print(f"saved the model and optimizer state (fluidgrad.save) to {result.checkpoint_path}")
    ranks = f", {args.nproc} ranks data-parallel" if args.nproc > 1 else ""
    print(f"trained in {result.seconds:.1f} s ({args.mode} mode, {args.model}, {args.epochs} epochs{ranks})")
    print(f"test accuracy: {result.test_accuracy:.3f}")
    return 0


def _show(args: argparse.Namespace) -> int:
    model, program, feed_names, fetch_names = _read_any(args.model)
    print(f"# {model}")
    if feed_names is not None:
        print(f"# feeds: {', '.join(feed_names)}")
        print(f"# fetches: {', '.join(fetch_names or [])}")
    params = program.all_parameters()
    size = sum(_numel(p.shape) for p in params)
    print(f"# {len(params)} parameters, {size} values; {program.num_blocks} block(s), "
          f"{sum(len(b.ops) for b in program.blocks)} ops")
    print(program)
    return 0


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= max(d, 0)
    return n


def _draw(args: argparse.Namespace) -> int:
    _, program, _, _ = _read_any(args.model)
    print(f"wrote {draw(program, args.output)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `fluidgrad` script; returns the exit status."""
    args = _parser().parse_args(argv)
    handler = {"demo": _demo, "show": _show, "draw": _draw, "export": _export, "launch": _launch}[args.command]
    try:
        return handler(args)
    except BrokenPipeError:  # `fluidgrad show MODEL | head`: stop quietly (Python docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("fluidgrad: interrupted", file=sys.stderr)
        return 130
    except (ValueError, RuntimeError, OSError, NotImplementedError) as exc:
        print(f"fluidgrad {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
