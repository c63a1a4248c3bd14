"""Optimizers: SGD, Momentum, Adam, AdamW, for static programs and eager parameters.

Static mode: `minimize(loss)` = `append_backward(loss)`, then, as optimize ops in the same
program: gradient clipping (`grad_clip`), weight decay (`weight_decay`: a float is L2,
g += wd * p as torch.optim's `weight_decay`, or a `fluidgrad.regularizer.L1Decay/L2Decay`),
and one update op per parameter (`sgd`, `momentum`, `adam`) that writes the parameter and
its accumulators in place.
Accumulators (velocity, moments, beta powers) are persistable variables named
`<param>_<accumulator>_<k>` and are initialised by ops appended to the startup program.

The learning rate lives in the persistable 1-element variable `opt.lr_var`, filled by the
startup program. With a scheduler, `scheduler.step()` writes the new rate into that variable
in `global_scope()` (and into the startup program's initialiser). A program run in another
scope: call `opt.sync_lr(scope)` once after the startup program; later steps then update that
scope too. `opt.set_lr(value)` changes a float rate the same way.

Eager mode: `step()` runs the same update kernels on each parameter's array with its
`.grad` (state kept per parameter in the optimizer), `clear_grad()` clears the gradients.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..backward import append_backward
from ..nn.clip import GradientClipBase
from ..dispatch import is_tensor, lifted_parameter
from ..executor import Scope, global_scope
from ..framework import (OPTIMIZE, Block, Operator, Program, Variable, default_startup_program, optimize_options,
                         unique_name)
from ..lr import LRScheduler, is_rate
from ..ops.optim import update_kernel
from ..regularizer import L2Decay, WeightDecayRegularizer
from .inplace import sgd_in_place
from .group_options import set_option, torch_options
from .keywords import accepting_torch_spellings

ParamsGrads = list[tuple[Variable, Variable]]


_DEFAULT_LR = 0.001


def _torch_style(owner: str, learning_rate: Any, parameters: Any, lr: Any) -> tuple[Any, Any]:
    """Accept PyTorch's habit, `Adam(model.parameters(), lr=1e-3)`, beside Paddle's
    `Adam(learning_rate=1e-3, parameters=model.parameters())`: the parameters may come first
    (any iterable that is not a number), and `lr` is another name for `learning_rate`."""
    if not isinstance(learning_rate, LRScheduler) and (callable(learning_rate) or hasattr(learning_rate, "parameters")):
        got = (f"the method {getattr(learning_rate, '__name__', '')} (call it: model.parameters())"
               if callable(learning_rate) and not hasattr(learning_rate, "parameters")
               else f"a {type(learning_rate).__name__} layer (pass its .parameters())")
        raise TypeError(f"{owner}: the parameters must be an iterable of Tensors, got {got}")
    if hasattr(learning_rate, "__iter__") and not isinstance(learning_rate, (str, bytes, LRScheduler)):
        if parameters is not None:
            raise TypeError(f"{owner}: parameters given twice (first argument and parameters=)")
        learning_rate, parameters = None, learning_rate
    if lr is not None:
        if learning_rate is not None:
            raise TypeError(f"{owner}: give the learning rate once, as learning_rate= or lr=")
        learning_rate = lr
    return (_DEFAULT_LR if learning_rate is None else learning_rate), parameters


def default_rate(learning_rate: Any, lr: Any, default: float) -> Any:
    """The `lr=` an optimizer with its own default rate (NAdam 0.002, LBFGS 1.0) passes on:
    `default` when neither spelling gives a rate (a parameter list given first is not one)."""
    given = learning_rate is not None and not (hasattr(learning_rate, "__iter__")
                                               and not isinstance(learning_rate, (str, bytes, LRScheduler)))
    return lr if lr is not None or given else default


_GROUP_OPTIONS = {"params", "learning_rate", "lr", "weight_decay"}
_INHERIT = object()   # a group without its own weight_decay uses the optimizer's


class ParamGroup(dict):
    """One parameter group, as PyTorch's: `group["lr"]` (or "learning_rate") is the group's rate
    now, and setting it changes the rate the next step uses: the optimizer's own rate when it
    has one group, else this group's ratio to it (eager mode). The optimizer's other options show
    under torch's keys (`group["momentum"]`, `group["betas"]`: group_options.py), read live; on a
    one-group optimizer writing one sets the optimizer's option."""

    _RATE_KEYS = ("lr", "learning_rate")

    def __init__(self, optimizer: "Optimizer", items: dict[str, Any]) -> None:
        super().__init__(items)
        self._optimizer = optimizer
        self._own = set(items)               # options the group itself gave
        super().__setitem__("lr", None)      # always present; the value is computed on reading

    def _show_options(self) -> None:
        """Add the optimizer's options under torch's keys (computed on reading, as "lr")."""
        for key in torch_options(self._optimizer):
            if key not in self._own:
                super().__setitem__(key, None)

    def __getitem__(self, key: Any) -> Any:
        if key in self._RATE_KEYS:
            return self._optimizer._group_rate(self)
        if key not in self._own and dict.__contains__(self, key) and key != "params":
            options = torch_options(self._optimizer)
            if key in options:
                return options[key]
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def items(self) -> Any:   # type: ignore[override]
        return [(key, self[key]) for key in self]

    def values(self) -> Any:   # type: ignore[override]
        return [self[key] for key in self]

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self._RATE_KEYS:
            self._optimizer._set_group_rate(self, value)
        elif key not in self._own and dict.__contains__(self, key) and key != "params":
            if len(self._optimizer.param_groups) != 1 or not set_option(self._optimizer, key, value):
                raise ValueError(f"{type(self._optimizer).__name__}: group[{key!r}] is the optimizer's option; "
                                 "with several parameter groups set it on the optimizer (one value for all)")
        else:
            super().__setitem__(key, value)


