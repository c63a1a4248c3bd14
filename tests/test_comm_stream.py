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
