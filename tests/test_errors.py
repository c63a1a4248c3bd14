"""The error catalogue (docs/errors.md), one row per bad input a user can give.

Each row builds a small valid state, makes one mistake, and checks that
  * the exception type and the key parts of its message are the catalogue's;
  * the program(s), the scope and the eager tensors involved are unchanged afterwards
    (compared as text listings and array bytes before and after).
`python tests/test_errors.py` prints every row's actual message (how docs/errors.md was made).
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.framework.errors import DTypeError, ExecutionError, NanInfError, NoGradientError, ShapeError
from fluidgrad.io import ModelFileError
from fluidgrad.static import data


# ---------------------------------------------------------------- state and snapshots

class State:
    """What a row may touch: programs, scopes, tensors, files; snapshotted before and after."""

    def __init__(self) -> None:
        self.main, self.startup = fg.Program(), fg.Program()
        self.scope = fg.Scope()
        self.tensors: dict[str, Any] = {}
        self.v: dict[str, Any] = {}  # variables and other handles the mistake uses
        self.dir = tempfile.mkdtemp(prefix="fluidgrad-errors-")

    def snapshot(self) -> tuple:
        scope = {k: (np.asarray(v).shape, np.asarray(v).dtype.str, np.asarray(v).tobytes())
                 for k, v in self.scope.vars.items() if isinstance(v, (np.ndarray, np.generic))}
        tensors = {k: (t.numpy().tobytes(), None if t.grad is None else t.grad.numpy().tobytes())
                   for k, t in self.tensors.items()}
        files = {}
        for name in sorted(os.listdir(self.dir)):
            with open(os.path.join(self.dir, name), "rb") as f:
                files[name] = f.read()
        return str(self.main), str(self.startup), scope, tensors, files

    def run(self, feed=None, fetch=None, exe=None):
        return (exe or fg.Executor()).run(self.main, feed=feed, fetch_list=fetch, scope=self.scope)


@dataclass
class Row:
    id: str
    what: str                     # the bad input, in the user's words
    setup: Callable[[State], None]
    mistake: Callable[[State], Any]
    error: type
    message: str                  # regex on the key parts
    fix: str = ""


ROWS: list[Row] = []


def row(id: str, what: str, error: type, message: str, fix: str = "") -> Callable:
    def register(fn: Callable[[State], tuple[Callable, Callable] | None]) -> Callable:
        def setup(state: State) -> None:
            state.v["mistake"] = fn(state)
        ROWS.append(Row(id, what, setup, lambda s: s.v["mistake"](), error, message, fix))
        return fn
    return register


def _mlp(state: State, batch=None):
    with fg.program_guard(state.main, state.startup):
        x = data("x", [batch, 4], "float32")
        y = fg.static.nn.fc(x, 3, name="fc")
        loss = fg.mean(y)
    fg.Executor().run(state.startup, scope=state.scope)
    state.v.update(x=x, y=y, loss=loss)
    return x, y, loss


def _save_model(state: State, prefix="model"):
    _mlp(state)
    path = os.path.join(state.dir, prefix)
    fg.static.save(state.main, path, scope=state.scope)
    return path


# ---------------------------------------------------------------- building a program

@row("build-shape", "operands whose shapes an op cannot take (at build time)", ShapeError,
     r"op matmul: inner dimensions differ: X=a \(shape \[2, 3\], float32\).*Y=b \(shape \[4, 5\], float32\).*3 != 4",
     "fix the shapes; the op is not appended and no variable is left behind")
def _(state):
    with fg.program_guard(state.main, state.startup):
        a, b = data("a", [2, 3]), data("b", [4, 5])

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.matmul(a, b)
    return mistake


@row("build-dtype", "operands of different dtypes", DTypeError,
     r"op matmul: inputs must have one dtype, got X=a \(shape \[2, 3\], float32\) and Y=b \(shape \[3, 2\], float64\)")
def _(state):
    with fg.program_guard(state.main, state.startup):
        a, b = data("a", [2, 3], "float32"), data("b", [3, 2], "float64")

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.matmul(a, b)
    return mistake


@row("build-reshape", "a reshape to a different number of elements", ShapeError,
     r"op reshape: cannot reshape X=a \(shape \[2, 3\], float32\) \(6 elements\) to \[4\]")
def _(state):
    with fg.program_guard(state.main, state.startup):
        a = data("a", [2, 3])

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.reshape(a, [4])
    return mistake


@row("unknown-op", "an op type that is not registered", KeyError, r"op type 'no_such_op' is not registered")
def _(state):
    with fg.program_guard(state.main, state.startup):
        a = data("a", [2])
    return lambda: state.main.global_block().append_op("no_such_op", {"X": [a]}, {"Out": [a]})


@row("undeclared-input", "an op reading a variable no block declares (at build time)", KeyError,
     r"op relu reads variable 'ghost', which block 0 and its ancestors do not declare")
def _(state):
    with fg.program_guard(state.main, state.startup):
        out = data("out", [2])
    return lambda: state.main.global_block().append_op("relu", {"X": ["ghost"]}, {"Out": [out]})


@row("param-reuse-shape", "a parameter name reused with another shape", ValueError,
     r"parameter 'w' already exists with shape \(4, 3\), cannot reuse it with shape \(5, 3\)")
def _(state):
    with fg.program_guard(state.main, state.startup):
        fg.static.create_parameter([4, 3], "float32", name="w")

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.static.create_parameter([5, 3], "float32", name="w")
    return mistake


@row("cond-branches", "cond branches returning different shapes", ValueError,
     r"cond: output 0 differs between branches: true_fn gives shape \[2\] float32, false_fn gives shape \[3\] float32")
def _(state):
    with fg.program_guard(state.main, state.startup):
        a, b = data("a", [2]), data("b", [3])
        pred = fg.less_than(fg.sum(a), fg.sum(b))

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.static.nn.cond(pred, lambda: fg.tanh(a), lambda: fg.tanh(b))
    return mistake


@row("while-body", "a while_loop body returning a loop var of another shape", ValueError,
     r"while_loop.*shape")
def _(state):
    with fg.program_guard(state.main, state.startup):
        i = fg.full([1], 0, "int64")
        x = data("x", [2])

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.static.nn.while_loop(lambda i, v: fg.less_than(i, fg.full([1], 3, "int64")),
                                    lambda i, v: [i + 1, fg.concat([v, v])], [i, x])
    return mistake


# ---------------------------------------------------------------- backward

@row("loss-not-scalar", "a loss with more than one element", ValueError,
     r"append_backward: loss \S+ must hold one element, but its shape is \[-1, 3\]; reduce it first")
def _(state):
    _, y, _ = _mlp(state)

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.append_backward(y)
    return mistake


@row("loss-not-variable", "a name where append_backward wants the loss Variable", TypeError,
     r"append_backward: loss must be a Variable, got str \(a name; pass the Variable itself\)")
def _(state):
    _, _, loss = _mlp(state)
    return lambda: fg.append_backward(loss.name)


@row("parameter-list-str", "a single name where a list is expected (parameter_list, no_grad_set)", TypeError,
     r"parameter_list must be a list, tuple or set of Variables or names, got a single str")
def _(state):
    _, _, loss = _mlp(state)
    return lambda: fg.append_backward(loss, parameter_list="fc.w_0")


@row("gradients-inputs-str", "a name where gradients() wants Variables", TypeError,
     r"gradients: inputs must be a Variable or a list of Variables, got str")
def _(state):
    _, _, loss = _mlp(state)
    return lambda: fg.gradients([loss], "x")


@row("no-gradient", "a gradient through an op that has none (e.g. a loop's gradient)", NoGradientError,
     r"op \w+ has no gradient, but one was asked for \(mark its inputs stop_gradient or put them in no_grad_set\)")
def _(state):
    with fg.program_guard(state.main, state.startup):
        x = data("x", [3], "float64")
        _, y = fg.static.nn.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x),
                                       [fg.full([], 0, "int64"), fg.ones_like(x)])
        dx, = fg.gradients([fg.sum(y)], [x])
        total = fg.sum(dx)
    return lambda: fg.gradients([total], [x])


@row("int-gradient", "an integer variable asked for its gradient", TypeError,
     r"gradients: input i is int64; only float variables have gradients")
def _(state):
    with fg.program_guard(state.main, state.startup):
        i = data("i", [3], "int64")
        loss = fg.sum(fg.cast(i, "float32"))
    return lambda: fg.gradients([loss], [i])


# ---------------------------------------------------------------- running

@row("feed-shape", "a feed of the wrong shape", ExecutionError,
     r"feed 'x' has shape \[2, 5\], but variable x expects \[-1, 4\] \(-1 means any size\)")
def _(state):
    _, y, _ = _mlp(state)
    return lambda: state.run({"x": np.zeros((2, 5), "float32")}, [y])


@row("feed-dtype", "a feed of the wrong dtype", ExecutionError,
     r"feed 'x' has dtype float64, but variable x is float32")
def _(state):
    _, y, _ = _mlp(state)
    return lambda: state.run({"x": np.zeros((2, 4), "float64")}, [y])


@row("feed-unknown", "a feed name the program does not have", ExecutionError,
     r"feed 'z' is not a variable of the program's global block")
def _(state):
    _, y, _ = _mlp(state)
    return lambda: state.run({"x": np.zeros((2, 4), "float32"), "z": np.zeros(1)}, [y])


@row("feed-missing", "a data variable that is not fed", ExecutionError,
     r"op #0 \(matmul\) reads variable 'x', which is neither fed nor in the scope nor written by an earlier op")
def _(state):
    _, y, _ = _mlp(state)
    return lambda: state.run({}, [y])


@row("startup-not-run", "a parameter used before the startup program ran", ExecutionError,
     r"reads variable 'fc.w_0', which is neither fed nor in the scope.*run the startup program first")
def _(state):
    _, y, _ = _mlp(state)
    state.scope = fg.Scope()
    return lambda: state.run({"x": np.zeros((2, 4), "float32")}, [y])


@row("read-before-write", "an op that reads a variable before the op writing it", ExecutionError,
     r"op #0 \(relu\) reads variable 't' before op #1 \(scale\) writes it")
def _(state):
    block = state.main.global_block()
    with fg.program_guard(state.main, state.startup):
        x = data("x", [2], "float64")
        t = block.create_var("t", [2], "float64")
        y = fg.relu(t)
        block.append_op("scale", {"X": [x]}, {"Out": [t]}, {"scale": 2.0})
    return lambda: state.run({"x": np.ones(2)}, [y])


@row("fetch-unknown", "a fetch name the program does not have", ExecutionError,
     r"cannot fetch 'nope': the program's global block has no such variable")
def _(state):
    _mlp(state)
    return lambda: state.run({"x": np.zeros((2, 4), "float32")}, ["nope"])


@row("kernel-failure", "a value an op rejects at run time (an index out of range)", ExecutionError,
     r"op #\d+ \(gather, forward op, block 0\) failed: IndexError: gather: index 7 is out of range for axis 0 "
     r"of size 5")
def _(state):
    with fg.program_guard(state.main, state.startup):
        table = data("table", [5, 2], "float32")
        ids = data("ids", [3], "int64")
        out = fg.gather(table, ids)
    return lambda: state.run({"table": np.zeros((5, 2), "float32"), "ids": np.array([0, 7, 1])}, [out])


@row("bce-not-probability", "binary_cross_entropy (op bce_loss) given values outside [0, 1], e.g. logits",
     ExecutionError,
     r"op #\d+ \(bce_loss, forward op, block 0\) failed: ValueError: bce_loss: X must hold probabilities in "
     r"\[0, 1\], got 1.7 \(X of shape \[3\]; logits belong in binary_cross_entropy_with_logits\)")
def _(state):
    with fg.program_guard(state.main, state.startup):
        prob, label = data("prob", [3], "float32"), data("label", [3], "float32")
        loss = fg.nn.functional.binary_cross_entropy(prob, label)
    return lambda: state.run({"prob": np.array([0.2, 1.7, 0.5], "float32"), "label": np.ones(3, "float32")}, [loss])


@row("bce-label-shape", "a binary cross-entropy label of another shape than the input ([N] for [N, 1])", ValueError,
     r"binary_cross_entropy: label of shape \[4\] differs from input of shape \[4, 1\]; they must be the same")
def _(state):
    prob = state.tensors["prob"] = fg.to_tensor(np.full((4, 1), 0.3))
    label = state.tensors["label"] = fg.to_tensor(np.array([0.0, 1.0, 1.0, 0.0]))
    return lambda: fg.nn.functional.binary_cross_entropy(prob, label)


@row("loss-input-shapes", "loss inputs whose shapes do not fit together (triplet_margin_loss, gaussian_nll_loss, "
     "cosine_embedding_loss, ...; at build time)", ValueError,
     r"triplet_margin_loss: input of shape \[-1, 8\], positive of shape \[-1, 8\], negative of shape \[-1, 6\]: "
     r"the three must have the same shape")
def _(state):
    with fg.program_guard(state.main, state.startup):
        a, p, n = data("a", [None, 8]), data("p", [None, 8]), data("n", [None, 6])

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.nn.functional.triplet_margin_loss(a, p, n)
    return mistake


@row("loss-negative-variance", "gaussian_nll_loss given a negative variance (eager; a static program gives NaN "
     "there)", ValueError, r"gaussian_nll_loss: variance has negative entries")
def _(state):
    mean = state.tensors["mean"] = fg.to_tensor(np.zeros((2, 3)))
    variance = state.tensors["variance"] = fg.to_tensor(np.array([[1.0, -0.5, 1.0], [1.0, 1.0, 2.0]]))
    return lambda: fg.nn.functional.gaussian_nll_loss(mean, mean, variance)


@row("nan-found", "a NaN or Inf while Executor(check_nan_inf=True)", NanInfError,
     r"NaN in the output of op #0 \(log, forward op, block 0\); its inputs: x; outputs: \S+")
def _(state):
    with fg.program_guard(state.main, state.startup):
        x = data("x", [2], "float64")
        y = fg.log(x)
    return lambda: state.run({"x": np.array([-1.0, 1.0])}, [y], fg.Executor(check_nan_inf=True))


@row("run-not-program", "something other than a Program given to Executor.run", TypeError,
     r"Executor.run expects a Program, got str")
def _(state):
    return lambda: fg.Executor().run("main", scope=state.scope)


# ---------------------------------------------------------------- files

@row("load-shape", "parameters whose shapes do not fit the program", ModelFileError,
     r"does not fit the program: 'fc.w_0' has shape \[4, 3\] in the file but \[6, 3\] in the program")
def _(state):
    path = _save_model(state)
    other = fg.Program()
    with fg.program_guard(other, fg.Program()):
        fg.static.nn.fc(data("x", [None, 6], "float32"), 3, name="fc")
    state.v["other"] = other
    return lambda: fg.static.load(other, path, scope=state.scope)


@row("load-truncated", "a truncated, corrupted or mismatched parameter file (next to its model file)",
     ModelFileError, r"parameter file \S+ is truncated or corrupted, or comes from another save: its sha256 differs")
def _(state):
    path = _save_model(state)
    params = path + ".pdparams.safetensors"
    with open(params, "rb") as f:
        raw = bytearray(f.read())
    raw[-1] ^= 1  # one flipped bit in the data: only the checksum can tell
    with open(params, "wb") as f:
        f.write(raw)
    return lambda: fg.static.load(state.main, path, scope=state.scope)


@row("load-truncated-alone", "a truncated parameter file without its model file", ModelFileError,
     r"parameter file \S+ is truncated or corrupted: ")
def _(state):
    path = _save_model(state)
    os.remove(path + ".pdmodel.json")
    params = path + ".pdparams.safetensors"
    with open(params, "rb") as f:
        raw = f.read()
    with open(params, "wb") as f:
        f.write(raw[: len(raw) // 2])
    return lambda: fg.static.load(state.main, path, scope=state.scope)


@row("load-corrupt-model", "a corrupted model (program) file", ModelFileError,
     r"model file \S+ is truncated or corrupted \(not valid JSON")
def _(state):
    path = os.path.join(state.dir, "inference")
    _mlp(state)
    fg.static.save_inference_model(path, [state.v["x"]], [state.v["y"]], program=state.main, scope=state.scope)
    model = path + ".pdmodel.json"
    with open(model, "rb") as f:
        raw = f.read()
    with open(model, "wb") as f:
        f.write(raw[:-40])
    return lambda: fg.static.load_inference_model(path, scope=state.scope)


@row("load-damaged-model-params", "a damaged model file next to its parameter file (load)", ModelFileError,
     r"model file \S+ is truncated or corrupted \(not valid JSON.*\), so the checksum of its parameter file cannot "
     r"be verified; refusing to load")
def _(state):
    path = _save_model(state)
    with open(path + ".pdmodel.json", "r+b") as f:
        f.truncate(100)
    return lambda: fg.static.load(state.main, path, scope=state.scope)


@row("save-inference-unknown", "a feed or fetch name the program of the feed/fetch Variables lacks", ValueError,
     r"save_inference_model: 'nope' is not a variable of the global block of the program that 'x' belongs to")
def _(state):
    _mlp(state)
    return lambda: fg.static.save_inference_model(os.path.join(state.dir, "inf"), [state.v["x"]], ["nope"],
                                                  scope=state.scope)


@row("reduce-empty", "max or min over an axis of size zero", ShapeError,
     r"op reduce_max: cannot reduce X \(shape \[0, 3\]\) over axes \[0\], which hold no elements")
def _(state):
    with fg.program_guard(state.main, state.startup):
        x = data("x", [0, 3], "float32")

    def mistake():
        with fg.program_guard(state.main, state.startup):
            fg.max(x, axis=0)
    return mistake


@row("load-newer-version", "a model file from a newer fluidgrad", ModelFileError,
     r"has format version 99, newer than this fluidgrad reads \(up to \d+\); upgrade fluidgrad")
def _(state):
    path = os.path.join(state.dir, "inference")
    _mlp(state)
    fg.static.save_inference_model(path, [state.v["x"]], [state.v["y"]], program=state.main, scope=state.scope)
    model = path + ".pdmodel.json"
    with open(model) as f:
        text = f.read()
    with open(model, "w") as f:
        f.write(re.sub(r'"fluidgrad_model": \d+', '"fluidgrad_model": 99', text))
    return lambda: fg.static.load_inference_model(path, scope=state.scope)


@row("load-missing", "a model path that does not exist", ModelFileError, r"parameter file \S+ does not exist")
def _(state):
    _mlp(state)
    return lambda: fg.static.load(state.main, os.path.join(state.dir, "nothing"), scope=state.scope)


# ---------------------------------------------------------------- eager mode

@row("eager-backward-twice", "backward twice over a graph already freed", RuntimeError,
     r"the graph has been freed: backward already ran through it \(op \w+\); call backward\(retain_graph=True\)")
def _(state):
    x = state.tensors["x"] = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    y = fg.sum(fg.multiply(x, x))
    y.backward()
    return lambda: y.backward()


@row("eager-inplace", "a tensor saved for backward changed with set_value before backward", RuntimeError,
     r"backward of op elementwise_mul: its input \w \(a tensor of shape \[2\], float64\) was modified in place "
     r"by set_value after the op ran")
def _(state):
    x = state.tensors["x"] = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    y = fg.sum(fg.multiply(x, x))
    x.set_value(np.array([3.0, 4.0]))
    return lambda: y.backward()


@row("eager-int-grad", "an integer tensor asked for a gradient", TypeError,
     r"to_tensor: a int64 tensor cannot have a gradient \(stop_gradient=False\); only float tensors can")
def _(state):
    return lambda: fg.to_tensor(np.array([1, 2]), stop_gradient=False)


@row("eager-shape", "eager operands whose shapes an op cannot take", ShapeError,
     r"op matmul: inner dimensions differ: .*\(shape \[2, 3\], float64\).*\(shape \[4, 5\], float64\).*"
     r"\(in eager mode\)")
def _(state):
    a = state.tensors["a"] = fg.to_tensor(np.zeros((2, 3)))
    b = state.tensors["b"] = fg.to_tensor(np.zeros((4, 5)))
    return lambda: fg.matmul(a, b)


@row("eager-nan", "a NaN or Inf with set_flags({'check_nan_inf': True}) in eager mode", NanInfError,
     r"NaN in the output of op log \(forward op, eager mode, op #\d+ since check_nan_inf was set\); "
     r"its inputs: X \(shape \[1\], float64\)")
def _(state):
    x = state.tensors["x"] = fg.to_tensor(np.array([-1.0]))

    def mistake():
        fg.set_flags({"check_nan_inf": True})
        try:
            fg.log(x)
        finally:
            fg.set_flags({"check_nan_inf": False})
    return mistake


# ---------------------------------------------------------------- the test

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case", ROWS, ids=[r.id for r in ROWS])
def test_catalogue_row(case: Row) -> None:
    state = State()
    case.setup(state)
    before = state.snapshot()
    with pytest.raises(case.error) as info:
        case.mistake(state)
    assert re.search(case.message, str(info.value)), f"message was: {info.value}"
    assert state.snapshot() == before, "the program, scope, tensors or files changed after the error"
    # and the same state still works for a correct call
    if "y" in state.v and state.scope.get("fc.w_0") is not None:
        out, = state.run({"x": np.ones((2, 4), "float32")}, [state.v["y"]])
        assert out.shape == (2, 3)


def test_validate_program_finds_unprovided_reads_at_build_time() -> None:
    from fluidgrad.framework.validate import validate_program
    main = fg.Program()
    block = main.global_block()
    with fg.program_guard(main, fg.Program()):
        x = data("x", [2], "float64")
        t = block.create_var("t", [2], "float64")
        fg.relu(t)
        block.append_op("scale", {"X": [x]}, {"Out": [t]}, {"scale": 2.0})
        u = block.create_var("u", [2], "float64")
        fg.tanh(u)
    problems = validate_program(main)
    assert problems[0] == "op #0 (relu) in block 0 reads 't' before op #1 (scale) writes it"
    assert re.match(r"op #2 \(tanh\) in block 0 reads 'u', which no earlier op writes and which is neither", problems[1])
    assert validate_program(main, feed_names=["u"]) == problems[:1]
    with pytest.raises(ValueError, match="the program reads variables nothing provides"):
        validate_program(main, raise_error=True)


def test_validate_program_accepts_real_programs() -> None:
    """An MLP with Adam, a while loop and a cond, and their backward: nothing to report."""
    from fluidgrad.framework.validate import validate_program
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = data("x", [None, 4])
        y = fg.static.nn.fc(x, 3)
        i, limit = fg.full([1], 0, "int64"), fg.full([1], 3, "int64")
        _, z = fg.static.nn.while_loop(lambda i, v: fg.less_than(i, limit), lambda i, v: [i + 1, fg.tanh(v)], [i, y])
        c = fg.static.nn.cond(fg.less_than(fg.sum(z), fg.full([], 0.0)), lambda: fg.tanh(z), lambda: fg.sin(z))
        fg.optimizer.Adam(0.01).minimize(fg.mean(c))
    assert validate_program(main) == []
    assert validate_program(startup) == []


def test_catalogue_document_lists_every_row() -> None:
    path = os.path.join(os.path.dirname(__file__), "..", "docs", "errors.md")
    with open(path) as f:
        text = f.read()
    missing = [r.id for r in ROWS if f"`{r.id}`" not in text]
    assert not missing, f"docs/errors.md lacks rows {missing}; run `python tests/test_errors.py`"


def catalogue() -> str:
    """The markdown table of docs/errors.md, from real runs."""
    lines = ["| id | bad input | exception | message (from a real run) |", "|---|---|---|---|"]
    import warnings
    for case in ROWS:
        state = State()
        case.setup(state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                case.mistake(state)
                message, kind = "(no error!)", "-"
            except Exception as exc:  # noqa: BLE001  (recording whatever it is)
                message, kind = str(exc), type(exc).__name__
        message = message.replace(state.dir, "DIR").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{case.id}` | {case.what} | `{kind}` | {message} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(catalogue() + "\n")
