"""Op cases: segment_pool (fluidgrad/ops/segment.py), against torch's scatter_reduce with
include_self=False (an id no row has reads zeros there too, as in Paddle). The cases fix
num_segments, so that the declared shape is known; tests/test_segment.py runs the run-time-sized
form (Paddle's, the functions') in both modes. The max/min inputs
are distinct and never 0 (torch's backward counts its zero `self` as a tie), so torch's
tie-splitting and Paddle's whole-gradient rule agree."""
from __future__ import annotations

import numpy as np
import torch

from fluidgrad.testing import OpCase

from .common import distinct, rand

_TORCH_REDUCE = {"SUM": "sum", "MEAN": "mean", "MAX": "amax", "MIN": "amin"}


def _torch_segment(pooltype):
    def fn(X, SegmentIds):
        rows = int(SegmentIds.max()) + 1
        index = SegmentIds.reshape((-1,) + (1,) * (X.dim() - 1)).expand(X.shape)
        zeros = torch.zeros((rows,) + tuple(X.shape[1:]), dtype=X.dtype)
        return zeros.scatter_reduce(0, index, X, _TORCH_REDUCE[pooltype], include_self=False)
    return fn


def _case(pooltype, x, ids, split_ties=False, **kw):
    attrs = {"pooltype": pooltype, "num_segments": ids[-1] + 1, "split_ties": split_ties}
    return OpCase("segment_pool", {"X": x, "SegmentIds": np.asarray(ids, np.int64)}, attrs,
                  use_outputs=(0,), torch_fn=_torch_segment(pooltype), id=f"segment-{pooltype.lower()}-{kw.pop('id')}",
                  **kw)


CASES = [
    _case("SUM", rand(6, 3), [0, 0, 1, 3, 3, 3], id="gap"),
    _case("SUM", rand(4), [1, 1, 2, 2], id="1d-empty-first"),
    _case("MEAN", rand(6, 2, 2), [0, 0, 1, 3, 3, 3], id="gap-3d"),
    _case("MEAN", rand(3, 2), [0, 1, 2], id="singletons"),
    _case("MAX", distinct(6, 3) + 0.125, [0, 0, 1, 3, 3, 3], id="gap"),
    _case("MIN", distinct(5, 2) + 0.125, [0, 0, 0, 2, 2], id="gap"),
    _case("MAX", distinct(5, 2) + 0.125, [0, 1, 1, 1, 3], id="split-ties-attr", split_ties=True),
]