def _checked_parameters(owner: str, items: Iterable[Any]) -> list[Any]:
    """The parameters as a list; anything but Tensors / Variables (or static names) is a TypeError
    (a Layer given instead of its parameters(), NumPy arrays) rather than a step that updates nothing."""
    if hasattr(items, "parameters") and callable(items.parameters):
        raise TypeError(f"{owner}: parameters must be Tensors; got a {type(items).__name__} layer, "
                        "pass its .parameters()")
    if isinstance(items, (str, bytes, np.ndarray)) or is_tensor(items) or isinstance(items, Variable) \
            or not hasattr(items, "__iter__"):
        raise TypeError(f"{owner}: parameters must be a list of Tensors, got a {type(items).__name__}")
    params = list(items)
    for param in params:
        if not (is_tensor(param) or isinstance(param, (Variable, str))):
            raise TypeError(f"{owner}: parameters must be Tensors (or static Variables), got a "
                            f"{type(param).__name__}" + (", pass model.parameters()"
                                                          if hasattr(param, "parameters") else ""))
    return params


def _outside_this_package() -> int:
    """The stacklevel of the first caller outside fluidgrad.optimizer (a warning names the user's line)."""
    frame, level, here = sys._getframe(1), 1, os.path.dirname(os.path.abspath(__file__))
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def _once_each(owner: str, params: list[Any]) -> list[Any]:
    """The parameters with repeats dropped, warning as torch does (which then updates a repeated
    parameter twice per step; here it is updated once)."""
    seen: set[Any] = set()
    unique = [p for p in params if not (_option_key(p) in seen or seen.add(_option_key(p)))]
    if len(unique) != len(params):
        warnings.warn(f"{owner}: optimizer contains a parameter group with duplicate parameters (each is updated "
                      "once per step); list each parameter once", UserWarning, stacklevel=_outside_this_package())
    return unique


def _refuse_shared(owner: str, held: list[Any], params: list[Any]) -> None:
    """A parameter in two groups would be updated twice per step, with two sets of options: torch's
    ValueError."""
    keys = {_option_key(p) for p in held}
    shared = [getattr(p, "name", None) or "<unnamed>" for p in params if _option_key(p) in keys]
    if shared:
        raise ValueError(f"{owner}: some parameters appear in more than one parameter group: {shared[:3]} already "
                         "belong to one")


