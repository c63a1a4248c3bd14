"""The optional numba path (fluidgrad/ops/accel.py): switched as documented, compiled loops agree
with their plain Python form, and NumPy-only installs never reach numba."""
import hashlib
import importlib

import numpy as np
import pytest

from fluidgrad.ops import accel, fused_math


@accel.jit
def _row_sums_into(x, out):
    for i in range(x.shape[0]):
        s = x.dtype.type(0)
        for j in range(x.shape[1]):
            s += x[i, j]
        out[i] = s


def test_takes_only_float32_or_float64_of_one_dtype():
    f32, f64 = np.zeros(3, np.float32), np.zeros(3)
    assert accel.takes(f32) and accel.takes(f64) and accel.takes(f32, f32)
    assert not accel.takes(f32, f64)
    assert not accel.takes(np.zeros(3, np.float16))
    assert not accel.takes(np.zeros(3, np.int64))


def test_use_numba_switches_and_restores():
    before = accel.enabled()
    with accel.use_numba(False):
        assert not accel.enabled()
    assert accel.enabled() == before


def test_without_numba_a_compiled_kernel_says_what_to_install(monkeypatch):
    @accel.jit
    def never_compiled(x):
        return x
    monkeypatch.setattr(accel, "_numba", lambda: None)
    assert not accel.enabled()
    with pytest.raises(RuntimeError, match=r"never_compiled.*fluidgrad\[fast\]"):
        never_compiled(1.0)


@pytest.mark.skipif(not accel.installed(), reason="numba (the `fast` extra) is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_loop_agrees_with_its_python_form(dtype):
    x = np.random.default_rng(0).standard_normal((5, 300)).astype(dtype)
    compiled, plain = np.empty(5, dtype), np.empty(5, dtype)
    _row_sums_into(x, compiled)
    _row_sums_into.py_func(x, plain)
    np.testing.assert_allclose(compiled, plain, rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(compiled, x.sum(axis=1), rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.skipif(not accel.installed(), reason="numba (the `fast` extra) is not installed")
def test_compiled_loops_keep_nan_and_inf():
    x = np.array([[1.0, np.nan, 2.0], [1.0, np.inf, 2.0]], np.float32)
    out = np.empty(2, np.float32)
    _row_sums_into(x, out)
    assert np.isnan(out[0]) and out[1] == np.inf


def test_a_salt_from_a_dependency_keys_the_disk_cache(tmp_path, monkeypatch):
    """fused_math's loops take a salt hashed from fused_math.py: the same salt loads from the disk
    cache, another (an edited dependency) compiles afresh instead of loading stale code."""
    pytest.importorskip("numba")
    (tmp_path / "salted_loop.py").write_text("def twice(x):\n    return 2.0 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fn = importlib.import_module("salted_loop").twice

    def run(salt):
        dispatcher = accel._compile(fn, salt)
        assert dispatcher(1.5) == 3.0
        return sum(dispatcher.stats.cache_hits.values()), sum(dispatcher.stats.cache_misses.values())

    assert run("a") == (0, 1)      # compiled and saved
    assert run("a") == (1, 0)      # loaded
    assert run("b") == (0, 1)      # the dependency changed: compiled again
    assert run("a") == (1, 0)


def test_fused_math_loops_are_salted_with_fused_math_source(monkeypatch):
    pytest.importorskip("numba")
    salts = []
    monkeypatch.setattr(accel, "_compile", lambda fn, salt="": salts.append(salt) or fn)

    def loop(x):
        return x + 1.0

    assert fused_math.jit(loop)(1.0) == 2.0
    with open(fused_math.__file__, "rb") as f:
        assert salts == [hashlib.sha256(f.read()).hexdigest()]
    assert accel.source_hash() == ""   # plain loops: numba's own cache key
