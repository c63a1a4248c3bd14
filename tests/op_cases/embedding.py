"""Op cases: the embedding lookup (fluidgrad/ops/embedding.py), against PyTorch's F.embedding."""
from __future__ import annotations

import numpy as np
import torch.nn.functional as TF

from fluidgrad.testing import OpCase

from .common import rand

CASES = [
    OpCase("lookup_table_v2", {"W": rand(5, 3), "Ids": np.array([[0, 4], [4, 2]])}, id="lookup-repeated-ids",
           torch_fn=lambda W, Ids: TF.embedding(Ids, W)),
    OpCase("lookup_table_v2", {"W": rand(4, 2), "Ids": np.array([3, 0, 1, 3, 3])}, id="lookup-1d",
           torch_fn=lambda W, Ids: TF.embedding(Ids, W)),
]
