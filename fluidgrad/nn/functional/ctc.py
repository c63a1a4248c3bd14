"""CTC loss for both modes: `ctc_loss` over the registered `ctc_loss` op (ops/ctc.py)."""
from __future__ import annotations

from typing import Any

from ... import functions as F
from ...dispatch import apply_op, is_tensor

__all__ = ['ctc_loss']

_REDUCTIONS = ("mean", "sum", "none")


def _constant(x: Any) -> Any:
    """x as a value the gradient does not flow through (its value unchanged)."""
    if is_tensor(x):
        return x.detach()
    copy = apply_op("assign", {"X": x})
    copy.stop_gradient = True
    return copy


def ctc_loss(log_probs: Any, labels: Any, input_lengths: Any, label_lengths: Any, blank: int = 0,
             reduction: str = "mean", norm_by_times: bool = False) -> Any:
    """Connectionist temporal classification loss (Paddle 2's signature, PyTorch's values).

    log_probs [T, N, C] (time-major; normalised over C first, as Paddle does, so
    log-probabilities and raw scores both work), labels [N, S] padded, input_lengths and
    label_lengths [N]. reduction 'none' gives the per-sample loss [N]; 'sum' their sum; 'mean'
    divides each by its label length (at least 1) and averages, as PyTorch and Paddle.
    norm_by_times scales the gradient (not the loss) by 1 / input_length, as Paddle's warpctc."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"ctc_loss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    loss, _log_alpha = apply_op("ctc_loss", {"LogProbs": log_probs, "Labels": labels, "InputLengths": input_lengths,
                                             "LabelLengths": label_lengths}, {"blank": int(blank)})
    if norm_by_times:  # value unchanged, gradient divided by the number of frames
        frames = F.cast(apply_op("clip", {"X": F.cast(input_lengths, "float64")},
                                 {"min": 1.0, "max": float("inf")}), loss.dtype)
        scaled = F.divide(loss, frames)
        loss = F.add(scaled, _constant(F.subtract(loss, scaled)))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return F.sum(loss)
    lengths = apply_op("clip", {"X": F.cast(label_lengths, "float64")}, {"min": 1.0, "max": float("inf")})
    return F.mean(F.divide(loss, F.cast(lengths, loss.dtype)))
