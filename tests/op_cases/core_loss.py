"""Cases of the core loss ops: one OpCase per line, checked by `fluidgrad.testing.check_op`."""
from __future__ import annotations

import numpy as np  # noqa: F401
import torch
import torch.nn.functional as TF  # noqa: F401

from fluidgrad.testing import OpCase as Case

from ._torch_refs import (_ce_torch, _gather_torch, _random_check, _slice_grad_torch, _swce_torch,  # noqa: F401
                          _unreduce_torch, _zero_grad_of)
from .common import distinct, ints, nonzero, pos, probs, rand  # noqa: F401

T = torch
c: list[Case] = []


def ignored_ints(high, *shape, ignore=-100, every=3):
    """Labels in [0, high) with every `every`-th one (from the first) set to `ignore`."""
    out = ints(high, *shape)
    out.flat[::every] = ignore
    return out


def _torch_ce_none(logits, label, axis, ignore_index):
    """PyTorch's own cross_entropy (reduction='none', classes on dim 1) laid out like the op's Loss:
    `axis` of size 1, 0 where label == ignore_index."""
    if label.dim() == logits.dim():
        label = label.squeeze(axis)
    moved = logits.movedim(axis, 1)
    return TF.cross_entropy(moved, label, ignore_index=ignore_index, reduction="none").unsqueeze(axis)


def _swce_ignore_torch(Logits, Label, axis=-1, ignore_index=-100):
    axis = axis % Logits.dim()
    return torch.softmax(Logits, axis), _torch_ce_none(Logits, Label, axis, ignore_index)


def _counted_along(Label, like, axis, ignore_index):
    """(Label != ignore_index) as like's dtype, shaped to broadcast against the loss `like`."""
    label = Label if Label.dim() == like.dim() else Label.unsqueeze(axis % like.dim())
    return (label != ignore_index).to(like.dtype)


def _counted_mean_torch(X, Label, axis=-1, ignore_index=-100):
    counted = _counted_along(Label, X, axis, ignore_index).expand(X.shape)
    return (X * counted).sum() / counted.sum()


def _counted_mean_grad_torch(DOut, Label, Target, axis=-1, ignore_index=-100):
    counted = _counted_along(Label, Target, axis, ignore_index).expand(Target.shape)
    return DOut * counted / counted.sum().clamp(min=1) + 0 * Target


def _swce_grad_ignore_torch(Softmax, Label, DLoss, axis=-1, ignore_index=-100):
    counted = Label != ignore_index
    one_hot = torch.zeros_like(Softmax).scatter_(axis, Label.clamp(min=0), 1.0)
    return (Softmax - one_hot) * DLoss * counted


def _ce_ignore_torch(X, Label, ignore_index=-100):
    """cross_entropy of probabilities: PyTorch's nll_loss of log X (ignore_index included)."""
    label = Label.squeeze(-1) if Label.dim() == X.dim() else Label
    return TF.nll_loss(torch.log(X).movedim(-1, 1), label, ignore_index=ignore_index, reduction="none").unsqueeze(-1)
