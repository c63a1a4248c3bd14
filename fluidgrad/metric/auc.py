"""paddle.metric.Auc: the area under the ROC curve, accumulated over batches in bins.

Exact AUC needs every score seen so far; like Paddle, this keeps only two histograms (positive
and negative labels over `num_thresholds + 1` equal bins of the class-1 probability), so memory
does not grow with the data and the value is exact whenever no two scores of different labels
share a bin. The area is the trapezoid rule over the bins, from the highest threshold down, as
scikit-learn's roc_auc_score computes it over distinct scores.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .metrics import Metric, _numpy

__all__ = ["Auc"]


class Auc(Metric):
    """ROC AUC of binary predictions: `update(preds, labels)` with preds the [N, 2] class
    probabilities (Paddle's form: column 1 is class 1) or the class-1 probability as [N] or
    [N, 1], and labels 0/1 as [N] or [N, 1]; `accumulate()` is the area (0.0 until both labels
    were seen)."""

    def __init__(self, curve: str = "ROC", num_thresholds: int = 4095, name: str = "auc", *args: Any,
                 **kwargs: Any) -> None:
        super().__init__()
        if curve != "ROC":
            raise ValueError(f"Auc: only curve='ROC' is supported, got curve={curve!r}")
        if int(num_thresholds) < 1:
            raise ValueError(f"Auc: num_thresholds must be a positive integer, got {num_thresholds!r}")
        self._curve, self._num_thresholds, self._name = curve, int(num_thresholds), name
        self.reset()

    def reset(self) -> None:
        self._stat_pos = np.zeros(self._num_thresholds + 1, np.int64)
        self._stat_neg = np.zeros(self._num_thresholds + 1, np.int64)

    def update(self, preds: Any, labels: Any) -> None:
        preds, labels = _numpy(preds, "Auc.update", "preds"), _numpy(labels, "Auc.update", "labels")
        if preds.ndim == 2 and preds.shape[1] == 2:
            preds = preds[:, 1]
        elif not (preds.ndim == 1 or (preds.ndim == 2 and preds.shape[1] == 1)):
            raise ValueError(f"Auc.update: preds must be [N, 2] class probabilities or the class-1 probability "
                             f"as [N] or [N, 1], got shape {list(preds.shape)}")
        preds, labels = preds.reshape(-1).astype(np.float64), labels.reshape(-1)
        if labels.shape[0] != preds.shape[0]:
            raise ValueError(f"Auc.update: {preds.shape[0]} predictions but labels of shape "
                             f"{list(labels.shape)}: one 0/1 label per prediction")
        if preds.size and (np.isnan(preds).any() or preds.min() < 0.0 or preds.max() > 1.0):
            nan = " and NaN" if np.isnan(preds).any() else ""
            raise ValueError("Auc.update: preds must be probabilities in [0, 1] (apply softmax or sigmoid first); "
                             f"got values in [{np.nanmin(preds)}, {np.nanmax(preds)}]{nan}")
        if labels.size and not np.isin(labels, (0, 1)).all():
            raise ValueError(f"Auc.update: labels must be 0 or 1, got {sorted(set(np.unique(labels).tolist()))[:6]}")
        bins = (preds * self._num_thresholds).astype(np.int64)     # Paddle's bin: int(p * num_thresholds)
        positive = labels.astype(bool)
        self._stat_pos += np.bincount(bins[positive], minlength=self._num_thresholds + 1)
        self._stat_neg += np.bincount(bins[~positive], minlength=self._num_thresholds + 1)

    def accumulate(self) -> float:
        # cumulative true and false positives as the threshold falls from the top bin to the bottom
        tp = np.concatenate([[0], np.cumsum(self._stat_pos[::-1])])
        fp = np.concatenate([[0], np.cumsum(self._stat_neg[::-1])])
        if tp[-1] == 0 or fp[-1] == 0:
            return 0.0
        area = np.sum(np.diff(fp) * (tp[1:] + tp[:-1]) / 2.0)
        return float(area / tp[-1] / fp[-1])

    def name(self) -> str:
        return self._name
