"""Writes through views in a Program (static code, and eager code traced by jit.to_static /
jit.save / ONNX export), so that it computes what eager mode and PyTorch compute.

A Program has no shared storage: a Variable's in-place update appends the op computing the new
value and moves the Python handle to it (`swap_variables`; ops appended before keep reading the
old value). A view op's result remembers its base (fluidgrad/views.py, `mark_variable`), so a
write into the view is lowered as torch.export's functionalization and Paddle's dygraph-to-
static lower it: the base's handle moves to `how.into_base(base, view)` (a set_value, scatter,
reshape or transpose of the new value into the old base), on up a chain of views, and every
other live view of a changed base moves to `how.read(base)`, so later reads see the write. All
of these are ordinary differentiable ops: gradients are PyTorch's. A base the trace captured
(a layer's buffer) is a Tensor: it takes the value after each run (`_Tracer.rebind`).

What cannot be written refuses at build time, naming the view and its base: a parameter or
persistable variable (the write would not reach the scope), a leaf Tensor that requires a
gradient (as PyTorch refuses), an expanded view repeating elements.
"""
from __future__ import annotations

from typing import Any

from . import views
from .eager import Tensor
from .framework import Parameter, Variable

_VARIABLE_SLOTS = ("block", "name", "shape", "dtype", "_persistable", "stop_gradient", "type", "is_data")


def swap_variables(x: Variable, new: Variable) -> None:
    """The Python handle `x` names `new`'s variable from now on (and `new` x's old one); x's view
    link stays with the handle (x[0] stays a view of x's base)."""
    link = x.__dict__.pop("_view_of", None)
    new.__dict__.pop("_view_of", None)
    vars_ = x.block.vars
    for slot in _VARIABLE_SLOTS:
        a, b = getattr(x, slot), getattr(new, slot)
        setattr(x, slot, b)
        setattr(new, slot, a)
    x.__dict__, new.__dict__ = new.__dict__, x.__dict__
    vars_[x.name], vars_[new.name] = x, new
    if link is not None:
        x.__dict__["_view_of"] = link
    x.block.program._bump()


def _link(x: Any) -> tuple | None:
    link = x.__dict__.get("_view_of") if isinstance(x, Variable) else None
    return None if link is None else (link[0], link[1])


def _refuse_persistable(x: Variable, what: str) -> None:
    if isinstance(x, Parameter) or x.persistable:
        kind = "parameter" if isinstance(x, Parameter) else "persistable variable"
        raise TypeError(f"{what} on the {kind} {x.name} in static mode: it would not write back to the scope; "
                        f"compute the new value with fluidgrad.where / put_along_axis and assign it")


def check_write(x: Variable, what: str) -> None:
    """Refuse, before anything changes, a write into x that cannot reach x's bases."""
    _refuse_persistable(x, what)
    link = _link(x)
    while link is not None:
        base, how = link
        how.check_writable(what)
        into = f"{what} into a view {how.describe()}"
        if isinstance(base, Tensor):   # captured by the trace: the eager rules (a leaf that requires grad refuses)
            views.prepare_write(base, into + " (PyTorch: a view of a leaf Variable that requires grad is being "
                                             "used in an in-place operation)")
            return
        _refuse_persistable(base, into)
        if base.block is not base.block.program.current_block():
            raise RuntimeError(f"{into} of {base.name}, a variable of block {base.block.idx}, while block "
                               f"{base.block.program.current_block().idx} (a loop or branch body) is being built: "
                               f"the write cannot leave the body; carry {base.name} as a loop variable (or "
                               f"return it from the branch) instead")
        link = _link(base)


def take(x: Variable, new: Variable) -> None:
    """x (checked by `check_write`) takes `new`, computed from its old value, in place: its views
    re-read it and its bases take it in."""
    changed_shape = tuple(new.shape) != tuple(x.shape)
    swap_variables(x, new)
    if changed_shape:   # x.unsqueeze_(): its views keep their values and stop following it (as eagerly)
        for view in views.variable_views(x):
            view.__dict__.pop("_view_of", None)
    else:
        refresh(x)
    _write_up(x)


def _write_up(view: Variable) -> None:
    link = _link(view)
    if link is None:
        return
    base, how = link
    new = how.into_base(base, view)
    if isinstance(base, Tensor):    # the tracer rebinds it (and `refresh`es its views)
        views.finish_write(base, new, views.view_link(base))
        return
    swap_variables(base, new)
    refresh(base, skip=view)
    _write_up(base)


def refresh(base: Any, skip: Variable | None = None) -> None:
    """base changed: each live Variable view of it (but `skip`, the one written) reads it again,
    and so on down to the views of views."""
    for view in views.variable_views(base):
        if view is skip:
            continue
        how = view.__dict__["_view_of"][1]
        if tuple(base.shape) != tuple(how.base_shape) or base.dtype != view.dtype:
            view.__dict__.pop("_view_of", None)
            continue
        swap_variables(view, how.read(base))
        refresh(view)