# ---- loss.py
c += [Case("softmax", {"X": rand(3, 5)}, torch_fn=lambda X: T.softmax(X, -1)),
      Case("softmax", {"X": rand(3, 4, 2)}, {"axis": 1}, id="softmax-axis1",
           torch_fn=lambda X: T.softmax(X, 1)),
      Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": ints(5, 4, 1)},
           id="swce-hard-N1", torch_fn=lambda Logits, Label: _swce_torch(Logits, Label)),
      Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": ints(5, 4)},
           id="swce-hard-N", torch_fn=lambda Logits, Label: _swce_torch(Logits, Label)),
      Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": probs(4, 5)},
           {"soft_label": True}, id="swce-soft",
           torch_fn=lambda Logits, Label: _swce_torch(Logits, Label, soft=True)),
      Case("softmax_with_cross_entropy", {"Logits": rand(2, 4, 3), "Label": ints(4, 2, 1, 3)},
           {"axis": 1}, id="swce-axis1", torch_fn=lambda Logits, Label: _swce_torch(Logits, Label, axis=1)),
      Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": ints(5, 4, 1)},
           id="swce-loss-only", use_outputs=(1,),
           torch_fn=lambda Logits, Label: _swce_torch(Logits, Label)[1]),
      Case("cross_entropy", {"X": probs(4, 5), "Label": ints(5, 4, 1)}, id="ce-hard-N1",
           torch_fn=lambda X, Label: _ce_torch(X, Label)),
      Case("cross_entropy", {"X": probs(4, 5), "Label": ints(5, 4)}, id="ce-hard-N",
           torch_fn=lambda X, Label: _ce_torch(X, Label)),
      Case("cross_entropy", {"X": probs(4, 5), "Label": probs(4, 5)}, {"soft_label": True}, id="ce-soft",
           torch_fn=lambda X, Label: _ce_torch(X, Label, soft=True)),
      Case("one_hot_like", {"Label": ints(3, 4, 1), "Logits": rand(4, 3)},
           torch_fn=lambda Label, Logits: TF.one_hot(Label[:, 0], 3).to(Logits.dtype) + 0 * Logits)]
