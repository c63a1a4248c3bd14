"""Export of binary_cross_entropy on probabilities (the bce_loss op) to ONNX: onnxruntime and the
file imported back give the Executor's values, also at probabilities of exactly 0 and 1 (each log
clamped at -100, as PyTorch), and the imported program's gradient is the original's."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad.nn.functional as F

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from test_onnx_loss_probabilities import _assert_all_close, _round_trip  # noqa: E402

R = np.random.default_rng(5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_bce_round_trips(tmp_path, dtype, reduction):
    def build(p, t):
        return [F.binary_cross_entropy(p, t, reduction=reduction)]
    feeds = {"p": R.uniform(0.05, 0.95, (6, 3)).astype(dtype), "t": R.uniform(0, 1, (6, 3)).astype(dtype)}
    want, by_ort, again, grads = _round_trip(tmp_path, build, feeds, differentiate="p")
    _assert_all_close(want, by_ort, again, dtype=dtype)
    _assert_all_close([grads[0]], [grads[1]], dtype=dtype)


def test_bce_at_probabilities_of_zero_and_one_stays_finite(tmp_path):
    def build(p, t):
        return [F.binary_cross_entropy(p, t, reduction="none")]
    feeds = {"p": np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.25]]), "t": np.array([[1.0, 0.0, 1.0], [0.0, 0.3, 0.0]])}
    want, by_ort, again, _ = _round_trip(tmp_path, build, feeds)
    assert np.isfinite(want[0]).all() and want[0][0, 0] == 100.0
    _assert_all_close(want, by_ort, again)
