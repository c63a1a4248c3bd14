"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril): the Gaussian over
vectors (torch.distributions.MultivariateNormal, paddle.distribution.MultivariateNormal).

Everything is computed from the lower Cholesky factor L of the covariance (triangular solves,
its diagonal for the log-determinant), so log_prob, entropy, KL and rsample = loc + L eps are
differentiable in loc and in whichever matrix was given."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..eager import Tensor
from ..functions import log, matmul, squeeze, sum, unsqueeze
from ..linalg import cholesky, inv
from ..linalg_solves import triangular_solve
from ..tensor.manipulation import broadcast_to
from ..tensor.random import randn
from ..tensor.diagonals import diagonal
from .base import Distribution, as_param, broadcast_shape, draw_shape


class MultivariateNormal(Distribution):
    """N(loc, L L^T): loc [..., k]; exactly one of the covariance, the precision (its inverse) and
    scale_tril (L: lower triangular, positive diagonal), each [..., k, k]."""

    has_rsample = True
    _arg_ranks = {"loc": 1, "scale_tril": 2}

    def __init__(self, loc: Any, covariance_matrix: Any = None, precision_matrix: Any = None, scale_tril: Any = None,
                 validate_args: bool | None = None, name: str | None = None) -> None:
        given = {k: v for k, v in [("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                   ("scale_tril", scale_tril)] if v is not None}
        if len(given) != 1:
            raise ValueError(f"MultivariateNormal: give exactly one of covariance_matrix, precision_matrix and "
                             f"scale_tril, got {sorted(given) or 'none'}")
        (argument, matrix), = given.items()
        loc = as_param(loc)
        matrix = as_param(matrix, loc.dtype)
        _check_shapes(loc, argument, matrix)
        super().__init__(broadcast_shape("MultivariateNormal", loc.shape[:-1], matrix.shape[:-2]), loc.shape[-1:],
                         validate_args=validate_args)
        if self._validate_args:
            _check_matrix(argument, matrix)
        lower = matrix if argument == "scale_tril" else cholesky(matrix if argument == "covariance_matrix"
                                                                 else inv(matrix))
        self.loc = _broadcast(loc, self._batch_shape + self._event_shape)
        self.scale_tril = _broadcast(lower, self._batch_shape + self._event_shape * 2)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def covariance_matrix(self) -> Any:
        return matmul(self.scale_tril, self.scale_tril, transpose_y=True)

    @property
    def precision_matrix(self) -> Any:
        return inv(self.covariance_matrix)

    @property
    def variance(self) -> Any:
        return sum(self.scale_tril ** 2, axis=-1)

    def half_log_det(self) -> Any:
        """log det(L) = half the covariance's log-determinant."""
        return sum(log(diagonal(self.scale_tril, axis1=-2, axis2=-1)), axis=-1)

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        eps = randn(self._extended_shape(draw_shape(shape, sample_shape)), dtype=self.loc.dtype)
        return self.loc + squeeze(matmul(self.scale_tril, unsqueeze(eps, -1)), -1)

    def log_prob(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        if list(value.shape[-1:]) != self._event_shape:
            raise ValueError(f"MultivariateNormal.log_prob: value (shape {list(value.shape)}) must end in the event "
                             f"shape {self._event_shape}")
        self._check_value(value, np.isfinite, "finite vectors")
        diff = value - self.loc
        mahalanobis = sum(triangular_solve(self.scale_tril, unsqueeze(diff, -1), upper=False) ** 2, axis=[-2, -1])
        size = self._event_shape[0]
        return -0.5 * (size * math.log(2 * math.pi) + mahalanobis) - self.half_log_det()

    def entropy(self) -> Any:
        size = self._event_shape[0]
        return 0.5 * size * (1 + math.log(2 * math.pi)) + self.half_log_det()


def _broadcast(value: Any, shape: list[int]) -> Any:
    return value if list(value.shape) == shape else broadcast_to(value, shape)


def _check_shapes(loc: Any, argument: str, matrix: Any) -> None:
    loc_shape, shape = list(loc.shape), list(matrix.shape)
    if len(loc_shape) < 1:
        raise ValueError(f"MultivariateNormal: loc must be at least a vector, got shape {loc_shape}")
    if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] != loc_shape[-1]:
        raise ValueError(f"MultivariateNormal: {argument} (shape {shape}) must end in two axes of loc's size "
                         f"{loc_shape[-1]} (loc shape {loc_shape})")


def _check_matrix(argument: str, matrix: Any) -> None:
    """Refuse (eagerly) what is not a covariance / precision / Cholesky factor."""
    if not isinstance(matrix, Tensor):
        return
    values = matrix.numpy()
    if argument == "scale_tril":
        if not (np.all(np.triu(values, 1) == 0) and np.all(np.diagonal(values, axis1=-2, axis2=-1) > 0)):
            raise ValueError(f"MultivariateNormal: scale_tril must be lower triangular with a positive diagonal, "
                             f"got {values}")
        return
    symmetric = np.allclose(values, np.swapaxes(values, -1, -2), rtol=1e-6, atol=1e-8)
    if not symmetric or not np.all(np.linalg.eigvalsh(values) > 0):
        raise ValueError(f"MultivariateNormal: {argument} must be symmetric positive-definite, got {values}")
