"""torch.autograd.functional: derivatives of a Python function at given inputs, on the eager engine.

    from fluidgrad.autograd.functional import jacobian, hessian, vjp, jvp, hvp, vhp
    J = jacobian(lambda x: x ** 3, x)              # [3, 3]
    value, jv = jvp(f, (x, y), (dx, dy))

`inputs` is a Tensor or a tuple of Tensors (a list too), and the results follow torch's shapes:
one Tensor where torch gives one, tuples (of tuples) where inputs or outputs are tuples. The
function runs on copies of the inputs that need a gradient; with create_graph=False the results
are constants, with create_graph=True they are differentiable (also with respect to the
original inputs). strict=True refuses an output independent of an input instead of giving
zeros. `vectorize` and `strategy` are accepted for torch's calls; the rows are computed by one
backward pass each either way. jvp (and hvp) use the double-vjp trick: the vjp is linear in its
cotangent u, so differentiating <vjp(u), ...> with respect to u gives J v with reverse passes
only. (`fluidgrad.autograd.jacobian(ys, xs)` is Paddle's jacobian of computed ys: a different
function under the same name.)
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ..dispatch import apply_op
from ..eager.engine import grad
from ..eager.mode import enable_grad
from ..eager.tensor import Tensor
from ..functions import reshape, stack

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("reverse-mode", "forward-mode")


def _recording(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn run with grad recording on, as torch's functions are (also inside no_grad)."""
    @functools.wraps(fn)
    def recording(*args: Any, **kwargs: Any) -> Any:
        with enable_grad():
            return fn(*args, **kwargs)
    return recording


def _as_tuple(function: str, what: str, value: Any) -> tuple[tuple[Tensor, ...], bool]:
    """value as a tuple of Tensors, and whether it was given as a tuple (or list)."""
    several = isinstance(value, (tuple, list))
    items = tuple(value) if several else (value,)
    for index, item in enumerate(items):
        if not isinstance(item, Tensor):
            raise TypeError(f"{function}: {what} must be a Tensor or a tuple of Tensors, but the value at index "
                            f"{index} has type {type(item).__name__}")
    return items, several


def _untuple(values: Any, several: bool | tuple[bool, bool]) -> Any:
    """Undo _as_tuple on results: one level (bool), or two nested levels (a pair of bools)."""
    if isinstance(several, tuple):
        outer, inner = several
        if not inner:
            values = tuple(v[0] for v in values)
        return values if outer else values[0]
    return values if several else values[0]


