"""fluidgrad.metric.accuracy (paddle.metric.accuracy) against the top-k accuracy PyTorch's topk
gives, in eager and static mode, with [N, 1] and [N] labels, ties and bad shapes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

RNG = np.random.default_rng(5)
SCORES = RNG.standard_normal((12, 5)).astype("float32")
LABELS = RNG.integers(0, 5, (12, 1))


def _expected(k: int) -> float:
    top = torch.topk(torch.tensor(SCORES), k, dim=1).indices
    return float((top == torch.tensor(LABELS)).any(dim=1).float().mean())


@pytest.mark.parametrize("k", [1, 2, 5])
def test_accuracy_matches_torch_topk_in_both_modes(k):
    got = fg.metric.accuracy(fg.to_tensor(SCORES), fg.to_tensor(LABELS), k=k)
    assert got.shape == (1,) and got.dtype == "float32"
    assert float(got) == pytest.approx(_expected(k))
    assert float(fg.metric.accuracy(fg.to_tensor(SCORES), fg.to_tensor(LABELS[:, 0]), k=k)) == pytest.approx(_expected(k))
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        scores = fg.static.data("scores", [None, 5], "float32")
        labels = fg.static.data("labels", [None, 1], "int64")
        rate = fg.metric.accuracy(scores, labels, k=k)
    static, = fg.Executor().run(main, feed={"scores": SCORES, "labels": LABELS}, fetch_list=[rate])
    assert float(static[0]) == pytest.approx(_expected(k))


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match=r"k=6 must be in \[1, 5\]"):
        fg.metric.accuracy(fg.to_tensor(SCORES), fg.to_tensor(LABELS), k=6)
    with pytest.raises(ValueError, match=r"input must be \[N, C\] scores, got shape \[12\]"):
        fg.metric.accuracy(fg.to_tensor(SCORES[:, 0]), fg.to_tensor(LABELS))
    with pytest.raises(ValueError, match=r"label must be \[N, 1\] class ids, got shape \[12, 2\]"):
        fg.metric.accuracy(fg.to_tensor(SCORES), fg.to_tensor(np.zeros((12, 2), "int64")))


def test_correct_and_total_outputs_and_n_shaped_labels_in_both_modes(monkeypatch):
    """Paddle's correct= / total= receive the counts; [N] labels work in a program too."""
    expected_correct = int(round(_expected(2) * len(LABELS)))
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        scores = fg.static.data("scores", [None, 5], "float32")
        labels = fg.static.data("labels", [None], "int64")
        correct = fg.static.data("correct", [1], "int32")
        total = fg.static.data("total", [1], "int64")
        rate = fg.metric.accuracy(scores, labels, k=2, correct=correct, total=total)
    values = fg.Executor().run(main, feed={"scores": SCORES, "labels": LABELS[:, 0]}, fetch_list=[rate, correct, total])
    assert float(values[0][0]) == pytest.approx(_expected(2))
    assert values[1].tolist() == [expected_correct] and values[2].tolist() == [len(LABELS)]
    assert values[1].dtype == np.int32 and values[2].dtype == np.int64
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)   # eager outside the suite's program_guard
    correct, total = fg.to_tensor(np.zeros(1, "int32")), fg.to_tensor(np.zeros(1, "int32"))
    rate = fg.metric.accuracy(fg.to_tensor(SCORES), fg.to_tensor(LABELS), k=2, correct=correct, total=total)
    assert float(rate) == pytest.approx(_expected(2))
    assert correct.numpy().tolist() == [expected_correct] and total.numpy().tolist() == [len(LABELS)]
