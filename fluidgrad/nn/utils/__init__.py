"""paddle.nn.utils / torch.nn.utils: gradient clipping and parameter vectors (clip_grad.py),
weight_norm / spectral_norm reparametrisations (weight_norm.py, spectral_norm.py), and
`nn.utils.rnn`: batches of sequences of different lengths (rnn.py)."""
from . import rnn  # noqa: F401
from .clip_grad import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
