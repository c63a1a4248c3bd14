"""The compiled kernels added for the example models' training step (benchmarks/bench_model_kernels.py):
each agrees with its NumPy path (numba switched off) and with PyTorch, keeps dtypes, never
writes its inputs, and falls back to NumPy for what the loop does not take."""
import numpy as np
import pytest
import torch

from fluidgrad.ops import accel, get_op_def

needs_numba = pytest.mark.skipif(not accel.installed(), reason="numba (the fast extra) is not installed")


def _both_paths(kernel, *args, **attrs):
    with accel.use_numba(True):
        compiled = kernel(*args, **attrs)
    with accel.use_numba(False):
        numpy_path = kernel(*args, **attrs)
    return compiled, numpy_path


def _adam_inputs(shape, dtype, rng, contiguous=True):
    param, grad, m1 = (rng.normal(size=shape).astype(dtype) for _ in range(3))
    m2 = rng.random(shape).astype(dtype)
    if not contiguous:
        param, grad, m1, m2 = (np.asfortranarray(a) for a in (param, grad, m1, m2))
    scalars = (np.array([0.9 ** 3], dtype), np.array([0.999 ** 3], dtype), np.array([3e-3], dtype))
    return (param, grad, m1, m2) + scalars


@needs_numba
@pytest.mark.parametrize("shape", [(1,), (8,), (32, 27), (16, 8, 3, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adam_compiled_equals_numpy_path(shape, dtype, weight_decay):
    rng = np.random.default_rng(len(shape))
    inputs = _adam_inputs(shape, dtype, rng)
    before = [a.copy() for a in inputs]
    kernel = get_op_def("adam").kernel
    compiled, numpy_path = _both_paths(kernel, *inputs, beta1=0.9, beta2=0.999, epsilon=1e-8,
                                       weight_decay=weight_decay)
    tol = 1e-6 if dtype == "float32" else 1e-13
    for got, want in zip(compiled, numpy_path):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    for a, b in zip(inputs, before):
        np.testing.assert_array_equal(a, b)    # inputs untouched


@needs_numba
def test_adam_compiled_matches_torch_fused_adam():
    rng = np.random.default_rng(0)
    param, grad, m1, m2 = (rng.normal(size=(32, 16)).astype("float32") for _ in range(4))
    m2 = np.abs(m2)
    with accel.use_numba(True):
        p_out, m_out, v_out, b1_out, b2_out = get_op_def("adam").kernel(
            param, grad, m1, m2, np.array([0.9], "float32"), np.array([0.999], "float32"),
            np.array([1e-2], "float32"), beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=0.0)
    t = [torch.from_numpy(a.copy()) for a in (param, grad, m1, m2)]
    torch._fused_adam_([t[0]], [t[1]], [t[2]], [t[3]], [], [torch.tensor(1.0)], lr=1e-2, beta1=0.9, beta2=0.999,
                       weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    np.testing.assert_allclose(p_out, t[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m_out, t[2].numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(v_out, t[3].numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose([b1_out[0], b2_out[0]], [0.81, 0.999 ** 2], rtol=1e-6)


@needs_numba
def test_adam_non_contiguous_and_mixed_scalar_dtypes():
    rng = np.random.default_rng(1)
    inputs = list(_adam_inputs((6, 5), "float32", rng, contiguous=False))
    inputs[6] = inputs[6].astype("float64")       # a float64 learning rate never promotes the parameter
    compiled, numpy_path = _both_paths(get_op_def("adam").kernel, *inputs)
    for got, want in zip(compiled, numpy_path):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_adam_float16_stays_on_numpy():
    rng = np.random.default_rng(2)
    inputs = _adam_inputs((4, 3), "float16", rng)
    compiled, numpy_path = _both_paths(get_op_def("adam").kernel, *inputs)
    for got, want in zip(compiled, numpy_path):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@needs_numba
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gather_grad_compiled_equals_numpy_path(axis, dtype):
    rng = np.random.default_rng(3)
    target = np.zeros((5, 4, 3), dtype)
    index = rng.integers(-target.shape[axis], target.shape[axis], size=(6, 7))   # many repeats, negatives
    gathered_shape = np.take(target, index, axis=axis).shape
    dout = rng.normal(size=gathered_shape).astype(dtype)
    compiled, numpy_path = _both_paths(get_op_def("gather_grad").kernel, dout, index, target, axis=axis)
    assert compiled.dtype == numpy_path.dtype == np.dtype(dtype)
    np.testing.assert_allclose(compiled, numpy_path, rtol=1e-6 if dtype == "float32" else 1e-13, atol=1e-6)


@needs_numba
def test_gather_grad_is_torch_embedding_backward_at_the_gpt_shape():
    rng = np.random.default_rng(4)
    index = rng.integers(0, 27, size=(16, 32))
    dout = rng.normal(size=(16, 32, 32)).astype("float32")
    with accel.use_numba(True):
        got = get_op_def("gather_grad").kernel(dout, index, np.zeros((27, 32), "float32"), axis=0)
    want = torch.ops.aten.embedding_dense_backward(torch.from_numpy(dout), torch.from_numpy(index), 27, -1, False)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


@needs_numba
def test_gather_grad_index_out_of_range_is_an_error_on_both_paths():
    dout, index, target = np.ones((3, 2), "float32"), np.array([0, 5, 1]), np.zeros((4, 2), "float32")
    for on in (True, False):
        with accel.use_numba(on), pytest.raises(IndexError):
            get_op_def("gather_grad").kernel(dout, index, target, axis=0)


def test_gather_grad_int_and_float16_stay_on_numpy():
    index = np.array([0, 2, 0, 0])
    for dtype in ("float16", "int64"):
        dout, target = np.arange(8).reshape(4, 2).astype(dtype), np.zeros((3, 2), dtype)
        compiled, numpy_path = _both_paths(get_op_def("gather_grad").kernel, dout, index, target, axis=0)
        assert compiled.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(compiled, numpy_path)
        np.testing.assert_array_equal(compiled, [[0 + 4 + 6, 1 + 5 + 7], [0, 0], [2, 3]])   # rows 0, 2, 0, 0


@needs_numba
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_compiled_equals_numpy_path_with_nan_signed_zero_and_inf(dtype):
    special = np.array([np.nan, -0.0, 0.0, -1.0, 2.0, np.inf, -np.inf], dtype)
    x = np.concatenate([special, np.random.default_rng(5).normal(size=2041).astype(dtype)]).reshape(32, 4, 4, 4)
    for arg in (x, x[:, ::2], np.asfortranarray(x)):          # contiguous, strided, Fortran order
        compiled, numpy_path = _both_paths(get_op_def("relu").kernel, arg)
        assert compiled.dtype == numpy_path.dtype and compiled.shape == numpy_path.shape
        np.testing.assert_array_equal(compiled, numpy_path)   # NaN in the same places
        np.testing.assert_array_equal(np.signbit(compiled), np.signbit(numpy_path))   # -0.0 -> +0.0
        np.testing.assert_array_equal(compiled, torch.relu(torch.from_numpy(np.ascontiguousarray(arg))).numpy())


def test_relu_scalar_and_float16_stay_on_numpy():
    for x in (np.array(-2.5, "float32"), np.array([-1.0, 3.0], "float16")):
        compiled, numpy_path = _both_paths(get_op_def("relu").kernel, x)
        assert compiled.dtype == numpy_path.dtype
        np.testing.assert_array_equal(compiled, numpy_path)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduce_sum_over_all_but_a_size_one_axis_is_torch_sum(dtype, keepdim):
    """The 1-channel conv bias gradient of the U-Net (sum over 0, 2, 3 of [32, 1, 8, 8]): one flat sum."""
    x = np.random.default_rng(6).normal(size=(32, 1, 8, 8)).astype(dtype)
    got = get_op_def("reduce_sum").kernel(x, axis=[0, 2, 3], keepdim=keepdim)
    want = torch.sum(torch.from_numpy(x), (0, 2, 3), keepdim=keepdim).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)
