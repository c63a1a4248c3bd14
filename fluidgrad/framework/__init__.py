"""The IR: Program, Block, Operator, Variable. No NumPy, no executor, no eager concerns here."""
from .errors import (DTypeError, ExecutionError, FluidgradError, IndexRangeError, InvalidValueError, NanInfError,
                     NoGradientError, ShapeError)
from .names import (EMPTY_VAR_NAME, GRAD_SUFFIX, RENAME_SUFFIX, grad_var_name, unique_name,
                    unique_name_guard)
from .grad_builder import GradBuilder, OpDesc, StaticGradBuilder, get_grad_op_desc
from .op_def import NO_GRADIENT, ZERO_GRADIENT, OpDef, get_op_def, register_op, registered_ops
from .program import (BACKWARD, FORWARD, LOSS, OPTIMIZE, Block, Operator, Program, default_main_program,
                      default_startup_program, disable_static, enable_static, in_dynamic_mode, program_guard)
from .variable import Parameter, ParamAttr, Variable, is_float_dtype, normalize_dtype, optimize_options

