"""torch.nn.utils.rnn: sequences of different lengths as one batch.

pad_sequence stacks [L_i, *] sequences into [T, B, *] (batch_first: [B, T, *]), T the longest,
the rest filled with padding_value: how torch NLP code collates a batch. pack_padded_sequence /
pack_sequence keep only the valid steps as a PackedSequence, pad_packed_sequence pads them back;
fluidgrad's LSTM / GRU / SimpleRNN take a PackedSequence (run as a padded batch with
`sequence_length`, their masked form) and return one. All are built of concat, stack and gather,
so gradients reach every sequence."""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from ... import functions as F
from ...eager import to_tensor
from ...indexing import constant

__all__ = ["PackedSequence", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence", "pad_sequence",
           "unpack_sequence", "unpad_sequence"]


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


class PackedSequence(NamedTuple):
    """torch's packed batch: `data` [sum of lengths, *] holds step 0 of every sequence, then step 1
    of those at least 2 long, ... (sequences longest first); `batch_sizes` [T] how many sequences
    each step has; `sorted_indices` / `unsorted_indices` the batch order to and from longest first
    (None when the batch came sorted). Built by pack_padded_sequence / pack_sequence, read back
    by pad_packed_sequence; LSTM / GRU / SimpleRNN take one and return one."""

    data: Any
    batch_sizes: Any
    sorted_indices: Any = None
    unsorted_indices: Any = None


def _int_list(values: Any, what: str) -> list[int]:
    array = np.asarray(values.numpy() if hasattr(values, "numpy") else values)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise ValueError(f"{what}: lengths must be a 1-D list or Tensor of integers, got {array.tolist()!r}")
    return [int(v) for v in array]


def _order(lengths: list[int], enforce_sorted: bool) -> list[int] | None:
    """The batch order longest first (None: already so, as enforce_sorted=True requires)."""
    descending = all(a >= b for a, b in zip(lengths, lengths[1:]))
    if enforce_sorted:
        if not descending:
            raise ValueError(f"pack_padded_sequence: lengths {lengths} must be sorted in decreasing order when "
                             f"enforce_sorted=True; pass enforce_sorted=False to pack any order")
        return None
    return [int(i) for i in np.argsort(-np.asarray(lengths), kind="stable")]


def _indices(order: list[int] | None) -> tuple[Any, Any]:
    if order is None:
        return None, None
    return to_tensor(np.asarray(order, "int64")), to_tensor(np.argsort(order).astype("int64"))


def pack_padded_sequence(input: Any, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
                         ) -> PackedSequence:
    """The valid steps of a padded [T, B, *] batch (batch_first: [B, T, *]) of sequences of
    `lengths`, packed time-major longest first (torch's pack_padded_sequence). A gather of the
    padded rows, so gradients reach `input`."""
    lengths = _int_list(lengths, "pack_padded_sequence")
    time_axis, batch_axis = (1, 0) if batch_first else (0, 1)
    if len(input.shape) < 2 or input.shape[batch_axis] != len(lengths):
        raise ValueError(f"pack_padded_sequence: input of shape {list(input.shape)} needs {len(lengths)} sequences "
                         f"on axis {batch_axis} (batch_first={batch_first}), one per length")
    steps, batch = int(input.shape[time_axis]), len(lengths)
    if not lengths or min(lengths) <= 0 or max(lengths) > steps:
        raise ValueError(f"pack_padded_sequence: lengths {lengths} must lie in [1, {steps}] (the time axis of "
                         f"input of shape {list(input.shape)})")
    order = _order(lengths, enforce_sorted)
    ranked = list(range(batch)) if order is None else order
    rows = [t * batch + b for t in range(max(lengths)) for b in ranked if lengths[b] > t]
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(max(lengths))]
    time_major = F.transpose(input, [1, 0] + list(range(2, len(input.shape)))) if batch_first else input
    flat = F.reshape(time_major, [steps * batch] + [int(d) for d in input.shape[2:]])
    data = F.gather(flat, constant(np.asarray(rows, "int64"), flat))
    return PackedSequence(data, to_tensor(np.asarray(batch_sizes, "int64")), *_indices(order))