# ---- ignore_index (-100 by default, as PyTorch and Paddle): loss 0 and no gradient there
c += [Case("softmax_with_cross_entropy", {"Logits": rand(6, 5), "Label": ignored_ints(5, 6, 1)},
           id="swce-ignore-default-N1", torch_fn=lambda Logits, Label: _swce_ignore_torch(Logits, Label)),
      Case("softmax_with_cross_entropy", {"Logits": rand(6, 5), "Label": ignored_ints(5, 6)},
           id="swce-ignore-default-N", torch_fn=lambda Logits, Label: _swce_ignore_torch(Logits, Label)),
      Case("softmax_with_cross_entropy", {"Logits": rand(6, 5), "Label": ignored_ints(5, 6, 1, ignore=2, every=2)},
           {"ignore_index": 2}, id="swce-ignore-a-class",
           torch_fn=lambda Logits, Label: _swce_ignore_torch(Logits, Label, ignore_index=2)),
      Case("softmax_with_cross_entropy", {"Logits": rand(2, 4, 3), "Label": ignored_ints(4, 2, 1, 3, ignore=-1)},
           {"axis": 1, "ignore_index": -1}, id="swce-ignore-axis1",
           torch_fn=lambda Logits, Label: _swce_ignore_torch(Logits, Label, axis=1, ignore_index=-1)),
      Case("softmax_with_cross_entropy", {"Logits": rand(3, 4, 5), "Label": ignored_ints(5, 3, 4)},
           id="swce-ignore-3d", torch_fn=lambda Logits, Label: _swce_ignore_torch(Logits, Label)),
      Case("softmax_with_cross_entropy", {"Logits": rand(3, 4), "Label": np.full((3, 1), -100)},
           id="swce-ignore-all", use_outputs=(1,),
           torch_fn=lambda Logits, Label: _swce_ignore_torch(Logits, Label)[1]),
      Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": probs(4, 5)},
           {"soft_label": True, "ignore_index": 0}, id="swce-soft-ignores-ignore-index",
           torch_fn=lambda Logits, Label: _swce_torch(Logits, Label, soft=True)),
      Case("cross_entropy", {"X": probs(6, 5), "Label": ignored_ints(5, 6, 1)}, id="ce-ignore-default",
           torch_fn=lambda X, Label: _ce_ignore_torch(X, Label)),
      Case("cross_entropy", {"X": probs(6, 5), "Label": ignored_ints(5, 6, ignore=3, every=2)},
           {"ignore_index": 3}, id="ce-ignore-a-class", torch_fn=lambda X, Label: _ce_ignore_torch(X, Label, 3)),
      Case("softmax_with_cross_entropy_grad",
           {"Softmax": probs(6, 5), "Label": ignored_ints(5, 6, 1), "DLoss": rand(6, 1)},
           id="swce_grad-ignore", torch_fn=lambda **t: _swce_grad_ignore_torch(**t)),
      Case("softmax_with_cross_entropy_grad",
           {"Softmax": probs(2, 4, 3).transpose(0, 2, 1).copy(), "Label": ignored_ints(3, 2, 1, 4, ignore=1),
            "DLoss": rand(2, 1, 4)}, {"axis": 1, "ignore_index": 1}, id="swce_grad-ignore-axis1",
           torch_fn=lambda **t: _swce_grad_ignore_torch(**t, axis=1, ignore_index=1)),
      Case("counted_mean", {"X": rand(6, 1), "Label": ignored_ints(5, 6)},
           torch_fn=lambda X, Label: _counted_mean_torch(X, Label)),
      Case("counted_mean", {"X": rand(6, 1), "Label": ignored_ints(5, 6, 1)}, id="counted_mean-none-ignored-N1",
           torch_fn=lambda X, Label: _counted_mean_torch(X, Label)),
      Case("counted_mean", {"X": rand(2, 1, 4), "Label": ignored_ints(3, 2, 4, ignore=0, every=2)},
           {"axis": 1, "ignore_index": 0}, id="counted_mean-axis1",
           torch_fn=lambda X, Label: _counted_mean_torch(X, Label, axis=1, ignore_index=0)),
      Case("counted_mean", {"X": rand(3, 1), "Label": np.full(3, -100)}, {"nan_when_empty": False},
           id="counted_mean-none-counts-zero", torch_fn=lambda X, Label: (0 * X).sum()),
      Case("counted_mean_grad", {"DOut": rand(), "Label": ignored_ints(5, 6), "Target": rand(6, 1)},
           torch_fn=lambda **t: _counted_mean_grad_torch(**t)),
      Case("counted_mean_grad", {"DOut": rand(), "Label": ignored_ints(3, 2, 1, 4, ignore=2), "Target": rand(2, 1, 4)},
           {"axis": 1, "ignore_index": 2}, id="counted_mean_grad-axis1",
           torch_fn=lambda **t: _counted_mean_grad_torch(**t, axis=1, ignore_index=2)),
      Case("counted_mean_grad", {"DOut": rand(), "Label": np.full(3, -100), "Target": rand(3, 1)},
           id="counted_mean_grad-none-counts", torch_fn=lambda **t: _counted_mean_grad_torch(**t)),
      Case("one_hot_like", {"Label": ignored_ints(3, 5, 1), "Logits": rand(5, 3)}, id="one_hot_like-ignore",
           torch_fn=lambda Label, Logits: (TF.one_hot(Label[:, 0].clamp(min=0), 3)
                                           * (Label != -100)).to(Logits.dtype) + 0 * Logits)]
c += [Case("softmax", {"X": np.array(0.3)}, {"axis": -1}, id="softmax-0d", torch_fn=lambda X: T.softmax(X, -1))]
# ---- check_label_shape: the label itself once its shape fits the input's (the losses' run-time check)
c += [Case("check_label_shape", {"Label": rand(4, 3), "Input": rand(4, 3)}, {"loss": "bce"}, id="check_label_shape-same",
           torch_fn=lambda Label, Input: Label.clone()),
      Case("check_label_shape", {"Label": rand(4, 5), "Input": rand(4, 3, 5)}, {"loss": "nll", "class_axis": 1},
           id="check_label_shape-class-axis")]

# ---- bce_loss: binary cross-entropy of probabilities (PyTorch's binary_cross_entropy, reduction="none")
c += [Case("bce_loss", {"X": rand(3, 4, lo=0.05, hi=0.95), "Label": rand(3, 4, lo=0.0, hi=1.0)},
           torch_fn=lambda X, Label: TF.binary_cross_entropy(X, Label, reduction="none"))]

CASES = c
