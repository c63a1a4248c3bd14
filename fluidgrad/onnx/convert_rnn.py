"""RNN, LSTM and GRU: the recurrence unrolled over the (static) sequence length; the batch
may be unknown (a dynamic batch: default zero states are shaped from the inputs).

The input projection of every step is one matmul; each step then adds the recurrent
matmul and applies the gates with ordinary ops, so the imported program trains like any
other (the weights stay Parameters). `sequence_lens` holds a sequence's state after its
end and zeroes its outputs there (which also gives the per-sequence reversal of the
reverse direction, as the steps past the end leave the initial state untouched).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .convert_common import binary, mul_scalar, add_scalar
from .convert_table import converter

_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}
_GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}


def _activation(ctx: Any, name: str, alpha: float | None, beta: float | None) -> Callable[[Any], Any]:
    """ONNX's recurrent activation names as fluidgrad ops."""
    simple = {"tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu", "softsign": "softsign",
              "softplus": "softplus"}
    key = name.lower()
    if key in simple:
        return lambda x: ctx.op(simple[key], {"X": x})
    if key == "leakyrelu":
        return lambda x: ctx.op("leaky_relu", {"X": x}, alpha=0.01 if alpha is None else alpha)
    if key == "elu":
        return lambda x: ctx.op("elu", {"X": x}, alpha=1.0 if alpha is None else alpha)
    if key == "affine":
        return lambda x: add_scalar(ctx, mul_scalar(ctx, x, 1.0 if alpha is None else alpha), beta or 0.0)
    if key == "scaledtanh":
        return lambda x: mul_scalar(ctx, ctx.op("tanh", {"X": mul_scalar(ctx, x, 1.0 if beta is None else beta)}),
                                    1.0 if alpha is None else alpha)
    if key == "hardsigmoid":
        a, b = 0.2 if alpha is None else alpha, 0.5 if beta is None else beta
        return lambda x: ctx.op("clip", {"X": add_scalar(ctx, mul_scalar(ctx, x, a), b)}, min=0.0, max=1.0)
    raise ctx.unsupported(f"recurrent activation {name!r}")


def _activations(ctx: Any, op_type: str, num_directions: int) -> list[list[Callable[[Any], Any]]]:
    names = ctx.attr("activations") or _DEFAULT_ACTIVATIONS[op_type] * num_directions
    alphas, betas = list(ctx.attr("activation_alpha") or []), list(ctx.attr("activation_beta") or [])
    per_direction = len(names) // num_directions
    # alpha and beta are consumed in order by the activations that take them
    params_of = {"leakyrelu": 1, "elu": 1, "affine": 2, "scaledtanh": 2, "hardsigmoid": 2, "thresholdedrelu": 1}
    built = []
    for name in names:
        takes = params_of.get(name.lower(), 0)
        alpha = alphas.pop(0) if takes >= 1 and alphas else None
        beta = betas.pop(0) if takes >= 2 and betas else None
        built.append(_activation(ctx, name, alpha, beta))
    return [built[d * per_direction:(d + 1) * per_direction] for d in range(num_directions)]


def _pick(ctx: Any, var: Any, index: int, count: int) -> Any:
    """var[index] along axis 0 (a direction of W, R, B, ...)."""
    if count == 1:
        return ctx.op("squeeze", {"X": var}, axes=[0])
    return ctx.op("squeeze", {"X": ctx.op("split", {"X": var}, n_out=count, num_or_sections=count, axis=0)[index]},
                  axes=[0])


