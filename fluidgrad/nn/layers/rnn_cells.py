"""One step of a recurrent network: SimpleRNNCell, LSTMCell, GRUCell (Paddle 2 names and
signatures, PyTorch's maths and weight layout: weight_ih [gates * hidden, input], weight_hh
[gates * hidden, hidden], LSTM gates i, f, g, o; GRU r, z, n).

`cell(inputs, states=None)` takes [batch, input_size] and returns `(output, new_states)` as
Paddle's cells do: `(h, h)` for SimpleRNNCell and GRUCell, `(h, (h, c))` for LSTMCell; states
None is the zero state. The step maths is rnn.py's, which the SimpleRNN / LSTM / GRU layers run
step after step."""
from __future__ import annotations

import math
from typing import Any

from ... import functions as F
from ...initializer import Uniform
from ..layer import Layer
from .rnn import gru_step, lstm_step, simple_rnn_step

__all__ = ['SimpleRNNCell', 'LSTMCell', 'GRUCell']


class _RNNCellBase(Layer):
    gates = 1

    def __init__(self, input_size: int, hidden_size: int, weight_ih_attr: Any = None, weight_hh_attr: Any = None,
                 bias_ih_attr: Any = None, bias_hh_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        if int(input_size) <= 0 or int(hidden_size) <= 0:
            raise ValueError(f"{type(self).__name__}: input_size and hidden_size must be positive, got "
                             f"{input_size} and {hidden_size}")
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        bound = 1.0 / math.sqrt(self.hidden_size)
        init = Uniform(-bound, bound)
        rows = self.gates * self.hidden_size
        self.weight_ih = self.create_parameter([rows, self.input_size], weight_ih_attr, default_initializer=init)
        self.weight_hh = self.create_parameter([rows, self.hidden_size], weight_hh_attr, default_initializer=init)
        self.bias_ih = None if bias_ih_attr is False else self.create_parameter(
            [rows], bias_ih_attr, is_bias=True, default_initializer=init)
        self.bias_hh = None if bias_hh_attr is False else self.create_parameter(
            [rows], bias_hh_attr, is_bias=True, default_initializer=init)

    @property
    def state_shape(self) -> Any:
        """The shape of one sample's state (Paddle's RNNCellBase.state_shape)."""
        return (self.hidden_size,)

    def _checked_state(self, inputs: Any, state: Any, what: str) -> Any:
        if state is not None and (len(state.shape) != 2 or state.shape[-1] != self.hidden_size):
            raise ValueError(f"{type(self).__name__}: {what} must be [batch, {self.hidden_size}], got shape "
                             f"{list(state.shape)} for inputs of shape {list(inputs.shape)}")
        return state

    def _projected(self, inputs: Any) -> Any:
        """inputs W_ih^T + b_ih: what the step function calls x_t."""
        if len(inputs.shape) != 2 or inputs.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: inputs must be [batch, {self.input_size}], got shape "
                             f"{list(inputs.shape)}")
        projected = F.matmul(inputs, self.weight_ih, transpose_y=True)
        return projected if self.bias_ih is None else F.add(projected, self.bias_ih)

    def _weight_hh_t(self) -> Any:
        return F.transpose(self.weight_hh, [1, 0])

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


class SimpleRNNCell(_RNNCellBase):
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act tanh (default) or relu; returns (h', h')."""

    def __init__(self, input_size: int, hidden_size: int, activation: str = "tanh", weight_ih_attr: Any = None,
                 weight_hh_attr: Any = None, bias_ih_attr: Any = None, bias_hh_attr: Any = None,
                 name: str | None = None) -> None:
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNNCell: activation must be 'tanh' or 'relu', got {activation!r}")
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)
        self.activation = activation

    def forward(self, inputs: Any, states: Any = None) -> tuple[Any, Any]:
        h = simple_rnn_step(self._projected(inputs), self._checked_state(inputs, states, "states"),
                            self._weight_hh_t(), self.bias_hh, self.activation)
        return h, h


class LSTMCell(_RNNCellBase):
    """Gates i, f, g, o; c' = f c + i g, h' = o tanh(c'); states (h, c); returns (h', (h', c'))."""

    gates = 4

    @property
    def state_shape(self) -> Any:
        return ((self.hidden_size,), (self.hidden_size,))

    def forward(self, inputs: Any, states: Any = None) -> tuple[Any, tuple[Any, Any]]:
        if states is not None:
            if not isinstance(states, (tuple, list)) or len(states) != 2:
                raise TypeError(f"LSTMCell: states must be a tuple (h, c) of two [batch, {self.hidden_size}] "
                                f"Tensors, got {type(states).__name__}")
            states = tuple(self._checked_state(inputs, s, what) for s, what in zip(states, ("h", "c")))
        h, c = lstm_step(self._projected(inputs), states, self._weight_hh_t(), self.bias_hh)
        return h, (h, c)


class GRUCell(_RNNCellBase):
    """Gates r, z, n: n = tanh(x_n + r (h W_hn^T + b_hn)), h' = (1 - z) n + z h; returns (h', h')."""

    gates = 3

    def forward(self, inputs: Any, states: Any = None) -> tuple[Any, Any]:
        h = gru_step(self._projected(inputs), self._checked_state(inputs, states, "states"), self._weight_hh_t(),
                     self.bias_hh)
        return h, h
