"""Static-graph building: inputs, parameters, layer builders, backward and the Executor; the
names Paddle 2 static training scripts use besides (accuracy, name_scope, Print,
create_global_var, CompiledProgram)."""
from ..backward import append_backward, gradients
from ..executor import Executor, Scope, global_scope, scope_guard
from ..framework import (ParamAttr, Program, Variable, default_main_program, default_startup_program,
                         program_guard)
from . import nn
from .input import InputSpec, create_global_var, create_parameter, data
from ..io import load, load_inference_model, save, save_inference_model

__all__ = ["Executor", "InputSpec", "ParamAttr", "Program", "Scope", "Variable", "append_backward", "create_parameter",
           "data", "default_main_program", "default_startup_program", "global_scope", "gradients", "load",
           "load_inference_model", "nn", "program_guard", "save", "save_inference_model", "scope_guard", "While",
           "CompiledProgram", "Print", "accuracy", "create_global_var", "name_scope"]
from .control_flow import While  # noqa: E402,F401
# Paddle 2 static training scripts' names (accuracy is paddle.metric.accuracy, the same in paddle.static)
from .compiled_program import CompiledProgram  # noqa: E402,F401
from .debugging import Print, name_scope  # noqa: E402,F401
from ..metric.functional import accuracy  # noqa: E402,F401
