"""Metrics of a training loop (paddle.metric).

- functional.py: accuracy(input, label, k): one batch's top-k accuracy as a Tensor, both modes.
- metrics.py: Metric (reset / update / accumulate / name, and compute), Accuracy, Precision,
  Recall: values accumulated over batches, as fluidgrad.Model reports them.
- auc.py: Auc, the area under the ROC curve from binned class-1 probabilities.
"""
from .functional import accuracy
from .auc import Auc
from .metrics import Accuracy, Metric, Precision, Recall

__all__ = ["Accuracy", "Auc", "Metric", "Precision", "Recall", "accuracy"]
