"""Tensor: a NumPy array plus what define-by-run autograd needs to know about it.

The array is the slot `_array` (fluidgrad's own code reads it there; users read `numpy()`);
`x.data` is PyTorch's: a `DataView`, a Tensor sharing x's value outside autograd.

A Tensor is either a leaf (`_node is None`: made by `to_tensor`, a parameter, or any op run
while nothing needed a gradient) or the `_idx`-th output of the recorded `Node` `_node`.
The node keeps the input Tensors and the output *arrays*, never the output Tensors, so a
graph is freed by reference counting as soon as its last output dies.

Tensor's operators and `backward()` run through the op application (apply.py) and the
engine (engine.py), which both build Tensors and so import this module; they hand their
entry points to `install_engine` when the eager package is imported.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Any, Callable

import numpy as np

from ..framework.dtypes import carries_gradient, get_default_dtype
from ..framework.math_mixin import MathMixin
from ..framework.variable import ElementCount, TorchHabits, Variable, normalize_dtype
from .mode import state
from .node import next_seq

# the entry points of apply.py and engine.py (see install_engine)
apply_binary: Callable[..., Any]
apply_unary: Callable[..., Any]
_eager_apply: Callable[..., Any]
_backward: Callable[..., Any]


def install_engine(binary: Callable[..., Any], unary: Callable[..., Any], apply: Callable[..., Any],
                   backward: Callable[..., Any]) -> None:
    """Called once by `fluidgrad.eager`: how Tensor's operators and `backward()` run."""
    global apply_binary, apply_unary, _eager_apply, _backward
    apply_binary, apply_unary, _eager_apply, _backward = binary, unary, apply, backward

# In-place updates (`set_value`) of live tensors: id -> (weak reference, creation stamp of the
# update). A node older than the update that saved the tensor would compute its gradient from
# the new value; the grad builder checks this table (only when it is not empty) and says so.
modified_tensors: dict[int, tuple[Any, int]] = {}


# Live tensors whose graph link an in-place update moved (`x[i] = v` moves x to the new
# set_value node): id -> (weak reference, [(creation stamp of the update, the link before it as
# a `Superseded`), ...] oldest first). A node recorded before an update reads the link that was
# current then (PyTorch's edges): the engine swaps it in (`engine.relink_superseded`) only when
# this table is not empty, so the per-op path pays nothing.
relinked: dict[int, tuple[Any, list]] = {}


def _record_modification(tensor: "Tensor", before: Any = None) -> None:
    """Note that `tensor`'s value changed in place now; `before` (a `Superseded`) when its graph
    link changed too."""
    key = id(tensor)
    stamp = next_seq()
    entry = modified_tensors.get(key)
    if entry is not None and entry[0]() is tensor:  # updated before (every optimizer step): same weak reference
        modified_tensors[key] = (entry[0], stamp)
    else:
        modified_tensors[key] = (weakref.ref(tensor, lambda _, key=key, table=modified_tensors: table.pop(key, None)), stamp)
    if before is not None:
        entry = relinked.get(key)
        if entry is None or entry[0]() is not tensor:
            entry = relinked[key] = (weakref.ref(tensor, lambda _, key=key, table=relinked: table.pop(key, None)), [])
        before.stamp = stamp
        entry[1].append((stamp, before))
    views = getattr(tensor, "_views", None)
    if views:
        refresh_views(tensor, views)


def modification_stamp(tensor: "Tensor") -> Any:
    """The creation stamp of tensor's last in-place update (None when there was none)."""
    entry = modified_tensors.get(id(tensor))
    return entry[1] if entry is not None and entry[0]() is tensor else None


# ---- views (PyTorch's: x.view, x.t(), x[0], x.detach(), ... share x's storage). A view holds
# an array of its own; `_view_of` = (base, how, base's modification stamp) says where it came
# from, and the base keeps its live views (`_views`, weak). A write into the view is written into
# the base (fluidgrad/views.py: `how.into_base`), and any change of the base refreshes its views
# (`refresh_views`, which fluidgrad/views.py installs: `how.read`), so both always agree.
def refresh_views(tensor: "Tensor", views: Any) -> None:
    raise RuntimeError("a tensor with views changed before fluidgrad.views was imported (import fluidgrad)")


def written_outside_autograd(tensor: "Tensor") -> None:
    """tensor's array was replaced outside autograd (set_value, an optimizer step, x.data writes):
    note it, and (fluidgrad/views.py) pass it on to the tensor it is a view of."""
    _record_modification(tensor)


