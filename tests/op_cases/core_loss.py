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

CASES = c
