"""Recurrent layers: SimpleRNN, LSTM and GRU (Paddle 2 names, PyTorch's and Paddle's maths).

Input is [batch, time, input_size] (or [time, batch, ...] with time_major=True); outputs are
`(out, h)` for SimpleRNN and GRU and `(out, (h, c))` for LSTM, out [batch, time, directions *
hidden], each final state [layers * directions, batch, hidden]. Weights follow PyTorch's layout
and gate order (weight_ih_l{k} [gates * hidden, input], LSTM gates i, f, g, o; GRU r, z, n),
so state dicts map one to one.

The time loop is unrolled into ordinary ops: the input projection of every step is one
matmul before the loop (split into steps by one op), each step adds one matmul with the
hidden state and the gate arithmetic. Eager mode runs it on the tape; under `jit.to_static`
it becomes one straight-line Program. A static time length of -1 (`static.data([-1, -1, 4])`,
jit.save's InputSpec([None, None, 4])) is not unrolled: the steps become one `while` loop
(rnn_loop.py), differentiable and exported to ONNX as a Loop.

`sequence_length` ([batch] integers) runs a padded batch as Paddle 2 does (PyTorch: a packed
sequence): a mask from `sequence_mask` keeps each sequence's state unchanged at its padded steps
(state = m new + (1 - m) old) and zeroes its outputs there, so the final states are those at each
sequence's last valid step and the backward direction starts at that step with the initial state.

PyTorch's keywords: batch_first= (time_major = not batch_first), bidirectional=True (direction=
'bidirect'), bias=False (no bias_ih / bias_hh), nonlinearity= (SimpleRNN's activation), device=,
dtype=. Where the two libraries' defaults differ, the call decides whose: a layer built with any
of those torch-only keywords is time-major unless batch_first=True, as torch's is; one built with
the keywords both share or Paddle's (LSTM(3, 4), LSTM(3, 4, 2, direction='bidirect')) stays
batch-major, as Paddle's is (so a torch user writing a bare nn.LSTM(3, 4) feeds it [batch, time,
...] or adds batch_first=False). nn.RNN(input_size, hidden_size, ...)
(torch's spelling: nn.RNN(cell) is Paddle's wrapper) is a SimpleRNN with torch's defaults.
forward also takes torch's hx= and an unbatched [time, input_size] input.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import functions as F
from ...dispatch import beside, is_tensor
from ...indexing import constant
from ...initializer import Uniform
from .. import functional as NF
from ..layer import Layer
from ..utils.rnn import PackedSequence, run_packed
from .rnn_loop import is_dynamic_length, run_over_time, time_step_mask
from .torch_keywords import either

__all__ = ['GRU', 'LSTM', 'SimpleRNN']


# ---------------------------------------------------------------- one step of each cell
# x_t is the step's input projection x W_ih^T + b_ih, w_hh_t the transposed W_hh; a state of None
# is the zero state (its products folded away), b_hh None a cell without that bias. The layers
# below run these step after step; rnn_cells.py's LSTMCell / GRUCell / SimpleRNNCell run one.
def _recurrent(h: Any, w_hh_t: Any, b_hh: Any) -> Any:
    product = F.matmul(h, w_hh_t)
    return product if b_hh is None else F.add(product, b_hh)


def _plus_recurrent(x_t: Any, h: Any, w_hh_t: Any, b_hh: Any) -> Any:
    """x_t + h W_hh^T + b_hh, with the terms that are zero left out."""
    if h is not None:
        return F.add(x_t, _recurrent(h, w_hh_t, b_hh))
    return x_t if b_hh is None else F.add(x_t, b_hh)


def simple_rnn_step(x_t: Any, h: Any, w_hh_t: Any, b_hh: Any, activation: str = "tanh") -> Any:
    """h_t = act(x_t + h W_hh^T + b_hh), act tanh or relu."""
    pre = _plus_recurrent(x_t, h, w_hh_t, b_hh)
    return F.tanh(pre) if activation == "tanh" else F.relu(pre)


def lstm_step(x_t: Any, state: Any, w_hh_t: Any, b_hh: Any) -> tuple[Any, Any]:
    """Gates i, f, g, o from x_t + h W_hh^T + b_hh; c_t = f c + i g, h_t = o tanh(c_t); returns (h_t, c_t)."""
    gates = _plus_recurrent(x_t, None if state is None else state[0], w_hh_t, b_hh)
    i, f, g, o = F.split(gates, 4, axis=-1)
    i, f, o, g = F.sigmoid(i), F.sigmoid(f), F.sigmoid(o), F.tanh(g)
    c = F.multiply(i, g) if state is None else F.add(F.multiply(f, state[1]), F.multiply(i, g))
    return F.multiply(o, F.tanh(c)), c


def gru_step(x_t: Any, h: Any, w_hh_t: Any, b_hh: Any) -> Any:
    """Gates r, z, n: n = tanh(x_n + r (h W_hn^T + b_hn)), h_t = (1 - z) n + z h."""
    x_r, x_z, x_n = F.split(x_t, 3, axis=-1)
    if h is None and b_hh is None:
        r, z = F.sigmoid(x_r), F.sigmoid(x_z)
        n = F.tanh(x_n)
    else:
        h_r, h_z, h_n = F.split(b_hh if h is None else _recurrent(h, w_hh_t, b_hh), 3, axis=-1)
        r, z = F.sigmoid(F.add(x_r, h_r)), F.sigmoid(F.add(x_z, h_z))
        n = F.tanh(F.add(x_n, F.multiply(r, h_n)))
    if h is None:                                        # h_{-1} = 0: h_t = (1 - z) n
        return F.subtract(n, F.multiply(z, n))
    return F.add(n, F.multiply(z, F.subtract(h, n)))


def steps_of(x: Any, length: int) -> list[Any]:
    """The time-major x as `length` steps (axis 0 dropped), with one split op."""
    if length == 1:
        return [F.squeeze(x, [0])]
    return [F.squeeze(p, [0]) for p in F.split(x, length, axis=0)]


def checked_lengths(name: str, lengths: Any, x: Any) -> Any:
    """sequence_length as a Tensor / Variable in x's mode, checked against the time-major x
    (`name`: the layer, for errors); the padded length bounds it when x's is known."""
    time, batch = x.shape[0], x.shape[1]
    lengths = constant(np.asarray(lengths) if isinstance(lengths, (list, tuple)) else lengths, x)
    if len(lengths.shape) != 1 or str(lengths.dtype) not in ("int32", "int64") or \
            (batch >= 0 and lengths.shape[0] >= 0 and lengths.shape[0] != batch):
        raise ValueError(f"{name}: sequence_length must be 1-D integers, one per sequence of the batch of "
                         f"{batch}, got shape {list(lengths.shape)} ({lengths.dtype})")
    if is_tensor(lengths) and lengths.numpy().size and (lengths.numpy().min() < 0 or
                                                        0 <= time < lengths.numpy().max()):
        raise ValueError(f"{name}: sequence_length must lie in [0, {time}] (the padded length), got "
                         f"{lengths.numpy().tolist()}")
    return lengths


