"""Type promotion against PyTorch: Python scalars, sums, true division, in both modes.

The rule is `fluidgrad.framework.dtypes` (docs/dtypes.md). Each row of the table runs one
operator on a tensor of each dtype with a Python scalar, in eager mode, in static mode and in
PyTorch: the result dtype and values must equal PyTorch's, or fluidgrad must refuse with a
clear error where PyTorch refuses too, or where docs/dtypes.md lists the refusal.
"""
from __future__ import annotations

import operator
import pathlib
import re
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from fluidgrad.dispatch import apply_op
from fluidgrad.framework import DTypeError, FluidgradError, dtypes
from fluidgrad.ops import registered_ops
from fluidgrad.testing import OpCase, build_single_op
from op_cases.common import ints, rand

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]
SCALARS = [True, 2, -3, 2.5]
VALUES = np.array([1, 0, 3, 2])  # non-negative: an integer to a negative power differs (see docs)

OPERATORS = {
    "x + s": operator.add, "s + x": lambda x, s: s + x, "x - s": operator.sub, "s - x": lambda x, s: s - x,
    "x * s": operator.mul, "s * x": lambda x, s: s * x, "x / s": operator.truediv, "s / x": lambda x, s: s / x,
    "x ** s": operator.pow, "s ** x": lambda x, s: s ** x, "x < s": operator.lt, "x <= s": operator.le,
    "x > s": operator.gt, "x >= s": operator.ge, "-x": lambda x, s: -x,
}
FUNCTIONS = {"maximum(x, s)": (fg.maximum, torch.maximum), "minimum(x, s)": (fg.minimum, torch.minimum)}

DOCS = pathlib.Path(__file__).parent.parent / "docs" / "dtypes.md"


def _docs_section(heading: str) -> str:
    """The text of docs/dtypes.md from `heading` to the next heading."""
    text = DOCS.read_text()
    start = text.index(heading) + len(heading)
    end = text.find("\n## ", start)
    return text[start:] if end < 0 else text[start:end]


def _documented_refusals() -> set[tuple[str, str, str]]:
    """(expression, dtype, scalar) rows of the scalar refusal table in docs/dtypes.md."""
    rows = set()
    for line in _docs_section("## Scalar refusals").splitlines():
        m = re.match(r"\| `(.+?)` \| (\w+) \| `(.+?)` \|", line)
        if m:
            rows.add(m.groups())
    return rows


def _torch(expr, dtype, scalar):
    x = torch.tensor(VALUES).to(getattr(torch, dtype))
    if expr in FUNCTIONS:
        return FUNCTIONS[expr][1](x, torch.tensor(scalar, dtype=torch.result_type(x, scalar)))
    return OPERATORS[expr](x, scalar)


def _fluid(expr, dtype, scalar, mode):
    array = VALUES.astype(dtype)
    if mode == "eager":
        x = fg.to_tensor(array)
        out = FUNCTIONS[expr][0](x, scalar) if expr in FUNCTIONS else OPERATORS[expr](x, scalar)
        return out.numpy(), out.dtype
    x = fg.static.data("x", [4], dtype)
    out = FUNCTIONS[expr][0](x, scalar) if expr in FUNCTIONS else OPERATORS[expr](x, scalar)
    (value,) = fg.Executor().run(feed={"x": array}, fetch_list=[out])
    assert value.dtype.name == out.dtype, f"{expr}: declared {out.dtype}, computed {value.dtype}"
    return value, out.dtype


def _outcome(fn):
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001  (the table records who refuses)
        return None, exc


ROWS = [(e, d, s) for e in [*OPERATORS, *FUNCTIONS] for d in DTYPES for s in SCALARS
        if not (e == "-x" and s is not True)]


