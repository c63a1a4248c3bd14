"""torch.nn.utils.rnn: sequences of different lengths as one padded batch.

pad_sequence stacks [L_i, *] sequences into [T, B, *] (batch_first: [B, T, *]), T the longest,
the rest filled with padding_value: how torch NLP code collates a batch. It is built of concat
and stack, so gradients reach every sequence. fluidgrad's LSTM / GRU / SimpleRNN take the lengths
of such a batch as `sequence_length` (a masked padded batch)."""
from __future__ import annotations

from typing import Any, Sequence

from ... import functions as F

__all__ = ["pad_sequence"]


def pad_sequence(sequences: Sequence[Any], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Any:
    """One [T, B, *] (batch_first: [B, T, *]) tensor of the [L_i, *] sequences, each padded with
    padding_value after its end (padding_side="left": before its start) to the longest length T."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}")
    if hasattr(sequences, "shape"):   # one tensor: its rows are the sequences, as torch reads it
        sequences = [sequences[i] for i in range(int(sequences.shape[0]))]
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_sequence: needs at least one sequence")
    trailing = [list(s.shape[1:]) for s in sequences]
    if any(len(s.shape) == 0 for s in sequences) or any(t != trailing[0] for t in trailing):
        raise ValueError(f"pad_sequence: sequences must be [L, *] with the same trailing sizes, got shapes "
                         f"{[list(s.shape) for s in sequences]}")
    if any(s.dtype != sequences[0].dtype for s in sequences):
        raise ValueError(f"pad_sequence: sequences must share a dtype, got {[str(s.dtype) for s in sequences]}")
    longest = max(int(s.shape[0]) for s in sequences)
    padded = [_padded(s, longest, padding_value, padding_side) for s in sequences]
    return F.stack(padded, axis=0 if batch_first else 1)


def _padded(sequence: Any, length: int, value: float, side: str) -> Any:
    missing = length - int(sequence.shape[0])
    if missing == 0:
        return sequence
    filler = F.full([missing] + [int(d) for d in sequence.shape[1:]], value, sequence.dtype)
    return F.concat([sequence, filler] if side == "right" else [filler, sequence], axis=0)
