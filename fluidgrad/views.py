"""PyTorch's views for eager Tensors: `x[0]`, `x.view(3, 2)`, `x.t()`, `x.unsqueeze(0)`,
`x.narrow(...)`, `x.unbind()`, `x.diagonal()`, `x.expand(...)`, `x.detach()` share x's values.

A view holds an array of its own; `_view_of` = (base, how, stamp) says where it came from and the
base keeps its live views (eager/tensor.py, `mark_view`). Two rules keep them in agreement:
- a write into the view (`v[0] = 1`, `v.add_(1)`, `v.copy_(w)`, every in-place method: they all
  end in `finish_write`) is written into the base as the base's new value `how.into_base(base,
  v)`, an ordinary recorded op (set_value, reshape, transpose), so gradients flow as PyTorch's
  CopySlices gives them; and on up a chain of views;
- any change of the base (a write through any view, an in-place method, an optimizer step,
  `x.data` writes) refreshes its views: `how.read(base)`, recorded when the base needs a gradient,
  so a view's history is its base's current one, as PyTorch regenerates a view's grad_fn.
A leaf that requires a gradient refuses writes through its views (PyTorch: "a view of a leaf
Variable that requires grad is being used in an in-place operation"), except under no_grad.

Each `how` has: `base_shape`, `tracks_grad`, `read(base)`, `into_base(base, value)` (None: the
value is written outside autograd, detach's), `check_writable(what)`, `layout(base_layout)` and
`describe()`. `layout` gives a view's strides as PyTorch has them, on an empty stand-in array, so
that `reshape` of a non-contiguous view copies (and `view` refuses) exactly where torch does.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from .dispatch import apply_op
from .eager import Tensor, is_grad_enabled, no_grad
from .eager import tensor as tensor_module
from .eager.mode import state
from .eager.node import Superseded
from .eager.tensor import _record_modification, mark_view, modification_stamp, view_link
from .framework import Variable


def is_eager(value: Any) -> bool:
    return isinstance(value, Tensor)


def mark(out: Any, base: Any, how: Callable[[], Any]) -> Any:
    """`out` as a view of `base`: of eager Tensors here; of a Variable (static or traced code,
    whose base may be a Tensor the trace captured) by `mark_variable`. `how` makes the
    description (only called then). Returns out."""
    if isinstance(out, Tensor) and isinstance(base, Tensor) and state.tracer is None:
        mark_view(out, base, how())
    elif isinstance(out, Variable) and isinstance(base, (Variable, Tensor)) and out is not base:
        mark_variable(out, base, how())
    return out


# ---- views of Variables. A Variable computed by a view op of `base` (a Variable, or while
# tracing a captured Tensor) keeps `_view_of` = (base, how, None) on its Python handle, and the
# base's handle lists it here (weakly); fluidgrad/static_views.py writes through these links
# and refreshes them, as the eager rules above do for Tensors.
_variable_views: dict[int, tuple[weakref.ref, list[weakref.ref]]] = {}


def mark_variable(view: Variable, base: Any, how: Any) -> Variable:
    """`view` (a Variable just computed from `base`) is from now on a view of base (of a Tensor
    only while jit.to_static traces: the trace captured it, and takes its new value)."""
    if isinstance(base, Tensor) and state.tracer is None:
        return view
    view.__dict__["_view_of"] = (base, how, None)
    entry = _variable_views.get(id(base))
    if entry is None or entry[0]() is not base:
        if len(_variable_views) > 4096:   # drop the entries of dead bases (amortised)
            for key in [k for k, (ref, _) in _variable_views.items() if ref() is None]:
                del _variable_views[key]
        entry = (weakref.ref(base), [])
        _variable_views[id(base)] = entry
    entry[1].append(weakref.ref(view))
    return view


def variable_views(base: Any) -> list[Variable]:
    """The live Variable views of `base` (a Variable or a Tensor) that still follow it."""
    entry = _variable_views.get(id(base))
    if entry is None or entry[0]() is not base:
        return []
    found = [(ref, ref()) for ref in entry[1]]
    found = [(ref, v) for ref, v in found if v is not None and (view_link(v) or (None,))[0] is base]
    entry[1][:] = [ref for ref, _ in found]
    return [v for _, v in found]


# ---- writes
def refuse_leaf_update(x: Tensor, what: str) -> None:
    if x._node is None and not x.stop_gradient and is_grad_enabled():
        raise RuntimeError(f"{what} on a leaf Tensor{' ' + x.name if x.name else ''} that requires a gradient: "
                           f"assign inside fluidgrad.no_grad(), or to a copy (x.clone())")


def prepare_write(x: Tensor, what: str) -> Any:
    """Refuse what PyTorch refuses before anything changes; returns x's view link (or None)."""
    refuse_leaf_update(x, what)
    view = view_link(x)
    if view is not None:
        check_view(view, what)
    return view


