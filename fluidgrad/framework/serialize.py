"""Program <-> plain dict (JSON-able). Used by `Program.clone` and by `fluidgrad.io`."""
from __future__ import annotations

from typing import Any

from .program import Block, Operator, Program
from .variable import Parameter, Variable

FORMAT_VERSION = 1


def _attr_to_json(value: Any) -> Any:
    if isinstance(value, Block):
        return {"__block__": value.idx}
    if isinstance(value, tuple):
        return [_attr_to_json(v) for v in value]
    if isinstance(value, list):
        return [_attr_to_json(v) for v in value]
    return value


def _attr_from_json(value: Any, program: Program) -> Any:
    if isinstance(value, dict) and "__block__" in value:
        return program.blocks[value["__block__"]]
    if isinstance(value, list):
        return [_attr_from_json(v, program) for v in value]
    return value


def _var_to_dict(var: Variable) -> dict[str, Any]:
    data = {"name": var.name, "shape": list(var.shape), "dtype": var.dtype,
            "persistable": var.persistable, "stop_gradient": var.stop_gradient,
            "type": var.type, "is_data": var.is_data}
    if isinstance(var, Parameter):
        data["parameter"] = {"trainable": var.trainable}
    return data


def program_to_dict(program: Program) -> dict[str, Any]:
    blocks = []
    for block in program.blocks:
        blocks.append({
            "idx": block.idx,
            "parent_idx": block.parent_idx,
            "forward_block_idx": block.forward_block_idx,
            "vars": [_var_to_dict(v) for v in block.vars.values()],
            "ops": [{"type": op.type,
                     "inputs": {k: list(v) for k, v in op.inputs.items()},
                     "outputs": {k: list(v) for k, v in op.outputs.items()},
                     "attrs": {k: _attr_to_json(v) for k, v in op.attrs.items()}}
                    for op in block.ops],
        })
    return {"format_version": FORMAT_VERSION, "random_seed": program.random_seed, "blocks": blocks}


def program_from_dict(data: dict[str, Any]) -> Program:
    version = data.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(f"program format version {version!r} is not supported "
                         f"(this fluidgrad reads versions up to {FORMAT_VERSION})")
    program = Program()
    program.random_seed = data.get("random_seed", 0)
    program.blocks = [Block(program, b["idx"], b["parent_idx"]) for b in data["blocks"]]
    for block, bdata in zip(program.blocks, data["blocks"]):
        block.forward_block_idx = bdata.get("forward_block_idx", -1)
        for v in bdata["vars"]:
            kwargs = dict(shape=v["shape"], dtype=v["dtype"], stop_gradient=v["stop_gradient"],
                          type=v["type"], is_data=v["is_data"])
            if "parameter" in v:
                kwargs.pop("stop_gradient")
                var: Variable = Parameter(block, v["name"], trainable=v["parameter"]["trainable"], **kwargs)
                var.stop_gradient = v["stop_gradient"]
            else:
                var = Variable(block, v["name"], persistable=v["persistable"], **kwargs)
            block.vars[var.name] = var
    for block, bdata in zip(program.blocks, data["blocks"]):
        for o in bdata["ops"]:
            attrs = {k: _attr_from_json(v, program) for k, v in o["attrs"].items()}
            block.ops.append(Operator(block, o["type"], {k: list(v) for k, v in o["inputs"].items()},
                                      {k: list(v) for k, v in o["outputs"].items()}, attrs))
    return program
