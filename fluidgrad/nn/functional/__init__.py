"""Neural-network functions (Paddle 2 `paddle.nn.functional` names), for both modes.

Every function goes through `dispatch.apply_op`: given Variables it appends ops to the
current program, given eager Tensors it computes at once. Parameters are arguments here;
the layer builders (`fluidgrad.static.nn`) and eager Layers create and own them.
"""
from __future__ import annotations

from ...functions import sigmoid, tanh  # noqa: F401  (re-exported)
from .activation import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .common import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .distance_loss import *  # noqa: F401,F403
from .sequence import *  # noqa: F401,F403
from .embedding_bag import embedding_bag  # noqa: F401  (torch's F.embedding_bag)
# torch's inplace= / relu_ forms over the functions above (relu from fluidgrad.functions): imported last
from .inplace import *  # noqa: F401,F403,E402