def _lengths_of(sequence: PackedSequence) -> tuple[list[int], list[int]]:
    """(batch_sizes, each sequence's length in the batch's own order)."""
    batch_sizes = _int_list(sequence.batch_sizes, "pad_packed_sequence")
    ranked_lengths = [sum(1 for size in batch_sizes if size > rank) for rank in range(batch_sizes[0])]
    if sequence.unsorted_indices is None:
        return batch_sizes, ranked_lengths
    unsorted = _int_list(sequence.unsorted_indices, "pad_packed_sequence")
    return batch_sizes, [ranked_lengths[rank] for rank in unsorted]


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Any, Any]:
    """(padded [T, B, *] (batch_first: [B, T, *]) in the batch's own order, lengths [B] int64): the
    inverse of pack_padded_sequence, padding_value past each length, T = total_length if given
    (torch's pad_packed_sequence). A gather of the packed rows, so gradients reach `data`."""
    batch_sizes, lengths = _lengths_of(sequence)
    steps, batch = len(batch_sizes), batch_sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"pad_packed_sequence: total_length {total_length} is shorter than the longest "
                             f"sequence ({steps} steps)")
        steps = int(total_length)
    ranked = list(range(batch)) if sequence.sorted_indices is None else \
        _int_list(sequence.sorted_indices, "pad_packed_sequence")
    data = sequence.data
    packed_rows = int(data.shape[0])
    rows = np.full((steps, batch), packed_rows, "int64")      # the padding row, appended below
    offset = 0
    for t, size in enumerate(batch_sizes):
        rows[t, ranked[:size]] = np.arange(offset, offset + size)
        offset += size
    if offset != packed_rows:
        raise ValueError(f"pad_packed_sequence: batch_sizes {batch_sizes} add up to {offset}, but data has "
                         f"{packed_rows} rows")
    trailing = [int(d) for d in data.shape[1:]]
    padded = F.concat([data, F.full([1] + trailing, padding_value, data.dtype)], axis=0)
    out = F.reshape(F.gather(padded, constant(rows.reshape(-1), padded)), [steps, batch] + trailing)
    if batch_first:
        out = F.transpose(out, [1, 0] + list(range(2, len(trailing) + 2)))
    return out, to_tensor(np.asarray(lengths, "int64"))


def pack_sequence(sequences: Sequence[Any], enforce_sorted: bool = True) -> PackedSequence:
    """The [L_i, *] sequences packed (torch's pack_sequence): pad_sequence, then pack_padded_sequence."""
    lengths = [int(s.shape[0]) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Any, lengths: Any, batch_first: bool = False) -> list[Any]:
    """The [L_i, *] sequences of a padded [T, B, *] (batch_first: [B, T, *]) batch (torch's unpad_sequence)."""
    lengths = _int_list(lengths, "unpad_sequence")
    batch_axis = 0 if batch_first else 1
    if len(padded_sequences.shape) < 2 or padded_sequences.shape[batch_axis] != len(lengths):
        raise ValueError(f"unpad_sequence: padded batch of shape {list(padded_sequences.shape)} needs "
                         f"{len(lengths)} sequences on axis {batch_axis}, one per length")
    rows = padded_sequences if batch_first else F.transpose(
        padded_sequences, [1, 0] + list(range(2, len(padded_sequences.shape))))
    return [rows[i, :n] for i, n in enumerate(lengths)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Any]:
    """The [L_i, *] sequences of a PackedSequence, in the batch's own order (torch's unpack_sequence)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def run_packed(layer: Any, packed: PackedSequence, initial_states: Any) -> tuple[PackedSequence, Any]:
    """A recurrent layer (LSTM, GRU, SimpleRNN) over a packed batch, as torch's: the batch padded
    back to its own order, run with its lengths (masked steps: the final states are those at each
    sequence's last step), the outputs packed again alike; states in the batch's own order."""
    padded, lengths = pad_packed_sequence(packed)
    inputs = padded if layer.time_major else F.transpose(padded, [1, 0, 2])
    out, states = layer.forward(inputs, initial_states, sequence_length=lengths)
    out = out if layer.time_major else F.transpose(out, [1, 0, 2])
    repacked = pack_padded_sequence(out, lengths.numpy().tolist(), enforce_sorted=packed.sorted_indices is None)
    return PackedSequence(repacked.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices), states