def step_masks(name: str, lengths: Any, x: Any) -> list[tuple[Any, Any]]:
    """Per step of the time-major x: (m, 1 - m), each [batch, 1] of x's dtype, m 1 where the
    step is within the sequence's length (`name`: the layer, for errors)."""
    time = x.shape[0]
    lengths = checked_lengths(name, lengths, x)
    mask = F.unsqueeze(F.transpose(NF.sequence_mask(lengths, time, x.dtype), [1, 0]), [2])   # [time, batch, 1]
    keep = F.scale(mask, -1.0, 1.0)
    return list(zip(steps_of(mask, time), steps_of(keep, time)))


def _masked_update(new: Any, old: Any, mask: Any, keep: Any) -> tuple[Any, Any]:
    """(m new + (1 - m) old, m h_new): a padded step keeps the state and outputs zero. States
    are one Tensor or LSTM's (h, c); old None is the zero state."""
    parts = new if isinstance(new, tuple) else (new,)
    olds = (None,) * len(parts) if old is None else (old if isinstance(old, tuple) else (old,))
    masked = [F.multiply(p, mask) for p in parts]
    state = [m if o is None else F.add(m, F.multiply(o, keep)) for m, o in zip(masked, olds)]
    return (tuple(state) if isinstance(new, tuple) else state[0]), masked[0]


