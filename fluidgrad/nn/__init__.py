from . import functional  # noqa: F401
from .layer import Layer, create_parameter  # noqa: F401
from .layers import *  # noqa: F401,F403  (Linear, Conv2D, Sequential, ...)
from .layers import LayerDict, LayerList
from .layers.torch_spellings import *  # noqa: F401,F403  (Conv2d, MaxPool2d, ConvTranspose2d, MultiheadAttention, ...)
from .parameter import Parameter  # noqa: F401  (PyTorch's nn.Parameter(t, requires_grad=True))
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue  # noqa: F401  (Paddle keeps them in nn)
from . import init, initializer, utils  # noqa: F401,E402  (torch.nn.init, paddle.nn.initializer, paddle.nn.utils)
from .torch_state import from_torch_state_dict, load_torch_state_dict, to_torch_state_dict  # noqa: F401,E402

# PyTorch's names of Paddle's containers: the same classes (class Net(nn.Module) is a Layer).
Module = Layer
ModuleList = LayerList
ModuleDict = LayerDict