def _prepared(inputs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """The function's arguments: with create_graph, aliases of the inputs that need a gradient
    (so the results reach them); otherwise fresh leaves that need one."""
    prepared = []
    for x in inputs:
        if create_graph and not x.stop_gradient:
            prepared.append(apply_op("assign", {"X": x}))
        else:
            leaf = x.detach()
            leaf.stop_gradient = False
            prepared.append(leaf)
    return tuple(prepared)


def _finished(values: tuple, create_graph: bool) -> tuple:
    return tuple(v if create_graph or v is None else v.detach() for v in values)


def _call(function: str, func: Callable[..., Any], arguments: tuple[Tensor, ...]) -> tuple[tuple[Tensor, ...], bool]:
    outputs = func(*arguments)
    return _as_tuple(function, "the outputs of the user-provided function", outputs)


def _check_v(function: str, v: Any, like: tuple[Tensor, ...], several: bool, space: str) -> tuple[Tensor, ...]:
    """v as a tuple matching `like` in number and shapes; None only when `like` is one element."""
    if v is None:
        if len(like) != 1 or int(np.prod(like[0].shape)) != 1:
            raise RuntimeError(f"{function}: v can be None only when the {space} is a single Tensor with a single "
                               f"element")
        return (Tensor(np.ones(like[0].shape, like[0].dtype)),)
    vs, _ = _as_tuple(function, "v", v)
    if len(vs) != len(like):
        if several:
            raise RuntimeError(f"{function}: v is a tuple of invalid length: should be {len(like)} but got {len(vs)}")
        raise RuntimeError(f"{function}: the given v should contain a single Tensor")
    for index, (given, other) in enumerate(zip(vs, like)):
        if tuple(given.shape) != tuple(other.shape):
            entry = f"entry {index} in " if several else ""
            raise RuntimeError(f"{function}: {entry}v has invalid size: should be {list(other.shape)} but got "
                               f"{list(given.shape)}")
    return vs


def _vjp_of(outputs: tuple, inputs: tuple, cotangents: tuple, create_graph: bool) -> list[Tensor | None]:
    """sum_i <cotangent_i, d outputs_i / d inputs> per input (None where nothing reaches it),
    skipping outputs that depend on nothing (stop_gradient), as torch's _autograd_grad does."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if not o.stop_gradient]
    if not pairs:
        return [None] * len(inputs)
    return grad([o for o, _ in pairs], list(inputs), grad_outputs=[c for _, c in pairs], retain_graph=True,
                create_graph=create_graph, allow_unused=True)


def _filled(function: str, found: list, like: tuple[Tensor, ...], strict: bool, message: str) -> tuple:
    """found with zeros where it is None; in strict mode a None is an error."""
    result = []
    for index, (g, other) in enumerate(zip(found, like)):
        if g is None:
            if strict:
                raise RuntimeError(f"{function}: {message.format(index=index)}. This is not allowed in strict mode")
            g = Tensor(np.zeros(other.shape, other.dtype))
        result.append(g)
    return tuple(result)


@_recording
def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(*inputs), v^T J): the vector-Jacobian product of func at inputs, v shaped as func's
    outputs (None for a single-element output), the result shaped as the inputs."""
    given, inputs_tuple = _as_tuple("vjp", "inputs", inputs)
    arguments = _prepared(given, create_graph)
    outputs, outputs_tuple = _call("vjp", func, arguments)
    cotangents = _check_v("vjp", v, outputs, outputs_tuple, "output of the user-provided function")
    found = _vjp_of(outputs, arguments, cotangents, create_graph)
    products = _filled("vjp", found, given, strict,
                       "the output of the user-provided function is independent of input {index}")
    return _untuple(_finished(outputs, create_graph), outputs_tuple), _untuple(products, inputs_tuple)


def _jvp_by_double_vjp(function: str, outputs: tuple, arguments: tuple, tangents: tuple, create_graph: bool,
                       strict: bool) -> tuple:
    """J v without forward mode: u -> vjp(u) = u^T J is linear in u, so the vjp of that map at
    any u (zeros), with cotangent v, is J v."""
    seeds = []
    for out in outputs:
        seed = Tensor(np.zeros(out.shape, out.dtype))
        seed.stop_gradient = False
        seeds.append(seed)
    backward = [g for g in _vjp_of(outputs, arguments, seeds, True)]
    pairs = [(b, t) for b, t in zip(backward, tangents) if b is not None and not b.stop_gradient]
    found: list = [None] * len(outputs)
    if pairs:
        found = grad([b for b, _ in pairs], seeds, grad_outputs=[t for _, t in pairs], retain_graph=True,
                     create_graph=create_graph, allow_unused=True)
    return _filled(function, found, outputs, strict, "the output {index} of the user-provided function is "
                   "independent of the inputs")


@_recording
def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(*inputs), J v): the Jacobian-vector product of func at inputs, v shaped as the
    inputs (None for a single-element input), the result shaped as func's outputs. Reverse
    passes only (the double-vjp trick), as torch.autograd.functional.jvp."""
    given, inputs_tuple = _as_tuple("jvp", "inputs", inputs)
    tangents = _check_v("jvp", v, given, inputs_tuple, "input")
    arguments = _prepared(given, create_graph)
    outputs, outputs_tuple = _call("jvp", func, arguments)
    products = _jvp_by_double_vjp("jvp", outputs, arguments, tangents, create_graph, strict)
    return _untuple(_finished(outputs, create_graph), outputs_tuple), _untuple(products, outputs_tuple)


def _jacobian_block(out: Tensor, arguments: tuple, create_graph: bool) -> list[Tensor | None]:
    """d out / d each argument, of shape out.shape + argument.shape (None where out does not
    depend on it): one backward pass per element of out, the graph kept between them."""
    count = int(np.prod(out.shape, dtype=np.int64))
    if out.stop_gradient:
        return [None] * len(arguments)
    rows: list[list] = []
    for index in range(count):
        seed = np.zeros(count, out.dtype)
        seed[index] = 1
        rows.append(grad([out], list(arguments), grad_outputs=[Tensor(seed.reshape(out.shape))], retain_graph=True,
                         create_graph=create_graph, allow_unused=True))
    blocks: list[Tensor | None] = []
    for position, x in enumerate(arguments):
        shape = list(out.shape) + list(x.shape)
        if not rows:
            blocks.append(Tensor(np.zeros(shape, x.dtype)))
        elif all(row[position] is None for row in rows):
            blocks.append(None)
        else:
            column = [row[position] if row[position] is not None else Tensor(np.zeros(x.shape, x.dtype))
                      for row in rows]
            blocks.append(reshape(stack(column, axis=0), shape))
    return blocks


def _strategy(function: str, strategy: str) -> None:
    if strategy not in _STRATEGIES:
        raise ValueError(f"{function}: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")


@_recording
def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of func at inputs: for output i and input j a Tensor of shape
    outputs[i].shape + inputs[j].shape, given as torch gives it (one Tensor, a tuple over inputs
    or over outputs, or a tuple over outputs of tuples over inputs). An output independent of an
    input gives zeros (strict=True: an error)."""
    _strategy("jacobian", strategy)
    given, inputs_tuple = _as_tuple("jacobian", "inputs", inputs)
    arguments = _prepared(given, create_graph)
    outputs, outputs_tuple = _call("jacobian", func, arguments)
    result = []
    for i, out in enumerate(outputs):
        if strict and out.stop_gradient:
            raise RuntimeError(f"jacobian: output {i} of the user-provided function does not require gradients; the "
                               f"outputs must be computed in a differentiable manner from the inputs in strict mode")
        blocks = _jacobian_block(out, arguments, create_graph)
        zeros = [Tensor(np.zeros(list(out.shape) + list(x.shape), x.dtype)) for x in given]
        message = f"output {i} of the user-provided function is independent of input {{index}}"
        result.append(_finished(_filled("jacobian", blocks, zeros, strict, message), create_graph))
    return _untuple(tuple(result), (outputs_tuple, inputs_tuple))


