"""Meta-test (issue 9): every registered grad maker takes one typed builder, `g: GradBuilder`.

Grad makers are written against the one protocol both the static and the eager builders
implement (fluidgrad/ops/grad_builder.py); a maker written as a lambda, or with an untyped or
`Any` argument, fails here with its op and file named, so a new op must be typed too.
"""
from __future__ import annotations

import inspect
import pathlib
import typing

import fluidgrad  # noqa: F401  (registers every op family)
from fluidgrad.ops.grad_builder import GradBuilder
from fluidgrad.ops.registry import NO_GRADIENT, ZERO_GRADIENT, registered_ops


def _untyped(maker) -> str | None:
    """Why `maker` is not a typed grad maker, or None when it is."""
    if getattr(maker, "__name__", "") == "<lambda>":
        return "a lambda (write a named `def _<op>_grad(g: GradBuilder) -> None:`)"
    params = list(inspect.signature(maker).parameters.values())
    if not params:
        return "takes no builder argument"
    try:
        hint = typing.get_type_hints(maker).get(params[0].name)
    except Exception as e:  # noqa: BLE001  (an unresolvable annotation is reported, not raised)
        return f"its annotations do not resolve ({e})"
    if hint is None:
        return f"its first parameter {params[0].name!r} is not annotated (write `{params[0].name}: GradBuilder`)"
    if hint is not GradBuilder:
        return f"its first parameter {params[0].name!r} is annotated {hint!r}, not GradBuilder"
    return None


def test_every_grad_maker_takes_a_typed_grad_builder():
    root = pathlib.Path(fluidgrad.__file__).resolve().parent.parent
    problems, checked = [], 0
    for name, op_def in sorted(registered_ops().items()):
        maker = op_def.grad
        if maker is NO_GRADIENT or maker is ZERO_GRADIENT:
            continue
        checked += 1
        why = _untyped(maker)
        if why:
            source = pathlib.Path(inspect.getsourcefile(maker)).resolve()
            where = source.relative_to(root) if source.is_relative_to(root) else source
            problems.append(f"{name} ({where}:{maker.__code__.co_firstlineno}): {why}")
    assert checked > 100, checked
    assert not problems, "grad makers not typed `g: GradBuilder`:\n  " + "\n  ".join(problems)


def test_the_check_catches_an_untyped_maker():
    def typed(g: GradBuilder) -> None:
        pass

    def untyped(g):
        pass

    assert _untyped(typed) is None
    assert "not annotated" in _untyped(untyped)
    assert "lambda" in _untyped(lambda g: None)
