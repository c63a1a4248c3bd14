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

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.framework import DTypeError, FluidgradError, dtypes

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
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


def _documented_refusals() -> set[tuple[str, str, str]]:
    """(expression, dtype, scalar) rows of the scalar refusal table in docs/dtypes.md."""
    rows = set()
    for line in DOCS.read_text().splitlines():
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
    np.testing.assert_allclose(value.astype(np.float64), expected.double().numpy(), rtol=1e-6, equal_nan=True)


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