@pytest.mark.parametrize("mode", ["eager", "static"])
@pytest.mark.parametrize("expr, dtype, scalar", ROWS, ids=[f"{e}-{d}-{s!r}" for e, d, s in ROWS])
def test_tensor_with_python_scalar_equals_pytorch(expr, dtype, scalar, mode):
    expected, torch_error = _outcome(lambda: _torch(expr, dtype, scalar))
    got, error = _outcome(lambda: _fluid(expr, dtype, scalar, mode))
    if error is not None:
        assert isinstance(error, (FluidgradError, TypeError, ValueError)), f"unclear error: {error!r}"
        documented = (expr, dtype, repr(scalar)) in _documented_refusals()
        assert torch_error is not None or documented, \
            f"{expr} with {dtype} and {scalar!r}: fluidgrad refuses ({error}) but PyTorch gives " \
            f"{expected.dtype}; fix it or list the refusal in docs/dtypes.md"
        return
    assert torch_error is None, f"{expr} with {dtype} and {scalar!r}: PyTorch refuses ({torch_error}), " \
                                f"fluidgrad gives {got[1]}"
    value, dtype_name = got
    assert dtype_name == str(expected.dtype).replace("torch.", ""), f"{expr}: {dtype_name} vs {expected.dtype}"
    # float16: one unit in the last place (PyTorch computes `2.5 / x` as 2.5 * (1 / x), rounding twice)
    rtol = 2 ** -10 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(value.astype(np.float64), expected.double().numpy(), rtol=rtol, equal_nan=True)


def test_documented_scalar_refusals_are_real():
    """Every refusal docs/dtypes.md lists still happens (so the list cannot go stale)."""
    for expr, dtype, scalar in sorted(_documented_refusals()):
        with pytest.raises((FluidgradError, TypeError, ValueError)):
            _fluid(expr, dtype, eval(scalar), "eager")


# ------------------------------------------------------------------ the cases
def test_integer_true_division_gives_float_in_both_modes(fresh_programs):
    x = fg.to_tensor([1, 2, 3])
    for out in (x / 2, fg.divide(x, fg.to_tensor([2, 2, 2]))):
        assert out.dtype == "float32"
        np.testing.assert_array_equal(out.numpy(), [0.5, 1.0, 1.5])
    v = fg.static.data("v", [3], "int64")
    outs = [v / 2, fg.divide(v, v), v + 0.5, v * 2.5, 1.5 - v]
    values = fg.Executor().run(feed={"v": np.array([1, 2, 3])}, fetch_list=outs)
    for out, value in zip(outs, values):
        assert out.dtype == value.dtype.name == "float32"
    np.testing.assert_array_equal(values[0], [0.5, 1.0, 1.5])
    np.testing.assert_array_equal(values[4], [0.5, -0.5, -1.5])


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64"])
def test_sums_of_bool_and_integers_accumulate_in_int64(dtype, fresh_programs):
    array = (np.array([2**30] * 3) if dtype != "bool" else np.array([True, False, True])).astype(dtype)
    expected = torch.tensor(array).sum()
    eager = fg.sum(fg.to_tensor(array))
    v = fg.static.data("v", [3], dtype)
    out = fg.sum(v, axis=0)
    (static,) = fg.Executor().run(feed={"v": array}, fetch_list=[out])
    for dtype_name, value in ((eager.dtype, eager.numpy()), (out.dtype, static)):
        assert dtype_name == "int64" and value.dtype == np.int64
        assert int(value) == int(expected)


def test_accuracy_counting_with_sum_of_equal(fresh_programs):
    pred, label = fg.to_tensor([1, 2, 3, 4]), fg.to_tensor([1, 0, 3, 4])
    assert int(fg.sum(fg.equal(pred, label))) == 3


def test_large_integers_stay_exact_with_integer_scalars(fresh_programs):
    big = np.array([2**60 + 1], dtype=np.int64)
    for out in (fg.to_tensor(big) + 1, fg.to_tensor(big) * 3 - 2):
        assert out.dtype == "int64"
    assert int((fg.to_tensor(big) + 1).numpy()[0]) == 2**60 + 2
    assert int((fg.to_tensor(big) * 3 - 2).numpy()[0]) == 3 * (2**60 + 1) - 2