def mark_view(view: "Tensor", base: "Tensor", how: Any) -> "Tensor":
    """`view` (a Tensor just computed from `base`) is from now on a view of base (see above);
    `how` says how (fluidgrad/views.py, `Indexed` in fluidgrad/indexing.py, `Detached`)."""
    # x.detach() keeps no strong hold on x: `losses.append(loss.detach())` must not keep loss's graph
    view._view_of = (base if how.tracks_grad else weakref.ref(base), how, modification_stamp(base))
    views = getattr(base, "_views", None)
    if views is None:
        base._views = [weakref.ref(view)]
    else:
        views.append(weakref.ref(view))
        if not len(views) & 63:    # every 64 views made: drop the dead ones (amortised)
            views[:] = [ref for ref in views if ref() is not None]
    return view


def view_link(tensor: Any) -> tuple | None:
    """(base, how, stamp) when tensor is a view of a live base, else None."""
    link = getattr(tensor, "_view_of", None)
    if link is None or not isinstance(link[0], weakref.ref):
        return link
    base = link[0]()
    return None if base is None else (base, link[1], link[2])


def unlink_views(tensor: "Tensor") -> None:
    """tensor's views keep their values and stop following it (after `x.data = y`, as PyTorch's
    views keep the storage x had)."""
    for ref in getattr(tensor, "_views", None) or ():
        view = ref()
        link = view_link(view)
        if link is not None and link[0] is tensor:
            view._view_of = None
    tensor._views = None


class Detached:
    """How `x.detach()` is a view of x: the same values outside autograd; a write into it changes
    x's values without touching x's graph (PyTorch's detach shares the storage)."""

    tracks_grad = False

    def __init__(self, base: "Tensor") -> None:
        self.base_shape = tuple(base.shape)

    def read(self, base: "Tensor") -> "Tensor":
        return Tensor(base._array, True)

    def into_base(self, base: "Tensor", value: "Tensor") -> None:
        return None     # written as it is, outside autograd

    def check_writable(self, what: str) -> None:
        pass

    def layout(self, base_layout: np.ndarray) -> np.ndarray:
        return base_layout

    def describe(self) -> str:
        return "x.detach()"


_retaining: dict[int, Any] = {}   # id -> weak reference: intermediates whose .grad is kept (retain_grads)


