"""Multi-head attention and the Transformer layers, with Paddle 2's names and semantics, and
PyTorch's when built with its keywords.

Tensors are [batch, seq, d_model]. Masks broadcast to [batch, heads, q_len, k_len]: bool or
int (True / 1: attend) or float (added to the scores, -inf to exclude). As in Paddle, the
stacks end with a LayerNorm only when `normalize_before` (pre-norm).

PyTorch's keywords (batch_first=, norm_first=, bias=, device=, dtype=, a callable activation,
dim_feedforward left at torch's default 2048, and on Transformer layer_norm_eps=) build a layer that follows
torch throughout: [seq, batch, d_model] tensors unless batch_first=True (transposed in and out),
bool masks whose True means masked out, forward's key_padding_mask= / is_causal=, and on
Transformer the final LayerNorms of both stacks always. A layer built with Paddle's keywords
only keeps Paddle's batch-first tensors and mask convention.
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from ... import functions as F
from ...dispatch import apply_op
from ...eager.tensor import Tensor
from .. import functional as NF
from ..layer import Layer
from .attention_masks import attention_mask, causal, combined, paddle_mask
from .common import Dropout, Linear
from .container import LayerList
from .norm import LayerNorm
from .torch_keywords import either

__all__ = ['MultiHeadAttention', 'TransformerEncoderLayer', 'TransformerEncoder', 'TransformerDecoderLayer',
           'TransformerDecoder', 'Transformer']


def activation_fn(activation: str | Callable[[Any], Any]) -> Callable[[Any], Any]:
    """relu or gelu (exact, as Paddle's and torch's "gelu") by name, or torch's callable."""
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return NF.gelu
    raise ValueError(f"Transformer: activation must be 'relu', 'gelu' or a callable, got {activation!r}")