def test_float_tensor_stays_float32_with_python_float(fresh_programs):
    x = fg.to_tensor(np.array([1.5], dtype=np.float32))
    for out in (x + 0.1, x * 2.5, 1.0 / x, x ** 2.0, x - 3):
        assert out.dtype == "float32"


def test_mixed_tensor_dtypes_are_refused_by_name(fresh_programs):
    a = fg.to_tensor(np.ones(2, np.int32))
    b = fg.to_tensor(np.ones(2, np.int64))
    with pytest.raises(DTypeError, match=r"op elementwise_add: inputs must have one dtype.*int32.*int64"):
        a + b


def test_promotion_rule_equals_torch_result_type():
    for dtype in ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]:
        for scalar in SCALARS + [False, 0, 1e300]:
            expected = torch.result_type(torch.zeros(1, dtype=getattr(torch, dtype)), scalar)
            assert dtypes.result_type(dtype, scalar) == str(expected).replace("torch.", "")
        expected = torch.zeros(2, dtype=getattr(torch, dtype)).sum().dtype if dtype != "float16" else torch.float16
        assert dtypes.accumulate_dtype(dtype) == str(expected).replace("torch.", "")


# ------------------------------------------------------------------ every registered op, every dtype
# Each op runs on the inputs of its first op case with a PyTorch function (tests/test_ops.py's
# table and tests/op_cases/*.py), every float input turned into each dtype below; the other
# inputs (labels, indices, masks) stay as they are. Both modes, against PyTorch on the same values.
OP_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]
try:  # bfloat16 comes with ml_dtypes (the onnx extra); PyTorch has it
    import ml_dtypes
    OP_DTYPES.append("bfloat16")
except ImportError:  # pragma: no cover
    ml_dtypes = None

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_ops import CASES as OP_CASES  # noqa: E402  (the registry's case tables)

# Ops whose op case cannot serve, with an explicit spec: no case there, or a PyTorch function
# with a float-only artefact (`+ 0 * X`, added there so that PyTorch's graph reaches X).
SPECS: dict[str, OpCase] = {s.op: s for s in [
    OpCase("fill_zeros_like", {"X": rand(3, 4)}, torch_fn=lambda X: torch.zeros_like(X)),
    OpCase("fill_any_like", {"X": rand(3, 4)}, {"value": 2.5}, torch_fn=lambda X: torch.full_like(X, 2.5)),
    OpCase("one_hot_like", {"Label": ints(3, 4, 1), "Logits": rand(4, 3)},
           torch_fn=lambda Label, Logits: TF.one_hot(Label[:, 0], 3).to(Logits.dtype)),
    OpCase("elementwise_floordiv", {"X": rand(3, 4) * 4, "Y": np.array([1.5, -1.0, 0.5, -2.5])},
           torch_fn=lambda X, Y: torch.floor_divide(X, Y)),
    OpCase("clip", {"X": rand(3, 4) * 3}, {"min": -1.0, "max": 2.0}, torch_fn=lambda X: torch.clamp(X, -1.0, 2.0)),
    OpCase("log_softmax", {"X": rand(3, 4)}, {"axis": 1}, torch_fn=lambda X: torch.log_softmax(X, 1)),
    OpCase("dropout", {"X": rand(3, 4)}, {"dropout_prob": 0.5, "is_test": True}, use_outputs=(0,),
           torch_fn=lambda X: TF.dropout(X, 0.5, training=False)),
    OpCase("conv2d", {"Input": rand(1, 2, 5, 5), "Filter": rand(3, 2, 3, 3)}, {"paddings": [1, 1]},
           torch_fn=lambda Input, Filter: TF.conv2d(Input, Filter, padding=1)),
    OpCase("pool2d", {"X": rand(1, 2, 4, 4)}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]},
           torch_fn=lambda X: TF.max_pool2d(X, 2, 2)),
    OpCase("nonzero", {"X": np.round(rand(3, 4))}, torch_fn=lambda X: torch.nonzero(X)),
    OpCase("arange", {"Start": np.asarray(0.5), "End": np.asarray(4.0), "Step": np.asarray(0.75)},
           torch_fn=lambda Start, End, Step: torch.arange(Start, End, Step).to(Start.dtype)),  # ONNX keeps the dtype
    OpCase("bincount", {"X": np.array([3, 0, 3, 1, 5]), "Weights": rand(5)}, {"minlength": 7},
           torch_fn=lambda X, Weights: torch.bincount(X, Weights, minlength=7)),
    OpCase("unique", {"X": np.round(rand(3, 4))}, use_outputs=(0, 2, 3), torch_fn=lambda X: [
        t.reshape(-1) for t in torch.unique(X, return_inverse=True, return_counts=True)]),
]}

