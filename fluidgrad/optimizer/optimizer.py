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

Parameter groups (param_groups.py) may set any of a subclass's `options` (betas, momentum, ...)
and weight_decay; the update (op, attributes, accumulators: `Update`) is built from a group's
values when a step (or minimize) reads them, so a value written into a group takes effect then.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from ..backward import append_backward
from ..nn.clip import GradientClipBase
from ..dispatch import is_tensor, lifted_parameter
from ..executor import Scope, global_scope
from ..framework import (OPTIMIZE, Block, Operator, Program, Variable, optimize_options, unique_name)
from ..framework.program import startup_program_of
from ..lr import LRScheduler, is_rate
from ..ops.optim import update_kernel
from ..regularizer import L2Decay, WeightDecayRegularizer
from .keywords import accepting_torch_spellings
from .param_groups import GroupedParameters, ParamGroup
from .param_groups import option_key as _option_key
from .flat_state import load_flat_form
from .saved_state import TORCH_KEYS, is_torch_form, load_torch_form, torch_form

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


class Update(NamedTuple):
    """What one parameter's eager step or static update op is, for a group's options: the op, its
    attributes, its accumulators (slot -> (initial value, "param" shape or "scalar")) and the
    scalar accumulators that are powers of an option (Adam's Beta1Pow: beta1 ** step)."""

    op_type: str
    attrs: dict[str, Any]
    accumulators: dict[str, tuple[float, str]]
    powers: dict[str, float] = {}


