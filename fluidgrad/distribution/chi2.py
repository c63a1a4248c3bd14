"""Chi2(df): the sum of df squared standard normals, Gamma(df / 2, 1 / 2)
(torch.distributions.Chi2, paddle.distribution.Chi2)."""
from __future__ import annotations

from typing import Any

from ..functions import full_like
from .base import as_param, positive
from .gamma import Gamma


class Chi2(Gamma):
    """Chi-squared with df > 0 degrees of freedom; a Gamma, so rsample is reparameterised in df."""

    _arg_ranks = {"df": 0}

    def __init__(self, df: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        df = as_param(df)
        super().__init__(0.5 * df, full_like(df, 0.5), validate_args=False)
        self._validate_args = self._validate_default if validate_args is None else bool(validate_args)
        if self._validate_args:
            positive("Chi2", "df", df)

    @property
    def df(self) -> Any:
        return self.concentration * 2