# Ops the table does not run, and why; docs/dtypes.md lists them and a meta-test keeps both honest.
SKIP: dict[str, str] = {
    **dict.fromkeys(["while", "while_grad", "conditional_block", "conditional_block_grad", "select_input",
                     "select_input_grad", "increment"], "control flow: runs sub-blocks (tests/test_control_flow.py)"),
    "pylayer": "a traced PyLayer: passes on its forward ops' values; the user's backward (tests/test_pylayer_static.py)",
    **dict.fromkeys(["sgd", "momentum", "adam", "rmsprop", "adagrad", "adamax", "adadelta", "adam_amsgrad",
                     "nadam", "radam", "rprop", "adagrad_decay"],
                    "optimizer update: float parameters and state only"),
    **dict.fromkeys(["multinomial", "bernoulli"], "sampling: float probabilities only, random draws to compare "
                                                  "by statistics (tests/test_sampling.py)"),
    **dict.fromkeys(["standard_gamma", "standard_gamma_grad", "gammainc", "poisson"],
                    "the gamma family's draws and P(a, x): float only; torch's values are approximations (~2e-9) "
                    "or random (tests/op_cases/gamma_sampling.py, tests/test_distribution_families.py)"),
    **dict.fromkeys(["uniform_random", "gaussian_random", "truncated_gaussian_random", "randint", "randperm"],
                    "random: no input, its dtype is an attribute; no values to compare with PyTorch"),
    **dict.fromkeys(["batch_norm_grad", "layer_norm_grad", "clip_mask", "ctc_loss_grad"],
                    "a gradient helper of a float-only op (tests/op_cases/norm.py, tests/test_nn_ops.py)"),
    "non_max_suppression": "detection: float boxes and scores only, no PyTorch op (tests/test_data_dependent_ops.py)",
    "tfidf_vectorizer": "text: integer token ids only, no PyTorch op (tests/op_cases/text.py)",
    "decode_image": "image decoding: encoded uint8 bytes only (tests/test_data_dependent_ops.py)",
    **dict.fromkeys(["roi_align", "roi_align_grad"], "detection: float images and boxes only, no PyTorch op "
                                                     "(tests/op_cases/detection.py, against ONNX's reference)"),
    **dict.fromkeys(["fft_c2c", "fft_r2c", "fft_c2r", "fft_resize", "fft_hermitian_weight", "real", "imag",
                     "complex", "conj"], "complex values: float32 / float64 and complex64 / complex128 only, "
                                         "against torch.fft and torch's complex ops in tests/test_fft.py"),
}


def _table_case(op: str) -> OpCase | None:
    if op in SPECS:
        return SPECS[op]
    return next((c for c in OP_CASES if c.op == op and c.torch_fn is not None), None)


def _as_dtype(value, dtype):
    if isinstance(value, list):
        return [_as_dtype(v, dtype) for v in value]
    array = np.asarray(value)
    if array.dtype.kind != "f":
        return array
    if dtype == "bool":
        return array > 0
    if dtype.startswith("uint"):
        return np.round(np.abs(array) * 3).astype(dtype)
    if dtype.startswith("int"):
        return np.round(array * 3).astype(dtype)
    if dtype == "bfloat16":
        return array.astype(ml_dtypes.bfloat16)
    return array.astype(dtype)


def _has_float_input(case: OpCase) -> bool:
    return any(np.asarray(v).dtype.kind == "f" for value in case.inputs.values()
               for v in (value if isinstance(value, list) else [value]))