def gelu_tanh(x: Any) -> Any:
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (GPT-2's)."""
    return NF.gelu(x, approximate=True)


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
        mask = paddle_mask(attn_mask)
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

    def _init_feed_forward(self, d_model: int, dim_feedforward: int, act_dropout: float, activation: Any,
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


def _swap_batch_and_seq(x: Any) -> Any:
    return F.transpose(x, [1, 0, 2])


class _TransformerLayerBase(_FeedForwardMixin, Layer):
    """The keywords both layers share, read under Paddle's names or torch's (see the module
    docstring): sets normalize_before, batch_first, torch_convention and the feed-forward block,
    and returns the attention dropout and (weight_attr, bias_attr) for the attention layers."""

    def _init_common(self, d_model: int, nhead: int, dim_feedforward: int | None, dropout: float, activation: Any,
                     attn_dropout: float | None, act_dropout: float | None, normalize_before: bool, weight_attr: Any,
                     bias_attr: Any, batch_first: bool | None, norm_first: bool | None, bias: bool | None,
                     device: Any, dtype: Any) -> float:
        owner = type(self).__name__
        self.torch_convention = (dim_feedforward is None or callable(activation) or
                                 any(v is not None for v in (batch_first, norm_first, bias, device, dtype)))
        self.batch_first = (not self.torch_convention) if batch_first is None else bool(batch_first)
        self.normalize_before = bool(either(owner, "normalize_before", normalize_before, False, "norm_first",
                                            norm_first))
        if bias is False:
            bias_attr = either(owner, "bias_attr", bias_attr, None, "bias", False)
        self._norm_bias = bias_attr is not False
        act_dropout = dropout if act_dropout is None else act_dropout
        self._init_feed_forward(d_model, 2048 if dim_feedforward is None else dim_feedforward, act_dropout,
                                activation, weight_attr, bias_attr)
        self._attn_attrs = (weight_attr, bias_attr)
        return dropout if attn_dropout is None else attn_dropout

    def _norm(self, d_model: int, eps: float) -> LayerNorm:
        return LayerNorm(d_model, eps, bias_attr=None if self._norm_bias else False)

    def _mask(self, name: str, attn_mask: Any, key_padding_mask: Any, is_causal: bool, query: Any,
              key: Any) -> tuple[Any, bool]:
        """(mask, is_causal) for the attention op; torch's is_causal is a hint that attn_mask is
        causal, so a given attn_mask is used as it is."""
        mask = attention_mask(name, attn_mask, key_padding_mask, self.self_attn.num_heads, query.dtype,
                              self.torch_convention)
        if not is_causal or attn_mask is not None:
            return mask, False
        if mask is None:
            return None, True
        return combined(mask, causal(query, key), query.dtype), False

    def _finish(self, device: Any, dtype: Any) -> None:
        if device is not None or dtype is not None:
            self.to(device, dtype)


class TransformerEncoderLayer(_TransformerLayerBase):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm (pre-norm when
    normalize_before / norm_first)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int | None = None, dropout: float = 0.1,
                 activation: str | Callable[[Any], Any] = "relu", attn_dropout: float | None = None,
                 act_dropout: float | None = None, normalize_before: bool = False, weight_attr: Any = None,
                 bias_attr: Any = None, layer_norm_eps: float = 1e-5, *, batch_first: bool | None = None,
                 norm_first: bool | None = None, bias: bool | None = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self._config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        attn_dropout = self._init_common(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                                         act_dropout, normalize_before, weight_attr, bias_attr, batch_first,
                                         norm_first, bias, device, dtype)
        self.self_attn = MultiHeadAttention(d_model, nhead, attn_dropout, weight_attr=self._attn_attrs[0],
                                            bias_attr=self._attn_attrs[1])
        self.norm1, self.norm2 = self._norm(d_model, layer_norm_eps), self._norm(d_model, layer_norm_eps)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self._finish(device, dtype)

    def forward(self, src: Any, src_mask: Any = None, cache: Any = None, *, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Any:
        x = src if self.batch_first else _swap_batch_and_seq(src)
        mask, causal_hint = self._mask("TransformerEncoderLayer", src_mask, src_key_padding_mask, is_causal, x, x)
        x = _residual(x, lambda h: self.self_attn(h, h, h, mask, cache, is_causal=causal_hint), self.norm1,
                      self.dropout1, self.normalize_before)
        x = _residual(x, self._feed_forward, self.norm2, self.dropout2, self.normalize_before)
        return x if self.batch_first else _swap_batch_and_seq(x)


class TransformerDecoderLayer(_TransformerLayerBase):
    """Masked self-attention, attention over the encoder memory, then a feed-forward block; residuals and LayerNorms."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int | None = None, dropout: float = 0.1,
                 activation: str | Callable[[Any], Any] = "relu", attn_dropout: float | None = None,
                 act_dropout: float | None = None, normalize_before: bool = False, weight_attr: Any = None,
                 bias_attr: Any = None, layer_norm_eps: float = 1e-5, *, batch_first: bool | None = None,
                 norm_first: bool | None = None, bias: bool | None = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self._config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        attn_dropout = self._init_common(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                                         act_dropout, normalize_before, weight_attr, bias_attr, batch_first,
                                         norm_first, bias, device, dtype)
        weight_attr, bias_attr = self._attn_attrs
        self.self_attn = MultiHeadAttention(d_model, nhead, attn_dropout, weight_attr=weight_attr, bias_attr=bias_attr)
        self.cross_attn = MultiHeadAttention(d_model, nhead, attn_dropout, weight_attr=weight_attr,
                                             bias_attr=bias_attr)
        self.norm1, self.norm2, self.norm3 = (self._norm(d_model, layer_norm_eps) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = (Dropout(dropout) for _ in range(3))
        self._finish(device, dtype)

    def forward(self, tgt: Any, memory: Any, tgt_mask: Any = None, memory_mask: Any = None, cache: Any = None, *,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Any:
        x, memory = (tgt, memory) if self.batch_first else (_swap_batch_and_seq(tgt), _swap_batch_and_seq(memory))
        name = "TransformerDecoderLayer"
        self_mask, self_causal = self._mask(name, tgt_mask, tgt_key_padding_mask, tgt_is_causal, x, x)
        cross_mask, cross_causal = self._mask(name, memory_mask, memory_key_padding_mask, memory_is_causal, x, memory)
        x = _residual(x, lambda h: self.self_attn(h, h, h, self_mask, cache, is_causal=self_causal), self.norm1,
                      self.dropout1, self.normalize_before)
        x = _residual(x, lambda h: self.cross_attn(h, memory, memory, cross_mask, is_causal=cross_causal),
                      self.norm2, self.dropout2, self.normalize_before)
        x = _residual(x, self._feed_forward, self.norm3, self.dropout3, self.normalize_before)
        return x if self.batch_first else _swap_batch_and_seq(x)


def _given(**keywords: Any) -> dict[str, Any]:
    """The keywords given (not None, not False): a stack passes torch's mask keywords on only when
    used, so custom layers with Paddle's forward(src, src_mask) still run in it."""
    return {k: v for k, v in keywords.items() if v is not None and v is not False}


def _clones(layer: Layer, num_layers: int) -> LayerList:
    """`layer` first, then num_layers - 1 new layers of its configuration (fresh parameters)."""
    return LayerList([layer] + [type(layer)(**copy.deepcopy(layer._config)) for _ in range(num_layers - 1)])


class TransformerEncoder(Layer):
    """`num_layers` encoder layers (the first given, the rest fresh copies of its configuration), then `norm`.
    forward also takes torch's names: mask= (src_mask), src_key_padding_mask=, is_causal=."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: LayerNorm | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src: Any, src_mask: Any = None, cache: Any = None, *, mask: Any = None,
                src_key_padding_mask: Any = None, is_causal: bool | None = None) -> Any:
        src_mask = either("TransformerEncoder", "src_mask", src_mask, None, "mask", mask) if mask is not None \
            else src_mask
        keywords = _given(src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        for layer in self.layers:
            src = layer(src, src_mask, **keywords)
        return src if self.norm is None else self.norm(src)


class TransformerDecoder(Layer):
    """`num_layers` decoder layers (the first given, the rest fresh copies of its configuration), then `norm`.
    forward also takes torch's key_padding_mask / is_causal keywords."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: LayerNorm | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Any, memory: Any, tgt_mask: Any = None, memory_mask: Any = None, cache: Any = None, *,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Any:
        keywords = _given(tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                          tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        for layer in self.layers:
            tgt = layer(tgt, memory, tgt_mask, memory_mask, **keywords)
        return tgt if self.norm is None else self.norm(tgt)


class Transformer(Layer):
    """Encoder-decoder Transformer: forward(src, tgt, src_mask, tgt_mask, memory_mask) -> [B, Lt, d_model]
    ([Lt, B, d_model] when built with torch's keywords and not batch_first)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str | Callable[[Any], Any] = "relu",
                 attn_dropout: float | None = None, act_dropout: float | None = None, normalize_before: bool = False,
                 weight_attr: Any = None, bias_attr: Any = None, custom_encoder: Layer | None = None,
                 custom_decoder: Layer | None = None, *, layer_norm_eps: float | None = None,
                 batch_first: bool | None = None, norm_first: bool | None = None, bias: bool | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.torch_convention = callable(activation) or any(
            v is not None for v in (layer_norm_eps, batch_first, norm_first, bias, device, dtype))
        self.batch_first = (not self.torch_convention) if batch_first is None else bool(batch_first)
        eps = 1e-5 if layer_norm_eps is None else float(layer_norm_eps)
        options = dict(dropout=dropout, activation=activation, attn_dropout=attn_dropout, act_dropout=act_dropout,
                       normalize_before=normalize_before, weight_attr=weight_attr, bias_attr=bias_attr,
                       layer_norm_eps=eps)
        if self.torch_convention:        # each layer torch's: its masks, its tensors' layout
            options.update(batch_first=self.batch_first, norm_first=norm_first, bias=bias)
        self.d_model, self.nhead = d_model, nhead
        encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, **options)
        final_norms = self.torch_convention or encoder_layer.normalize_before
        self.encoder = custom_encoder or TransformerEncoder(
            encoder_layer, num_encoder_layers, encoder_layer._norm(d_model, eps) if final_norms else None)
        decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, **options)
        self.decoder = custom_decoder or TransformerDecoder(
            decoder_layer, num_decoder_layers, decoder_layer._norm(d_model, eps) if final_norms else None)
        if device is not None or dtype is not None:
            self.to(device, dtype)

    def forward(self, src: Any, tgt: Any, src_mask: Any = None, tgt_mask: Any = None, memory_mask: Any = None, *,
                src_key_padding_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Any:
        memory = self.encoder(src, src_mask, **_given(src_key_padding_mask=src_key_padding_mask,
                                                      is_causal=src_is_causal))
        return self.decoder(tgt, memory, tgt_mask, memory_mask, **_given(
            tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal))

    @staticmethod
    def generate_square_subsequent_mask(length: int, dtype: str = "float32") -> Tensor:
        """A float [length, length] mask: 0 on and below the diagonal, -inf above (the future)."""
        mask = np.triu(np.full((length, length), -np.inf, dtype=dtype), k=1)
        return Tensor(mask)
