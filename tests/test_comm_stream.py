"""ops/comm_stream.py: the streaming copy writes what np.copyto writes, wherever the destination
starts (its head up to a cache line copied element by element), and falls back to np.copyto for
what it does not take."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidgrad.ops import accel, comm_stream


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), offset=st.integers(0, 40), dtype=st.sampled_from(["float32", "float64"]))
def test_stream_copy_equals_copyto(n, offset, dtype):
    rng = np.random.default_rng(n * 41 + offset)
    src = rng.standard_normal(n).astype(dtype)
    src[::7] = np.nan  # any bits go through unchanged
    dst = np.full(n + offset + 3, -1.0, dtype)
    comm_stream.stream_copy(dst[offset:offset + n], src)
    assert dst[offset:offset + n].tobytes() == src.tobytes()
    assert (dst[:offset] == -1).all() and (dst[offset + n:] == -1).all()


def test_stream_copy_large_and_fallbacks():
    src = np.arange(1 << 18, dtype="float32")
    dst = np.zeros(src.size + 5, "float32")
    comm_stream.stream_copy(dst[5:], src)
    assert np.array_equal(dst[5:], src)
    ints = np.zeros(10, "int64")
    comm_stream.stream_copy(ints, np.arange(10))  # a dtype the compiled loop does not take
    assert np.array_equal(ints, np.arange(10))
    strided = np.zeros(20, "float32")
    comm_stream.stream_copy(strided[::2], np.ones(10, "float32"))  # not contiguous
    assert strided.sum() == 10 and strided[1] == 0
    with comm_stream.STREAM.use(False):
        assert not comm_stream.enabled()
        comm_stream.stream_copy(dst[:10], np.full(10, 3.0, "float32"))
    assert (dst[:10] == 3).all()


@pytest.mark.skipif(not accel.installed(), reason="numba (the `fast` extra) is not installed")
def test_streaming_path_is_taken_with_numba():
    assert comm_stream.enabled() == comm_stream.STREAM.on


@pytest.mark.skipif(not accel.installed(), reason="streaming stores need numba (the `fast` extra)")
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 300), offset=st.integers(0, 40), dtype=st.sampled_from(["float32", "float64"]))
def test_stream_sgd_is_sgd_wherever_the_parameters_start(n, offset, dtype):
    """The parameters' new values (SGD on the gradient times a scale, L2 decay) written with
    streaming stores: the SGD step to rounding (the compiled loops may contract differently),
    nothing outside the parameters touched."""
    rng = np.random.default_rng(n * 7 + offset)
    t = np.dtype(dtype).type
    start = rng.standard_normal(n).astype(dtype)
    grad = rng.standard_normal(n).astype(dtype)
    memory = np.full(n + offset + 3, -1.0, dtype)
    param = memory[offset:offset + n]
    param[...] = start
    assert comm_stream.stream_sgd(grad.copy(), t(0.5), param, 0.01, 0.001)
    expected = start - t(0.01) * (grad * t(0.5) + t(0.001) * start)
    tight = dtype == "float64"
    np.testing.assert_allclose(param, expected, rtol=1e-13 if tight else 1e-5, atol=1e-15 if tight else 1e-7)
    assert (memory[:offset] == -1).all() and (memory[offset + n:] == -1).all()
    with comm_stream.STREAM.use(False):  # streaming off: nothing done, the caller updates
        assert not comm_stream.stream_sgd(grad.copy(), t(0.5), param, 0.01, 0.001)