def _documented_refusal_messages() -> list[str]:
    """The message fragments of the op refusal table in docs/dtypes.md (its third column)."""
    section = _docs_section("## Op refusals")
    return re.findall(r"^\| .+? \| .+? \| `(.+?)` \|", section, flags=re.M)


def _flatten(out):
    flat = []
    for item in out if isinstance(out, tuple) else (out,):
        flat.extend(item if isinstance(item, list) else [item])
    return flat


def _run_op(case: OpCase, inputs: dict, mode: str) -> list[tuple[np.ndarray, str]]:
    """(value, declared dtype) of each used output."""
    if mode == "eager":
        tensors = {k: [fg.to_tensor(v) for v in value] if isinstance(value, list) else fg.to_tensor(value)
                   for k, value in inputs.items()}
        outs = _flatten(apply_op(case.op, tensors, dict(case.attrs), case.n_out))
        pairs = [(o.numpy(), o.dtype) for o in outs]
    else:
        feeds = {}
        for slot, value in inputs.items():
            feeds.update({f"{slot}_{i}": v for i, v in enumerate(value)} if isinstance(value, list) else {slot: value})
        main = fg.Program()
        with fg.program_guard(main, fg.Program()):
            variables = {k: fg.static.data(k, list(v.shape), v.dtype.name) for k, v in feeds.items()}
            outs = build_single_op(case.op, inputs, dict(case.attrs), case.n_out)(variables)
        values = fg.Executor().run(main, feed=feeds, fetch_list=outs, scope=fg.Scope())
        pairs = list(zip(values, [o.dtype for o in outs]))
    return pairs if case.use_outputs is None else [pairs[i] for i in case.use_outputs]


def _run_torch_rounded(case: OpCase, inputs: dict, dtype: str) -> list:
    as_float32 = {k: [_as_float32(x) for x in v] if isinstance(v, list) else _as_float32(v) for k, v in inputs.items()}
    return [o.to(getattr(torch, dtype)) if o.dtype == torch.float32 else o for o in _run_torch(case, as_float32)]


def _as_float32(value):
    array = np.asarray(value)
    return array.astype(np.float32) if array.dtype.name in ("float16", "bfloat16") else array


def _torch_tensor(array):
    array = np.asarray(array)
    if array.dtype.name == "bfloat16":  # NumPy's bfloat16 is ml_dtypes', PyTorch's is its own
        return torch.tensor(array.astype(np.float32)).bfloat16()
    return torch.tensor(array)


def _run_torch(case: OpCase, inputs: dict) -> list[np.ndarray]:
    args = {k: [_torch_tensor(v) for v in value] if isinstance(value, list) else _torch_tensor(value)
            for k, value in inputs.items()}
    outs = case.torch_fn(**args)
    return [o.detach() for o in (outs if isinstance(outs, (list, tuple)) else [outs])]


TABLE = [(op, dtype) for op in sorted(registered_ops()) if op not in SKIP and _table_case(op) is not None
         for dtype in (OP_DTYPES if _has_float_input(_table_case(op)) else ["as given"])]
# an op without inputs (fill_constant) appends itself in both modes: static only. int8 and int16
# follow every rule int32 follows: static mode only (it checks the declared dtype too), to keep
# the table's time down; the other dtypes run in both modes.
STATIC_ONLY_DTYPES = ("int8", "int16")
RUNS = [(op, dtype, mode) for op, dtype in TABLE for mode in ("static", "eager")
        if mode == "static" or (_table_case(op).inputs and dtype not in STATIC_ONLY_DTYPES)]


