"""Tensor functions by family, as Paddle 2 groups them (`paddle.tensor.*`).

Each module defines public functions serving both modes through `dispatch.apply_op` and lists
them in `__all__`; `fluidgrad/__init__.py` re-exports them at the top level.
"""
from __future__ import annotations

import sys
import types
from typing import Any

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

# torch's constructors: fg.tensor(data), fg.as_tensor, fg.from_numpy
from . import from_data  # noqa: E402
from .from_data import *  # noqa: F401,F403,E402

__all__ += from_data.__all__

# session 13 (funcs13): functions torch and Paddle 2 both have
from . import assembled, covariance, integrals, max_norm, quantiles, runs  # noqa: E402
from .assembled import *  # noqa: F401,F403,E402
from .covariance import *  # noqa: F401,F403,E402
from .integrals import *  # noqa: F401,F403,E402
from .quantiles import *  # noqa: F401,F403,E402
from .max_norm import *  # noqa: F401,F403,E402
from .runs import *  # noqa: F401,F403,E402

__all__ += [name for module in (assembled, covariance, integrals, max_norm, quantiles, runs) for name in module.__all__]

# torch's max / min / sort (dim=: the pair (values, indices)) and split (dim=: torch's split size)
# beside Paddle's forms of the same names (replacing search.sort and, at the top level, functions')
from . import torch_returns  # noqa: E402
from .torch_returns import *  # noqa: F401,F403,E402

__all__ = [name for name in __all__ if name not in torch_returns.__all__] + torch_returns.__all__


class _CallableTensorPackage(types.ModuleType):
    """`fluidgrad.tensor` stays the package of tensor functions (`fg.tensor.math`,
    `import fluidgrad.tensor.creation`) and, called, is torch.tensor: `fg.tensor([1.0, 2.0])`.
    A module class rather than a function named `tensor`, which would hide the package."""

    def __call__(self, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                 pin_memory: bool = False, *, place: Any = None, stop_gradient: bool | None = None) -> Any:
        return from_data.tensor(data, dtype, device, requires_grad, pin_memory, place=place,
                                stop_gradient=stop_gradient)

    __call__.__doc__ = from_data.tensor.__doc__


sys.modules[__name__].__class__ = _CallableTensorPackage