class Optimizer:
    """Base class. Subclasses name their update op, its accumulators and its attributes."""

    op_type = ""
    # accumulator slot -> (initial value, shape: "param" for the parameter's shape, else [1])
    accumulators: dict[str, tuple[float, str]] = {}
    # eager: in_place_update(param, array, grad, lr) writes the update into the parameter's own
    # array when that is safe and says whether it did (optimizer/inplace.py); None: never
    in_place_update: Any = None
    # torch's maximize=True (keywords.py takes it): each step climbs the gradient, which is negated first
    takes_maximize = True
    maximize = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every optimizer takes torch.optim's keyword spellings too (betas=, eps=, ...: keywords.py)."""
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = accepting_torch_spellings(cls.__init__)  # type: ignore[method-assign]

    def __init__(self, learning_rate: float | LRScheduler | None = None, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None) -> None:
        learning_rate, parameters = _torch_style(type(self).__name__, learning_rate, parameters, lr)
        if not (is_rate(learning_rate) or isinstance(learning_rate, LRScheduler)):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a float or an LRScheduler, "
                            f"got {type(learning_rate).__name__}")
        if not isinstance(learning_rate, LRScheduler):
            learning_rate = float(learning_rate)
            if learning_rate < 0:
                raise ValueError(f"{type(self).__name__}: Invalid learning rate: {learning_rate} (a rate below 0 "
                                 "climbs the loss; maximize=True is gradient ascent)")
        if grad_clip is not None and not isinstance(grad_clip, GradientClipBase):
            raise TypeError(f"{type(self).__name__}: grad_clip must be a ClipGradBy* object, "
                            f"got {type(grad_clip).__name__}")
        self._learning_rate = learning_rate
        self.regularization = self._regularizer(weight_decay)
        # per-parameter (learning-rate factor, regularizer or _INHERIT) from parameter groups,
        # keyed by id(Tensor) or a static Variable's name
        self._group_options: dict[Any, tuple[float, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        self._parameter_list = self._take_parameters(parameters) if parameters is not None else None
        self._grad_clip = grad_clip
        self._name = name or unique_name(type(self).__name__.lower())
        self.lr_var: Variable | None = None
        # (program id, factor) -> its learning-rate variable, holding rate * factor (a factor other
        # than 1 for parameters with their own rate: ParamAttr(learning_rate=...), parameter groups)
        self._lr_vars: dict[tuple[int, float], Variable] = {}
        self._lr_init_ops: list[tuple[Operator, float]] = []   # the startup ops filling them
        self._bound_scopes: list[Scope] = []            # scopes given to sync_lr
        self._accumulator_vars: dict[tuple[int, str, str], Variable] = {}  # (program id, param, slot)
        self._eager_state: dict[int, dict[str, np.ndarray]] = {}
        if isinstance(learning_rate, LRScheduler):
            learning_rate._subscribe(self._on_new_lr)

    def _take_parameters(self, parameters: Any) -> list[Any]:
        """A flat parameter list; parameter groups (dicts with "params" and their own
        "learning_rate" (or "lr") and "weight_decay", as PyTorch and Paddle take them) are
        flattened, their options kept per parameter. A group's "learning_rate" multiplies the
        optimizer's rate, as in Paddle 2; its "lr" is the group's own rate, as in PyTorch. Either
        way the group keeps a fixed ratio to the optimizer's rate, so a scheduler scales it too."""
        owner = type(self).__name__
        if isinstance(parameters, dict):
            parameters = [parameters]
        elif not isinstance(parameters, (list, tuple)):
            parameters = _checked_parameters(owner, parameters)
        if not any(isinstance(item, dict) for item in parameters):
            params = _once_each(owner, _checked_parameters(owner, parameters))
            if not params:
                raise ValueError(f"{owner}: optimizer got an empty parameter list (layers kept in a plain Python "
                                 "list have no parameters in model.parameters(): use nn.LayerList / ModuleList)")
            self.param_groups = [ParamGroup(self, {"params": params})]
            return params
        flat: list[Any] = []
        for index, group in enumerate(parameters):
            params = self._add_group(index, group)
            _refuse_shared(owner, flat, params)
            flat.extend(params)
        return flat

    def _add_group(self, index: int, group: Any) -> list[Any]:
        """Check one parameter group, record its options per parameter and append it to
        `param_groups`; returns its parameters. Options it does not give are the optimizer's."""
        owner = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{owner}: parameter group {index} must be a dict with 'params' (every item "
                            f"is a group once one is), got {type(group).__name__}")
        unknown = sorted(set(group) - _GROUP_OPTIONS)
        if unknown:
            raise ValueError(f"{owner}: parameter group {index} has options {unknown} this optimizer does not "
                             f"take per group; it takes {sorted(_GROUP_OPTIONS)}")
        params = group["params"]
        params = _once_each(owner, _checked_parameters(
            f"{owner} parameter group {index}", [params] if is_tensor(params) or isinstance(params, Variable) else params))
        factor = 1.0
        if "learning_rate" in group and "lr" in group:
            raise ValueError(f"{owner}: parameter group {index}: give 'learning_rate' (Paddle: a ratio to the "
                             "optimizer's rate) or 'lr' (PyTorch: the group's own rate), not both")
        if group.get("learning_rate") is not None:
            if not is_rate(group["learning_rate"]):
                raise ValueError(f"{owner}: parameter group {index}: learning_rate must be a float, "
                                 f"got {group['learning_rate']!r}")
            factor = float(group["learning_rate"])
        elif group.get("lr") is not None:
            rate, base = group["lr"], self.get_lr()
            if not is_rate(rate) or base == 0:
                raise ValueError(f"{owner}: parameter group {index}: lr must be a float and the "
                                 f"optimizer's own rate non-zero, got {rate!r} and {base!r}")
            factor = float(rate) / base
        decay = self._regularizer(group["weight_decay"]) if "weight_decay" in group else _INHERIT
        for param in params:
            if factor != 1.0 or decay is not _INHERIT:
                self._group_options[_option_key(param)] = (factor, decay)
        self.param_groups.append(ParamGroup(self, {**group, "params": params}))
        self.param_groups[-1]._show_options()
        return params

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add parameters to optimize, with their own options (PyTorch's `add_param_group`, e.g.
        layers unfrozen while fine-tuning; Paddle's `_add_param_group`): a dict with "params" and
        optionally "lr" (its own rate), "learning_rate" (a ratio to the optimizer's rate) and
        "weight_decay"; options not given are the optimizer's. The parameters join the next
        `step()`; their accumulators are created at their first update. A parameter may belong to
        one group only. In static mode the group applies to later `minimize()` calls."""
        if self._parameter_list is None:
            raise ValueError(f"{type(self).__name__}.add_param_group: this optimizer was built without "
                             "parameters (static mode: it updates every trainable parameter of the program); "
                             "give parameters= at construction to use parameter groups")
        if not isinstance(param_group, dict):
            raise TypeError(f"{type(self).__name__}.add_param_group: expected a dict with 'params', "
                            f"got {type(param_group).__name__}")
        params = param_group.get("params")
        candidates = [params] if is_tensor(params) or isinstance(params, Variable) else params
        if candidates is not None and not isinstance(candidates, (str, bytes)) and hasattr(candidates, "__iter__"):
            candidates = list(candidates)
            _refuse_shared(f"{type(self).__name__}.add_param_group", self._parameter_list, candidates)
            param_group = {**param_group, "params": candidates}
        self._parameter_list = self._parameter_list + self._add_group(len(self.param_groups), param_group)

    _add_param_group = add_param_group

    def _options(self, param: Any) -> tuple[float, WeightDecayRegularizer | None]:
        """(learning-rate factor, regularizer) of one parameter: its group's options times its
        ParamAttr(learning_rate=...); its ParamAttr(regularizer=...) before its group's or the
        optimizer's weight decay (as Paddle)."""
        factor, decay = self._group_options.get(_option_key(param), (1.0, _INHERIT)) if self._group_options \
            else (1.0, _INHERIT)
        own_factor, own_decay, _ = optimize_options(param)
        decay = own_decay if own_decay is not None else decay
        return factor * own_factor, (self.regularization if decay is _INHERIT else decay)

    def _regularizer(self, weight_decay: Any) -> WeightDecayRegularizer | None:
        """None, a float (L2 coefficient) or an L1Decay / L2Decay."""
        if weight_decay is None or isinstance(weight_decay, WeightDecayRegularizer):
            return weight_decay
        if is_rate(weight_decay):
            return L2Decay(weight_decay) if weight_decay else None
        raise TypeError(f"{type(self).__name__}: weight_decay must be a float, L1Decay or L2Decay, "
                        f"got {type(weight_decay).__name__}")

    def update_attrs(self) -> dict[str, Any]:
        """The update op's attributes (beta1, mu, ...)."""
        return {}

    # ------------------------------------------------------------------ learning rate
    def get_lr(self) -> float:
        lr = self._learning_rate
        return lr() if isinstance(lr, LRScheduler) else float(lr)

    def _group_factor(self, group: ParamGroup) -> float:
        params = dict.__getitem__(group, "params")
        if not params or not self._group_options:
            return 1.0
        return self._group_options.get(_option_key(params[0]), (1.0, _INHERIT))[0]

    def _group_rate(self, group: ParamGroup) -> float:
        return self.get_lr() * self._group_factor(group)

    def _set_group_rate(self, group: ParamGroup, value: Any) -> None:
        """`group["lr"] = value`: the optimizer's own rate for a one-group optimizer, else the
        group's ratio to it (eager: read at each step)."""
        owner = type(self).__name__
        if not is_rate(value):
            raise TypeError(f"{owner}: a parameter group's lr must be a number, got {type(value).__name__}")
        factor = self._group_factor(group)
        if len(self.param_groups) == 1 and factor:
            self.set_lr(float(value) / factor)
            return
        base = self.get_lr()
        if base == 0 or self._lr_vars:
            raise ValueError(f"{owner}: cannot set one parameter group's lr to {value} "
                             + ("in static mode (the program holds each rate): use set_lr or a scheduler"
                                if self._lr_vars else "while the optimizer's own rate is 0"))
        decay = {k: d for k, (_, d) in self._group_options.items()}
        for param in dict.__getitem__(group, "params"):
            key = _option_key(param)
            self._group_options[key] = (float(value) / base, decay.get(key, _INHERIT))

    def set_lr(self, value: float) -> None:
        """Change a float learning rate (and the program's `lr_var` in `global_scope()`)."""
        if isinstance(self._learning_rate, LRScheduler):
            raise TypeError(f"{type(self).__name__}: the learning rate is driven by a scheduler; "
                            "call scheduler.step() instead of set_lr")
        self._learning_rate = float(value)
        self._on_new_lr(self._learning_rate)

    def sync_lr(self, scope: Scope | None = None) -> None:
        """Write the current learning rate into this optimizer's `lr_var`s in `scope`, and keep
        doing so on every later change (a scheduler's step(), set_lr): how a program run in a
        scope other than `global_scope()` follows the schedule."""
        scope = scope if scope is not None else global_scope()
        if not any(s is scope for s in self._bound_scopes):
            self._bound_scopes.append(scope)
        self._write_lr(scope)

    def _write_lr(self, scope: Scope) -> None:
        rate = self.get_lr()
        for (_, factor), var in self._lr_vars.items():
            scope.assign(var.name, np.full([1], rate * factor, dtype=var.dtype))

    def _on_new_lr(self, _value: float) -> None:
        """A new rate: update the startup initialisers (for programs not started yet), then every
        known scope that already holds the rate variable."""
        for op, factor in self._lr_init_ops:
            op._set_attr("value", self.get_lr() * factor)
        global_ = global_scope()
        for scope in [global_] + [s for s in self._bound_scopes if s is not global_]:
            if all(var.name in scope for var in self._lr_vars.values()):
                self._write_lr(scope)

    def _create_lr_var(self, block: Block, startup: Program, dtype: str, factor: float = 1.0) -> Variable:
        """The program's persistable rate variable (rate * factor), filled by the startup program
        and rewritten on every change of rate: no op per step computes it."""
        key = (id(block.program), factor)
        if key not in self._lr_vars:
            name = unique_name("learning_rate")
            var = block.create_var(name, [1], dtype, persistable=True, stop_gradient=True)
            init = startup.global_block().create_var(name, [1], dtype, persistable=True, stop_gradient=True)
            self._lr_init_ops.append((startup.global_block().append_op(
                "fill_constant", {}, {"Out": [init]},
                {"shape": [1], "value": self.get_lr() * factor, "dtype": dtype}), factor))
            self._lr_vars[key] = var
        if factor == 1.0:
            self.lr_var = self._lr_vars[key]
        return self._lr_vars[key]

    # ------------------------------------------------------------------ static mode
    def minimize(self, loss: Variable, startup_program: Program | None = None,
                 parameter_list: Sequence[Any] | None = None, no_grad_set: Any = None,
                 parameters: Sequence[Any] | None = None,
                 checkpoints: Sequence[Any] | str | None = None) -> tuple[list[Operator], ParamsGrads]:
        """append_backward(loss), then clipping, decay and update ops; returns (update_ops, params_grads).
        `checkpoints` (Variables, or "auto") recompute the forward between them in the backward part.

        Eager mode (loss is a Tensor, as Paddle's dygraph minimize): after `loss.backward()`, this is
        `step()`; it returns ([], [(param, grad), ...])."""
        if is_tensor(loss):
            pairs = [(p, p.grad) for p in self._eager_parameters() if p.grad is not None]
            self.step()
            return [], pairs
        if not isinstance(loss, Variable):
            raise TypeError(f"{type(self).__name__}.minimize: loss must be a Variable (static mode) or a "
                            f"Tensor (eager mode), got {type(loss).__name__}")
        params_grads = self.backward(loss, startup_program, parameter_list or parameters, no_grad_set,
                                     checkpoints=checkpoints)
        update_ops = self.apply_gradients(params_grads, startup_program)
        return update_ops, params_grads

    def backward(self, loss: Variable, startup_program: Program | None = None,
                 parameters: Sequence[Any] | None = None, no_grad_set: Any = None,
                 callbacks: Any = None, checkpoints: Sequence[Any] | str | None = None) -> ParamsGrads:
        params = parameters if parameters is not None else self._parameter_list
        if params is not None and any(is_tensor(p) for p in params):
            params = self._lifted(params, loss.block.program)
        return append_backward(loss, params, no_grad_set, callbacks, checkpoints=checkpoints)

    def _lifted(self, params: Sequence[Any], program: Program) -> list[Any]:
        """A Layer's parameter Tensors as the Parameters `program` made of them (those it never
        used have no gradient there and are left out); a group's options follow each one."""
        found = []
        for param in params:
            static = lifted_parameter(param, program) if is_tensor(param) else param
            if static is None:
                continue
            if static is not param and _option_key(param) in self._group_options:
                self._group_options[_option_key(static)] = self._group_options[_option_key(param)]
            found.append(static)
        return found

    def apply_gradients(self, params_grads: ParamsGrads, startup_program: Program | None = None) -> list[Operator]:
        """Append clipping, decay and update ops for `params_grads` (pairs with grad None are skipped)."""
        pairs = [(p, g) for p, g in params_grads if g is not None]
        if not pairs:
            return []
        block = pairs[0][0].block.program.global_block()
        startup = startup_program or default_startup_program()
        if self.maximize:
            pairs = [(p, _negated(block, g)) for p, g in pairs]
        if self._grad_clip is not None:
            pairs = self._grad_clip.append_clip_ops(block, pairs)   # leaves ParamAttr(need_clip=False) ones
        options = [self._options(p) for p, _ in pairs]
        pairs = [(p, self._append_decay(block, p, g, decay)) for (p, g), (_, decay) in zip(pairs, options)]
        dtype = pairs[0][0].dtype
        self._create_lr_var(block, startup, dtype)
        return [self._append_update(block, startup, p, g, self._create_lr_var(block, startup, dtype, factor))
                for (p, g), (factor, _) in zip(pairs, options)]

    def _append_decay(self, block: Block, param: Variable, grad: Variable,
                      regularization: WeightDecayRegularizer | None = None) -> Variable:
        return grad if regularization is None else regularization.append_ops(block, param, grad)

    def _accumulator(self, block: Block, startup: Program, param: Variable, slot: str) -> Variable:
        key = (id(block.program), param.name, slot)
        if key not in self._accumulator_vars:
            value, kind = self.accumulators[slot]
            shape = list(param.shape) if kind == "param" else [1]
            name = unique_name(f"{param.name}_{slot.lower()}")
            var = block.create_var(name, shape, param.dtype, persistable=True, stop_gradient=True)
            init = startup.global_block().create_var(name, shape, param.dtype, persistable=True,
                                                     stop_gradient=True)
            startup.global_block().append_op("fill_constant", {}, {"Out": [init]},
                                             {"shape": shape, "value": float(value), "dtype": param.dtype})
            self._accumulator_vars[key] = var
        return self._accumulator_vars[key]

    def _append_update(self, block: Block, startup: Program, param: Variable, grad: Variable,
                       lr: Variable) -> Operator:
        inputs: dict[str, Any] = {"Param": param, "Grad": grad, "LearningRate": lr}
        outputs: dict[str, Any] = {"ParamOut": param}
        for slot in self.accumulators:
            acc = self._accumulator(block, startup, param, slot)
            inputs[slot], outputs[slot + "Out"] = acc, acc
        return block.append_op(self.op_type, inputs, outputs, {**self._update_attrs_of(param), "op_role": OPTIMIZE})

    def _update_attrs_of(self, param: Any) -> dict[str, Any]:
        """The update op's attributes for one parameter (AdamW: its own decay)."""
        return self.update_attrs()

    def _kernel_of(self, param: Any, kernel: Any) -> Any:
        """The eager update kernel for one parameter: the step's `kernel` unless its attributes differ."""
        return kernel

    # ------------------------------------------------------------------ eager mode
    def _apply_update(self, param: np.ndarray, grad: np.ndarray, state: dict[str, np.ndarray],
                      kernel: Any = None, lr: np.ndarray | None = None) -> np.ndarray:
        """One update of `param` by `grad` with the same kernel as the static op.

        `state` holds this parameter's accumulators by slot name; it starts empty and is
        filled and advanced here. Returns the new parameter array (nothing is written in place).
        `step()` passes the bound `kernel` and the 1-element `lr` array, built once per step
        rather than once per parameter (a batch-1 step is dominated by such per-call costs).
        """
        accumulators = self.accumulators
        if len(state) != len(accumulators):
            for slot, value in self._initial_state(param).items():
                state.setdefault(slot, value)
        if lr is None:
            lr = np.full([1], self.get_lr(), dtype=param.dtype)
        if kernel is None:
            kernel = self._bound_kernel()
        results = kernel(param, grad, *[state[s] for s in accumulators], lr)
        if not isinstance(results, tuple):  # SGD: the new parameter alone
            return results
        for slot, value in zip(accumulators, results[1:]):
            state[slot] = value
        return results[0]

    def _initial_state(self, param: np.ndarray) -> dict[str, np.ndarray]:
        """The accumulators of a parameter before its first update, by slot."""
        return {slot: np.full(param.shape if kind == "param" else [1], value, dtype=param.dtype)
                for slot, (value, kind) in self.accumulators.items()}

    def _bound_kernel(self) -> Any:
        """The update op's kernel with this optimizer's current attributes bound."""
        return update_kernel(self.op_type, **self.update_attrs())

    def _eager_parameters(self) -> list[Any]:
        if self._parameter_list is None:
            raise ValueError(f"{type(self).__name__}: eager mode needs parameters=[...] at construction")
        return [p for p in self._parameter_list if not getattr(p, "stop_gradient", False)]

    def step(self) -> None:
        """Eager mode: update every parameter that has a gradient."""
        params = [p for p in self._eager_parameters() if getattr(p, "grad", None) is not None]
        fused_step = getattr(params[0].grad, "fused_step", None) if params else None
        if fused_step is not None:  # DataParallel's average not computed yet: it and the update in one pass
            params = fused_step(self, params)  # (distributed/eager_fused.py); the rest as usual
        grads = [_to_array(p.grad) for p in params]
        if self.maximize:
            grads = [-grad for grad in grads]
        if self._grad_clip is not None:
            grads = self._grad_clip.clip_arrays(grads, params)      # leaves ParamAttr(need_clip=False) ones
        if not params:
            return
        kernel, rate = self._bound_kernel(), self.get_lr()  # once per step, not per parameter
        lr_by_dtype: dict[Any, np.ndarray] = {}
        regularization, eager_state, in_place = self.regularization, self._eager_state, self.in_place_update
        per_parameter = bool(self._group_options) or any(getattr(p, "_param_attr", None) is not None for p in params)
        own_kernels = type(self)._kernel_of is not Optimizer._kernel_of
        factor = 1.0
        for param, grad in zip(params, grads):
            value = _to_array(param)
            if grad.shape != value.shape or grad.dtype != value.dtype:
                grad = _matching_grad(type(self).__name__, param, value, grad)
            if per_parameter:
                factor, regularization = self._options(param)
            if regularization is not None:
                grad = regularization.apply_array(value, grad)
            lr = lr_by_dtype.get((value.dtype, factor))
            if lr is None:
                lr = lr_by_dtype[(value.dtype, factor)] = np.full([1], rate * factor, dtype=value.dtype)
            if in_place is not None and in_place(param, value, grad, lr):
                continue
            state = eager_state.get(id(param))
            if state is None:
                state = eager_state[id(param)] = {}
            _set_array(param, self._apply_update(value, grad, state,
                                                 self._kernel_of(param, kernel) if own_kernels else kernel, lr))

    def clear_grad(self, set_to_zero: bool = False) -> None:
        for param in self._eager_parameters():
            param.clear_grad()

    clear_gradients = clear_grad

    def zero_grad(self, set_to_none: bool = True) -> None:
        """PyTorch's name for `clear_grad`; `set_to_none=False` keeps zero-filled gradient arrays."""
        for param in self._eager_parameters():
            if set_to_none or param.grad is None:
                param.clear_grad()
            else:
                param.grad._array[...] = 0

    # ------------------------------------------------------------------ saving and restoring
    @property
    def state(self) -> "ParameterState":
        """PyTorch's `optimizer.state`: a dict from each eager parameter that has accumulators to
        its accumulators by slot name (Adam: Moment1, Moment2, Beta1Pow, Beta2Pow), NumPy arrays.
        The inner dicts are the optimizer's own: assigning `opt.state[p]["Moment1"] = array` sets
        what the next step reads. A parameter of this optimizer without accumulators yet reads
        as an empty dict, filled at its first update (torch's defaultdict)."""
        return ParameterState(self)

    def _eager_state_keys(self) -> list[tuple[str, Any]]:
        return [(p.name or f"param_{i}", p) for i, p in enumerate(self._parameter_list or [])]

    def _has_eager_state(self, param: Any) -> bool:
        """Whether state_dict holds accumulators of `param`: once any parameter has stepped, every
        trainable one (at its initial values until it steps), and a frozen one that has stepped."""
        return id(param) in self._eager_state or (bool(self._eager_state) and not _frozen(param))

    def _saved_parameter_keys(self, state: dict[str, Any],
                              own: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """(key in the state, parameter) pairs: by name when every saved name is one of `own`,
        else by position among the parameters whose state is saved (a model built again gets
        new names, in the same order; PyTorch's optimizer state is keyed by position too)."""
        names = [key for key, _ in own]
        saved = list(dict.fromkeys(k.rsplit(".", 1)[0] for k in state
                                   if "." in k and k.rsplit(".", 1)[1] in self.accumulators))
        if not saved or set(saved) <= set(names):
            return own
        holders = own if len(saved) == len(own) else [(k, p) for k, p in own if not _frozen(p)]
        if len(saved) != len(holders):
            raise ValueError(f"{type(self).__name__}.set_state_dict: the state holds accumulators of "
                             f"{len(saved)} parameters under other names, e.g. {saved[:3]}; this optimizer has "
                             f"{len(own)} parameters, {len(holders)} of them trainable, so they cannot be "
                             f"matched by position")
        return [(key, param) for key, (_, param) in zip(saved, holders)]

    def state_dict(self, scope: Scope | None = None) -> dict[str, Any]:
        """Accumulators by name (static: `<param>_<slot>_<k>` read from `scope`; eager:
        `<param name>.<slot>`, in the parameters' order), and the scheduler's state under
        "LR_Scheduler". After the first step every trainable eager parameter has its entries,
        those that got no gradient yet at their initial values: a model built again (new
        parameter names) then takes the state back by position."""
        state: dict[str, Any] = {}
        scope = scope if scope is not None else global_scope()
        for var in self._accumulator_vars.values():
            if var.name in scope:
                state[var.name] = np.array(scope[var.name])
        for key, param in self._eager_state_keys():
            if not self._has_eager_state(param):
                continue
            slots = self._eager_state.get(id(param)) or self._initial_state(_to_array(param))
            for slot, value in slots.items():
                state[f"{key}.{slot}"] = value.copy()
        if isinstance(self._learning_rate, LRScheduler):
            state["LR_Scheduler"] = self._learning_rate.state_dict()
        return state

    def set_state_dict(self, state: dict[str, Any], scope: Scope | None = None) -> None:
        """Restore what `state_dict` gave; shapes must match the accumulators they replace.

        Eager accumulators go to the parameters in the same position of the parameter list, so a
        model built again (whose parameters got new names) takes its optimizer state back."""
        scope = scope if scope is not None else global_scope()
        used = {"LR_Scheduler"}
        legacy = getattr(state, "zero_d_as_shape_1", False)   # read from a fluidgrad.save file of format 1
        for var in self._accumulator_vars.values():
            if var.name in state:
                scope.assign(var.name, _checked(state[var.name], tuple(var.shape), var.name, legacy))
                used.add(var.name)
        own = self._eager_state_keys()
        for key, param in self._saved_parameter_keys(state, own):
            value = _to_array(param)
            for slot, (_, kind) in self.accumulators.items():
                if f"{key}.{slot}" in state:
                    shape = value.shape if kind == "param" else (1,)
                    restored = _checked(state[f"{key}.{slot}"], shape, f"{key}.{slot}", legacy).astype(value.dtype)
                    self._eager_state.setdefault(id(param), {})[slot] = restored
                    used.add(f"{key}.{slot}")
        if "LR_Scheduler" in state and isinstance(self._learning_rate, LRScheduler):
            self._learning_rate.set_state_dict(state["LR_Scheduler"])
        unused = sorted(set(state) - used)
        if unused:  # a silently skipped accumulator would resume training from a different state
            raise ValueError(f"{type(self).__name__}.set_state_dict: {len(unused)} entries match no accumulator "
                             f"of this optimizer, e.g. {unused[:3]}; its parameters are "
                             f"{[k for k, _ in own][:3]}... (a static optimizer's state is restored after "
                             f"minimize() created its accumulators)")

    def load_state_dict(self, state_dict: dict[str, Any], scope: Scope | None = None) -> None:
        """PyTorch's name for `set_state_dict` (`opt.load_state_dict(checkpoint["opt"])`)."""
        self.set_state_dict(state_dict, scope)


class ParameterState(dict):
    """`Optimizer.state`: {parameter: {slot: array}} built from the optimizer's eager
    accumulators when read; the inner dicts are the optimizer's own."""

    def __init__(self, optimizer: Optimizer) -> None:
        self._optimizer = optimizer
        by_id = optimizer._eager_state
        super().__init__((p, by_id[id(p)]) for p in optimizer._parameter_list or [] if id(p) in by_id)

    def __missing__(self, param: Any) -> dict[str, np.ndarray]:
        if not any(p is param for p in self._optimizer._parameter_list or []):
            return {}
        slots = self[param] = self._optimizer._eager_state.setdefault(id(param), {})
        return slots



def _checked(value: Any, shape: tuple[int, ...], name: str, zero_d_as_shape_1: bool = False) -> np.ndarray:
    """value as an array of `shape`; `zero_d_as_shape_1`: a [1] value may fill a 0-D accumulator
    (fluidgrad.save files of format 1 stored 0-D values as [1])."""
    array = np.array(value)
    if zero_d_as_shape_1 and array.shape == (1,) and tuple(shape) == ():
        array = array.reshape(())
    if array.shape != tuple(shape):
        raise ValueError(f"optimizer.set_state_dict: {name} has shape {list(array.shape)}, expected {list(shape)}")
    return array


def _frozen(param: Any) -> bool:
    return bool(getattr(param, "stop_gradient", False))


def _option_key(param: Any) -> Any:
    return param.name if isinstance(param, Variable) else id(param)


def _matching_grad(owner: str, param: Any, value: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """A gradient of the parameter's dtype; one of another shape is refused before any kernel
    runs (the compiled Adam loop would read past a smaller one)."""
    if grad.shape != value.shape:
        raise ValueError(f"{owner}.step: parameter {getattr(param, 'name', None) or '<unnamed>'} has shape "
                         f"{list(value.shape)} but its .grad has shape {list(grad.shape)} (a hook or an assignment "
                         "changed it?)")
    if grad.dtype.kind not in "fc" and grad.dtype.kind != "V" and value.dtype.kind in "fc":
        raise ValueError(f"{owner}.step: parameter {getattr(param, 'name', None) or '<unnamed>'} is {value.dtype} "
                         f"but its .grad is {grad.dtype}")
    return grad.astype(value.dtype)


def _negated(block: Block, grad: Variable) -> Variable:
    """-grad, as an op of the program (maximize=True)."""
    out = block.create_var(unique_name(f"{grad.name}_negated"), list(grad.shape), grad.dtype, stop_gradient=True)
    block.append_op("scale", {"X": grad}, {"Out": out}, {"scale": -1.0, "bias": 0.0, "op_role": OPTIMIZE})
    return out


def _to_array(value: Any) -> np.ndarray:
    """The Tensor's own array (not numpy()'s read-only view): the in-place step writes into it."""
    if isinstance(getattr(value, "_array", None), np.ndarray):
        return value._array
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _set_array(param: Any, value: np.ndarray) -> None:
    if not hasattr(param, "set_value"):
        raise TypeError(f"optimizer.step: cannot update a {type(param).__name__}; parameters must be "
                        f"Tensors with set_value()")
    if hasattr(param, "_take_array"):
        param._take_array(value)  # a fresh array made for param: no copy (set_value copies)
    else:
        param.set_value(value)


class SGD(Optimizer):
    """p -= lr * g; with torch.optim.SGD's `momentum=` (and `nesterov=`) the `momentum` op's update,
    as Momentum (an instance of a subclass of SGD that names that op)."""

    op_type = "sgd"
    accumulators: dict[str, tuple[float, str]] = {}
    in_place_update = staticmethod(sgd_in_place)

    def __new__(cls, *args: Any, momentum: float = 0.0, **kwargs: Any) -> "SGD":
        return super().__new__(_MomentumSGD if cls is SGD and momentum else cls)

    def __init__(self, learning_rate: float | LRScheduler | None = None, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None, momentum: float = 0.0,
                 dampening: float = 0.0, use_nesterov: bool = False) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        if not is_rate(momentum) or momentum < 0:
            raise ValueError(f"SGD: momentum must be a non-negative float, got {momentum!r}")
        if dampening:
            raise ValueError(f"SGD: dampening={dampening!r} is not supported (only 0, torch.optim.SGD's default: "
                             "its first step is undampened, which the momentum op does not track)")
        if use_nesterov and not momentum:
            raise ValueError("SGD: Nesterov momentum (nesterov=True) needs a momentum > 0")
        self.momentum, self.use_nesterov = float(momentum), bool(use_nesterov)


class _MomentumSGD(SGD):
    """SGD(momentum=m > 0): v = m * v + g; p -= lr * v (Nesterov: p -= lr * (g + m * v)). Its own
    type, so code dispatching on type(optimizer) (the distributed fused updates) never takes it for
    plain SGD."""

    op_type = "momentum"
    accumulators = {"Velocity": (0.0, "param")}
    in_place_update = None

    def update_attrs(self) -> dict[str, Any]:
        return {"mu": self.momentum, "use_nesterov": self.use_nesterov}


_MomentumSGD.__name__ = "SGD"   # errors name the class the user wrote


class Momentum(Optimizer):
    """v = momentum * v + g; p -= lr * v (Nesterov: p -= lr * (g + momentum * v)), torch.optim.SGD's form."""

    op_type = "momentum"
    accumulators = {"Velocity": (0.0, "param")}

    def __init__(self, learning_rate: float | LRScheduler | None = None, momentum: float = 0.9,
                 parameters: Iterable[Any] | None = None, use_nesterov: bool = False,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        self.momentum, self.use_nesterov = float(momentum), bool(use_nesterov)

    def update_attrs(self) -> dict[str, Any]:
        return {"mu": self.momentum, "use_nesterov": self.use_nesterov}


class Adam(Optimizer):
    """Adam with bias correction; `weight_decay` is L2 added to the gradient (torch.optim.Adam).
    `amsgrad=True` (Paddle 2 and torch) divides by the running maximum of the second moment: the
    `adam_amsgrad` op, in an instance of a subclass of Adam (see _MomentumSGD for why)."""

    op_type = "adam"

    def __new__(cls, *args: Any, amsgrad: bool = False, **kwargs: Any) -> "Adam":
        return super().__new__(_AMSGRAD.get(cls, cls) if amsgrad else cls)

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None, amsgrad: bool = False) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        if not epsilon >= 0:
            raise ValueError(f"{type(self).__name__}: Invalid epsilon value: {epsilon}")
        if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
            raise ValueError(f"{type(self).__name__}: beta1 and beta2 must lie in [0, 1), got {beta1}, {beta2}")
        if bool(amsgrad) != (self.op_type == "adam_amsgrad"):
            raise TypeError(f"{type(self).__name__}: amsgrad={amsgrad!r} does not fit this class's update op "
                            f"{self.op_type}")
        self.beta1, self.beta2, self.epsilon, self.amsgrad = float(beta1), float(beta2), float(epsilon), bool(amsgrad)
        # beta powers start at beta**1: the first step's bias correction
        self.accumulators = {"Moment1": (0.0, "param"), "Moment2": (0.0, "param"),
                             **({"Moment2Max": (0.0, "param")} if amsgrad else {}),
                             "Beta1Pow": (self.beta1, "scalar"), "Beta2Pow": (self.beta2, "scalar")}

    def update_attrs(self) -> dict[str, Any]:
        return {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before the Adam step
    (torch.optim.AdamW; the decay is an attribute of the `adam` op, not added to the gradient).
    A parameter group's weight_decay is its own decoupled decay (as torch.optim.AdamW's groups);
    `apply_decay_param_fun(name)` (Paddle 2) returning False leaves that parameter undecayed."""

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameters: Iterable[Any] | None = None, weight_decay: float = 0.01,
                 lr_ratio: Any = None, apply_decay_param_fun: Callable[[str], bool] | None = None,
                 grad_clip: GradientClipBase | None = None, lazy_mode: bool = False, multi_precision: bool = False,
                 name: str | None = None, *, lr: float | LRScheduler | None = None, amsgrad: bool = False) -> None:
        if isinstance(lr_ratio, GradientClipBase) and grad_clip is None:  # the old positional order
            lr_ratio, grad_clip = None, lr_ratio
        if lr_ratio is not None:
            raise NotImplementedError("AdamW: lr_ratio is not supported; use parameter groups' learning_rate")
        if apply_decay_param_fun is not None and not callable(apply_decay_param_fun):
            raise TypeError(f"AdamW: apply_decay_param_fun must be callable (name -> bool), "
                            f"got {type(apply_decay_param_fun).__name__}")
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, None, grad_clip, name, lr=lr,
                         amsgrad=amsgrad)
        if not isinstance(weight_decay, (int, float)) or weight_decay < 0:
            raise ValueError(f"AdamW: weight_decay (decoupled) must be a non-negative float, got {weight_decay!r}")
        self.weight_decay = float(weight_decay)
        self._apply_decay_param_fun = apply_decay_param_fun
        self._kernels: dict[float, Any] = {}

    def update_attrs(self) -> dict[str, Any]:
        return {**super().update_attrs(), "weight_decay": self.weight_decay}

    def _options(self, param: Any) -> tuple[float, WeightDecayRegularizer | None]:
        return super()._options(param)[0], None     # a group's weight_decay is decoupled, see _decay_of

    def _decay_of(self, param: Any) -> float:
        """This parameter's decoupled decay: its group's, or the optimizer's; 0 where
        apply_decay_param_fun says no."""
        if self._apply_decay_param_fun is not None and not self._apply_decay_param_fun(param.name):
            return 0.0
        decay = self._group_options.get(_option_key(param), (1.0, _INHERIT))[1] if self._group_options \
            else _INHERIT
        if decay is _INHERIT:
            return self.weight_decay
        if decay is None:
            return 0.0
        if not isinstance(decay, L2Decay):
            raise TypeError(f"AdamW: a parameter group's weight_decay is a decoupled coefficient (a float), "
                            f"got {type(decay).__name__}")
        return float(decay.coeff)

    def _update_attrs_of(self, param: Any) -> dict[str, Any]:
        return {**self.update_attrs(), "weight_decay": self._decay_of(param)}

    def _kernel_of(self, param: Any, kernel: Any) -> Any:
        decay = self._decay_of(param)
        if decay == self.weight_decay:
            return kernel
        if decay not in self._kernels:
            self._kernels[decay] = update_kernel(self.op_type, **{**self.update_attrs(), "weight_decay": decay})
        return self._kernels[decay]


class _AMSGradAdam(Adam):
    """Adam(amsgrad=True)."""

    op_type = "adam_amsgrad"


class _AMSGradAdamW(AdamW):
    """AdamW(amsgrad=True)."""

    op_type = "adam_amsgrad"


_AMSGradAdam.__name__, _AMSGradAdamW.__name__ = "Adam", "AdamW"
_AMSGRAD: dict[type, type] = {Adam: _AMSGradAdam, AdamW: _AMSGradAdamW}

__all__ = ["Adam", "AdamW", "Momentum", "Optimizer", "SGD"]