def _one_element(function: str, out: Any) -> Tensor:
    """out, checked to be one single-element Tensor, as a 0-D Tensor."""
    if not isinstance(out, Tensor):
        raise RuntimeError(f"{function}: the function given to {function} should return a single Tensor, got "
                           f"{type(out).__name__}")
    if int(np.prod(out.shape, dtype=np.int64)) != 1:
        raise RuntimeError(f"{function}: the Tensor returned by the function given to {function} should contain "
                           f"a single element, got shape {list(out.shape)}")
    return reshape(out, [])


@_recording
def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a function returning one single-element Tensor: for inputs i and j a
    Tensor of shape inputs[i].shape + inputs[j].shape (one Tensor for one input, a tuple of
    tuples for a tuple of inputs), the Jacobian of its gradient."""
    _strategy("hessian", outer_jacobian_strategy)
    given, inputs_tuple = _as_tuple("hessian", "inputs", inputs)

    def gradient(*arguments: Tensor) -> tuple:
        return jacobian(lambda *a: _one_element("hessian", func(*a)), arguments, create_graph=True, strict=strict)

    result = jacobian(gradient, given, create_graph=create_graph, strict=strict)
    return _untuple(result, (inputs_tuple, inputs_tuple))


@_recording
def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(*inputs), v^T H): the vector-Hessian product of a function returning one
    single-element Tensor, v and the result shaped as the inputs."""
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


@_recording
def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(*inputs), H v): the Hessian-vector product of a function returning one
    single-element Tensor, v and the result shaped as the inputs; H v is the jvp of the gradient
    (the double-vjp trick, as torch)."""
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)


def _hessian_product(function: str, func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool,
                     strict: bool) -> tuple[Any, Any]:
    given, inputs_tuple = _as_tuple(function, "inputs", inputs)
    vs = _check_v(function, v, given, inputs_tuple, "input")
    arguments = _prepared(given, create_graph)
    out = func(*arguments)
    value = _one_element(function, out)
    first = _filled(function, _vjp_of((value,), arguments, (Tensor(np.ones((), value.dtype)),), True), given,
                    strict, "the output of the user-provided function is independent of input {index}")
    if function == "vhp":
        found = _vjp_of(first, arguments, vs, create_graph)
    else:
        found = list(_jvp_by_double_vjp(function, first, arguments, vs, create_graph, False))
    products = _filled(function, found, given, strict,
                       "the gradient of the user-provided function is independent of input {index}")
    return _finished((out,), create_graph)[0], _untuple(_finished(products, create_graph), inputs_tuple)
