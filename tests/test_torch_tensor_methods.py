"""PyTorch's everyday Tensor methods (fluidgrad/tensor/torch_methods.py) against torch 2.13.0, in
eager mode and, where the method exists on Variables too, in a static program; torch's
argument order of index_select / scatter / gather beside Paddle's."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import fluidgrad as fg

X0 = np.array([[3.0, -1.0, 2.0, 0.5], [0.0, 5.0, -4.0, 1.0]])
IDX = np.array([[2], [0]])

TORCH = SimpleNamespace(dt=torch, t=torch.tensor)
EAGER = SimpleNamespace(dt=fg, t=fg.to_tensor)
STATIC = SimpleNamespace(dt=fg, t=fg.assign)   # an array becomes a constant op in a program

# name -> (call on x with k (dtype module and tensor maker), also in a static program); a Variable
# keeps its own `type` (its kind of variable), so x.type(dtype) is eager only
CASES = {
    "x.type(float32)": (lambda x, k: x.type(k.dt.float32), False),
    "x.type('torch.LongTensor')": (lambda x, k: x.type("torch.LongTensor"), False),
    "x.type_as(i)": (lambda x, k: k.t(IDX).type_as(x), True),
    "x.view_as(y)": (lambda x, k: x.reshape([-1]).view_as(x), True),
    "x.reshape_as(y)": (lambda x, k: x.t().reshape_as(x), True),
    "x.new_zeros(2, 3)": (lambda x, k: x.new_zeros(2, 3), True),
    "x.new_zeros((2, 3), dtype=int64)": (lambda x, k: x.new_zeros((2, 3), dtype=k.dt.int64), True),
    "x.new_ones([3])": (lambda x, k: x.new_ones([3]), True),
    "x.new_full((2,), 7.0)": (lambda x, k: x.new_full((2,), 7.0), True),
    "x.new_empty(2).shape": (lambda x, k: x.new_empty(2) * 0, True),
    "x.new_tensor([1, 2])": (lambda x, k: x.new_tensor([1, 2]), True),
    "x.repeat(2, 1)": (lambda x, k: x.repeat(2, 1), True),
    "x.repeat(1, 2, 3)": (lambda x, k: x.repeat(1, 2, 3), True),
    "x.repeat((2, 2))": (lambda x, k: x.repeat((2, 2)), True),
    "x.softmax(dim=-1)": (lambda x, k: x.softmax(dim=-1), True),
    "x.softmax(0)": (lambda x, k: x.softmax(0), True),
    "x.log_softmax(dim=1)": (lambda x, k: x.log_softmax(dim=1), True),
    "x.relu()": (lambda x, k: x.relu(), True),
    "x.clamp(min=0)": (lambda x, k: x.clamp(min=0), True),
    "x.clamp(-1, 1)": (lambda x, k: x.clamp(-1, 1), True),
    "x.clamp(max=0.5)": (lambda x, k: x.clamp(max=0.5), True),
    "x.clamp_min(0)": (lambda x, k: x.clamp_min(0), True),
    "x.clamp_max(0)": (lambda x, k: x.clamp_max(0), True),
    "x.eq(x[0])": (lambda x, k: x.eq(x[0]), True),
    "x.ne(1.0)": (lambda x, k: x.ne(1.0), True),
    "x.lt(x[1])": (lambda x, k: x.lt(x[1]), True),
    "x.le(0.5)": (lambda x, k: x.le(0.5), True),
    "x.gt(0)": (lambda x, k: x.gt(0.0), True),
    "x.ge(x[0])": (lambda x, k: x.ge(x[0]), True),
    "x.greater(0)": (lambda x, k: x.greater(0.0), True),
    "x.less(0)": (lambda x, k: x.less(0.0), True),
    "x.mm(x.t())": (lambda x, k: x.mm(x.t()), True),
    "x.sub(y)": (lambda x, k: x.sub(x[0]), True),
    "x.mul(2)": (lambda x, k: x.mul(2.0), True),
    "x.div(y)": (lambda x, k: x.div(x[0] + 10.0), True),
    "x.div(3, rounding_mode='floor')": (lambda x, k: x.div(3.0, rounding_mode="floor"), True),
    "x.div(3, rounding_mode='trunc')": (lambda x, k: x.div(3.0, rounding_mode="trunc"), True),
    "x.true_divide(4)": (lambda x, k: x.true_divide(4.0), True),
    "x.neg()": (lambda x, k: x.neg(), True),
    "x.negative()": (lambda x, k: x.negative(), True),
    "x.fmod(y)": (lambda x, k: x.fmod(x[0] * 0 + 2.0), True),
    "x[0].dot(x[1])": (lambda x, k: x[0].dot(x[1]), True),
    "x.lerp(y, 0.25)": (lambda x, k: x.lerp(x * 2.0, 0.25), True),
    "x.isclose(y)": (lambda x, k: x.isclose(x + 1e-9), True),
    "x.nan_to_num()": (lambda x, k: (x / 0.0).nan_to_num(), False),
    "x.movedim(0, 1)": (lambda x, k: x.movedim(0, 1), True),
    "x.moveaxis(1, 0)": (lambda x, k: x.moveaxis(1, 0), True),
    "x.swapaxes(0, 1)": (lambda x, k: x.swapaxes(0, 1), True),
    "x.swapdims(1, 0)": (lambda x, k: x.swapdims(1, 0), True),
    "x.narrow(1, 1, 2)": (lambda x, k: x.narrow(1, 1, 2), True),
    "x.narrow(1, -2, 2)": (lambda x, k: x.narrow(1, -2, 2), True),
    "x.where(x > 0, y)": (lambda x, k: x.where(x > 0, x * 0 - 7.0), True),
    "x.contiguous()": (lambda x, k: x.contiguous(), True),
    "x.index_select(1, i)": (lambda x, k: x.index_select(1, k.t(IDX[:, 0])), True),
    "x.index_select(dim=1, index=i)": (lambda x, k: x.index_select(dim=1, index=k.t(IDX[:, 0])), True),
    "x.scatter(1, i, src)": (lambda x, k: x.scatter(1, k.t(IDX), x[:, :1] * 0 + 9.0), True),
    "x.scatter(1, i, 2.0)": (lambda x, k: x.scatter(1, k.t(IDX), 2.0), True),
    "x.scatter(1, i, value=2.0)": (lambda x, k: x.scatter(1, k.t(IDX), value=2.0), True),
    "x.scatter(dim=0, index=i, src=x)": (lambda x, k: x.scatter(dim=0, index=k.t(IDX[::-1] % 2), src=x), True),
    "x.scatter(1, i, src, reduce='add')": (lambda x, k: x.scatter(1, k.t(IDX), x[:, 1:] * 10.0, reduce="add"), True),
    "x.scatter(1, i, 3.0, reduce='multiply')": (lambda x, k: x.scatter(1, k.t(IDX), 3.0, reduce="multiply"), True),
    "x.gather(1, i)": (lambda x, k: x.gather(1, k.t(IDX)), True),
    "x.gather(1, index=i)": (lambda x, k: x.gather(1, index=k.t(IDX)), True),
}


def _torch(fn):
    return fn(torch.tensor(X0), TORCH).numpy()


def _check(got, expected):
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(got.astype(float), expected.astype(float), rtol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_torch_tensor_method_matches_torch_in_eager_mode(case):
    fn, _ = CASES[case]
    _check(np.asarray(fn(fg.to_tensor(X0), EAGER).numpy()), _torch(fn))


@pytest.mark.parametrize("case", sorted(name for name, (_, static) in CASES.items() if static))
def test_torch_tensor_method_matches_torch_in_a_static_program(case):
    fn, _ = CASES[case]
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [2, 4], "float64")
        out = fn(x, STATIC)
    got, = fg.Executor().run(main, feed={"x": X0}, fetch_list=[out])
    _check(np.asarray(got), _torch(fn))


def test_type_without_a_dtype_and_the_trivial_methods():
    x = fg.to_tensor(X0)
    assert x.type() == "float64" and x.type(fg.float64) is x and x.type_as(x) is x
    assert x.contiguous() is x and x.is_contiguous()
    assert x.allclose(x + 1e-12) == torch.tensor(X0).allclose(torch.tensor(X0) + 1e-12)
    assert x.new_zeros(2, requires_grad=True).stop_gradient is False


@pytest.mark.parametrize("name", ["scatter_", "clamp_min_", "clamp_max_", "relu_"])
def test_in_place_forms_write_into_x(name):
    args = {"scatter_": lambda k: (1, k.t(IDX), 9.0), "clamp_min_": lambda k: (0.5,), "clamp_max_": lambda k: (0.5,),
            "relu_": lambda k: ()}[name]
    expected = torch.tensor(X0)
    getattr(expected, name)(*args(TORCH))
    x = fg.to_tensor(X0)
    alias = x
    assert getattr(x, name)(*args(EAGER)) is x
    np.testing.assert_array_equal(alias.numpy(), expected.numpy())


def test_gradients_through_torch_order_scatter_gather_and_repeat_match_torch():
    def loss(m, x, k):
        index = k.t(IDX)
        picked = x.gather(1, index=index) * 3.0 + x.index_select(1, k.t(IDX[:, 0])).sum()
        written = x.scatter(1, index, picked * picked)
        return (written.repeat(2, 3) * k.t(np.arange(48.0).reshape(4, 12))).sum()
    t = torch.tensor(X0, requires_grad=True)
    loss(torch, t, TORCH).backward()
    x = fg.to_tensor(X0, stop_gradient=False)
    loss(fg, x, EAGER).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


_REFUSED = {
    "x.repeat(2)": (lambda x, i: x.repeat(2), ValueError, "repeat: needs one count per axis"),
    "x.clamp()": (lambda x, i: x.clamp(), ValueError, "clamp: give min, max"),
    "x.index_select(1, 0)": (lambda x, i: x.index_select(1, 0), TypeError, "index_select.*dim, index"),
    "x.scatter(1, i)": (lambda x, i: x.scatter(1, i), TypeError, "scatter.*scatter\\(dim, index, src\\)"),
    "x.scatter(i, x, src=x)": (lambda x, i: x.scatter(i, x, src=x), TypeError, "scatter: src="),
    "x.scatter(1, i, x, reduce='max')": (lambda x, i: x.scatter(1, i, x, reduce="max"), ValueError, "reduce"),
    "x.narrow(1, 3, 2)": (lambda x, i: x.narrow(1, 3, 2), IndexError, "narrow: start 3 and length 2"),
    "x.div(2, rounding_mode='up')": (lambda x, i: x.div(2.0, rounding_mode="up"), ValueError, "rounding_mode"),
    "x.new_zeros(2, device='cuda')": (lambda x, i: x.new_zeros(2, device="cuda"), ValueError, "CPU only"),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_wrong_calls_say_what_is_wrong(case):
    fn, error, words = _REFUSED[case]
    with pytest.raises(error, match=words):
        fn(fg.to_tensor(X0), fg.to_tensor(IDX))


def test_paddle_order_keeps_working():
    x, rows = fg.to_tensor(X0), fg.to_tensor(np.array([1, 0]))
    np.testing.assert_array_equal(x.index_select(rows, axis=1).numpy(), X0[:, [1, 0]])
    np.testing.assert_array_equal(x.gather(rows).numpy(), X0[[1, 0]])
    np.testing.assert_array_equal(x.gather(rows, axis=1).numpy(), X0[:, [1, 0]])
    updated = x.scatter(fg.to_tensor(np.array([1])), fg.to_tensor(np.full((1, 4), 7.0)))
    np.testing.assert_array_equal(updated.numpy(), np.vstack([X0[:1], np.full((1, 4), 7.0)]))
    with fg.program_guard(fg.Program()):
        v = fg.static.data("v", [2, 4], "float64")
        assert v.type == fg.Variable.DENSE     # a Variable's own `type` (its kind) stays


def test_split_with_torch_dim_is_a_split_size_in_a_program_too():
    """x.split(3, dim=1) is torch's: parts of 3 (the last smaller), on a Variable as on a Tensor;
    Paddle's x.split(3, axis=1) still means three equal parts."""
    x = np.arange(14.0).reshape(2, 7)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        v = fg.static.data("x", [2, 7], "float64")
        parts = v.split(3, dim=1)
        assert [list(p.shape) for p in parts] == [[2, 3], [2, 3], [2, 1]]
    got = fg.Executor().run(main, feed={"x": x}, fetch_list=parts)
    for g, e in zip(got, torch.tensor(x).split(3, dim=1)):
        np.testing.assert_array_equal(g, e.numpy())
    with pytest.raises(TypeError, match=r"give axis= \(Paddle\) or dim= \(PyTorch\), not both"):
        fg.to_tensor(x).split(3, axis=1, dim=1)
    with pytest.raises(ValueError, match=r"split\(dim=1\): torch's split size 0"):
        fg.to_tensor(x).split(0, dim=1)


@pytest.mark.parametrize("divisor", [3, -3, "tensor"])
def test_integer_division_toward_zero_stays_integer_in_both_modes(divisor):
    """x.div(d, rounding_mode='trunc') of integers is integer, as torch (it was a float32 trunc)."""
    a, b = np.array([-7, 7, -8, 9, 0, -1], "int32"), np.array([2, -2, 3, -4, 5, -2], "int32")
    other = b if divisor == "tensor" else divisor
    expected = torch.tensor(a).div(torch.tensor(b) if divisor == "tensor" else divisor, rounding_mode="trunc")
    got = fg.to_tensor(a).div(fg.to_tensor(b) if divisor == "tensor" else divisor, rounding_mode="trunc")
    assert got.dtype == "int32" and expected.dtype == torch.int32
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("a", [6], "int32")
        y = fg.static.data("b", [6], "int32") if divisor == "tensor" else divisor
        out = x.div(y, rounding_mode="trunc")
    static, = fg.Executor().run(main, feed={"a": a, "b": other} if divisor == "tensor" else {"a": a}, fetch_list=[out])
    assert static.dtype == np.int32
    np.testing.assert_array_equal(static, expected.numpy())