class _Direction:
    """The weights of one direction and the step function of the cell."""

    def __init__(self, ctx: Any, op_type: str, d: int, num_directions: int, hidden: int, dtype: str,
                 acts: list) -> None:
        self.ctx, self.op_type, self.hidden, self.acts = ctx, op_type, hidden, acts
        gates = _GATES[op_type]
        self.w = _pick(ctx, ctx.input(1), d, num_directions)            # (G*H, I)
        self.r = _pick(ctx, ctx.input(2), d, num_directions)            # (G*H, H)
        if ctx.has_input(3):
            b = _pick(ctx, ctx.input(3), d, num_directions)             # (2*G*H,)
            self.wb, self.rb = ctx.op("split", {"X": b}, n_out=2, num_or_sections=2, axis=0)
        else:
            self.wb = self.rb = None
        self.peephole = None
        if op_type == "LSTM" and ctx.has_input(7):
            p = _pick(ctx, ctx.input(7), d, num_directions)
            self.peephole = ctx.op("split", {"X": p}, n_out=3, num_or_sections=3, axis=0)
        self.gates = gates
        self.clip = ctx.attr("clip")
        self.linear_before_reset = bool(ctx.attr("linear_before_reset", 0))
        self.input_forget = bool(ctx.attr("input_forget", 0))

    def projected_inputs(self, x: Any) -> Any:
        """X (T, B, I) @ W^T + Wb (+ Rb where it simply adds), for all steps at once."""
        ctx = self.ctx
        xw = ctx.op("matmul", {"X": x, "Y": self.w}, transpose_y=True)
        if self.wb is not None:
            xw = binary(ctx, "elementwise_add", xw, self.wb)
            if self.op_type != "GRU":
                xw = binary(ctx, "elementwise_add", xw, self.rb)
        return xw

    def _f(self, i: int, x: Any) -> Any:
        if self.clip is not None:
            x = self.ctx.op("clip", {"X": x}, min=-float(self.clip), max=float(self.clip))
        return self.acts[i](x)

    def _split(self, x: Any, n: int) -> list:
        return list(self.ctx.op("split", {"X": x}, n_out=n, num_or_sections=n, axis=-1))

    def step(self, xw: Any, h: Any, c: Any) -> tuple[Any, Any]:
        ctx = self.ctx
        add, mul = (lambda a, b: binary(ctx, "elementwise_add", a, b)), (lambda a, b: binary(ctx, "elementwise_mul", a, b))
        if self.op_type == "RNN":
            return self._f(0, add(xw, ctx.op("matmul", {"X": h, "Y": self.r}, transpose_y=True))), None
        if self.op_type == "LSTM":
            i, o, f, g = self._split(add(xw, ctx.op("matmul", {"X": h, "Y": self.r}, transpose_y=True)), 4)
            if self.peephole is not None:
                i, f = add(i, mul(self.peephole[0], c)), add(f, mul(self.peephole[2], c))
            i = self._f(0, i)
            f = binary(ctx, "elementwise_sub", ctx.scalar(1.0, i.dtype), i) if self.input_forget else self._f(0, f)
            c = add(mul(f, c), mul(i, self._f(1, g)))
            if self.peephole is not None:
                o = add(o, mul(self.peephole[1], c))
            return mul(self._f(0, o), self._f(2, c)), c
        # GRU
        xz, xr, xh = self._split(xw, 3)
        r_zr, r_h = ctx.op("split", {"X": self.r}, n_out=2, num_or_sections=[2 * self.hidden, self.hidden], axis=0)
        hz, hr = self._split(ctx.op("matmul", {"X": h, "Y": r_zr}, transpose_y=True), 2)
        if self.rb is not None:
            rbz, rbr, rbh = ctx.op("split", {"X": self.rb}, n_out=3, num_or_sections=3, axis=0)
            hz, hr = add(hz, rbz), add(hr, rbr)
        z, r = self._f(0, add(xz, hz)), self._f(0, add(xr, hr))
        if self.linear_before_reset:
            hh = ctx.op("matmul", {"X": h, "Y": r_h}, transpose_y=True)
            if self.rb is not None:
                hh = add(hh, rbh)
            cand = self._f(1, add(xh, mul(r, hh)))
        else:
            hh = ctx.op("matmul", {"X": mul(r, h), "Y": r_h}, transpose_y=True)
            if self.rb is not None:
                hh = add(hh, rbh)
            cand = self._f(1, add(xh, hh))
        one_minus_z = binary(ctx, "elementwise_sub", ctx.scalar(1.0, z.dtype), z)
        return add(mul(one_minus_z, cand), mul(z, h)), None


def _initial(ctx: Any, index: int, d: int, num_directions: int, xw: Any, hidden: int, layout: int) -> Any:
    """The given initial state of direction d, or zeros (B, H); an unknown batch B is read from
    the projected inputs xw (T, B, G*H)."""
    if ctx.has_input(index):
        state = ctx.input(index)
        if layout == 1:
            state = ctx.op("transpose", {"X": state}, perm=[1, 0, 2])
        return _pick(ctx, state, d, num_directions)
    batch = xw.shape[1]
    if batch >= 0:
        return ctx.op("fill_constant", {}, shape=[batch, hidden], value=0.0, dtype=xw.dtype)
    first = ctx.op("slice", {"X": xw}, axes=[0, 2], starts=[0, 0], ends=[1, hidden])
    return ctx.op("fill_any_like", {"X": ctx.op("squeeze", {"X": first}, axes=[0])}, value=0.0, dtype=xw.dtype)


