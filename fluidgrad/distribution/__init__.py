"""fluidgrad.distribution: probability distributions with the names of paddle.distribution and
torch.distributions (Normal, Uniform, Categorical, Bernoulli, kl_divergence, register_kl).

Each is composed of registered ops, so log_prob / entropy / kl_divergence / rsample are
differentiable in both modes; draws use the generator `fluidgrad.seed` resets."""
from . import kl  # noqa: F401  (registers the closed forms)
from .base import Distribution, kl_divergence, register_kl
from .bernoulli import Bernoulli
from .categorical import Categorical
from .normal import Normal
from .uniform import Uniform

__all__ = ["Distribution", "Normal", "Uniform", "Categorical", "Bernoulli", "kl_divergence", "register_kl"]