@pytest.mark.parametrize("op, dtype, mode", RUNS, ids=[f"{op}-{dtype}-{mode}" for op, dtype, mode in RUNS])
def test_every_op_and_dtype_equals_pytorch_or_is_a_documented_refusal(op, dtype, mode):
    case = _table_case(op)
    inputs = {k: _as_dtype(v, dtype) if dtype != "as given" else
              ([np.asarray(x) for x in v] if isinstance(v, list) else np.asarray(v)) for k, v in case.inputs.items()}
    expected, torch_error = _outcome(lambda: _run_torch(case, inputs))
    if "not implemented for 'Half'" in str(torch_error) or "not implemented for 'BFloat16'" in str(torch_error):
        # a kernel PyTorch's CPU build lacks, not a refusal: PyTorch in float32, rounded
        expected, torch_error = _outcome(lambda: _run_torch_rounded(case, inputs, dtype))
    got, error = _outcome(lambda: _run_op(case, inputs, mode))
    where = f"op {op} on {dtype} inputs ({mode})"
    if error is not None:
        assert op in str(error), f"{where}: the error does not name the op: {error!r}"
        if torch_error is not None:
            return  # both refuse
        assert isinstance(error, DTypeError), \
            f"{where}: fails with {type(error).__name__} ({error}) where PyTorch gives a result; a dtype the op " \
            f"cannot take must be refused by its shape rule (DTypeError at build time), never by its kernel"
        documented = [m for m in _documented_refusal_messages() if m in str(error)]
        assert documented, f"{where}: refused ({error}) where PyTorch gives {[str(e.dtype) for e in expected]}; " \
                           f"support it, or list the refusal in docs/dtypes.md's op refusal table"
        return
    assert torch_error is None, f"{where}: PyTorch refuses ({torch_error}) but fluidgrad gives {[d for _, d in got]}"
    assert len(got) == len(expected), f"{where}: {len(got)} outputs vs PyTorch's {len(expected)}"
    for (value, declared), ref in zip(got, expected):
        torch_dtype = str(ref.dtype).replace("torch.", "")
        assert declared == value.dtype.name == torch_dtype, \
            f"{where}: declared {declared}, computed {value.dtype.name}, PyTorch gives {torch_dtype}"
        assert value.shape == tuple(ref.shape), f"{where}: shape {value.shape} vs PyTorch's {tuple(ref.shape)}"
        reference = ref.double().numpy()
        rtol, atol = 1e-7, 1e-7
        if value.dtype in (np.float32, np.float16) or value.dtype.name == "bfloat16":  # sums in another order, float16 rounded at other
            # steps than PyTorch's float32 internals: error relative to the largest value
            finite = np.abs(reference[np.isfinite(reference)])
            rtol = {"float32": 1e-5, "float16": 4e-3, "bfloat16": 3e-2}[value.dtype.name]
            atol = max(1e-7, rtol * float(finite.max(initial=0.0)))
        np.testing.assert_allclose(value.astype(np.float64), reference, rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=where)


def test_every_registered_op_is_in_the_table_or_skipped_for_a_documented_reason():
    problems = []
    for op in sorted(registered_ops()):
        case = _table_case(op)
        if op in SKIP and case is not None:
            problems.append(f"{op}: has a case with a PyTorch function now; drop it from SKIP")
        if op not in SKIP and case is None:
            problems.append(f"{op}: no op case with a torch_fn; add one (tests/op_cases/), a SPECS entry in "
                            f"tests/test_dtypes.py, or a SKIP entry with the reason (and list it in docs/dtypes.md)")
    for op in SKIP:
        if op not in registered_ops():
            problems.append(f"{op}: in SKIP but not a registered op")
    section = _docs_section("## Not in the op table")
    listed = set(re.findall(r"`(\w+)`", section))
    if listed != set(SKIP):
        problems.append(f"docs/dtypes.md's 'Not in the op table' lists {sorted(listed - set(SKIP))} too many and "
                        f"{sorted(set(SKIP) - listed)} too few")
    assert not problems, "\n".join(problems)


def test_documented_op_refusals_still_happen():
    """Each message fragment of the op refusal table is still given by some op (no stale rows)."""
    seen = set()
    for op, dtype in TABLE:
        case = _table_case(op)
        if dtype == "as given":
            continue
        _, error = _outcome(lambda: _run_op(case, {k: _as_dtype(v, dtype) for k, v in case.inputs.items()}, "eager"))
        seen |= {m for m in _documented_refusal_messages() if error is not None and m in str(error)}
    assert seen == set(_documented_refusal_messages())
