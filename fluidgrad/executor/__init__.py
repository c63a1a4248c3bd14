"""Scope and Executor: compile a block into a plan once, run it on NumPy many times."""
from .executor import CPUPlace, Executor, Runtime
from .plan import Plan, compile_block
from .scope import Scope, global_scope, scope_guard

__all__ = ["CPUPlace", "Executor", "Plan", "Runtime", "Scope", "compile_block", "global_scope", "scope_guard"]
