"""Multi-head attention and the Transformer layers, with Paddle 2's names and semantics.

Tensors are [batch, seq, d_model]. Masks broadcast to [batch, heads, q_len, k_len]: bool or
int (True / 1: attend) or float (added to the scores, -inf to exclude). As in Paddle, the
stacks end with a LayerNorm only when `normalize_before` (pre-norm); PyTorch's nn.Transformer
always adds one.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ... import functions as F
from ...dispatch import apply_op
from ...eager.tensor import Tensor
from .. import functional as NF
from ..layer import Layer
from .common import Dropout, Linear
from .container import LayerList
from .norm import LayerNorm

__all__ = ['MultiHeadAttention', 'TransformerEncoderLayer', 'TransformerEncoder', 'TransformerDecoderLayer',
           'TransformerDecoder', 'Transformer']


def _as_mask(mask: Any, dtype: str) -> Any:
    """Integer masks (1: attend) become bool; bool and float masks pass through."""
    if mask is None or mask.dtype == "bool" or str(mask.dtype).startswith("float"):
        return mask
    return F.cast(mask, "bool")


def activation_fn(name: str):
    """relu or gelu by name (the tanh form of gelu until an exact one is registered)."""
    if name == "relu":
        return F.relu
    if name == "gelu":
        return gelu_tanh
    raise ValueError(f"Transformer: activation must be 'relu' or 'gelu', got {name!r}")


def gelu_tanh(x: Any) -> Any:
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    gelu = getattr(NF, "gelu", None)
    if gelu is not None:
        return gelu(x, approximate=True)
    inner = F.scale(F.add(x, F.scale(F.pow(x, 3.0), 0.044715)), float(np.sqrt(2.0 / np.pi)))
    return F.multiply(F.scale(x, 0.5), F.scale(F.tanh(inner), 1.0, 1.0))


class MultiHeadAttention(Layer):
    """Project query, key and value, attend per head, project back; returns the output
    (and the attention weights [batch, heads, q_len, k_len] when need_weights)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, kdim: int | None = None,
                 vdim: int | None = None, need_weights: bool = False, weight_attr: Any = None,
                 bias_attr: Any = None) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.dropout, self.need_weights = float(dropout), need_weights
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)
        self.k_proj = Linear(kdim or embed_dim, embed_dim, weight_attr, bias_attr)
        self.v_proj = Linear(vdim or embed_dim, embed_dim, weight_attr, bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)

    def _heads(self, x: Any) -> Any:
        return F.reshape(x, [0, 0, self.num_heads, self.head_dim])     # [B, L, H, D]

    def forward(self, query: Any, key: Any = None, value: Any = None, attn_mask: Any = None,
                cache: Any = None, is_causal: bool = False) -> Any:
        if cache is not None:
            raise ValueError("MultiHeadAttention: incremental decoding caches are not supported")
        key = query if key is None else key
        value = key if value is None else value
        q, k, v = self._heads(self.q_proj(query)), self._heads(self.k_proj(key)), self._heads(self.v_proj(value))
        mask = _as_mask(attn_mask, query.dtype)
        if self.need_weights:
            out, weights = self._attend_with_weights(q, k, v, mask, is_causal)
        else:
            out = NF.scaled_dot_product_attention(q, k, v, mask, self.dropout, is_causal, self.training)
        out = self.out_proj(F.reshape(out, [0, 0, self.embed_dim]))
        return (out, weights) if self.need_weights else out

    def _attend_with_weights(self, q: Any, k: Any, v: Any, mask: Any, is_causal: bool) -> tuple[Any, Any]:
        scores = F.matmul(F.transpose(q, [0, 2, 1, 3]), F.transpose(k, [0, 2, 1, 3]), transpose_y=True)
        weights = apply_op("attention_softmax", {"X": scores, "Mask": mask},
                           {"scale": 1.0 / float(np.sqrt(self.head_dim)), "causal": bool(is_causal)})
        dropped = NF.dropout(weights, self.dropout, training=self.training) if self.dropout else weights
        out = F.transpose(F.matmul(dropped, F.transpose(v, [0, 2, 1, 3])), [0, 2, 1, 3])
        return out, weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


class _FeedForwardMixin:
    """linear2(dropout(activation(linear1(x)))), kept on the layer itself as in Paddle and
    PyTorch (state_dict keys "linear1.weight", ...). Checkpoints from before, which said
    "ffn.linear1.weight", still load."""

    _renamed_state_keys = {"ffn.linear1": "linear1", "ffn.linear2": "linear2"}

    def _init_feed_forward(self, d_model: int, dim_feedforward: int, act_dropout: float, activation: str,
                           weight_attr: Any, bias_attr: Any) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, weight_attr, bias_attr)
        self.dropout = Dropout(act_dropout)
        self.linear2 = Linear(dim_feedforward, d_model, weight_attr, bias_attr)
        self.activation = activation_fn(activation)

    def _feed_forward(self, x: Any) -> Any:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


def _residual(x: Any, sublayer, norm: LayerNorm, dropout: Dropout, normalize_before: bool) -> Any:
    """x + dropout(sublayer(norm(x))) when pre-norm, else norm(x + dropout(sublayer(x)))."""
    if normalize_before:
        return F.add(x, dropout(sublayer(norm(x))))
    return norm(F.add(x, dropout(sublayer(x))))