def _recurrent(ctx: Any, op_type: str) -> list:
    x = ctx.input(0)
    layout = int(ctx.attr("layout", 0))
    if layout == 1:
        x = ctx.op("transpose", {"X": x}, perm=[1, 0, 2])
    steps = x.shape[0]
    if steps < 0:
        raise ctx.unsupported(f"input shape {list(ctx.input(0).shape)} has an unknown sequence length (the "
                              f"recurrence is unrolled over a static sequence length)")
    direction = ctx.attr("direction", "forward")
    num_directions = 2 if direction == "bidirectional" else 1
    hidden = int(ctx.attr("hidden_size") or ctx.shape(2)[-1])
    dtype = x.dtype
    masks = _step_masks(ctx, steps, dtype)
    acts = _activations(ctx, op_type, num_directions)
    ys, hs, cs = [], [], []
    for d in range(num_directions):
        cell = _Direction(ctx, op_type, d, num_directions, hidden, dtype, acts[d])
        xw = cell.projected_inputs(x)
        xws = ctx.op("split", {"X": xw}, n_out=steps, num_or_sections=steps, axis=0) if steps > 1 else [xw]
        h = _initial(ctx, 5, d, num_directions, xw, hidden, layout)
        c = _initial(ctx, 6, d, num_directions, xw, hidden, layout) if op_type == "LSTM" else None
        reverse = direction == "reverse" or d == 1
        outputs: list = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            h_new, c_new = cell.step(ctx.op("squeeze", {"X": xws[t]}, axes=[0]), h, c)
            if masks is not None:
                keep, drop = masks[t]
                h_new = binary(ctx, "elementwise_add", binary(ctx, "elementwise_mul", h_new, keep),
                               binary(ctx, "elementwise_mul", h, drop))
                if c is not None:
                    c_new = binary(ctx, "elementwise_add", binary(ctx, "elementwise_mul", c_new, keep),
                                   binary(ctx, "elementwise_mul", c, drop))
                outputs[t] = binary(ctx, "elementwise_mul", h_new, keep)
            else:
                outputs[t] = h_new
            h, c = h_new, c_new
        ys.append(ctx.op("stack", {"X": outputs}, axis=0))   # (T, B, H)
        hs.append(h)
        cs.append(c)
    y = ctx.op("stack", {"X": ys}, axis=1)                   # (T, D, B, H)
    y_h = ctx.op("stack", {"X": hs}, axis=0)                 # (D, B, H)
    y_c = ctx.op("stack", {"X": cs}, axis=0) if op_type == "LSTM" else None
    if layout == 1:
        y = ctx.op("transpose", {"X": y}, perm=[2, 0, 1, 3])
        y_h = ctx.op("transpose", {"X": y_h}, perm=[1, 0, 2])
        y_c = None if y_c is None else ctx.op("transpose", {"X": y_c}, perm=[1, 0, 2])
    return [y, y_h, y_c]


def _step_masks(ctx: Any, steps: int, dtype: str) -> list | None:
    """(keep, 1 - keep) of shape (B, 1) for each step, or None when every sequence is full length."""
    if not ctx.has_input(4):
        return None
    lens = ctx.maybe_const(4)
    if lens is not None and np.all(lens == steps):
        return None
    if lens is None:
        lens_var = ctx.op("reshape", {"X": ctx.op("cast", {"X": ctx.input(4)}, dtype=dtype)}, shape=[-1, 1])
        masks = []
        for t in range(steps):
            keep = ctx.op("cast", {"X": binary(ctx, "greater_than", lens_var, ctx.scalar(float(t), dtype))},
                          dtype=dtype)
            masks.append((keep, binary(ctx, "elementwise_sub", ctx.scalar(1.0, dtype), keep)))
        return masks
    keep = (np.arange(steps)[:, None] < np.asarray(lens).reshape(1, -1)).astype(dtype)
    return [(ctx.constant(keep[t].reshape(-1, 1)), ctx.constant(1 - keep[t].reshape(-1, 1)))
            for t in range(steps)]


converter("RNN")(lambda ctx: _recurrent(ctx, "RNN")[:2])
converter("GRU")(lambda ctx: _recurrent(ctx, "GRU")[:2])
converter("LSTM")(lambda ctx: _recurrent(ctx, "LSTM"))
