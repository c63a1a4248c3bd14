"""Tensor functions by family, as Paddle 2 groups them (`paddle.tensor.*`).

Each module defines public functions serving both modes through `dispatch.apply_op` and lists
them in `__all__`; `fluidgrad/__init__.py` re-exports them at the top level.
"""
from __future__ import annotations

from . import composed, creation, diagonals, everyday, linalg, logic, manipulation, math, random, search, stat
from .composed import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .diagonals import *  # noqa: F401,F403
from .everyday import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .logic import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .search import *  # noqa: F401,F403
from .stat import *  # noqa: F401,F403

__all__ = [name for module in (composed, creation, diagonals, everyday, linalg, logic, manipulation, math, random, search, stat) for name in module.__all__]

# session 11 (funcs11): more everyday functions of Paddle 2 and PyTorch
from . import counting, dtype_info, pieces, products, special  # noqa: E402
from .counting import *  # noqa: F401,F403,E402
from .dtype_info import *  # noqa: F401,F403,E402
from .pieces import *  # noqa: F401,F403,E402
from .products import *  # noqa: F401,F403,E402
from .special import *  # noqa: F401,F403,E402

__all__ += [name for module in (counting, dtype_info, pieces, products, special) for name in module.__all__]
