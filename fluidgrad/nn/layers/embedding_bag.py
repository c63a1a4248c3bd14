"""nn.EmbeddingBag (torch's): a [num_embeddings, embedding_dim] table whose rows are summed,
averaged or maxed per bag of ids (nn.functional.embedding_bag). torch's constructor, its N(0, 1)
initialisation with the padding row zeroed, `from_pretrained`, and its state_dict key `weight`."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...initializer import Normal
from ..functional.embedding_bag import embedding_bag
from ..layer import Layer
from ..parameter import array_of, check_device

__all__ = ["EmbeddingBag"]


class EmbeddingBag(Layer):
    """Bags of ids in, one row per bag out: forward(input, offsets=None, per_sample_weights=None)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Any = None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__(dtype=dtype)
        check_device("EmbeddingBag", device)
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None and not -self.num_embeddings <= padding_idx < self.num_embeddings:
            raise ValueError(f"EmbeddingBag: padding_idx {padding_idx} is out of range for {num_embeddings} rows")
        self.padding_idx = None if padding_idx is None else int(padding_idx) % self.num_embeddings
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        self.weight = self.create_parameter([self.num_embeddings, self.embedding_dim],
                                            default_initializer=Normal(0.0, 1.0))
        if _weight is not None:
            table = np.asarray(array_of(_weight, "EmbeddingBag"))
            if list(table.shape) != [self.num_embeddings, self.embedding_dim]:
                raise ValueError(f"EmbeddingBag: _weight must have shape {[self.num_embeddings, self.embedding_dim]}, "
                                 f"got {list(table.shape)}")
            self.weight._array = table.astype(self.weight.dtype, copy=True)
        elif self.padding_idx is not None:
            self.weight._array[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> "EmbeddingBag":
        """torch's constructor from a 2-D table (copied, its dtype kept); frozen unless freeze=False."""
        table = np.array(array_of(embeddings, "EmbeddingBag.from_pretrained"))
        if table.ndim != 2:
            raise ValueError(f"EmbeddingBag.from_pretrained: embeddings must be 2-D [num_embeddings, "
                             f"embedding_dim], got shape {list(table.shape)}")
        layer = cls(table.shape[0], table.shape[1], max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                    include_last_offset=include_last_offset, padding_idx=padding_idx, dtype=str(table.dtype))
        layer.weight._array = table
        layer.weight.stop_gradient = bool(freeze)
        return layer

    def forward(self, input: Any, offsets: Any = None, per_sample_weights: Any = None) -> Any:
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                             self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}{padding}"
