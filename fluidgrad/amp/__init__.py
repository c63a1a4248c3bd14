"""Mixed precision (paddle.amp, torch.amp): `auto_cast` runs matrix products and convolutions in
float16 / bfloat16 and keeps numerically dangerous ops in float32 (Paddle's O1 lists, lists.py);
`GradScaler` scales the loss so small float16 gradients do not underflow, and skips the steps
whose gradients overflowed. On the CPU NumPy computes float16 no faster than float32: what this
gives is the numerics of a mixed-precision run, and the training loop of one.

    with fluidgrad.amp.auto_cast():
        loss = model(x)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""
from .auto_cast import amp_guard, amp_state, auto_cast, autocast
from .decorate import decorate
from .grad_scaler import AmpScaler, GradScaler
from .lists import black_list, white_list

__all__ = ["AmpScaler", "GradScaler", "amp_guard", "amp_state", "auto_cast", "autocast", "black_list", "decorate",
           "is_bfloat16_supported", "is_float16_supported", "white_list"]


def is_float16_supported(device: str | None = None) -> bool:
    """Whether ops run in float16 here: NumPy computes float16 on the CPU."""
    return True


def is_bfloat16_supported(device: str | None = None) -> bool:
    """Whether ops run in bfloat16 here (fluidgrad's bfloat16 dtype, computed through float32)."""
    return True