def _time_major(name: str, time_major: bool | None, batch_first: bool | None, torch_style: bool) -> bool:
    """Paddle's time_major or torch's batch_first (not both); neither: torch's default (time-major)
    when the layer was built with torch's keywords, else Paddle's (batch-major)."""
    if batch_first is not None:
        if time_major is not None:
            raise TypeError(f"{name}: give time_major= or batch_first= (PyTorch's name), not both")
        return not batch_first
    return bool(time_major) if time_major is not None else torch_style


def _torch_options(name: str, direction: str, attrs: dict[str, Any], bidirectional: bool | None,
                   bias: bool | None, proj_size: int) -> str:
    """direction from torch's bidirectional=; torch's bias=False written into `attrs` (no biases)."""
    if proj_size:
        raise ValueError(f"{name}: proj_size={proj_size} (an LSTM with projections) is not supported")
    if bidirectional is not None:
        if direction != "forward":
            raise TypeError(f"{name}: give direction= or bidirectional= (PyTorch's name), not both")
        direction = "bidirect" if bidirectional else "forward"
    if bias is False:
        if attrs.get("bias_ih_attr") is not None or attrs.get("bias_hh_attr") is not None:
            raise TypeError(f"{name}: give bias_ih_attr= / bias_hh_attr= or bias= (PyTorch's name), not both")
        attrs["bias_ih_attr"] = attrs["bias_hh_attr"] = False
    return direction