def check_view(view: tuple, what: str) -> None:
    """A write into a view of `base`: refused into an expanded view (one element in several
    places), or when some base up the chain is a leaf that requires a gradient."""
    base, how, stamp = view
    if modification_stamp(base) != stamp:
        raise RuntimeError(f"{what} into a view {how.describe()} of a tensor{' ' + base.name if base.name else ''} "
                           f"of shape {list(base.shape)} that changed since the view last read it")
    how.check_writable(what)
    if not how.tracks_grad:
        return    # x.detach(): outside autograd, whatever the base is
    parent = view_link(base)
    if parent is not None:
        check_view(parent, what)
    refuse_leaf_update(base, f"{what} into a view {how.describe()} (PyTorch: a view of a leaf Variable that "
                             f"requires grad is being used in an in-place operation)")


def finish_write(x: Tensor, new: Any, view: Any) -> None:
    """x takes `new` (a value computed from x's old one, x's shape) in place; through `view`
    (x's link from `prepare_write`) the base takes it too."""
    take_tensor_value(x, new)
    if view is not None:
        write_back(x, view)


def take_tensor_value(x: Tensor, new: Any) -> None:
    """x's array and graph link become new's; nodes recorded before keep reading the old link."""
    if isinstance(new, Variable):  # jit.to_static traces an in-place update of a captured Tensor (a buffer)
        state.tracer.rebind(x, new)
        return
    if not is_grad_enabled():  # as PyTorch under no_grad: the value changes, the graph link stays
        x._array = new._array
        _record_modification(x)
        return
    moved = (new._node, new._idx, new.stop_gradient) != (x._node, x._idx, x.stop_gradient)
    before = Superseded(x) if moved else None  # what the nodes recorded so far read (x's old link)
    x._array = new._array
    x._node, x._idx, x.stop_gradient = new._node, new._idx, new.stop_gradient
    _record_modification(x, before)


def snapshot(x: Tensor) -> Any:
    """x's value now as a handle of its own, what the op computing x's new value reads (while
    tracing: x itself, which names its current variable)."""
    return x if state.tracer is not None else Tensor(x._array, x.stop_gradient, x._node, x._idx, x.name)


def write_back(x: Tensor, view: tuple, raw: bool = False) -> None:
    """x's new value into its base (and on up a chain of views: x[0][1] = 9); the base's change
    then refreshes its views, x among them. Past a detach (`raw`) only the values change."""
    base, how, _ = view
    parent = view_link(base)
    raw = raw or not how.tracks_grad
    value = snapshot(x)   # (the refresh of x that follows leaves what the op read alone)
    if raw:
        with no_grad():
            new = how.into_base(snapshot(base), value)
        base._array = x._array if new is None else new._array
        _record_modification(base)
    else:
        take_tensor_value(base, how.into_base(snapshot(base), value))
    if parent is not None:
        write_back(base, parent, raw)


def _refresh(base: Tensor, refs: list) -> None:
    """base changed: each live view reads it again (eager/tensor.py calls this with base's weak
    references to its views, which keeps the live ones)."""
    pairs = [(ref, ref()) for ref in refs]
    pairs = [(ref, view) for ref, view in pairs if view is not None and (view_link(view) or (None,))[0] is base]
    refs[:] = [ref for ref, _ in pairs]
    for _, view in pairs:
        how = view._view_of[1]
        if tuple(base.shape) != how.base_shape or base.dtype != view.dtype:  # x.reshape_(), x.set_value of another shape
            view._view_of = None
            continue
        if how.tracks_grad and is_grad_enabled() and not base.stop_gradient:
            take_tensor_value(view, how.read(base))   # the view's history is the base's current one
        else:
            with no_grad():
                view._array = how.read(base)._array
            _record_modification(view)
        view._view_of = (view._view_of[0], how, modification_stamp(base))


def _written_outside_autograd(x: Tensor) -> None:
    """set_value / an optimizer step / `x.data` writes into a view reach its base, values only."""
    _record_modification(x)
    view = view_link(x)
    if view is not None:
        write_back(x, view, raw=True)


tensor_module.refresh_views = _refresh
tensor_module.written_outside_autograd = _written_outside_autograd


# ---- layouts: strides as PyTorch has them, to tell a view from a copy
_BYTE = np.zeros(1, dtype=np.uint8)


def _contiguous(shape: tuple) -> np.ndarray:
    shape = tuple(2 if size < 0 else int(size) for size in shape)   # a size known only at run time: any above 1
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return np.lib.stride_tricks.as_strided(_BYTE, shape, tuple(reversed(strides)), writeable=False)


def layout(x: Tensor) -> np.ndarray:
    """An array with x's shape and x's strides in PyTorch (in elements) that holds nothing: a
    tensor of its own is contiguous, a view has the strides its view ops give."""
    view = view_link(x)
    if view is None:
        return _contiguous(tuple(x.shape))
    base, how, _ = view
    return how.layout(layout(base))


