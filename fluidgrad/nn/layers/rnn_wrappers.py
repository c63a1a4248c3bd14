"""nn.RNN and nn.BiRNN: any cell run over a sequence (Paddle 2's way to run a custom cell).

`RNN(cell)` calls `cell(step_input, states, **kwargs) -> (step_output, new_states)` once per time
step, as Paddle 2's `paddle.nn.RNN` does, and stacks the step outputs along the time axis. The
cell may be SimpleRNNCell, LSTMCell, GRUCell or a user Layer with that signature; its outputs and
states may be nested tuples / lists of Tensors. The loop is unrolled into the cell's own ops, so
gradients, jit.to_static and static programs come with them; a static time length of -1 (an
InputSpec's None) makes it one program loop instead (rnn_loop.py).

- `initial_states` None: the zeros of the cell's `get_initial_states` (a RNNCellBase subclass);
  fluidgrad's own cells, and a cell without that method, are handed None (the built-in cells
  read it as the zero state and fold it away).
- `is_reverse`: the steps run from the last to the first; the outputs stay in input order.
- `sequence_length` ([batch] integers): at a sequence's padded steps its states stay as they were
  (state = m new + (1 - m) old) and its outputs are zero, as fluidgrad's SimpleRNN / LSTM / GRU
  do, so the final states are each sequence's at its last valid step and a reversed run starts
  there from the initial state.
"""
from __future__ import annotations

from typing import Any, Callable

from ... import functions as F
from ..layer import Layer
from .rnn import SimpleRNN, checked_lengths, step_masks, steps_of
from .rnn_loop import is_dynamic_length, run_over_time, time_step_mask
from .rnn_cells import _RNNCellBase

__all__ = ['RNN', 'BiRNN']


def _map(fn: Callable[..., Any], *trees: Any) -> Any:
    """fn over the leaves of equally nested tuples / lists (Paddle's map_structure); None stays None."""
    first = trees[0]
    if isinstance(first, (tuple, list)):
        return type(first)(_map(fn, *parts) for parts in zip(*trees))
    return None if first is None else fn(*trees)


def _times(value: Any, mask: Any) -> Any:
    """value [batch, ...] times the [batch, 1] step mask, which is reshaped to broadcast over it."""
    rank = len(value.shape)
    return F.multiply(value, mask if rank == 2 else F.reshape(mask, [-1] + [1] * (rank - 1)))


def _masked(new: Any, old: Any, mask: Any, keep: Any) -> Any:
    """m new + (1 - m) old per state Tensor; old None is the zero state."""
    if old is None:
        return _map(lambda n: _times(n, mask), new)
    return _map(lambda n, o: F.add(_times(n, mask), _times(o, keep)), new, old)


def _run(cell: Any, inputs: Any, states: Any, sequence_length: Any, time_major: bool, is_reverse: bool,
         name: str, kwargs: dict) -> tuple[Any, Any]:
    """The cell over every step of inputs: (outputs stacked on the time axis, final states)."""
    if len(inputs.shape) < 2:
        raise ValueError(f"{name}: inputs must be [batch, time, ...] (or [time, batch, ...] with time_major), "
                         f"got shape {list(inputs.shape)}")
    time_axis = 0 if time_major else 1
    length = inputs.shape[time_axis]
    if length is None or length == 0:
        raise ValueError(f"{name}: inputs of shape {list(inputs.shape)} need a non-zero time length on "
                         f"axis {time_axis}")
    x = inputs if time_major else F.transpose(inputs, [1, 0] + list(range(2, len(inputs.shape))))
    if states is None and not isinstance(cell, _RNNCellBase) and hasattr(cell, "get_initial_states"):
        states = cell.get_initial_states(batch_ref=inputs, batch_dim_idx=1 if time_major else 0)
    if is_dynamic_length(length):
        return _loop(cell, x, states, sequence_length, time_major, is_reverse, name, kwargs)
    masks = None if sequence_length is None else step_masks(name, sequence_length, x)
    steps = steps_of(x, length)
    outputs: list[Any] = [None] * length
    for t in (range(length - 1, -1, -1) if is_reverse else range(length)):
        output, new_states = cell(steps[t], states, **kwargs)
        if masks is not None:
            output = _map(lambda o: _times(o, masks[t][0]), output)
            new_states = _masked(new_states, states, *masks[t])
        outputs[t], states = output, new_states
    return _map(lambda *parts: F.stack(list(parts), axis=time_axis), *outputs), states


