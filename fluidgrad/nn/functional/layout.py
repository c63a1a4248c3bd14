"""Channel-last layouts (NLC, NHWC, NDHWC) for functions whose ops compute channel-first.

The pooling, convolution and normalisation ops read channels on axis 1. A function given a
channel-last `data_format` moves the channel axis to 1, runs the op and moves it back: the
moves are ordinary transpose ops, so gradients, grad of grad and static programs follow, and
the answer is the channel-first answer of the same data (PyTorch's, through `movedim`).
"""
from __future__ import annotations

from typing import Any, Callable

from ... import functions as F

__all__ = ['CHANNEL_FIRST', 'CHANNEL_LAST', 'ANY_CHANNEL_LAST', 'is_channel_last', 'channel_last_of_any_rank',
           'to_channel_first', 'to_channel_last', 'run_channel_first']

CHANNEL_FIRST = {1: ("NCL", "NCW"), 2: ("NCHW",), 3: ("NCDHW",)}
CHANNEL_LAST = {1: ("NLC", "NWC"), 2: ("NHWC",), 3: ("NDHWC",)}
ANY_CHANNEL_LAST = ("NLC", "NWC", "NHWC", "NDHWC")


def is_channel_last(data_format: str, nd: int, fn: str) -> bool:
    """True for the channel-last layout of `nd` spatial axes, False for the channel-first one;
    any other string (a layout of another rank, a typo) is a ValueError naming `fn`."""
    if data_format in CHANNEL_FIRST[nd]:
        return False
    if data_format in CHANNEL_LAST[nd]:
        return True
    allowed = CHANNEL_FIRST[nd] + CHANNEL_LAST[nd]
    raise ValueError(f"{fn}: data_format must be one of {list(allowed)}, got {data_format!r}")


def channel_last_of_any_rank(data_format: str, channel_first: tuple[str, ...], fn: str) -> bool:
    """The normalisations take a layout name without tying it to the input's rank (channels are
    on axis 1, or last): True for a channel-last name, False for one of `channel_first`."""
    if data_format in channel_first:
        return False
    if data_format in ANY_CHANNEL_LAST:
        return True
    raise ValueError(f"{fn}: data_format must be one of {list(channel_first + ANY_CHANNEL_LAST)}, "
                     f"got {data_format!r}")


def to_channel_first(x: Any) -> Any:
    """[N, *spatial, C] -> [N, C, *spatial]."""
    ndim = len(x.shape)
    return F.transpose(x, [0, ndim - 1] + list(range(1, ndim - 1)))


def to_channel_last(y: Any) -> Any:
    """[N, C, *spatial] -> [N, *spatial, C]."""
    ndim = len(y.shape)
    return F.transpose(y, [0] + list(range(2, ndim)) + [1])


def run_channel_first(x: Any, data_format: str, nd: int, fn: str, compute: Callable[[Any], Any]) -> Any:
    """compute(x) on channel-first x; for a channel-last layout, on x moved there, every result
    (an output, or a tuple such as (output, argmax mask)) moved back."""
    if not is_channel_last(data_format, nd, fn):
        return compute(x)
    if len(x.shape) != nd + 2:
        raise ValueError(f"{fn}: data_format {data_format!r} needs a {nd + 2}-D input, got shape {list(x.shape)}")
    out = compute(to_channel_first(x))
    if isinstance(out, tuple):
        return tuple(to_channel_last(o) for o in out)
    return to_channel_last(out)
