"""Eager layers (Paddle 2 names and layouts). Each owns its parameters and calls
`fluidgrad.nn.functional`, so it runs the same registered ops as the static builders."""
from .common import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .rnn_cells import *  # noqa: F401,F403
from .rnn_wrappers import *  # noqa: F401,F403
from .embedding_bag import EmbeddingBag  # noqa: F401  (torch's nn.EmbeddingBag)
