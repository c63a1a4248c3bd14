"""Python's bit operators on Tensors and Variables (& | ^ << >> ~, reflected and in place)
against PyTorch: masks combined with `&`, integers masked and shifted, Python numbers and NumPy
arrays on either side, and the refusals (floats; an in-place result that would change x's shape
or dtype)."""
from __future__ import annotations

import operator

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.framework import DTypeError

RNG = np.random.default_rng(8)
OPERATORS = {"&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}
IN_PLACE = {"&": operator.iand, "|": operator.ior, "^": operator.ixor, "<<": operator.ilshift, ">>": operator.irshift}


def _operands(dtype: str, symbol: str) -> tuple[np.ndarray, np.ndarray]:
    if dtype == "bool":
        return RNG.random((3, 4)) > 0.5, RNG.random((4,)) > 0.5
    if symbol in ("<<", ">>"):
        return RNG.integers(-100, 100, (3, 4)).astype(dtype), RNG.integers(0, 6, (4,)).astype(dtype)
    return RNG.integers(-100, 100, (3, 4)).astype(dtype), RNG.integers(-100, 100, (4,)).astype(dtype)


def _static(fn, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 4], str(a.dtype))
        y = fg.static.data("y", [4], str(b.dtype))
        out = fn(x, y)
    return fg.Executor().run(main, feed={"x": a, "y": b}, fetch_list=[out])[0]


CASES = [(s, d) for s in ("&", "|", "^") for d in ("bool", "int8", "int32", "int64", "uint8")] + \
        [(s, d) for s in ("<<", ">>") for d in ("int16", "int32", "int64")]


@pytest.mark.parametrize("symbol,dtype", CASES)
def test_two_tensors_match_torch_in_both_modes(symbol, dtype):
    a, b = _operands(dtype, symbol)
    fn = OPERATORS[symbol]
    expected = fn(torch.tensor(a), torch.tensor(b)).numpy()
    got = fn(fg.to_tensor(a), fg.to_tensor(b))
    assert got.dtype == str(expected.dtype)
    np.testing.assert_array_equal(got.numpy(), expected)
    static = _static(fn, a, b)
    assert static.dtype == expected.dtype
    np.testing.assert_array_equal(static, expected)


@pytest.mark.parametrize("symbol,dtype,scalar", [
    ("&", "bool", True), ("|", "bool", False), ("^", "bool", True), ("&", "bool", 1), ("|", "bool", 6),
    ("&", "int32", 0xF), ("|", "int64", True), ("^", "uint8", 3), ("<<", "int32", 3), (">>", "int64", 2)])
def test_a_python_number_on_either_side_is_a_weak_scalar(symbol, dtype, scalar):
    a, _ = _operands(dtype, symbol)
    fn = OPERATORS[symbol]
    for left, right in ((lambda t: t, lambda t: scalar), (lambda t: scalar, lambda t: t)):
        if symbol in ("<<", ">>") and left(0) is scalar:
            a = np.abs(a) % 8          # a shift amount: within the width
        expected = fn(left(torch.tensor(a)), right(torch.tensor(a))).numpy()
        got = fn(left(fg.to_tensor(a)), right(fg.to_tensor(a)))
        assert got.dtype == str(expected.dtype), (left(0), right(0))
        np.testing.assert_array_equal(got.numpy(), expected)
        np.testing.assert_array_equal(_static(lambda x, y: fn(left(x), right(x)), a, a[0]), expected)


def test_numpy_arrays_join_eager_tensors_on_either_side():
    a, b = _operands("int32", "&")
    np.testing.assert_array_equal((fg.to_tensor(a) & b).numpy(), a & b)
    got = b ^ fg.to_tensor(a)
    assert isinstance(got, fg.Tensor)
    np.testing.assert_array_equal(got.numpy(), b ^ a)


def test_masks_combine_as_in_torch():
    x = RNG.normal(size=(5, 6))
    t, fx = torch.tensor(x), fg.to_tensor(x)
    expected = t[((t > 0) & (t < 1)) | ~(t > -0.5)].numpy()
    np.testing.assert_array_equal(fx[((fx > 0) & (fx < 1)) | ~(fx > -0.5)].numpy(), expected)


@pytest.mark.parametrize("symbol", ["&", "|", "^", "<<", ">>"])
def test_in_place_writes_into_x_as_torch_does(symbol):
    a, b = _operands("int64", symbol)
    t = torch.tensor(a)
    t_alias = t
    IN_PLACE[symbol](t, torch.tensor(b))
    x = fg.to_tensor(a.copy())
    alias = x
    result = IN_PLACE[symbol](x, fg.to_tensor(b))
    assert result is alias                      # the same tensor, changed in place
    np.testing.assert_array_equal(alias.numpy(), t_alias.numpy())
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        v = fg.static.data("x", [3, 4], "int64")
        before = fg.assign(v)
        v = IN_PLACE[symbol](v, fg.static.data("y", [4], "int64"))
    new, old = fg.Executor().run(main, feed={"x": a, "y": b}, fetch_list=[v, before])
    np.testing.assert_array_equal(new, t.numpy())
    np.testing.assert_array_equal(old, a)


def test_in_place_keeps_shape_and_dtype_or_refuses():
    mask = fg.to_tensor(np.array([True, False]))
    with pytest.raises(DTypeError, match=r"x &= y .*\[2\], bool.* int64"):
        mask &= 1                               # PyTorch: "result type Long can't be cast to ... Bool"
    row = fg.to_tensor(np.array([1, 2], "int32"))
    with pytest.raises(DTypeError, match=r"x \|= y .*shape \[2\].*shape \[3, 2\]"):
        row |= fg.to_tensor(np.ones((3, 2), "int32"))
    np.testing.assert_array_equal(row.numpy(), [1, 2])


@pytest.mark.parametrize("symbol", ["&", "|", "^", "<<", ">>"])
def test_floats_are_refused_naming_the_op(symbol):
    x = fg.to_tensor(np.ones(3))
    with pytest.raises(DTypeError, match=r"op bitwise_\w+: expects integer"):
        OPERATORS[symbol](x, 1)
    with pytest.raises(DTypeError, match=r"op bitwise_not: expects integer"):
        _ = ~x


def test_shifting_bools_is_refused_unless_a_number_promotes_them():
    mask = fg.to_tensor(np.array([True, False]))
    with pytest.raises(DTypeError, match=r"op bitwise_left_shift: expects integer inputs"):
        mask << mask                                  # PyTorch: "lshift_cpu" not implemented for 'Bool'
    shifted = mask << 1                               # an int scalar makes it int64 first, as in PyTorch
    expected = torch.tensor([True, False]) << 1
    assert shifted.dtype == str(expected.numpy().dtype)
    np.testing.assert_array_equal(shifted.numpy(), expected.numpy())
