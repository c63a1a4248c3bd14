"""Cases of the print op (paddle.static.Print): it passes its input through, forward and backward."""
from __future__ import annotations

from fluidgrad.testing import OpCase as Case

from .common import rand

CASES = [
    Case("print", {"In": rand(2, 3)}, {"message": "op case", "summarize": 3}, torch_fn=lambda In: In.clone()),
    Case("print", {"In": rand(4)}, {"print_phase": "forward", "first_n": 1}, id="print-forward-once",
         torch_fn=lambda In: In.clone()),
]