class Optimizer(GroupedParameters):
    """Base class. Subclasses name their update op and the options it reads (`options`: attribute
    names, a parameter group's keys too), and build the update of a group's options in `_update_for`."""

    op_type = ""
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
                                 "climbs the loss; torch's maximize=True is gradient ascent)")
        if grad_clip is not None and not isinstance(grad_clip, GradientClipBase):
            raise TypeError(f"{type(self).__name__}: grad_clip must be a ClipGradBy* object, "
                            f"got {type(grad_clip).__name__}")
        self._learning_rate = learning_rate
        self.regularization = self._regularizer(weight_decay)
        self.param_groups: list[ParamGroup] = []
        self._group_of: dict[Any, ParamGroup] = {}     # by id(Tensor) or a static Variable's name
        self._groups_version = 0                      # counts changes of the groups' options
        self._updates: dict[Any, Update] = {}         # by the options' values
        self._kernels: dict[Any, Any] = {}            # by (op, attributes)
        self._power_bases: dict[int, dict[str, float]] = {}   # the option each power was last raised with
        self._fitted: dict[int, Update] = {}          # the update each parameter's eager state was fitted to
        # (program id, group index, factor) -> its learning-rate variable, holding rate * factor (a
        # factor other than 1 for parameters with their own rate: ParamAttr(learning_rate=...), a
        # group's ratio), times the group's ratio read at each write when the group index is not -1
        # (several groups: a per-group schedule moves each group's rate, see _write_lr)
        self._lr_vars: dict[tuple[int, int, float], Variable] = {}
        self._folded_groups: set[int] = set()   # groups whose ratio a program's rate variable fixed
        self._parameter_list = self._take_parameters(parameters) if parameters is not None else None
        self._grad_clip = grad_clip
        self._name = name or unique_name(type(self).__name__.lower())
        self.lr_var: Variable | None = None
        self._lr_init_ops: list[tuple[Operator, tuple[int, int, float]]] = []   # the startup ops filling them
        self._bound_scopes: list[Scope] = []            # scopes given to sync_lr
        self._accumulator_vars: dict[tuple[int, str, str], Variable] = {}  # (program id, param, slot)
        self._eager_state: dict[int, dict[str, np.ndarray]] = {}
        if isinstance(learning_rate, LRScheduler):
            learning_rate._subscribe(self._on_new_lr)

    def _regularizer(self, weight_decay: Any) -> WeightDecayRegularizer | None:
        """None, a float (L2 coefficient) or an L1Decay / L2Decay."""
        if weight_decay is None or isinstance(weight_decay, WeightDecayRegularizer):
            return weight_decay
        if is_rate(weight_decay):
            return L2Decay(weight_decay) if weight_decay else None
        raise TypeError(f"{type(self).__name__}: weight_decay must be a float, L1Decay or L2Decay, "
                        f"got {type(weight_decay).__name__}")

    # ------------------------------------------------------------------ options and updates
    def _update_for(self, settings: dict[str, Any]) -> Update:
        """The update for these option values (`settings`: each of `options` by name); raises on a
        value the update cannot take."""
        return Update(self.op_type, {}, {})

    def _settings(self, group: ParamGroup | None = None) -> dict[str, Any]:
        """The options' values: the group's (its own, else the optimizer's), or the optimizer's."""
        if group is None:
            return {name: getattr(self, name) for name in self.options}
        return {name: group[name] for name in self.options}

    def _default_option(self, name: str) -> Any:
        """What a group without its own value of option `name` reads: the optimizer's."""
        if name == "weight_decay":
            decay = self.regularization
            return 0.0 if decay is None else decay.coeff if type(decay) is L2Decay else decay
        return getattr(self, name)

    def _cached_update(self, settings: dict[str, Any]) -> Update:
        key = tuple(settings.values())
        try:
            update = self._updates.get(key)
        except TypeError:                        # an unhashable value (a list): built each time
            return self._update_for(settings)
        if update is None:
            update = self._updates[key] = self._update_for(settings)
        return update

    def _update_of_group(self, group: ParamGroup | None) -> Update:
        return self._cached_update(self._settings(group))

    def _update_of(self, param: Any) -> Update:
        """The update of one parameter: its group's options (AdamW: and its own decay)."""
        return self._update_of_group(self._group_of.get(_option_key(param)))

    def _kernel(self, update: Update) -> Any:
        """The update op's kernel with the update's attributes bound (kept: a step must not rebuild it)."""
        key = (update.op_type, tuple(update.attrs.items()))
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = update_kernel(update.op_type, **update.attrs)
        return kernel

    def _own_options_update(self) -> Update:
        """The update of the optimizer's own options, with `update_attrs()` (AdamW: its decay)."""
        return self._update_of_group(None)._replace(attrs=self.update_attrs())

    def _bound_kernel(self) -> Any:
        """The update op's kernel with the optimizer's own options bound."""
        return self._kernel(self._own_options_update())

    @property
    def accumulators(self) -> dict[str, tuple[float, str]]:
        """The accumulators of the optimizer's own options: slot -> (initial value, "param" or "scalar")."""
        return self._update_of_group(None).accumulators

    def update_attrs(self) -> dict[str, Any]:
        """The update op's attributes (beta1, mu, ...) for the optimizer's own options."""
        return self._update_of_group(None).attrs

    def _all_slots(self) -> set[str]:
        """Every accumulator slot some group's update has."""
        slots = set(self.accumulators)
        for group in self.param_groups:
            slots.update(self._update_of_group(group).accumulators)
        return slots

    # ------------------------------------------------------------------ learning rate
    def get_lr(self) -> float:
        lr = self._learning_rate
        return lr() if isinstance(lr, LRScheduler) else float(lr)

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

    def _lr_value(self, key: tuple[int, int, float]) -> float:
        """The rate a rate variable holds: rate * factor, the factor times the group's ratio now for
        a group's own variable (the product in the order an eager step forms it: bit for bit alike)."""
        _, group, factor = key
        rate = self.get_lr()
        return rate * factor if group < 0 else rate * (self.param_groups[group].rate_factor * factor)

    def _write_lr(self, scope: Scope) -> None:
        for key, var in self._lr_vars.items():
            scope.assign(var.name, np.full([1], self._lr_value(key), dtype=var.dtype))

    def _on_new_lr(self, _value: float) -> None:
        """A new rate: update the startup initialisers (for programs not started yet), then every
        known scope that already holds the rate variable."""
        for op, key in self._lr_init_ops:
            op._set_attr("value", self._lr_value(key))
        global_ = global_scope()
        for scope in [global_] + [s for s in self._bound_scopes if s is not global_]:
            if all(var.name in scope for var in self._lr_vars.values()):
                self._write_lr(scope)

    def _create_lr_var(self, block: Block, startup: Program, dtype: str, factor: float = 1.0,
                       group: int = -1) -> Variable:
        """The program's persistable rate variable (rate * factor; with a `group` index, rate * the
        group's ratio * factor), filled by the startup program and rewritten on every change of
        rate or of a group's rate: no op per step computes it."""
        key = (id(block.program), group, factor)
        if key not in self._lr_vars:
            name = unique_name("learning_rate")
            var = block.create_var(name, [1], dtype, persistable=True, stop_gradient=True)
            init = startup.global_block().create_var(name, [1], dtype, persistable=True, stop_gradient=True)
            self._lr_init_ops.append((startup.global_block().append_op(
                "fill_constant", {}, {"Out": [init]},
                {"shape": [1], "value": self._lr_value(key), "dtype": dtype}), key))
            self._lr_vars[key] = var
        if factor == 1.0 and group < 0:
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
            if static is not param and _option_key(param) in self._group_of:
                self._group_of[_option_key(static)] = self._group_of[_option_key(param)]
            found.append(static)
        return found

    def apply_gradients(self, params_grads: ParamsGrads, startup_program: Program | None = None) -> list[Operator]:
        """Append clipping, decay and update ops for `params_grads` (pairs with grad None are skipped)."""
        pairs = [(p, g) for p, g in params_grads if g is not None]
        if not pairs:
            return []
        block = pairs[0][0].block.program.global_block()
        startup = startup_program or startup_program_of(block.program)   # the guard's, after it closed too
        if self.maximize:
            pairs = [(p, _negated(block, g)) for p, g in pairs]
        if self._grad_clip is not None:
            pairs = self._grad_clip.append_clip_ops(block, pairs)   # leaves ParamAttr(need_clip=False) ones
        options = [self._options(p) for p, _ in pairs]
        pairs = [(p, self._append_decay(block, p, g, decay)) for (p, g), (_, decay) in zip(pairs, options)]
        dtype = pairs[0][0].dtype
        self._create_lr_var(block, startup, dtype)
        return [self._append_update(block, startup, p, g, self._create_lr_var(block, startup, dtype,
                                                                              *self._rate_source(p, factor)))
                for (p, g), (factor, _) in zip(pairs, options)]

    def _rate_source(self, param: Variable, factor: float) -> tuple[float, int]:
        """(factor, group index) of the rate variable `param`'s update reads: with several groups,
        the group's own (its ratio read at each write, so a per-group schedule reaches the program)
        and the parameter's ParamAttr factor; else one variable per factor (`factor`, its group's
        ratio folded in)."""
        group = self._group_of.get(_option_key(param))
        if len(self.param_groups) < 2 or group is None:
            if group is not None:
                self._folded_groups.add(self._group_index(group))
            return factor, -1
        return optimize_options(param)[0], self._group_index(group)

    def _append_decay(self, block: Block, param: Variable, grad: Variable,
                      regularization: WeightDecayRegularizer | None = None) -> Variable:
        return grad if regularization is None else regularization.append_ops(block, param, grad)

    def _accumulator(self, block: Block, startup: Program, param: Variable, slot: str,
                     spec: tuple[float, str] | None = None) -> Variable:
        """The persistable accumulator `slot` of `param` (spec: its (initial value, kind); the
        parameter's group's by default)."""
        key = (id(block.program), param.name, slot)
        if key not in self._accumulator_vars:
            value, kind = spec if spec is not None else self._update_of(param).accumulators[slot]
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
        update = self._update_of(param)
        for slot, spec in update.accumulators.items():
            acc = self._accumulator(block, startup, param, slot, spec)
            inputs[slot], outputs[slot + "Out"] = acc, acc
        return block.append_op(update.op_type, inputs, outputs, {**update.attrs, "op_role": OPTIMIZE})

    def _kernel_of(self, param: Any, update: Update, kernel: Any) -> Any:
        """The eager update kernel for one parameter: its group's `kernel` unless its attributes differ."""
        return kernel

    # ------------------------------------------------------------------ eager mode
    def _apply_update(self, param: np.ndarray, grad: np.ndarray, state: dict[str, np.ndarray], kernel: Any = None,
                      lr: np.ndarray | None = None, update: Update | None = None) -> np.ndarray:
        """One update of `param` by `grad` with the same kernel as the static op.

        `state` holds this parameter's accumulators by slot name; it starts empty and is filled
        (and fitted to the update's accumulators, which a group's new options may change) and
        advanced here. Returns the new parameter array (nothing is written in place). `step()`
        passes the bound `kernel` and the 1-element `lr` array, built once per step rather than
        once per parameter (a batch-1 step is dominated by such per-call costs); without them, and
        without the group's `update`, those of the optimizer's own options."""
        if update is None:
            update = self._own_options_update()
        if kernel is None:
            kernel = self._kernel(update)
        if lr is None:
            lr = np.full([1], self.get_lr(), dtype=param.dtype)
        accumulators = update.accumulators
        if len(state) < len(accumulators):
            _fit_state(state, param, accumulators)
        results = kernel(param, grad, *[state[s] for s in accumulators], lr)
        if not isinstance(results, tuple):  # SGD: the new parameter alone
            return results
        for slot, value in zip(accumulators, results[1:]):
            state[slot] = value
        return results[0]

    def _rebase_powers(self, param: Any, state: dict[str, np.ndarray], powers: dict[str, float]) -> None:
        """A power accumulator (Adam's Beta1Pow = beta1 ** step) raised with an option that a group
        changed since: the same power of the new value, as torch's `beta1 ** step` reads it."""
        bases = self._power_bases.setdefault(id(param), {})
        for slot, base in powers.items():
            old = bases.get(slot, base)
            if old != base and slot in state:
                power = float(state[slot].reshape(-1)[0])
                if 0.0 < old < 1.0 and 0.0 < power <= 1.0:
                    state[slot] = np.full_like(state[slot], base ** round(math.log(power) / math.log(old)))
            bases[slot] = base

    def _eager_parameters(self) -> list[Any]:
        if self._parameter_list is None:
            raise ValueError(f"{type(self).__name__}: eager mode needs parameters=[...] at construction")
        return [p for p in self._parameter_list if not getattr(p, "stop_gradient", False)]

    def step(self) -> None:
        """Eager mode: update every parameter that has a gradient, with its group's options now."""
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
        rate = self.get_lr()  # once per step, not per parameter
        lr_by_dtype: dict[Any, np.ndarray] = {}
        compiled: dict[int, tuple[Update, Any]] = {}   # by id(group), once per step
        regularization, eager_state, in_place = self.regularization, self._eager_state, self.in_place_update
        fitted = self._fitted
        per_parameter = self._per_parameter() or any(getattr(p, "_param_attr", None) is not None for p in params)
        own_kernels = type(self)._kernel_of is not Optimizer._kernel_of
        group_of = self._group_of if len(self.param_groups) > 1 else None     # one group: one update
        update, kernel = self._compiled(self.param_groups[0] if self.param_groups else None)
        in_place = in_place if update.op_type == "sgd" else None
        factor = 1.0
        for param, grad in zip(params, grads):
            value = _to_array(param)
            if grad.shape != value.shape or grad.dtype != value.dtype:
                grad = _matching_grad(type(self).__name__, param, value, grad)
            if group_of is not None:
                group = group_of.get(id(param))
                update, kernel = compiled.get(id(group)) or compiled.setdefault(id(group), self._compiled(group))
            if per_parameter:
                factor, regularization = self._options(param)
            if regularization is not None:
                grad = regularization.apply_array(value, grad)
            lr = lr_by_dtype.get((value.dtype, factor))
            if lr is None:
                lr = lr_by_dtype[(value.dtype, factor)] = np.full([1], rate * factor, dtype=value.dtype)
            if in_place is not None and update.op_type == "sgd" and in_place(param, value, grad, lr):
                continue
            state = eager_state.get(id(param))
            if state is None:
                state = eager_state[id(param)] = {}
            if update.powers:
                self._rebase_powers(param, state, update.powers)
            if fitted.get(id(param)) is not update:     # a new update (new options): fit the state to it
                _fit_state(state, value, update.accumulators)
                fitted[id(param)] = update
            _set_array(param, self._apply_update(value, grad, state,
                                                 self._kernel_of(param, update, kernel) if own_kernels else kernel,
                                                 lr, update))

    def _compiled(self, group: ParamGroup | None) -> tuple[Update, Any]:
        update = self._update_of_group(group)
        return update, self._kernel(update)

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

    def state_dict(self, scope: Scope | None = None) -> dict[str, Any]:
        """torch's form (saved_state.py): "state" (each parameter's accumulators, by its position in
        the parameter list) and "param_groups" (every option of each group, its rate, its
        parameters' positions), and the optimizer's own rate "lr", for an optimizer of eager
        parameters (Tensors); a static program's accumulators by variable name (`<param>_<slot>_<k>`,
        read from `scope`, Paddle's form, with "param_groups" holding the groups' rates when one
        was set by hand); a fluidgrad.optimizer.lr scheduler's state under "LR_Scheduler"."""
        state: dict[str, Any] = {}
        scope = scope if scope is not None else global_scope()
        for var in self._accumulator_vars.values():
            if var.name in scope:
                state[var.name] = np.array(scope[var.name])
        if self._parameter_list is not None and any(is_tensor(p) for p in self._parameter_list):
            state.update(torch_form(self))
        elif self._parameter_list is not None and any(
                group["lr"] != getattr(group, "built_rate", group["lr"]) for group in self.param_groups):
            state["param_groups"] = [{"lr": group["lr"]} for group in self.param_groups]
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
        if is_torch_form(state):
            load_torch_form(self, state, lambda value, shape, name: _checked(value, shape, name, legacy))
            used.update(TORCH_KEYS)
        for var in self._accumulator_vars.values():
            if var.name in state:
                scope.assign(var.name, _checked(state[var.name], tuple(var.shape), var.name, legacy))
                used.add(var.name)
        if is_torch_form(state):
            self._finish_loading(state, used)
            return
        load_flat_form(self, state, used, lambda value, shape, name: _checked(value, shape, name, legacy))
        self._finish_loading(state, used, [k for k, _ in self._eager_state_keys()])

    def _finish_loading(self, state: dict[str, Any], used: set[str], names: list[str] | None = None) -> None:
        """The scheduler's state; an error for entries nothing took."""
        if "LR_Scheduler" in state and isinstance(self._learning_rate, LRScheduler):
            self._learning_rate.set_state_dict(state["LR_Scheduler"])
        unused = sorted(set(state) - used)
        if unused:  # a silently skipped accumulator would resume training from a different state
            raise ValueError(f"{type(self).__name__}.set_state_dict: {len(unused)} entries match no accumulator "
                             f"of this optimizer, e.g. {unused[:3]}; its parameters are "
                             f"{(names or [])[:3]}... (a static optimizer's state is restored after "
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


def _fit_state(state: dict[str, np.ndarray], param: np.ndarray, accumulators: dict[str, tuple[float, str]]) -> None:
    """Each accumulator the update reads, at its initial value when missing; a one-element
    placeholder (an option that was off: RMSProp's momentum) grown to the parameter's shape."""
    for slot, (value, kind) in accumulators.items():
        shape = param.shape if kind == "param" else (1,)
        held = state.get(slot)
        if held is None:
            state[slot] = np.full(shape, value, dtype=param.dtype)
        elif held.shape != shape and held.size == 1:
            state[slot] = np.full(shape, held.reshape(-1)[0], dtype=held.dtype)


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


__all__ = ["Optimizer", "Update"]