class Tensor(MathMixin, TorchHabits):
    """An eager value. `stop_gradient=False` asks for its gradient (`.grad` after backward)."""

    # _param_attr: a parameter's optimizer options (ParamAttr.optimize_options), unset for others;
    # _view_of: (base, how, base's modification stamp) for a view (x[0], x.t(), x.view(...), see
    # mark_view), else None; _views: weak references to the views of this tensor, or None.
    # (Subclasses made without __init__ may leave them unset: read them with getattr(t, ..., None))
    __slots__ = ("_array", "stop_gradient", "_grad", "_node", "_idx", "name", "_hooks", "persistable", "_param_attr",
                 "_view_of", "_views", "__weakref__")

    def __init__(self, data: np.ndarray, stop_gradient: bool = True, node: Any = None, idx: int = 0,
                 name: str | None = None) -> None:
        self._array = data
        self.stop_gradient = stop_gradient
        self.grad = None
        self._node = node
        self._idx = idx
        self.name = name
        self._hooks = None
        self.persistable = False  # True for a Layer's parameters and buffers
        self._param_attr = None
        self._view_of = None
        self._views = None

    def __getstate__(self) -> tuple:
        """A copy (copy.deepcopy, pickle) is a tensor of its own: not a view, without views."""
        slots = {name: getattr(self, name) for cls in type(self).__mro__ for name in getattr(cls, "__slots__", ())
                 if name != "__weakref__" and hasattr(self, name)}
        slots["_view_of"] = slots["_views"] = None
        return getattr(self, "__dict__", None) or None, slots

    @property
    def grad(self) -> "Tensor | None":
        """The gradient backward() accumulated. A non-leaf keeps none unless retain_grad() asked
        for it: reading it then warns, as PyTorch (None there is almost always a mistake)."""
        grad = self._grad
        if grad is None and self._node is not None and not self.stop_gradient and not self.retains_grad:
            warnings.warn(f"The .grad of a Tensor that is not a leaf (shape {list(self._array.shape)}, made by "
                          f"{getattr(self._node.call, 'type', 'an op')}) is not populated by backward(): call "
                          f".retain_grad() on it before backward() to keep it, or read the .grad of the leaf "
                          f"Tensor instead", UserWarning, stacklevel=2)
        return grad

    @grad.setter
    def grad(self, value: "Tensor | None") -> None:
        self._grad = value

    @property
    def trainable(self) -> bool:
        """Paddle 2's flag on a parameter: `trainable = False` freezes it (stop_gradient=True: no
        gradient, so no optimizer update)."""
        return not self.stop_gradient

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self.stop_gradient = not bool(value)

    # ---- what it holds
    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def dtype(self) -> str:
        return self._array.dtype.name

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> ElementCount:
        """Paddle's element count, also callable as PyTorch's x.size() / x.size(d) (ElementCount)."""
        return ElementCount(self._array.shape)

    # ---- PyTorch's x.data
    @property
    def data(self) -> "Tensor":
        """PyTorch's x.data: a Tensor sharing x's value, cut from the graph. It reads x's current
        value, and a write into it (`p.data.copy_(q)`, `p.data.mul_(0.99).add_(q)`,
        `p.data[0] = 0`) changes x without recording anything for backward, as in PyTorch (a
        backward that needs x's old value still refuses: see `modified_tensors`). The array
        itself is `numpy()`."""
        return _data_view(self)

    @data.setter
    def data(self, value: Any) -> None:
        """`p.data = t` (PyTorch): p takes t's value, shape and dtype outside autograd (an array
        is copied; a Tensor's value is shared, as its storage in PyTorch)."""
        if isinstance(value, Variable):
            raise TypeError(f"x.data = v: got the static Variable {value.name}; pass a Tensor or an array")
        array = value._array if isinstance(value, Tensor) else np.array(value)
        normalize_dtype(array.dtype)  # reject object/str arrays with a clear error
        if not self.stop_gradient and not carries_gradient(array.dtype):
            raise TypeError(f"x.data = v: tensor {self.name or ''} requires a gradient, so its value must be a float "
                            f"array, got {array.dtype}")
        unlink_views(self)   # (PyTorch: x now has t's storage; x's views keep the old one, x is no view)
        self._view_of = None
        self._array = array
        _record_modification(self)

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    def numpy(self) -> np.ndarray:
        """The array itself, or for a tensor that requires grad a read-only view (PyTorch refuses
        .numpy() there): no copy on the hot path, yet a write raises instead of silently changing
        the tensor and the values a graph saved for backward."""
        if self.stop_gradient:
            return self._array
        view = self._array.view()
        view.flags.writeable = False
        return view

    def item(self) -> Any:
        """The one value of a one-element tensor, as a Python number."""
        if self._array.size != 1:
            raise ValueError(f"Tensor.item: only a one-element tensor has an item; this one has shape "
                             f"{list(self._array.shape)}")
        return self._array.item()

    def tolist(self) -> Any:
        return self._array.tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._array if dtype is None else self._array.astype(dtype)

    def __len__(self) -> int:
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-D tensor")
        return self._array.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        if self._array.size != 1:   # NumPy's message names neither a Tensor nor its shape
            raise RuntimeError(f"bool() of a Tensor with {'no values' if self._array.size == 0 else 'more than one value'}"
                               f" is ambiguous: this Tensor has shape {list(self._array.shape)}; use .any() or "
                               f".all(), or compare one element")
        return bool(self._array)

    def __float__(self) -> float:
        return float(self._one_value("float"))

    def __int__(self) -> int:
        return int(self._one_value("int"))

    def __index__(self) -> int:
        if self._array.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self._one_value("index"))

    def __format__(self, spec: str) -> str:
        """f"{loss:.4f}" formats a one-element tensor's value, as PyTorch does for 0-D ones."""
        if spec and self._array.size == 1:
            return format(self._array.item(), spec)
        return super().__format__(spec)

    def _one_value(self, what: str):
        if self._array.size != 1:
            raise TypeError(f"{what}() takes a tensor of one element, got shape {list(self.shape)}")
        return self._array.item()

    def __repr__(self) -> str:
        body = np.array2string(self._array, prefix="       ", separator=", ")
        return (f"Tensor(shape={list(self.shape)}, dtype={self.dtype}, "
                f"stop_gradient={self.stop_gradient},\n       {body})")

    # ---- autograd
    def backward(self, grad_tensor: Any = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad` (ones as the seed by default)."""
        _backward([self], None if grad_tensor is None else [grad_tensor], retain_graph)

    def detach(self) -> "Tensor":
        """The same values, cut from the graph: a view (PyTorch's), so a write into either is
        seen by the other; a write into it changes this tensor's values, not its graph."""
        return mark_view(Tensor(self._array, True, name=self.name), self, Detached(self))

    def detach_(self) -> "Tensor":
        """PyTorch's in-place detach: this tensor leaves the graph (a leaf without a gradient)."""
        self._node, self._idx, self.stop_gradient = None, 0, True
        return self

    @property
    def grad_fn(self) -> Any:
        """The recorded op that made this tensor (its graph node), None for a leaf, as PyTorch's
        `x.grad_fn is None` tests."""
        return self._node

    @property
    def retains_grad(self) -> bool:
        """Whether retain_grads() keeps this intermediate tensor's gradient."""
        entry = _retaining.get(id(self))
        return entry is not None and entry() is self

    def clear_grad(self) -> None:
        self.grad = None

    clear_gradient = clear_grad

    def gradient(self) -> np.ndarray | None:
        """Paddle's spelling: the gradient as an array."""
        return None if self.grad is None else self.grad._array

    def register_hook(self, hook: Callable[["Tensor"], "Tensor | None"]) -> "HookHandle":
        """Call `hook(grad)` when this tensor's gradient is computed; a returned Tensor replaces it."""
        if self.stop_gradient:
            raise RuntimeError("register_hook: cannot hook a tensor with stop_gradient=True")
        if self._node is not None:
            hooks = self._node.hooks
            if hooks is None:
                hooks = self._node.hooks = {}
            hook_list = hooks.setdefault(self._idx, [])
        else:
            if self._hooks is None:
                self._hooks = []
            hook_list = self._hooks
        hook_list.append(hook)
        return HookHandle(hook_list, hook)

    def retain_grads(self) -> None:
        """Keep this intermediate tensor's gradient in `.grad` after backward (accumulated across
        calls, as a leaf's), as PyTorch's and Paddle's retain_grads; a leaf keeps it anyway."""
        key = id(self)
        entry = _retaining.get(key)
        if self.stop_gradient:
            raise RuntimeError("retain_grads: this tensor does not require a gradient (stop_gradient=True)")
        if self._node is None or (entry is not None and entry() is self):
            return
        owner = _retaining[key] = weakref.ref(self, lambda _, key=key: _retaining.pop(key, None))

        def keep(grad: "Tensor") -> None:
            tensor = owner()
            if tensor is not None:
                kept = Tensor(grad._array, True)
                tensor.grad = kept if tensor.grad is None else Tensor(tensor.grad._array + grad._array, True)

        self.register_hook(keep)

    retain_grad = retain_grads   # PyTorch's spelling

    # ---- values
    def set_value(self, value: Any) -> None:
        """Replace the array (same shape; cast to this tensor's dtype) with a copy of `value`, as
        Paddle's set_value and PyTorch's copy_ do: the caller may reuse its buffer (loading weights
        through one array). Updates that make a fresh array use `_take_array`, without the copy.
        """
        if isinstance(value, Variable):
            if state.tracer is None:
                raise TypeError(f"set_value: got the static Variable {value.name}; pass an array or a Tensor")
            state.tracer.write(self, value)  # jit.to_static: copied in after each run
            return
        array = np.asarray(value._array if isinstance(value, Tensor) else value)
        self._take_array(np.array(array, dtype=self._array.dtype, copy=True), "set_value")

    def _take_array(self, array: np.ndarray, what: str = "set_value") -> None:
        """`array` (of this shape and dtype, made for this tensor, e.g. an optimizer update) becomes
        the value, without a copy."""
        if type(array) is not np.ndarray:   # NumPy's arithmetic on 0-d arrays gives scalars
            array = np.asarray(array)
        if array.shape != self._array.shape:
            raise ValueError(f"{what}: tensor {self.name or ''} has shape {list(self.shape)}, "
                             f"the new value has shape {list(array.shape)}")
        self._array = array if array.dtype == self._array.dtype else array.astype(self._array.dtype)
        written_outside_autograd(self)

    def clone(self) -> "Tensor":
        return apply_unary("scale", self, {"scale": 1.0, "bias": 0.0, "bias_after_scale": True})

    def astype(self, dtype: Any) -> "Tensor":
        """This tensor cast to `dtype` (a recorded `cast` op: the gradient flows back through it)."""
        return _eager_apply("cast", {"X": self}, {"dtype": normalize_dtype(dtype)})

    # ---- operators: a Tensor-with-Tensor or float-Tensor-with-number operation goes straight
    # to the engine (same ops and attributes as fluidgrad.functions, fewer Python layers). A
    # number meeting a bool or integer Tensor may change the dtype (framework/dtypes.py), so
    # that case goes through fluidgrad.functions.
    def __add__(self, other):
        kind = type(other)
        if kind is Tensor:
            return apply_binary("elementwise_add", self, other)
        if (kind is float or kind is int) and self._array.dtype.kind == "f":
            return apply_unary("scale", self, {"scale": 1.0, "bias": float(other), "bias_after_scale": True})
        return MathMixin.__add__(self, other)

    def __radd__(self, other):
        kind = type(other)
        if (kind is float or kind is int) and self._array.dtype.kind == "f":
            return apply_unary("scale", self, {"scale": 1.0, "bias": float(other), "bias_after_scale": True})
        return MathMixin.__radd__(self, other)

    def __sub__(self, other):
        kind = type(other)
        if kind is Tensor:
            return apply_binary("elementwise_sub", self, other)
        if (kind is float or kind is int) and self._array.dtype.kind == "f":
            return apply_unary("scale", self, {"scale": 1.0, "bias": -float(other), "bias_after_scale": True})
        return MathMixin.__sub__(self, other)

    def __rsub__(self, other):
        kind = type(other)
        if (kind is float or kind is int) and self._array.dtype.kind == "f":
            return apply_unary("scale", self, {"scale": -1.0, "bias": float(other), "bias_after_scale": True})
        return MathMixin.__rsub__(self, other)

    def __mul__(self, other):
        kind = type(other)
        if kind is Tensor:
            return apply_binary("elementwise_mul", self, other)
        if (kind is float or kind is int) and self._array.dtype.kind == "f":
            return apply_unary("scale", self, {"scale": float(other), "bias": 0.0, "bias_after_scale": True})
        return MathMixin.__mul__(self, other)

    def __rmul__(self, other):
        kind = type(other)
        if (kind is float or kind is int) and self._array.dtype.kind == "f":
            return apply_unary("scale", self, {"scale": float(other), "bias": 0.0, "bias_after_scale": True})
        return MathMixin.__rmul__(self, other)

    def __truediv__(self, other):
        kind = type(other)
        if kind is Tensor:
            return apply_binary("elementwise_div", self, other)
        if (kind is float or kind is int) and self._array.dtype.kind == "f" and other:
            return apply_unary("scale", self, {"scale": 1.0 / float(other), "bias": 0.0, "bias_after_scale": True})
        return MathMixin.__truediv__(self, other)

    def __neg__(self):
        return apply_unary("scale", self, {"scale": -1.0, "bias": 0.0, "bias_after_scale": True})

    __hash__ = MathMixin.__hash__


_new = object.__new__


class DataView(Tensor):
    """`x.data` (see Tensor.data): a Tensor with no value of its own, reading and writing x's;
    a write records x's modification. An op taking it as input keeps a plain Tensor of the value
    it read (eager/apply.py), so a later change of x cannot reach a recorded gradient."""

    __slots__ = ("_base",)

    @property  # type: ignore[override]
    def _array(self) -> np.ndarray:
        return self._base._array

    @_array.setter
    def _array(self, array: np.ndarray) -> None:
        base = self._base
        base._array = array
        written_outside_autograd(base)

    def snapshot(self) -> Tensor:
        """A plain Tensor of the current value with this view's graph link (what a node keeps)."""
        return Tensor(self._base._array, self.stop_gradient, self._node, self._idx, self.name)

    # Tensor's fast operator paths hand their operands to the node as they are: a view takes the
    # ordinary path, whose op application keeps a snapshot
    __add__, __radd__, __sub__, __rsub__ = MathMixin.__add__, MathMixin.__radd__, MathMixin.__sub__, MathMixin.__rsub__
    __mul__, __rmul__, __truediv__, __neg__ = MathMixin.__mul__, MathMixin.__rmul__, MathMixin.__truediv__, MathMixin.__neg__
    __hash__ = MathMixin.__hash__


def _data_view(tensor: Tensor) -> DataView:
    view = _new(DataView)
    view._base = tensor
    view.stop_gradient = True
    view.grad = None
    view._node = None
    view._idx = 0
    view.name = tensor.name
    view._hooks = None
    view.persistable = False
    view._param_attr = None
    view._view_of = None
    view._views = None
    return view


def op_output(data: np.ndarray, stop_gradient: bool = True, node: Any = None, idx: int = 0) -> Tensor:
    """`Tensor(data, stop_gradient, node, idx)` for an op's output, made without the class call:
    a class with an `__init__` costs a C-level re-entry of the interpreter that a plain function
    does not, and this runs for every eager op. It sets exactly what `Tensor.__init__` sets."""
    tensor = _new(Tensor)
    tensor._array = data
    tensor.stop_gradient = stop_gradient
    tensor.grad = None
    tensor._node = node
    tensor._idx = idx
    tensor.name = None
    tensor._hooks = None
    tensor.persistable = False
    tensor._param_attr = None
    tensor._view_of = None
    tensor._views = None
    return tensor


class HookHandle:
    """Returned by `register_hook`; `remove()` takes the hook off again."""

    def __init__(self, hooks: list, hook: Callable) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _holds_float64_arrays(data: Any) -> bool:
    """Whether a (nested) list holds float64 Tensors or arrays: their dtype is kept, as torch.tensor
    keeps it (only Python floats take the default dtype)."""
    if isinstance(data, (list, tuple)):
        return any(_holds_float64_arrays(item) for item in data)
    if isinstance(data, Tensor):
        data = data._array
    return isinstance(data, (np.ndarray, np.generic)) and data.dtype == np.float64


def _described(data: Any) -> str:
    text = repr(data)
    return f"a {type(data).__name__} ({text if len(text) <= 60 else text[:57] + '...'})"


def _data_array(data: Any, dtype: Any = None) -> np.ndarray:
    """np.array(data) (then of `dtype`: None in a list is no NaN), its errors (ragged rows, values of no
    number type) naming to_tensor and the data."""
    try:
        array = np.array(data)
        return array if dtype is None or array.dtype.kind in "OUSV" else array.astype(dtype, copy=False)
    except (ValueError, TypeError) as error:
        raise type(error)(f"to_tensor: cannot make a tensor of {_described(data)}: "
                          + (_ragged_at(data) or str(error))) from error


def _ragged_at(data: Any, depth: int = 0) -> str | None:
    """Where nested lists stop being rectangular, in torch's words; None if they are not ragged."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    lengths = [len(item) if isinstance(item, (list, tuple)) else None for item in data]
    if len(set(lengths)) > 1:
        first = lengths[0]
        bad = next(n for n in lengths if n != first)
        return (f"expected sequence of length {first} at dim {depth + 1} (got {bad})" if None not in (first, bad)
                else f"a mix of sequences and numbers at dim {depth + 1} (rows of different lengths)")
    for item in data:
        found = _ragged_at(item, depth + 1)
        if found:
            return found
    return None


def to_tensor(data: Any, dtype: Any = None, place: Any = None, stop_gradient: bool = True) -> Tensor:
    """A new leaf Tensor holding a copy of `data` (a list, number, array or Tensor).

    Python floats become the default dtype (float32 unless `set_default_dtype` changed it, as
    Paddle's); NumPy arrays keep their dtype, and so do float64 Tensors or arrays inside a list.
    """
    if isinstance(data, Tensor):
        data = data._array
    if dtype is not None:
        array = np.array(data, dtype=normalize_dtype(dtype)) if isinstance(data, np.ndarray) \
            else _data_array(data, normalize_dtype(dtype))
    elif isinstance(data, np.ndarray):
        array = data.copy()
    else:
        array = _data_array(data)
        if array.dtype == np.float64 and not isinstance(data, np.generic) and not _holds_float64_arrays(data):
            default = get_default_dtype()
            array = array.astype(np.float32) if default == "float32" else array.astype(normalize_dtype(default))
    if array.dtype.kind in "OUSV" and not isinstance(data, np.ndarray):
        raise TypeError(f"to_tensor: cannot make a tensor of {_described(data)}; give a number, a (nested) list "
                        "of numbers, a NumPy array or a Tensor")
    normalize_dtype(array.dtype)  # reject object/str arrays with a clear error
    if not stop_gradient and not carries_gradient(array.dtype):
        raise TypeError(f"to_tensor: a {array.dtype} tensor cannot have a gradient (stop_gradient=False); "
                        f"only float tensors can (or complex ones), so pass dtype='float32' or 'float64'")
    return Tensor(array, bool(stop_gradient))
