"""Exception types. Messages always name the op type, the variables and the shapes or dtypes."""


class FluidgradError(Exception):
    """Base of every error raised on purpose by fluidgrad."""


class ShapeError(FluidgradError, ValueError):
    """Shapes that an op cannot accept, found when the op is appended or run."""


class DTypeError(FluidgradError, TypeError):
    """A dtype an op does not accept."""


class NoGradientError(FluidgradError, RuntimeError):
    """A gradient was asked of an op registered as having none."""


class ExecutionError(FluidgradError, RuntimeError):
    """An op failed while a program ran; the message says which op and where."""


class NanInfError(ExecutionError):
    """`check_nan_inf` found a NaN or Inf in an op's output."""


class IndexRangeError(ExecutionError, IndexError):
    """An integer index out of range, found when the op ran (its message names index, axis and size)."""


class InvalidValueError(ExecutionError, ValueError):
    """Input values an op refuses, found when it ran (probabilities outside [0, 1], a row of zeros
    to sample from): the ValueError a NumPy or PyTorch user expects, naming the op."""
