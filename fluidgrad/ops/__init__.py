"""The op registry and every op definition, grouped by family."""
# registration side effects: one module per op family
from . import activation, control_flow, loss, math, nn, norm, optim, random, reduce, tensor  # noqa: F401
from . import attention, collective, comm_split_ops, elementwise, linalg, manipulation, search  # noqa: F401
from . import arange, bitwise, detection, image, matrix, text, unique  # noqa: F401  (the ONNX op tail)
from . import bincount, ctc, decomposition, embedding  # noqa: F401
from . import special  # noqa: F401  (lgamma, digamma, polygamma)
from . import gamma_sampling  # noqa: F401  (standard_gamma and its implicit gradient, poisson)
from . import matrix_functions  # noqa: F401  (triangular_solve, matrix_exp)
from . import optim_adam_variants, optim_adaptive, sampling  # noqa: F401
from . import complex, fft  # noqa: F401  (complex values and the Fourier transforms)
from . import pylayer  # noqa: F401  (static_pylayer, PyLayer traced by jit.to_static)
from . import printing  # noqa: F401  (print, paddle.static.Print)
from . import scatter_reduce  # noqa: F401  (torch's Tensor.scatter_reduce)
from . import segment  # noqa: F401  (segment_pool: paddle.geometric.segment_sum / mean / max / min)
from .grad_builder import GradBuilder, OpDesc, StaticGradBuilder, get_grad_op_desc
from .registry import NO_GRADIENT, ZERO_GRADIENT, InferContext, OpDef, get_op_def, register_op, registered_ops

__all__ = ["NO_GRADIENT", "ZERO_GRADIENT", "GradBuilder", "InferContext", "OpDef", "OpDesc", "StaticGradBuilder",
           "get_grad_op_desc",
           "get_op_def", "register_op", "registered_ops"]
