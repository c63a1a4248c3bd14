"""fluidgrad.metric.Auc (paddle.metric.Auc) against scikit-learn's roc_auc_score: exact when no
two scores of different labels share a bin, accumulated over batches, in both input forms."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg

sklearn_metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn (the demo extra) is the AUC oracle")
RNG = np.random.default_rng(11)


def _bin_centred(num_thresholds: int, n: int) -> np.ndarray:
    """Scores in the middle of Paddle's bins, with many ties (only 20 distinct values)."""
    return (RNG.integers(0, 20, n) * (num_thresholds // 20) + 0.5) / num_thresholds


@pytest.mark.parametrize("num_thresholds", [4095, 200])
def test_auc_over_batches_equals_sklearn_with_ties(num_thresholds):
    scores, labels = _bin_centred(num_thresholds, 300), RNG.integers(0, 2, 300)
    metric = fg.metric.Auc(num_thresholds=num_thresholds)
    for rows in (slice(0, 100), slice(100, 180), slice(180, 300)):     # Paddle's [N, 2] probabilities
        metric.update(np.stack([1 - scores[rows], scores[rows]], axis=1), labels[rows].reshape(-1, 1))
    expected = sklearn_metrics.roc_auc_score(labels, scores)
    assert 0.3 < expected < 0.7 and metric.accumulate() == pytest.approx(expected, abs=1e-12)
    assert metric.name() == "auc"


def test_auc_takes_class_one_probabilities_as_tensors_and_resets():
    scores = RNG.random(64)
    labels = (scores + 0.35 * RNG.standard_normal(64) > 0.5).astype("int64")
    metric = fg.metric.Auc(num_thresholds=2 ** 20)     # bins fine enough that no two scores share one
    metric.update(fg.to_tensor(scores.astype("float32")), fg.to_tensor(labels))
    expected = sklearn_metrics.roc_auc_score(labels, scores.astype("float32"))
    assert 0.7 < expected < 1.0 and metric.accumulate() == pytest.approx(expected, abs=1e-12)
    metric.reset()
    assert metric.accumulate() == 0.0
    metric.update(scores[:5], np.ones(5, "int64"))
    assert metric.accumulate() == 0.0       # only positives seen: no ROC curve yet, as Paddle


def test_perfect_and_reversed_rankings():
    scores, labels = np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1])
    perfect, reversed_ = fg.metric.Auc(), fg.metric.Auc()
    perfect.update(scores, labels)
    reversed_.update(scores, 1 - labels)
    assert (perfect.accumulate(), reversed_.accumulate()) == (1.0, 0.0)


def test_bad_input_is_named():
    metric = fg.metric.Auc()
    with pytest.raises(ValueError, match=r"Auc.update: preds must be \[N, 2\].*got shape \[4, 3\]"):
        metric.update(np.full((4, 3), 0.3), np.zeros(4))
    with pytest.raises(ValueError, match=r"Auc.update: 4 predictions but labels of shape \[5\]"):
        metric.update(np.full(4, 0.3), np.zeros(5))
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\].*\[-2.0, 0.3\]"):
        metric.update(np.array([0.3, -2.0]), np.zeros(2))
    with pytest.raises(ValueError, match=r"labels must be 0 or 1, got \[0, 2\]"):
        metric.update(np.array([0.3, 0.2]), np.array([0, 2]))
    with pytest.raises(ValueError, match="only curve='ROC'"):
        fg.metric.Auc(curve="PR")
