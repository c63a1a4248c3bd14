"""LBFGS (paddle.optimizer.LBFGS, torch.optim.LBFGS): limited-memory BFGS over all parameters as
one flat vector, `step(closure)` re-evaluating the loss and gradients as often as it needs.

Why eager only: one step runs the model several times (max_iter iterations, and a line search's
trial points), each time reading the loss to decide what to do next; a static program's single
run per step cannot. The iteration is torch.optim.LBFGS's, step for step, in the parameters'
dtype: the two-loop recursion over the last `history_size` curvature pairs, a first step of
min(1, 1 / |g|_1) * lr, then steps of lr, or with `line_search_fn="strong_wolfe"` a step length
meeting the strong Wolfe conditions (cubic interpolation, bracketing, zoom; line_search.py).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..eager import enable_grad
from ..framework import Variable
from ..lr import LRScheduler
from ..nn.clip import GradientClipBase
from .line_search import strong_wolfe
from .optimizer import Optimizer, Update, _checked, _set_array, _to_array, default_rate

# what state_dict saves: arrays, lists of arrays, numbers
_ARRAYS, _ARRAY_LISTS = ("d", "prev_flat_grad"), ("old_dirs", "old_stps", "ro")
_NUMBERS = ("t", "H_diag", "prev_loss", "n_iter", "func_evals")


class LBFGS(Optimizer):
    """`step(closure)`: closure clears the gradients, computes the loss, calls backward() and
    returns the loss. Paddle's and torch's arguments (lr= and parameters first work too); the
    options are read from `param_groups[0]` at each step, so writing one there takes effect."""

    options = ("max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn")

    takes_maximize = False   # as torch.optim.LBFGS

    def __init__(self, learning_rate: float | LRScheduler | None = None, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None,
                 parameters: Iterable[Any] | None = None, weight_decay: float | None = None,
                 grad_clip: GradientClipBase | None = None, name: str | None = None, *,
                 lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name,
                         lr=default_rate(learning_rate, lr, 1.0))
        if len(self.param_groups) > 1:
            raise ValueError("LBFGS: parameter groups are not supported (one flat vector of all parameters)")
        self._update_for({"max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
                          "tolerance_change": tolerance_change, "history_size": history_size,
                          "line_search_fn": line_search_fn})
        self.max_iter, self.history_size = int(max_iter), int(history_size)
        self.max_eval = int(max_eval) if max_eval is not None else self.max_iter * 5 // 4
        self.tolerance_grad, self.tolerance_change = float(tolerance_grad), float(tolerance_change)
        self.line_search_fn = line_search_fn
        self._state: dict[str, Any] = {"func_evals": 0, "n_iter": 0}

    def _update_for(self, settings: dict[str, Any]) -> Update:
        """No update op (the step is the L-BFGS iteration): the options checked."""
        if settings["line_search_fn"] not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {settings['line_search_fn']!r}")
        for what in ("max_iter", "history_size") + (("max_eval",) if settings["max_eval"] is not None else ()):
            value = settings[what]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"LBFGS: {what} must be a positive integer, got {value!r}")
        return Update("", {}, {})

    # ------------------------------------------------------------------ the flat vector
    def _params(self) -> list[Any]:
        return self._eager_parameters()

    def _flat_grad(self) -> np.ndarray:
        """The gradients as one vector (zeros for a parameter without one), with weight decay and
        clipping applied as every optimizer applies them."""
        params = self._params()
        values = [_to_array(p) for p in params]
        grads = [np.zeros_like(v) if p.grad is None else _to_array(p.grad).astype(v.dtype, copy=False)
                 for p, v in zip(params, values)]
        if self._grad_clip is not None:
            grads = self._grad_clip.clip_arrays(grads, params)
        decay = self.param_groups[0].regularizer if self.param_groups else self.regularization
        if decay is not None:
            grads = [decay.apply_array(v, g) for v, g in zip(values, grads)]
        return np.concatenate([g.reshape(-1) for g in grads]) if grads else np.zeros(0)

    def _add(self, t: Any, direction: np.ndarray) -> None:
        offset = 0
        for param in self._params():
            value = _to_array(param)
            piece = direction[offset:offset + value.size].reshape(value.shape)
            _set_array(param, value + value.dtype.type(t) * piece)
            offset += value.size

    def _values(self) -> list[np.ndarray]:
        return [_to_array(p).copy() for p in self._params()]

    def _restore(self, values: list[np.ndarray]) -> None:
        for param, value in zip(self._params(), values):
            _set_array(param, value.copy())

    def _evaluate(self, closure: Callable[[], Any]) -> float:
        with enable_grad():
            return float(_loss_value(closure()))

    # ------------------------------------------------------------------ one step
    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        """Up to `max_iter` L-BFGS iterations; returns the loss the first closure() gave."""
        if closure is None:
            raise TypeError("LBFGS.step needs a closure: step(closure), where closure clears the gradients, "
                            "computes the loss, calls loss.backward() and returns the loss")
        group = self.param_groups[0] if self.param_groups else None   # its options now (torch reads them each step)
        o = self._settings(group)
        self._update_for(o)
        if o["max_eval"] is None:
            o["max_eval"] = o["max_iter"] * 5 // 4
        state, lr = self._state, (self.get_lr() if group is None else group["lr"])
        with enable_grad():
            first_loss = closure()
        loss = float(_loss_value(first_loss))
        evals = 1
        state["func_evals"] += 1
        grad = self._flat_grad()
        if grad.size == 0 or np.abs(grad).max() <= o["tolerance_grad"]:
            return first_loss
        dtype = grad.dtype.type
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < o["max_iter"]:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_stps, ro, h_diag = -grad, [], [], [], dtype(1)
            else:
                h_diag = self._remember(grad - prev_grad, d * dtype(t), old_dirs, old_stps, ro, h_diag,
                                        o["history_size"])
                d = _two_loop(-grad, old_dirs, old_stps, ro, h_diag)
            prev_grad, prev_loss = grad.copy(), loss
            t = dtype(min(1.0, float(dtype(1) / np.abs(grad).sum())) * lr) if state["n_iter"] == 1 else lr
            gtd = grad.dot(d)
            if gtd > -o["tolerance_change"]:
                break
            line_evals = 0
            if o["line_search_fn"] == "strong_wolfe":
                start = self._values()

                def along(x: list[np.ndarray], step: float, direction: np.ndarray) -> tuple[float, np.ndarray]:
                    self._add(step, direction)
                    value = self._evaluate(closure)
                    flat = self._flat_grad()
                    self._restore(x)
                    return value, flat
                loss, grad, t, line_evals = strong_wolfe(along, start, t, d, loss, grad, gtd,
                                                         max_ls=o["max_eval"] - evals)
                self._add(t, d)
                converged = np.abs(grad).max() <= o["tolerance_grad"]
            else:
                self._add(t, d)
                converged = False
                if n_iter != o["max_iter"]:
                    loss = self._evaluate(closure)
                    grad = self._flat_grad()
                    converged = np.abs(grad).max() <= o["tolerance_grad"]
                    line_evals = 1
            evals += line_evals
            state["func_evals"] += line_evals
            if n_iter == o["max_iter"] or evals >= o["max_eval"] or converged \
                    or np.abs(d * dtype(t)).max() <= o["tolerance_change"] or abs(loss - prev_loss) < o["tolerance_change"]:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_grad, prev_loss=prev_loss)
        return first_loss

    def _remember(self, y: np.ndarray, s: np.ndarray, old_dirs: list, old_stps: list, ro: list, h_diag: Any,
                  history_size: int) -> Any:
        """Keep the curvature pair (y, s) when y.s > 1e-10 (dropping the oldest past history_size);
        returns the new initial Hessian scale y.s / y.y."""
        ys = y.dot(s)
        if ys <= 1e-10:
            return h_diag
        while old_dirs and len(old_dirs) >= history_size:
            old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
        old_dirs.append(y)
        old_stps.append(s)
        ro.append(ys.dtype.type(1) / ys)
        return ys / y.dot(y)

    # ------------------------------------------------------------------ modes, saving
    def minimize(self, loss: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(loss, Variable):
            raise TypeError("LBFGS works in eager mode only: each step evaluates the loss several times "
                            "(step(closure)), which one run of a static program cannot; use another optimizer "
                            "with minimize(), or eager mode")
        raise TypeError("LBFGS: call step(closure) (the closure recomputes the loss and its gradients), "
                        "not minimize(loss)")

    def apply_gradients(self, params_grads: Any, startup_program: Any = None) -> Any:
        raise TypeError("LBFGS works in eager mode only (step(closure)); it appends no update ops to a program")

    def state_dict(self, scope: Any = None) -> dict[str, Any]:
        """The iteration's state (direction, step, curvature history, counters), as NumPy arrays
        and numbers, and the scheduler's state."""
        state: dict[str, Any] = {}
        for key in _ARRAYS:
            if self._state.get(key) is not None:
                state[key] = np.array(self._state[key])
        for key in _ARRAY_LISTS:
            for i, value in enumerate(self._state.get(key) or []):
                state[f"{key}.{i}"] = np.array(value)
        for key in _NUMBERS:
            if self._state.get(key) is not None:
                state[key] = float(self._state[key])
        if isinstance(self._learning_rate, LRScheduler):
            state["LR_Scheduler"] = self._learning_rate.state_dict()
        return state

    def set_state_dict(self, state: dict[str, Any], scope: Any = None) -> None:
        size = sum(_to_array(p).size for p in self._params())
        dtype = _to_array(self._params()[0]).dtype if self._params() else np.dtype("float32")
        known = set(_ARRAYS) | set(_NUMBERS) | {"LR_Scheduler"}
        unknown = sorted(k for k in state if k not in known and k.split(".")[0] not in _ARRAY_LISTS)
        if unknown:
            raise ValueError(f"LBFGS.set_state_dict: entries {unknown[:3]} are not LBFGS state")
        restored: dict[str, Any] = {"func_evals": 0, "n_iter": 0}
        for key in _ARRAYS:
            if key in state:
                restored[key] = _checked(state[key], (size,), key).astype(dtype)
        for key in _ARRAY_LISTS:
            count = len([k for k in state if k.startswith(key + ".")])
            shape = () if key == "ro" else (size,)
            restored[key] = [_checked(state[f"{key}.{i}"], shape, f"{key}.{i}").astype(dtype)[()]
                             if key == "ro" else _checked(state[f"{key}.{i}"], shape, f"{key}.{i}").astype(dtype)
                             for i in range(count)]
        for key in _NUMBERS:
            if key in state:
                value = float(np.asarray(state[key]).reshape(-1)[0])
                restored[key] = int(value) if key in ("n_iter", "func_evals") else \
                    (value if key == "prev_loss" else dtype.type(value))
        if "LR_Scheduler" in state and isinstance(self._learning_rate, LRScheduler):
            self._learning_rate.set_state_dict(state["LR_Scheduler"])
        self._state = restored


def _loss_value(loss: Any) -> Any:
    return loss.numpy() if hasattr(loss, "numpy") else loss


def _two_loop(q: np.ndarray, old_dirs: list, old_stps: list, ro: list, h_diag: Any) -> np.ndarray:
    """The L-BFGS two-loop recursion: the inverse-Hessian estimate times q."""
    alphas = [None] * len(old_dirs)
    for i in range(len(old_dirs) - 1, -1, -1):
        alphas[i] = old_stps[i].dot(q) * ro[i]
        q = q - alphas[i] * old_dirs[i]
    r = q * h_diag
    for i in range(len(old_dirs)):
        beta = old_dirs[i].dot(r) * ro[i]
        r = r + (alphas[i] - beta) * old_stps[i]
    return r
