"""fluidgrad.distribution: probability distributions with the names and arguments of
paddle.distribution and torch.distributions: Normal, Uniform, Categorical, Bernoulli, Beta,
Dirichlet, Gamma, Chi2, Exponential, Laplace, LogNormal, MultivariateNormal, Independent, Cauchy,
Gumbel, StudentT, Poisson, Geometric, Multinomial, TransformedDistribution and its transforms
(ExpTransform, AffineTransform, ...), kl_divergence, register_kl.

Each is composed of registered ops, so log_prob / entropy / kl_divergence / rsample are
differentiable in both modes; draws use the generator `fluidgrad.seed` resets."""
from . import kl, kl_families  # noqa: F401  (register the closed forms)
from .base import Distribution, kl_divergence, register_kl
from .bernoulli import Bernoulli
from .beta import Beta
from .cauchy import Cauchy
from .categorical import Categorical
from .chi2 import Chi2
from .dirichlet import Dirichlet
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .independent import Independent
from .laplace import Laplace
from .lognormal import LogNormal
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .poisson import Poisson
from .student_t import StudentT
from .uniform import Uniform
from . import transform, transforms  # noqa: F401  (paddle.distribution.transform, torch.distributions.transforms)
from .transform import (AbsTransform, AffineTransform, ChainTransform, ComposeTransform, ExpTransform,
                        IndependentTransform, PowerTransform, SigmoidTransform, SoftmaxTransform,
                        StickBreakingTransform, TanhTransform, Transform)
from .transformed_distribution import TransformedDistribution

__all__ = ["Distribution", "Normal", "Uniform", "Categorical", "Bernoulli", "Beta", "Dirichlet", "Gamma", "Chi2",
           "Exponential", "Laplace", "LogNormal", "MultivariateNormal", "Independent", "Cauchy", "Gumbel",
           "StudentT", "Poisson", "Geometric", "Multinomial", "kl_divergence", "register_kl",
           "TransformedDistribution", "Transform", "AbsTransform", "AffineTransform", "ChainTransform",
           "ComposeTransform", "ExpTransform", "IndependentTransform", "PowerTransform", "SigmoidTransform",
           "SoftmaxTransform", "StickBreakingTransform", "TanhTransform"]