def _loop(cell: Any, x: Any, states: Any, sequence_length: Any, time_major: bool, is_reverse: bool, name: str,
          kwargs: dict) -> tuple[Any, Any]:
    """`_run` over the time-major x whose length is known only when the program runs: one
    program loop (rnn_loop.py), the masks of a padded batch built per step."""
    lengths = None if sequence_length is None else checked_lengths(name, sequence_length, x)

    def step(x_t: Any, states: Any, t: Any) -> tuple[Any, Any]:
        output, new_states = cell(x_t, states, **kwargs)
        if lengths is not None:
            mask, keep = time_step_mask(lengths, t, x.dtype)
            output = _map(lambda o: _times(o, mask), output)
            new_states = _masked(new_states, states, mask, keep)
        return output, new_states

    outputs, states = run_over_time(step, x, states, is_reverse)
    if not time_major:
        outputs = _map(lambda o: F.transpose(o, [1, 0] + list(range(2, len(o.shape)))), outputs)
    return outputs, states


def _torch_rnn(input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh", bias: bool = True,
               batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
               dtype: Any = None) -> SimpleRNN:
    """torch.nn.RNN(input_size, hidden_size, ...): a SimpleRNN with torch's signature and defaults
    (time-major unless batch_first=True)."""
    return SimpleRNN(input_size, hidden_size, num_layers, dropout=float(dropout), nonlinearity=nonlinearity, bias=bias,
                     batch_first=batch_first, bidirectional=bidirectional, device=device, dtype=dtype)


class RNN(Layer):
    """Runs `cell` over the time axis of `inputs` ([batch, time, ...], or [time, batch, ...] with
    time_major); `forward(inputs, initial_states=None, sequence_length=None, **kwargs)` returns
    (outputs, final_states), extra keyword arguments passed to every call of the cell.

    RNN(input_size, hidden_size, ...) with sizes instead of a cell is torch's nn.RNN: it makes a
    SimpleRNN with torch's signature and defaults (see _torch_rnn), which is not an RNN instance."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else kwargs.get("input_size")
        if cls is RNN and isinstance(first, int) and not isinstance(first, bool):
            return _torch_rnn(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, cell: Layer, is_reverse: bool = False, time_major: bool = False) -> None:
        super().__init__()
        if not callable(cell):
            raise TypeError(f"RNN: cell must be a Layer called as cell(inputs, states), got {type(cell).__name__}")
        self.cell, self.is_reverse, self.time_major = cell, bool(is_reverse), bool(time_major)

    def forward(self, inputs: Any, initial_states: Any = None, sequence_length: Any = None, **kwargs: Any) -> Any:
        return _run(self.cell, inputs, initial_states, sequence_length, self.time_major, self.is_reverse, "RNN",
                    kwargs)

    def extra_repr(self) -> str:
        return f"is_reverse={self.is_reverse}, time_major={self.time_major}"


class BiRNN(Layer):
    """cell_fw forward and cell_bw backward over the same sequence; returns (outputs, (states_fw,
    states_bw)), outputs the two directions' concatenated on the last axis. initial_states is
    None or (states_fw, states_bw)."""

    def __init__(self, cell_fw: Layer, cell_bw: Layer, time_major: bool = False) -> None:
        super().__init__()
        sizes = [getattr(cell, "input_size", None) for cell in (cell_fw, cell_bw)]
        if None not in sizes and sizes[0] != sizes[1]:
            raise ValueError(f"BiRNN: the cells must read the same input size, got {sizes[0]} (cell_fw) and "
                             f"{sizes[1]} (cell_bw)")
        self.cell_fw, self.cell_bw, self.time_major = cell_fw, cell_bw, bool(time_major)

    def forward(self, inputs: Any, initial_states: Any = None, sequence_length: Any = None, **kwargs: Any) -> Any:
        if initial_states is None:
            initial_states = (None, None)
        elif not isinstance(initial_states, (tuple, list)) or len(initial_states) != 2:
            raise TypeError(f"BiRNN: initial_states must be None or a pair (states_fw, states_bw), got "
                            f"{type(initial_states).__name__}")
        out_fw, states_fw = _run(self.cell_fw, inputs, initial_states[0], sequence_length, self.time_major, False,
                                 "BiRNN", kwargs)
        out_bw, states_bw = _run(self.cell_bw, inputs, initial_states[1], sequence_length, self.time_major, True,
                                 "BiRNN", kwargs)
        return _map(lambda a, b: F.concat([a, b], axis=-1), out_fw, out_bw), (states_fw, states_bw)

    def extra_repr(self) -> str:
        return f"time_major={self.time_major}"
