"""One step of a recurrent network: SimpleRNNCell, LSTMCell, GRUCell (Paddle 2 names and
signatures, PyTorch's maths and weight layout: weight_ih [gates * hidden, input], weight_hh
[gates * hidden, hidden], LSTM gates i, f, g, o; GRU r, z, n).

RNNCellBase is the base a user's cell subclasses for nn.RNN (rnn_wrappers.py) to run it.

`cell(inputs, states=None)` takes [batch, input_size] and returns `(output, new_states)` as
Paddle's cells do: `(h, h)` for SimpleRNNCell and GRUCell, `(h, (h, c))` for LSTMCell; states
None is the zero state. The step maths is rnn.py's, which the SimpleRNN / LSTM / GRU layers run
step after step."""
from __future__ import annotations

import math
from typing import Any

from ... import functions as F
from ...dispatch import beside
from ...initializer import Uniform
from ...tensor.manipulation import tile
from ..layer import Layer
from .rnn import gru_step, lstm_step, simple_rnn_step

__all__ = ['RNNCellBase', 'SimpleRNNCell', 'LSTMCell', 'GRUCell']


class RNNCellBase(Layer):
    """The base of recurrent cells (Paddle 2's paddle.nn.RNNCellBase): a subclass defines
    `forward(inputs, states) -> (outputs, new_states)` and `state_shape` (one sample's state
    shape, or a nested tuple of them), and nn.RNN starts it from `get_initial_states`."""

    def get_initial_states(self, batch_ref: Any, shape: Any = None, dtype: Any = None, init_value: float = 0.0,
                           batch_dim_idx: int = 0) -> Any:
        """States filled with init_value, [batch] + shape for each shape of `shape` (default
        state_shape), the batch size read from axis batch_dim_idx of batch_ref (a Tensor, or the
        first of nested ones) when the program runs, so a static batch of -1 works."""
        while isinstance(batch_ref, (tuple, list)):
            batch_ref = batch_ref[0]
        rank = len(batch_ref.shape)
        if not -rank <= batch_dim_idx < rank:
            raise ValueError(f"{type(self).__name__}.get_initial_states: batch_dim_idx {batch_dim_idx} is out of "
                             f"range for batch_ref of shape {list(batch_ref.shape)}")
        others = [a for a in range(rank) if a != batch_dim_idx % rank]
        column = F.reshape(F.slice(batch_ref, others, [0] * len(others), [1] * len(others)) if others else batch_ref,
                           [-1, 1])                                            # [batch, 1]
        dtype = dtype or self.state_dtype or batch_ref.dtype

        def filled(state_shape: Any) -> Any:
            if isinstance(state_shape, (tuple, list)) and not all(isinstance(d, int) for d in state_shape):
                return type(state_shape)(filled(part) for part in state_shape)
            sizes = [int(d) for d in (state_shape if isinstance(state_shape, (tuple, list)) else [state_shape])]
            ones = F.full_like(column, init_value, dtype)
            return F.reshape(tile(ones, [1, math.prod(sizes)]), [-1] + sizes)

        return filled(self.state_shape if shape is None else shape)

    @property
    def state_shape(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__}: define state_shape (one sample's state shape, e.g. "
                                  f"(hidden_size,)) for nn.RNN to make its initial states, or pass initial_states")

    @property
    def state_dtype(self) -> Any:
        """The states' dtype; None: batch_ref's."""
        return None


class _RNNCellBase(RNNCellBase):
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

    def _recurrent_weights(self, inputs: Any) -> tuple[Any, Any]:
        """W_hh^T and b_hh, as Parameters of the Program when inputs is a static Variable (they
        are transposed / split before they meet it)."""
        return F.transpose(beside(self.weight_hh, inputs), [1, 0]), beside(self.bias_hh, inputs)

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
                            *self._recurrent_weights(inputs), self.activation)
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
        h, c = lstm_step(self._projected(inputs), states, *self._recurrent_weights(inputs))
        return h, (h, c)


class GRUCell(_RNNCellBase):
    """Gates r, z, n: n = tanh(x_n + r (h W_hn^T + b_hn)), h' = (1 - z) n + z h; returns (h', h')."""

    gates = 3

    def forward(self, inputs: Any, states: Any = None) -> tuple[Any, Any]:
        h = gru_step(self._projected(inputs), self._checked_state(inputs, states, "states"),
                     *self._recurrent_weights(inputs))
        return h, h
