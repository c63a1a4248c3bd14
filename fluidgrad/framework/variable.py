"""Variables: named, typed slots in a Block. They hold no data; a Scope does."""
from __future__ import annotations

import sys
from typing import Any, Sequence

from . import math_mixin, runtime_dims
from .device import CPU, CPUPlace, as_device, names_a_device
from .dtypes import ALL_DTYPES, EXTENSION_DTYPES, FLOAT_DTYPES, has_gradients, require_extension_dtype
from .math_mixin import MathMixin

DTYPES = ALL_DTYPES


_PLAIN_DTYPES = frozenset(DTYPES) - EXTENSION_DTYPES  # names that are already normal, no import needed


def normalize_dtype(dtype: Any) -> str:
    """Accept "float32", numpy dtypes and numpy scalar types; return the name string."""
    if dtype.__class__ is str and dtype in _PLAIN_DTYPES:
        return dtype
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
    name = {"float": "float64", "int": "int64", "bool_": "bool"}.get(name, name)
    if name not in DTYPES:
        raise TypeError(f"unsupported dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    require_extension_dtype(name)
    return name


def names_a_dtype(value: Any) -> bool:
    """Whether `value` is something normalize_dtype accepts (a dtype, or a device, in `x.to(...)`)."""
    try:
        normalize_dtype(value)
    except (TypeError, ValueError):
        return False
    return True


def is_float_dtype(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


class ElementCount(int):
    """`x.size`: Paddle's element count (an int: `x.size == 6`, `x.size * 2`), also callable as
    PyTorch's method: `x.size()` is the shape (a tuple, as torch.Size) and `x.size(d)` the size of
    axis d. Both spellings give the right answer; no int is callable otherwise, so nothing
    ambiguous is accepted."""

    def __new__(cls, shape: Sequence[int]) -> "ElementCount":
        count = 1
        for d in shape:
            count *= int(d)
        value = super().__new__(cls, count)
        value.shape = tuple(int(d) for d in shape)
        return value

    def __call__(self, dim: int | None = None) -> Any:
        if dim is None:
            return self.shape
        rank = len(self.shape)
        if not -rank <= int(dim) < rank:
            raise IndexError(f"size({dim}): axis out of range for shape {list(self.shape)} (rank {rank})")
        return self.shape[int(dim)]

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self) -> Any:
        return int, (int(self),)   # pickles (and deep-copies) as the plain count


class UnknownElementCount:
    """`x.size` of a Variable with a dimension known only at run time: PyTorch's x.size() (the
    shape, -1 where unknown) and x.size(d) (-1 when axis d is unknown, as x.shape[d]; while
    jit.to_static traces, the same TracedSize, so `x.view(x.size(0), -1)` reshapes at run time)
    work; using it as Paddle's element
    count (a number) is a TypeError, since that count does not exist yet."""

    __slots__ = ("shape", "name")

    def __init__(self, shape: Sequence[int], name: str) -> None:
        self.shape, self.name = tuple(shape), name   # (while tracing, x.size(0) reads as x.shape[0])

    def __call__(self, dim: int | None = None) -> Any:
        return ElementCount.__call__(self, dim)  # type: ignore[arg-type]

    def _refuse(self, *_: Any) -> Any:
        raise TypeError(f"size of variable {self.name} with shape {list(self.shape)} is only known when the program "
                        f"runs (x.size(d) and x.shape[d] give an axis' size, -1 when unknown)")

    __int__ = __index__ = __float__ = __bool__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = _refuse
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"size(unknown: shape {list(self.shape)})"


class TorchHabits:
    """PyTorch's device and gradient-flag spellings, the same on static Variables and eager
    Tensors: `.device` (and Paddle's `.place`), `.cpu()`, `.to("float64")` / `.to("cpu")` /
    `.to(x.device)` / `.to(other)`, `.is_cuda`, `requires_grad`, `requires_grad_()`."""
    __slots__ = ()

    @property
    def device(self) -> CPUPlace:
        """Where the value lives: the CPU (fluidgrad's only device), which every device= argument
        takes back (`fg.zeros(n, device=x.device)`, `layer.to(x.device)`)."""
        return CPU

    place = device   # Paddle's name
    is_cuda = False
    is_cpu = True

    def get_device(self) -> int:
        """torch's x.get_device(): -1, the CPU."""
        return -1

    def cpu(self) -> Any:
        """This value: fluidgrad runs on the CPU only."""
        return self

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """torch's forms: `.to("float64")` / `.to(dtype=...)` casts like `astype` (a `cast` op),
        `.to(other)` to other's dtype, `.to("cpu")` / `.to(x.device)` / `.to(device, dtype)` the
        device (the CPU: any other is an error); non_blocking= / copy= change nothing here. The
        value itself when nothing changes."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        for ignored in ("non_blocking", "copy", "memory_format", "blocking"):
            kwargs.pop(ignored, None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}.to: unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if arg is None or isinstance(arg, bool):   # to(dtype, non_blocking, copy): no effect on the CPU
                continue
            if hasattr(arg, "dtype") and hasattr(arg, "shape"):
                dtype = arg.dtype                # x.to(other)
            elif names_a_device(arg):
                device = arg
            elif names_a_dtype(arg):
                dtype = arg
            else:
                raise TypeError(f"{type(self).__name__}.to: {arg!r} is neither a dtype nor a device")
        as_device(device, f"{type(self).__name__}.to")
        return self if dtype is None or normalize_dtype(dtype) == self.dtype else self.astype(dtype)

    @property
    def requires_grad(self) -> bool:
        """PyTorch's name for `not stop_gradient` (read and write)."""
        return not self.stop_gradient

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        _refuse_gradient_of(self, bool(value), "requires_grad = True")
        self.stop_gradient = not bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        """Set `requires_grad` in place and return this value (PyTorch's spelling)."""
        _refuse_gradient_of(self, bool(requires_grad), "requires_grad_(True)")
        self.stop_gradient = not bool(requires_grad)
        return self


def _refuse_gradient_of(value: Any, wanted: bool, how: str) -> None:
    """PyTorch's rule: only floating point and complex values can require a gradient (an integer
    one would be accepted, then blamed by backward for its stop_gradient)."""
    if wanted and not has_gradients(str(value.dtype)):
        raise RuntimeError(f"{how}: only Tensors of floating point and complex dtype can require gradients; "
                           f"this one is {value.dtype} (shape {list(value.shape)}): cast it first, e.g. x.float()")


class Variable(MathMixin, TorchHabits):
    """A named value of a Block. `shape` uses -1 for a size known only at run time."""

    __slots__ = ("block", "name", "_shape", "dtype", "_persistable", "stop_gradient", "type", "is_data",
                 "__dict__", "__weakref__")

    # kinds of variable: ordinary arrays, and the list of scopes a `while` keeps
    DENSE = "dense"
    STEP_SCOPES = "step_scopes"

    def __init__(self, block: Any, name: str, shape: Sequence[int] = (), dtype: Any = "float32",
                 persistable: bool = False, stop_gradient: bool = False, type: str = DENSE,
                 is_data: bool = False) -> None:
        self.block = block
        self.name = name
        self._shape = tuple(map(int, shape))
        self.dtype = dtype if dtype.__class__ is str and dtype in DTYPES else normalize_dtype(dtype)
        self._persistable = persistable
        self.stop_gradient = stop_gradient
        self.type = type
        self.is_data = is_data

    @property
    def shape(self) -> tuple[int, ...]:
        """The sizes, -1 where known only at run time; while jit.to_static traces, each -1 is a
        TracedSize (read by the traced function) or RuntimeDim (read by fluidgrad) remembering
        which size it is (framework/runtime_dims.py)."""
        shape = self._shape
        if runtime_dims.depth and -1 in shape:
            return runtime_dims.dims_of(self, shape, sys._getframe(1))
        return shape

    @shape.setter
    def shape(self, value: Any) -> None:
        self._shape = runtime_dims.plain(value) if runtime_dims.depth else tuple(value)

    @property
    def persistable(self) -> bool:
        """Kept in the scope between runs. Changing it changes what a run stores, so it
        voids the program's compiled plans."""
        return self._persistable

    @persistable.setter
    def persistable(self, value: bool) -> None:
        self._persistable = bool(value)
        self.block.program._bump()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        flags = "".join([" persistable" if self.persistable else "",
                         " stop_gradient" if self.stop_gradient else ""])
        return f"var {self.name} : {self.dtype}{list(self.shape)}{flags}"

    def __len__(self) -> int:
        if not self.shape or self.shape[0] < 0:
            raise TypeError(f"len() of variable {self.name} with shape {self.shape} is not known")
        return self.shape[0]

    def __bool__(self) -> bool:
        raise TypeError(f"the truth value of variable {self.name} is only known when the program runs; "
                        "use fluidgrad.static.nn.cond for data-dependent branches")

    # ---- Tensor's own methods that mean something in a Program, so that eager code calling
    # them traces (jit.to_static) and static code reads like eager code
    @property
    def size(self) -> "ElementCount | UnknownElementCount":
        """The number of elements (Paddle's Tensor.size), when every dimension is known; also
        callable as PyTorch's x.size() / x.size(d) (see ElementCount). With a dimension unknown,
        only the call works (UnknownElementCount)."""
        if any(d < 0 for d in self._shape):
            shape = runtime_dims.dims_of(self, self._shape, sys._getframe(1)) if runtime_dims.depth else self._shape
            return UnknownElementCount(shape, self.name)
        return ElementCount(self.shape)

    def detach(self) -> "Variable":
        """A copy that stops the gradient (Paddle's Variable.detach: an `assign` whose output is
        stop_gradient): the backward treats it as a constant."""
        out = math_mixin._api.assign(self)
        out.stop_gradient = True
        return out

    def clone(self) -> "Variable":
        """A copy the gradient flows through (an `assign` op)."""
        return math_mixin._api.assign(self)


    # no `numpy` / `item` methods: code tells Tensors from Variables by `hasattr(x, "numpy")`;
    # calling them (eager code traced by jit.to_static) gets NoValueError, which hasattr ignores
    def __getattr__(self, name: str) -> Any:
        if name in _VALUE_READS:
            raise NoValueError(f"{name}() of variable {object.__getattribute__(self, 'name')}: a Variable has no "
                               f"value while the program is built (jit.to_static traces the function once); "
                               f"compute with fluidgrad ops, or return the value and read it after the call")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _no_value(self, what: str) -> Any:
        raise TypeError(f"{what} of variable {self.name}: a Variable has no value while the program is built; "
                        f"fetch it with Executor.run(fetch_list=[...]) (inside jit.to_static, return it)")

    def __float__(self) -> float:
        return self._no_value("float()")

    def __int__(self) -> int:
        return self._no_value("int()")

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(f"backward() of variable {self.name}: in a Program the backward is built by "
                        f"fluidgrad.append_backward(loss) or an optimizer's minimize(loss) (inside jit.to_static, "
                        f"call .backward() on the function's result instead)")


class NoValueError(TypeError, AttributeError):
    """x.numpy() / x.item() on a Variable: a TypeError for the user who called it (as int(x) and
    `if x` give), an AttributeError for `hasattr(x, "numpy")`, which tells Tensors from Variables."""


_VALUE_READS = frozenset({"numpy", "item", "tolist"})


class Parameter(Variable):
    """A persistable, trainable Variable initialised by ops in the startup program."""

    __slots__ = ("trainable", "optimize_attr", "regularizer", "need_clip")

    def __init__(self, block: Any, name: str, shape: Sequence[int], dtype: Any = "float32",
                 trainable: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("stop_gradient", not trainable)
        super().__init__(block, name, shape, dtype, persistable=True, **kwargs)
        self.trainable = trainable
        self.optimize_attr = {"learning_rate": 1.0}   # Paddle's name: ParamAttr(learning_rate=) scales the update
        self.regularizer: Any = None    # ParamAttr(regularizer=): this parameter's weight decay
        self.need_clip = True           # ParamAttr(need_clip=False): left out of gradient clipping

    def __repr__(self) -> str:
        return "param " + super().__repr__()[4:]


def optimize_options(param: Any) -> tuple[float, Any, bool]:
    """(learning-rate factor, regularizer or None, need_clip) of a parameter: a static Parameter's
    attributes, or the options an eager parameter Tensor got from its ParamAttr."""
    if isinstance(param, Parameter):
        return float(param.optimize_attr.get("learning_rate", 1.0)), param.regularizer, param.need_clip
    attr = getattr(param, "_param_attr", None)
    return (1.0, None, True) if attr is None else (float(attr.learning_rate), attr.regularizer, attr.need_clip)


def names_of(items: Any, what: str) -> list[str]:
    """Variables or names -> names; anything else is a TypeError naming `what`."""
    names = []
    for item in items:
        if isinstance(item, Variable):
            names.append(item.name)
        elif isinstance(item, str):
            names.append(item)
        else:
            raise TypeError(f"{what} takes Variables or names, got {type(item).__name__}")
    return names


class ParamAttr:
    """How a builder should create a parameter: its name, initializer and trainability, and how
    optimizers treat it (Paddle 2): `learning_rate` scales its update, `regularizer` (an
    L1Decay / L2Decay) is its own weight decay, taking the place of the optimizer's, and
    `need_clip=False` leaves its gradient out of gradient clipping."""

    def __init__(self, name: str | None = None, initializer: Any = None, trainable: bool = True,
                 learning_rate: float = 1.0, regularizer: Any = None, need_clip: bool = True) -> None:
        self.name = name
        self.initializer = initializer
        self.trainable = trainable
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.need_clip = bool(need_clip)

    def optimize_options(self) -> "ParamAttr | None":
        """What optimizers read of it (learning rate, regularizer, need_clip), or None when those are
        the defaults: an eager parameter keeps this beside its value (and its copies with it)."""
        if float(self.learning_rate) == 1.0 and self.regularizer is None and self.need_clip:
            return None
        return ParamAttr(learning_rate=float(self.learning_rate), regularizer=self.regularizer,
                         need_clip=self.need_clip)

    @staticmethod
    def of(attr: "ParamAttr | str | bool | None") -> "ParamAttr | None":
        """Normalise what builders accept: ParamAttr, an Initializer (Paddle 2: ParamAttr(initializer=...)),
        a name, None (defaults) or False (none)."""
        if attr is False:
            return None
        if attr is None or attr is True:
            return ParamAttr()
        if isinstance(attr, str):
            return ParamAttr(name=attr)
        if isinstance(attr, ParamAttr):
            return attr
        if callable(attr) and hasattr(attr, "op_type"):  # an Initializer (fluidgrad.initializer, above the IR)
            return ParamAttr(initializer=attr)
        raise TypeError(f"expected ParamAttr, an Initializer, a name string, None or False, got {type(attr).__name__}")
