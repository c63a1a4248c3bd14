"""fluidgrad: Programs of Blocks of Operators, automatic backward building, and an eager mode.

    import fluidgrad as fg
    x = fg.static.data("x", [None, 4])
    loss = fg.mean(fg.static.nn.fc(x, 1))
    fg.append_backward(loss)
"""
import importlib

from . import ops  # registers every op first
from . import functions
from .backward import append_backward, gradients
from .executor import CPUPlace, Executor, Scope, global_scope, scope_guard
from .framework import (ParamAttr, Parameter, Program, Variable, default_main_program, default_startup_program,
                        disable_static, enable_static, in_dynamic_mode,
                        program_guard)
from .framework import math_mixin as _math_mixin
from .functions import (abs, add_n, assign, cast, concat, cos, divide, empty, equal, exp, flatten, full,
                        full_like, gather,
                        greater_equal, greater_than, less_equal, less_than, log, logical_and, logical_not,
                        logical_or, matmul, max, maximum, mean, min, minimum, multiply, not_equal, one_hot,
                        ones, ones_like, pow, relu, reshape, scale, sigmoid, sign, sin, slice, split, sqrt,
                        square, squeeze, stack, sum, tanh, transpose, unsqueeze, zeros, zeros_like)
from .tensor import *  # noqa: F401,F403  (where, argmax, tile, erf, einsum, ...: fluidgrad/tensor/)
from .tensor import methods as _tensor_methods
from .tensor.torch_methods import clamp, index_select, scatter  # noqa: E402  (Paddle's forms and torch's argument order)
from .tensor.torch_statistics import count_nonzero, median, std, var  # noqa: E402  (and torch's dim= / correction=)
from .tensor.torch_arithmetic import add, index_add, masked_select, round, subtract  # noqa: E402  (alpha=, torch's order)
from .ops.random import get_rng_state, seed, set_rng_state
from .ops.random import seed as manual_seed  # torch's name
from .flags import get_flags, set_flags
from . import static
from . import nn, optimizer, regularizer  # noqa: E402  (after static: they build on it)
from .nn.model_summary import summary  # noqa: E402  (paddle.summary: the layer table and parameter counts)
from .eager import Tensor, enable_grad, grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled, to_tensor

_math_mixin.install(functions)
_tensor_methods.install()  # x.max(), x.unsqueeze(0), abs(x), ~mask: Paddle's Tensor methods
from . import autograd, jit  # noqa: E402  (eager mode's PyLayer and to_static)
from . import linalg  # noqa: E402  (paddle.linalg / torch.linalg names: inv, solve, cholesky, pinv, ...)
from . import fft  # noqa: E402  (paddle.fft / torch.fft: fft, rfft, irfft, fftn, fftfreq, fftshift, ...)
from . import geometric, incubate  # noqa: E402  (paddle.geometric / paddle.incubate: segment_sum, ...)
from .complex_math import as_complex, as_real, complex, conj, imag, is_complex, real  # noqa: E402,F401
from . import distribution  # noqa: E402  (paddle.distribution / torch.distributions: Normal, Categorical, ...)
from . import io, viz  # noqa: E402  (static save/load and pictures: fg.io.save, fg.viz.draw)
from . import metric  # noqa: E402  (paddle.metric: accuracy, Accuracy, Metric, ...)
from . import amp  # noqa: E402  (paddle.amp: auto_cast, GradScaler)
from .serialization import load, save  # noqa: E402  (eager state dicts: fg.save(model.state_dict(), path))
from .recompute_eager import recompute  # noqa: E402  (eager activation checkpointing)
from .recompute_pass import RecomputePolicy  # noqa: E402  (checkpoints + selective keeping)
from . import distributed  # noqa: E402  (data parallelism over MPI; mpi4py only under a launcher)
from . import hapi  # noqa: E402  (paddle.Model: prepare / fit / evaluate / predict)
from .hapi import Model, callbacks  # noqa: E402
from .distributed import DataParallel  # noqa: E402
from .device import get_device, is_compiled_with_cuda, set_device  # noqa: E402  (CPU only: 'gpu' is refused)

# torch's and Paddle 2's top-level names: torch.optim, torch.utils.data, torch.cuda (CPU answers), torch.distributions,
# torch.return_types, torch's function names (tensor/torch_names.py: mul, eq, softmax, permute, ...),
# paddle.shape / rank / create_parameter; fluidgrad.device is also torch.device (device.py)
from . import cuda, distributions, optim, utils  # noqa: E402
from .functions import rank, shape  # noqa: E402
from .nn.parameter_creation import create_parameter  # noqa: E402
from .tensor import return_types  # noqa: E402
from .tensor.torch_names import *  # noqa: E402,F401,F403
from .framework.dtypes import TORCH_DTYPE_NAMES as _TORCH_DTYPE_NAMES  # noqa: E402
_LAZY_SUBPACKAGES = frozenset({"onnx", "testing"})   # loaded on first use: fluidgrad.onnx.export(...)

from .framework.dtypes import DTYPE_CONSTANTS as _DTYPE_CONSTANTS  # noqa: E402
from .framework.dtypes import get_default_dtype, set_default_dtype  # noqa: E402,F401

__version__ = "0.1.0"
globals().update(_DTYPE_CONSTANTS)   # fluidgrad.float32 == "float32" (paddle.float32); `bool` too, so set last
globals().update({name: dtype for name, dtype in _TORCH_DTYPE_NAMES.items() if name not in globals()})  # fg.long

# what `from fluidgrad import *` gives and `help(fluidgrad)` lists: every public function and class
__all__ = sorted(name for name, value in globals().items()
                 if not name.startswith("_") and callable(value) and not isinstance(value, type(_math_mixin)))


def __getattr__(name: str) -> object:
    """`fluidgrad.onnx` and `fluidgrad.testing` after a plain `import fluidgrad` (as torch.onnx is),
    imported on first use, so that importing fluidgrad stays light (PEP 562)."""
    if name in _LAZY_SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_SUBPACKAGES)
