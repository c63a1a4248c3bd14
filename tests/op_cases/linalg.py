"""Op cases of fluidgrad/ops/linalg.py: einsum with an explicit equation."""
from __future__ import annotations

import torch as T

from fluidgrad.testing import OpCase

from .common import rand


def _einsum(equation):
    return lambda Operands: T.einsum(equation, *Operands)


_EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),   # attention scores
    ("ij->ji", [(3, 4)]),
    ("ij->i", [(3, 4)]),                                   # an index summed within one operand
    ("ij,j->", [(3, 4), (4,)]),
    ("i,j->ij", [(3,), (4,)]),                             # outer product
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),            # three operands
    ("bij,jk->bik", [(2, 3, 4), (4, 5)]),
    ("ijk,k->ij", [(2, 3, 4), (4,)]),
    # an index of size 1 broadcasts against the others' size (PyTorch's einsum): kept, summed, in one
    # operand alone, and both ways at once (the ellipsis letters fluidgrad.einsum writes)
    ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),
    ("ij,jk->ik", [(3, 1), (4, 5)]),
    ("i,i->", [(1,), (4,)]),
    ("ij,j->i", [(3, 4), (1,)]),
    ("YZij,Zjk->YZik", [(2, 1, 3, 4), (3, 4, 2)]),
    ("YZij,YZjk->YZik", [(1, 3, 2, 4), (2, 1, 4, 5)]),
    ("ab,bc,c->a", [(2, 1), (3, 1), (4,)]),
]

CASES = [OpCase("einsum", {"Operands": [rand(*s) for s in shapes]}, {"equation": eq}, torch_fn=_einsum(eq),
                id=f"einsum-{eq}") for eq, shapes in _EQUATIONS]
