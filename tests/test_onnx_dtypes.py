"""The dtypes ONNX models bring beyond NumPy's usual ones: uint16/32/64, bfloat16, the float8 and
float4 formats, int4/uint4/int2/uint2 (through the optional ml_dtypes package).

Casts follow ONNX (checked against onnx.reference, ONNX's own Python runtime): float8 casts
saturate unless told not to, float8_e8m0fnu rounds as `round_mode` says. Unsigned integers wrap
like NumPy and PyTorch. Storage formats are refused, by name, by ops that compute.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.dispatch import apply_op
from fluidgrad.framework import DTypeError, dtypes

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FLOAT8 = {"float8_e4m3fn": TensorProto.FLOAT8E4M3FN, "float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
          "float8_e5m2": TensorProto.FLOAT8E5M2, "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ}
# zeros, subnormals, halfway cases, the largest values and beyond, infinities and NaN
VALUES = np.array([0.0, -0.0, 1e-3, -2.2e-3, 0.4, 1.0625, 17.0, -100.5, 240.0, 250.0, 448.0, 464.0, 500.0,
                   57344.0, 61440.0, 1e6, -1e6, np.inf, -np.inf, np.nan], np.float32)


def _reference_cast(x: np.ndarray, to: int, **attrs) -> np.ndarray:
    node = helper.make_node("Cast", ["x"], ["y"], to=to, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(x)])],
                              [helper.make_tensor_value_info("y", to, [len(x)])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    return ReferenceEvaluator(model).run(None, {"x": x})[0]


def _fluid_cast(x: np.ndarray, dtype: str, mode: str, **attrs) -> np.ndarray:
    if mode == "eager":
        return apply_op("cast", {"X": fg.to_tensor(x)}, {"dtype": dtype, **attrs}).numpy()
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        v = fg.static.data("x", [len(x)], "float32")
        out = apply_op("cast", {"X": v}, {"dtype": dtype, **attrs})
    assert out.dtype == dtype
    return fg.Executor().run(main, feed={"x": x}, fetch_list=[out], scope=fg.Scope())[0]


def _same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    got_f, exp_f = got.astype(np.float32), expected.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got_f), np.isnan(exp_f))
    finite = ~np.isnan(exp_f)
    np.testing.assert_array_equal(got_f[finite], exp_f[finite])


@pytest.mark.parametrize("mode", ["eager", "static"])
@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("dtype", sorted(FLOAT8))
def test_float8_casts_equal_onnx_reference(dtype, saturate, mode):
    expected = _reference_cast(VALUES, FLOAT8[dtype], saturate=int(saturate))
    _same_bits(_fluid_cast(VALUES, dtype, mode, saturate=saturate), expected)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [True, False])
def test_e8m0_casts_equal_onnx_reference(round_mode, saturate):
    x = np.array([0.0, 1e-40, 0.1, 0.75, 1.0, 1.5, 3.0, 3.5, 1000.0, 3e38, np.inf, np.nan], np.float32)
    expected = _reference_cast(x, TensorProto.FLOAT8E8M0, saturate=int(saturate), round_mode=round_mode)
    got = _fluid_cast(x, "float8_e8m0fnu", "eager", saturate=saturate, round_mode=round_mode)
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def test_storage_formats_are_refused_by_ops_that_compute(fresh_programs):
    x = fg.to_tensor(np.ones(3, np.float32).astype(ml_dtypes.float8_e4m3fn))
    with pytest.raises(DTypeError, match=r"op exp: .*float8_e4m3fn.*storage format.*cast it to float32"):
        fg.exp(x)
    # moving data and casting back work
    y = fg.cast(fg.concat([x, x]), "float32")
    np.testing.assert_array_equal(y.numpy(), np.ones(6, np.float32))


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("mode", ["eager", "static"])
def test_unsigned_arithmetic_wraps_modulo_two_to_the_bits(dtype, mode, fresh_programs):
    """As NumPy and ONNX do (PyTorch has these dtypes but no arithmetic kernels for them)."""
    top = int(np.iinfo(dtype).max)
    a, b = np.array([top, 5, 0], dtype), np.array([1, 7, 1], dtype)
    if mode == "eager":
        x, y = fg.to_tensor(a), fg.to_tensor(b)
        values = [o.numpy() for o in (x + y, x - y, x * 3)]
    else:
        x, y = fg.static.data("a", [3], dtype), fg.static.data("b", [3], dtype)
        outs = [x + y, x - y, x * 3]
        assert [o.dtype for o in outs] == [dtype] * 3
        values = fg.Executor().run(feed={"a": a, "b": b}, fetch_list=outs)
    modulus = top + 1
    expected = [[(int(p) + int(q)) % modulus for p, q in zip(a, b)],
                [(int(p) - int(q)) % modulus for p, q in zip(a, b)], [int(p) * 3 % modulus for p in a]]
    for got, want in zip(values, expected):
        assert got.dtype == np.dtype(dtype)
        assert [int(v) for v in got] == want


def test_unsigned_promotion_equals_torch_result_type():
    for dtype in ("uint16", "uint32", "uint64"):
        for scalar in (True, 2, 2.5):
            expected = torch.result_type(torch.zeros(1, dtype=getattr(torch, dtype)), scalar)
            assert dtypes.result_type(dtype, scalar) == str(expected).replace("torch.", "")
        assert dtypes.accumulate_dtype(dtype) == str(torch.zeros(2, dtype=getattr(torch, dtype)).sum().dtype)[6:]


def test_bfloat16_matmul_and_einsum_keep_bfloat16(fresh_programs):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 4, 5)).astype(np.float32)
    ab, bb = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    reference = torch.tensor(ab.astype(np.float32)).bfloat16() @ torch.tensor(bb.astype(np.float32)).bfloat16()
    for out in (fg.matmul(fg.to_tensor(ab), fg.to_tensor(bb)), fg.einsum("bij,bjk->bik", fg.to_tensor(ab),
                                                                           fg.to_tensor(bb))):
        assert out.dtype == "bfloat16" and out.numpy().dtype == ml_dtypes.bfloat16
        np.testing.assert_allclose(out.numpy().astype(np.float32), reference.float().numpy(), rtol=2 ** -7, atol=1e-2)


def test_without_ml_dtypes_the_error_names_the_dtype_and_the_extra():
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import fluidgrad as fg\n"
            "x = fg.static.data('x', [2], 'float32')\n"
            "try:\n    fg.static.data('y', [2], 'bfloat16')\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert "DTypeError dtype bfloat16 needs the ml_dtypes package" in out.stdout
    assert "fluidgrad[onnx]" in out.stdout


def test_onnx_element_types_map_to_fluidgrad_dtypes_and_back():
    from fluidgrad.onnx import dtypes as onnx_dtypes
    for code in (TensorProto.UINT16, TensorProto.UINT64, TensorProto.BFLOAT16, TensorProto.FLOAT8E5M2FNUZ,
                 TensorProto.INT4, TensorProto.UINT4):
        name = onnx_dtypes.to_fluidgrad(code, "x")
        assert np.dtype(name) == helper.tensor_dtype_to_np_dtype(code)
        assert onnx_dtypes.to_onnx(name) == code


def _float_inputs_as(case, dtype):
    import test_dtypes as table
    out = {}
    for slot, value in case.inputs.items():
        arrays = [np.asarray(v) for v in value] if isinstance(value, list) else [np.asarray(value)]
        arrays = [table._as_dtype(a, "float32").astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
        out[slot] = arrays if isinstance(value, list) else arrays[0]
    return out


def test_every_op_refuses_storage_formats_or_moves_them_exactly():
    """Never a wrong answer: an op either moves float8 values exactly as it moves their float32
    values, or refuses them by name at build time (a DTypeError from its shape rule)."""
    import test_dtypes as table
    from fluidgrad.ops.registry import STORAGE_OPS
    problems = []
    for op in sorted({op for op, dtype in table.TABLE if dtype != "as given"}):
        case = table._table_case(op)
        stored = _float_inputs_as(case, ml_dtypes.float8_e4m3fn)
        got, error = table._outcome(lambda: table._run_op(case, stored, "eager"))
        if op not in STORAGE_OPS:
            if not (isinstance(error, DTypeError) and op in str(error) and "storage format" in str(error)):
                problems.append(f"{op}: expected a refusal naming the op, got {error!r}")
            continue
        widened = {k: [v.astype(np.float32) for v in x] if isinstance(x, list) else
                   (x.astype(np.float32) if x.dtype == ml_dtypes.float8_e4m3fn else x) for k, x in stored.items()}
        expected, reference_error = table._outcome(lambda: table._run_op(case, widened, "eager"))
        if error is not None or reference_error is not None:
            problems.append(f"{op}: {error!r} (float32: {reference_error!r})")
            continue
        for (value, declared), (ref, ref_dtype) in zip(got, expected):
            want = ref.astype(ml_dtypes.float8_e4m3fn) if ref_dtype == "float32" else ref
            if declared != want.dtype.name or value.dtype != want.dtype or \
                    not np.array_equal(value.astype(np.float32), want.astype(np.float32), equal_nan=True):
                problems.append(f"{op}: {declared} {value!r} vs {want!r}")
    assert not problems, "\n".join(problems)