class _RNNBase(Layer):
    gates = 1

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, direction: str = "forward",
                 time_major: bool | None = None, dropout: float = 0.0, weight_ih_attr: Any = None,
                 weight_hh_attr: Any = None, bias_ih_attr: Any = None, bias_hh_attr: Any = None, name: str | None = None,
                 *, batch_first: bool | None = None, bidirectional: bool | None = None, bias: bool | None = None,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        owner = type(self).__name__
        attrs = {"bias_ih_attr": bias_ih_attr, "bias_hh_attr": bias_hh_attr}
        direction = _torch_options(owner, direction, attrs, bidirectional, bias, proj_size)
        torch_style = any(v is not None for v in (bidirectional, bias, device, dtype))
        time_major = _time_major(owner, time_major, batch_first, torch_style)
        bias_ih_attr, bias_hh_attr = attrs["bias_ih_attr"], attrs["bias_hh_attr"]
        if direction not in ("forward", "bidirect", "bidirectional"):
            raise ValueError(f"{type(self).__name__}: direction must be 'forward', 'bidirect' or 'bidirectional', "
                             f"got {direction!r}")
        if num_layers < 1:
            raise ValueError(f"{type(self).__name__}: num_layers must be at least 1, got {num_layers}")
        self.input_size, self.hidden_size, self.num_layers = int(input_size), int(hidden_size), int(num_layers)
        self.num_directions = 1 if direction == "forward" else 2
        self.direction, self.time_major, self.dropout = direction, time_major, float(dropout)
        bound = 1.0 / math.sqrt(hidden_size)
        init = Uniform(-bound, bound)
        rows = self.gates * hidden_size
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size * self.num_directions
            for suffix in ("", "_reverse")[:self.num_directions]:
                name = f"l{layer}{suffix}"
                self.add_parameter(f"weight_ih_{name}", self._param([rows, width], weight_ih_attr, init))
                self.add_parameter(f"weight_hh_{name}", self._param([rows, hidden_size], weight_hh_attr, init))
                self.add_parameter(f"bias_ih_{name}", self._param([rows], bias_ih_attr, init, True))
                self.add_parameter(f"bias_hh_{name}", self._param([rows], bias_hh_attr, init, True))
        if device is not None or dtype is not None:
            self.to(device, dtype)

    def _param(self, shape: list[int], attr: Any, init: Uniform, is_bias: bool = False) -> Any:
        """The parameter, or None for a bias of attr False (Paddle's) / bias=False (PyTorch's)."""
        if is_bias and attr is False:
            return None
        return self.create_parameter(shape, attr, is_bias=is_bias, default_initializer=init)

    # -- one direction of one layer
    def _weights(self, layer: int, reverse: bool) -> tuple[Any, Any, Any, Any]:
        name = f"l{layer}{'_reverse' if reverse else ''}"
        return tuple(getattr(self, f"{kind}_{name}") for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def _run_direction(self, x: Any, layer: int, reverse: bool, state: Any,
                       masks: list[tuple[Any, Any]] | None) -> tuple[list[Any], Any]:
        """x is time-major [time, batch, features]: its projection splits into steps with one op
        (whose gradient is one concat), never a slice per step (a full-size gradient each).
        masks: per step (m, 1 - m), each [batch, 1], for a padded batch; None runs every step."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer, reverse)
        projected = F.matmul(x, w_ih, transpose_y=True)                    # every step's x W_ih^T + b_ih
        projected = projected if b_ih is None else F.add(projected, b_ih)
        length = x.shape[0]
        steps = steps_of(projected, length)
        w_hh_t = F.transpose(beside(w_hh, x), [1, 0])                         # once, not per step
        b_hh = None if b_hh is None else beside(b_hh, x)                      # (a GRU splits it)
        outputs: list[Any] = [None] * length
        for t in (range(length - 1, -1, -1) if reverse else range(length)):
            new = self._cell(steps[t], state, w_hh_t, b_hh)
            if masks is None:
                state, outputs[t] = new, self._hidden(new)
            else:
                state, outputs[t] = _masked_update(new, state, *masks[t])
        return outputs, state

    def _loop_direction(self, x: Any, layer: int, reverse: bool, state: Any, lengths: Any) -> tuple[Any, Any]:
        """`_run_direction` for a length known only when the program runs (rnn_loop.py): one
        `while` over the steps; returns (the outputs [time, batch, hidden], the final state)."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer, reverse)
        projected = F.matmul(x, w_ih, transpose_y=True)
        projected = projected if b_ih is None else F.add(projected, b_ih)
        w_hh_t = F.transpose(beside(w_hh, x), [1, 0])
        b_hh = None if b_hh is None else beside(b_hh, x)

        def step(x_t: Any, state: Any, t: Any) -> tuple[Any, Any]:
            new = self._cell(x_t, state, w_hh_t, b_hh)
            if lengths is None:
                return self._hidden(new), new
            new, output = _masked_update(new, state, *time_step_mask(lengths, t, x.dtype))
            return output, new
        return run_over_time(step, projected, state, reverse)

    # -- the whole stack
    def forward(self, inputs: Any, initial_states: Any = None, sequence_length: Any = None, *, hx: Any = None) -> Any:
        if hx is not None:
            if initial_states is not None:
                raise TypeError(f"{type(self).__name__}: give initial_states= or hx= (PyTorch's name), not both")
            initial_states = hx
        if isinstance(inputs, PackedSequence):   # torch's packed batch, run padded with its lengths
            return run_packed(self, inputs, initial_states)
        if len(inputs.shape) == 2:            # torch's unbatched [time, input_size]
            return self._unbatched(inputs, initial_states, sequence_length)
        if len(inputs.shape) != 3:
            raise ValueError(f"{type(self).__name__}: input must be [batch, time, input_size] ([time, batch, "
                             f"input_size] when time-major, or unbatched [time, input_size]), got shape "
                             f"{list(inputs.shape)}")
        if inputs.shape[1 if not self.time_major else 0] == 0 or inputs.shape[2] != self.input_size:
            raise ValueError(f"{type(self).__name__}: input of shape {list(inputs.shape)} needs a non-zero time "
                             f"length and input_size {self.input_size}")
        x = inputs if self.time_major else F.transpose(inputs, [1, 0, 2])    # time-major inside
        initial = self._split_states(initial_states)
        name, dynamic = type(self).__name__, is_dynamic_length(x.shape[0])  # dynamic: a program loop
        lengths = None if sequence_length is None else checked_lengths(name, sequence_length, x)
        masks = None if lengths is None or dynamic else step_masks(name, lengths, x)
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.num_directions):
                index = layer * self.num_directions + d
                if dynamic:
                    out, final = self._loop_direction(x, layer, d == 1, initial[index], lengths)
                else:
                    steps, final = self._run_direction(x, layer, d == 1, initial[index], masks)
                    out = F.stack(steps, axis=0)
                outs.append(out)
                finals.append(final)
            x = outs[0] if len(outs) == 1 else F.concat(outs, axis=-1)
            if self.dropout > 0.0 and layer < self.num_layers - 1:
                x = NF.dropout(x, self.dropout, training=self.training)
        out = x if self.time_major else F.transpose(x, [1, 0, 2])
        return out, self._join_states(finals)

    def _unbatched(self, inputs: Any, initial_states: Any, sequence_length: Any) -> Any:
        """A batch of one: [time, input_size] in, out [time, directions * hidden] and states
        [layers * directions, hidden] back (torch's unbatched call)."""
        def batched(state: Any) -> Any:
            return F.unsqueeze(state, [1])

        def unbatched(state: Any) -> Any:
            return F.squeeze(state, [1])
        states = None if initial_states is None else _map_states(batched, initial_states)
        out, finals = self.forward(F.unsqueeze(inputs, [1 if self.time_major else 0]), states, sequence_length)
        return F.squeeze(out, [1 if self.time_major else 0]), _map_states(unbatched, finals)

    def _split_states(self, states: Any) -> list[Any]:
        """Per layer and direction: the initial state, or None (zeros, folded away)."""
        count = self.num_layers * self.num_directions
        if states is None:
            return [None] * count
        return [F.squeeze(s, [0]) for s in F.split(states, count, axis=0)]

    def _join_states(self, finals: list[Any]) -> Any:
        return F.stack(finals, axis=0)

    def _hidden(self, state: Any) -> Any:
        return state

    def extra_repr(self) -> str:
        return (f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
                f"direction={self.direction}, time_major={self.time_major}")