class TransformerEncoderLayer(_FeedForwardMixin, Layer):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm (pre-norm when normalize_before)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float = 0.1,
                 activation: str = "relu", attn_dropout: float | None = None, act_dropout: float | None = None,
                 normalize_before: bool = False, weight_attr: Any = None, bias_attr: Any = None,
                 layer_norm_eps: float = 1e-5) -> None:
        super().__init__()
        self._config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        self.self_attn = MultiHeadAttention(d_model, nhead, attn_dropout, weight_attr=weight_attr,
                                            bias_attr=bias_attr)
        self._init_feed_forward(d_model, dim_feedforward, act_dropout, activation, weight_attr, bias_attr)
        self.norm1, self.norm2 = LayerNorm(d_model, layer_norm_eps), LayerNorm(d_model, layer_norm_eps)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)

    def forward(self, src: Any, src_mask: Any = None, cache: Any = None) -> Any:
        src = _residual(src, lambda x: self.self_attn(x, x, x, src_mask, cache), self.norm1, self.dropout1,
                        self.normalize_before)
        return _residual(src, self._feed_forward, self.norm2, self.dropout2, self.normalize_before)


class TransformerDecoderLayer(_FeedForwardMixin, Layer):
    """Masked self-attention, attention over the encoder memory, then a feed-forward block; residuals and LayerNorms."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float = 0.1,
                 activation: str = "relu", attn_dropout: float | None = None, act_dropout: float | None = None,
                 normalize_before: bool = False, weight_attr: Any = None, bias_attr: Any = None,
                 layer_norm_eps: float = 1e-5) -> None:
        super().__init__()
        self._config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        self.self_attn = MultiHeadAttention(d_model, nhead, attn_dropout, weight_attr=weight_attr,
                                            bias_attr=bias_attr)
        self.cross_attn = MultiHeadAttention(d_model, nhead, attn_dropout, weight_attr=weight_attr,
                                             bias_attr=bias_attr)
        self._init_feed_forward(d_model, dim_feedforward, act_dropout, activation, weight_attr, bias_attr)
        self.norm1, self.norm2, self.norm3 = (LayerNorm(d_model, layer_norm_eps) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = (Dropout(dropout) for _ in range(3))

    def forward(self, tgt: Any, memory: Any, tgt_mask: Any = None, memory_mask: Any = None,
                cache: Any = None) -> Any:
        tgt = _residual(tgt, lambda x: self.self_attn(x, x, x, tgt_mask, cache), self.norm1, self.dropout1,
                        self.normalize_before)
        tgt = _residual(tgt, lambda x: self.cross_attn(x, memory, memory, memory_mask), self.norm2,
                        self.dropout2, self.normalize_before)
        return _residual(tgt, self._feed_forward, self.norm3, self.dropout3, self.normalize_before)


def _clones(layer: Layer, num_layers: int) -> LayerList:
    """`layer` first, then num_layers - 1 new layers of its configuration (fresh parameters)."""
    return LayerList([layer] + [type(layer)(**copy.deepcopy(layer._config)) for _ in range(num_layers - 1)])


class TransformerEncoder(Layer):
    """`num_layers` encoder layers (the first given, the rest fresh copies of its configuration), then `norm`."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: LayerNorm | None = None) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src: Any, src_mask: Any = None, cache: Any = None) -> Any:
        for layer in self.layers:
            src = layer(src, src_mask)
        return src if self.norm is None else self.norm(src)


class TransformerDecoder(Layer):
    """`num_layers` decoder layers (the first given, the rest fresh copies of its configuration), then `norm`."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: LayerNorm | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Any, memory: Any, tgt_mask: Any = None, memory_mask: Any = None, cache: Any = None) -> Any:
        for layer in self.layers:
            tgt = layer(tgt, memory, tgt_mask, memory_mask)
        return tgt if self.norm is None else self.norm(tgt)


class Transformer(Layer):
    """Encoder-decoder Transformer: forward(src, tgt, src_mask, tgt_mask, memory_mask) -> [B, Lt, d_model]."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = "relu",
                 attn_dropout: float | None = None, act_dropout: float | None = None, normalize_before: bool = False,
                 weight_attr: Any = None, bias_attr: Any = None, custom_encoder: Layer | None = None,
                 custom_decoder: Layer | None = None) -> None:
        super().__init__()
        options = dict(dropout=dropout, activation=activation, attn_dropout=attn_dropout, act_dropout=act_dropout,
                       normalize_before=normalize_before, weight_attr=weight_attr, bias_attr=bias_attr)
        self.d_model, self.nhead = d_model, nhead
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, dim_feedforward, **options), num_encoder_layers,
            LayerNorm(d_model) if normalize_before else None)
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, dim_feedforward, **options), num_decoder_layers,
            LayerNorm(d_model) if normalize_before else None)

    def forward(self, src: Any, tgt: Any, src_mask: Any = None, tgt_mask: Any = None, memory_mask: Any = None) -> Any:
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)

    @staticmethod
    def generate_square_subsequent_mask(length: int, dtype: str = "float32") -> Tensor:
        """A float [length, length] mask: 0 on and below the diagonal, -inf above (the future)."""
        mask = np.triu(np.full((length, length), -np.inf, dtype=dtype), k=1)
        return Tensor(mask)