def reshaped_layout(base_layout: np.ndarray, shape: tuple) -> np.ndarray | None:
    """The layout of a reshape that is a view (PyTorch's computeStride, NumPy's no-copy
    reshape), or None when only a copy can have that shape."""
    try:
        return np.reshape(base_layout, shape, copy=False)
    except ValueError:
        return None


def is_contiguous(x: Any) -> bool:
    """Whether x's elements lie in row-major order in its storage (a transpose's do not)."""
    return not isinstance(x, (Tensor, Variable)) or view_link(x) is None or bool(layout(x).flags.c_contiguous)


# ---- the ways of being a view (basic indexing: indexing.Indexed; detach: eager/tensor.py Detached;
# diagonal: tensor/diagonals.py)
class _How:
    tracks_grad = True

    def __init__(self, base: Tensor) -> None:
        self.base_shape = tuple(base.shape)

    def check_writable(self, what: str) -> None:
        pass


class Reshaped(_How):
    """x.view / reshape / flatten / unflatten / view_as / squeeze / unsqueeze: the same elements
    in the same order, another shape."""

    def __init__(self, base: Tensor, shape: tuple, name: str) -> None:
        super().__init__(base)
        self.shape, self.name = tuple(shape), name

    def read(self, base: Any) -> Any:
        return apply_op("reshape", {"X": base}, {"shape": list(self.shape)})

    def into_base(self, base: Any, value: Any) -> Any:
        return apply_op("reshape", {"X": value}, {"shape": list(self.base_shape)})

    def layout(self, base_layout: np.ndarray) -> np.ndarray:
        return np.reshape(base_layout, self.shape, copy=False)

    def describe(self) -> str:
        return f"x.{self.name}({', '.join(map(str, self.shape))})"


class Permuted(_How):
    """x.t() / x.T / x.mT / transpose / permute / swapaxes / movedim: the axes reordered."""

    def __init__(self, base: Tensor, perm: list[int], name: str) -> None:
        super().__init__(base)
        self.perm, self.name = [int(p) % max(len(perm), 1) for p in perm], name

    def read(self, base: Any) -> Any:
        return apply_op("transpose", {"X": base}, {"perm": self.perm})

    def into_base(self, base: Any, value: Any) -> Any:
        return apply_op("transpose", {"X": value}, {"perm": [int(p) for p in np.argsort(self.perm)]})

    def layout(self, base_layout: np.ndarray) -> np.ndarray:
        return base_layout.transpose(self.perm)

    def describe(self) -> str:
        return f"x.{self.name}({self.perm})"


class Expanded(_How):
    """x.expand / broadcast_to / expand_as: reads follow x; a write is refused where an element
    of x appears in several places (PyTorch refuses it too), else reaches x."""

    def __init__(self, base: Tensor, shape: tuple) -> None:
        super().__init__(base)
        self.shape = tuple(shape)
        lead = len(self.shape) - len(self.base_shape)
        self.repeats = any(size > 1 for size in self.shape[:lead]) or \
            any(b == 1 and s > 1 for b, s in zip(self.base_shape, self.shape[lead:]))

    def read(self, base: Any) -> Any:
        return apply_op("expand", {"X": base}, {"shape": list(self.shape)})

    def into_base(self, base: Any, value: Any) -> Any:
        return apply_op("reshape", {"X": value}, {"shape": list(self.base_shape)})

    def check_writable(self, what: str) -> None:
        if self.repeats:
            raise RuntimeError(f"{what} into {self.describe()}: unsupported operation: more than one element of the "
                               f"written-to tensor refers to a single memory location (an expanded view repeats x's "
                               f"elements). Write into a copy (clone()) instead, as PyTorch asks")

    def layout(self, base_layout: np.ndarray) -> np.ndarray:
        return np.broadcast_to(base_layout, self.shape)

    def describe(self) -> str:
        return f"x.expand({', '.join(map(str, self.shape))}) of x of shape {list(self.base_shape)}"


def reshape_view(x: Any, out: Any, name: str) -> Any:
    """out (x reshaped) as a view of x where PyTorch's is one; of a view whose elements are out
    of row-major order (a transpose, a strided slice) a copy, as torch's reshape / flatten give
    (torch's view refuses there: tensor/torch_methods.py)."""
    if isinstance(out, Variable) and isinstance(x, (Variable, Tensor)) and out is not x:
        if view_link(x) is not None and reshaped_layout(layout(x), tuple(out.shape)) is None:
            return out
        return mark_variable(out, x, Reshaped(x, tuple(out.shape), name))
    if not (isinstance(out, Tensor) and isinstance(x, Tensor)) or state.tracer is not None:
        return out
    if view_link(x) is not None and reshaped_layout(layout(x), tuple(out.shape)) is None:
        return out
    return mark_view(out, x, Reshaped(x, tuple(out.shape), name))