def _map_states(fn: Any, states: Any) -> Any:
    """fn on one state Tensor or on each of LSTM's (h, c)."""
    return tuple(fn(s) for s in states) if isinstance(states, (tuple, list)) else fn(states)


class SimpleRNN(_RNNBase):
    """h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu; returns (out, h)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, direction: str = "forward",
                 time_major: bool | None = None, dropout: float = 0.0, activation: str = "tanh", *,
                 nonlinearity: str | None = None, **attrs: Any) -> None:
        activation = either("SimpleRNN", "activation", activation, "tanh", "nonlinearity", nonlinearity)
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNN: activation must be 'tanh' or 'relu', got {activation!r}")
        if nonlinearity is not None and time_major is None:
            attrs.setdefault("batch_first", False)          # torch's default, as with its other keywords
        super().__init__(input_size, hidden_size, num_layers, direction, time_major, dropout, **attrs)
        self.activation = activation

    def _cell(self, x_t: Any, h: Any, w_hh: Any, b_hh: Any) -> Any:
        return simple_rnn_step(x_t, h, w_hh, b_hh, self.activation)


class LSTM(_RNNBase):
    """Gates i, f, g, o; c_t = f c_{t-1} + i g, h_t = o tanh(c_t); returns (out, (h, c))."""

    gates = 4

    def _cell(self, x_t: Any, state: Any, w_hh: Any, b_hh: Any) -> Any:
        return lstm_step(x_t, state, w_hh, b_hh)

    def _hidden(self, state: Any) -> Any:
        return state[0]

    def _split_states(self, states: Any) -> list[Any]:
        if states is None:
            return [None] * (self.num_layers * self.num_directions)
        if not isinstance(states, (tuple, list)) or len(states) != 2:
            raise TypeError(f"LSTM: initial_states must be a tuple (h, c) of two Tensors "
                            f"[num_layers * num_directions, batch, hidden_size], got {type(states).__name__}")
        hs, cs = (_RNNBase._split_states(self, s) for s in states)
        return list(zip(hs, cs))

    def _join_states(self, finals: list[Any]) -> Any:
        return F.stack([h for h, _ in finals], axis=0), F.stack([c for _, c in finals], axis=0)


class GRU(_RNNBase):
    """Gates r, z, n: n = tanh(x_n + r (h W_hn^T + b_hn)), h_t = (1 - z) n + z h_{t-1}; returns (out, h)."""

    gates = 3

    def _cell(self, x_t: Any, h: Any, w_hh: Any, b_hh: Any) -> Any:
        return gru_step(x_t, h, w_hh, b_hh)
