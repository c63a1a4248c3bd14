"""PyTorch's spellings of arguments beside Paddle's, shared by the public functions (and through
them the Tensor methods): `dim=` for `axis=` (`start_dim=` / `end_dim=` for flatten's
`start_axis=` / `stop_axis=`), sizes as arguments (`randn(2, 3)`) beside one list
(`randn([2, 3])`), and the creation keywords `device=` and `requires_grad=`.

One place translates them, so `fg.sum(x, dim=1)`, `x.sum(dim=1)` and `F.normalize(x, dim=1)` mean
the same and refuse the same mistakes (an axis given twice, a GPU device)."""
from __future__ import annotations

import functools
import inspect
import numbers
from typing import Any, Callable, Sequence

from .device import as_device
from .runtime_dims import RuntimeDim, TracedSize

# torch's keyword -> Paddle's, wherever the function takes Paddle's
TORCH_KEYWORDS = {"dim": "axis", "start_dim": "start_axis", "end_dim": "stop_axis"}
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def torch_keywords(fn: Callable[..., Any] | None = None, /, **extra: str) -> Any:
    """fn, also taking PyTorch's keyword names (TORCH_KEYWORDS, and `extra` such as dims="axis"
    for flip) for the Paddle parameters it has; the wrapper's signature lists them, so
    `help(fg.sum)` shows dim= and a second wrapping (the Tensor methods) adds nothing. Naming one
    argument both ways (`sum(x, 1, dim=1)`, `sum(x, axis=1, dim=1)`) is a TypeError naming both.
    As a decorator: `@torch_keywords` or `@torch_keywords(dims="axis")`."""
    if fn is None:
        return lambda f: torch_keywords(f, **extra)
    signature = inspect.signature(fn, follow_wrapped=False)   # a torch form over a Paddle function is itself
    params = signature.parameters
    aliases = {torch: paddle for torch, paddle in {**TORCH_KEYWORDS, **extra}.items()
               if paddle in params and torch not in params}
    if not aliases:
        return fn
    order = [name for name, p in params.items() if p.kind in _POSITIONAL]
    position = {paddle: order.index(paddle) if paddle in order else len(order) + 1_000
                for paddle in aliases.values()}
    label = getattr(fn, "__name__", "function")

    @functools.wraps(fn)
    def with_torch_keywords(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for torch_name, name in aliases.items():
                if torch_name in kwargs:
                    if name in kwargs or len(args) > position[name]:
                        raise TypeError(f"{label}: give {name}= or {torch_name}=, not both")
                    kwargs[name] = kwargs.pop(torch_name)
        return fn(*args, **kwargs)

    added = [inspect.Parameter(torch, inspect.Parameter.KEYWORD_ONLY, default=None) for torch in aliases]
    plain = [p for p in params.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
    rest = [p for p in params.values() if p.kind == inspect.Parameter.VAR_KEYWORD]
    with_torch_keywords.__signature__ = signature.replace(parameters=plain + added + rest)  # type: ignore[attr-defined]
    return with_torch_keywords


def _is_int(value: Any) -> bool:
    """An integer size: NumPy's integers too, and an unknown size read while tracing."""
    if isinstance(value, TracedSize):
        return not value.floating
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def sizes_and_dtype(caller: str, args: Sequence[Any], dtype: Any = None, shape: Any = None) -> tuple[Any, Any]:
    """The shape and dtype of a creation call: PyTorch's sizes as arguments (`zeros(2, 3)`: an
    int second argument is a size, never a dtype), or Paddle's one shape (a list, tuple or
    Tensor; also as shape=) and an optional positional dtype (`zeros([2, 3], 'float64')`)."""
    if shape is not None:
        if args:
            raise TypeError(f"{caller}: give the sizes as arguments or as shape=, not both")
        args = (shape,)
    if not args:
        raise TypeError(f"{caller}: give the sizes, as arguments ({caller}(2, 3)) or as one list ({caller}([2, 3]))")
    if all(_is_int(a) for a in args):
        return [a if isinstance(a, (RuntimeDim, TracedSize)) else int(a) for a in args], dtype
    shape, rest = args[0], list(args[1:])
    if _is_int(shape) or len(rest) > 1 or any(_is_int(a) for a in rest):
        raise TypeError(f"{caller}: sizes must be integers, as arguments or as one list; got {tuple(args)!r}")
    if rest:
        if dtype is not None:
            raise TypeError(f"{caller}: dtype given twice ({rest[0]!r} and dtype={dtype!r})")
        dtype = rest[0]
    return shape, dtype


def check_device(caller: str, device: Any) -> None:
    """device= of a creation call: the CPU ('cpu', 'cpu:0', a device object naming it) or None;
    anything else is refused (fluidgrad has no GPU backend)."""
    as_device(device, caller)   # (framework/device.py: the one reading of a device argument)


def created(out: Any, caller: str, device: Any = None, requires_grad: bool = False) -> Any:
    """A freshly created value with PyTorch's creation keywords applied: device= checked,
    requires_grad=True making it a leaf that collects a gradient (float dtypes only, as torch)."""
    check_device(caller, device)
    if requires_grad:
        if str(out.dtype) not in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
            raise TypeError(f"{caller}: only float (or complex) tensors can require a gradient, got {out.dtype}")
        out.stop_gradient = False
    return out
