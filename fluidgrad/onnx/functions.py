"""Ops that ONNX defines as a function of other ops: expand the body into plain nodes.

When no converter is registered for an op but its schema (or the model) gives a function
body, the node is replaced by the body's nodes, with the function's formal inputs, outputs
and attribute references bound to the node's, and its internal names made unique.
"""
from __future__ import annotations

from typing import Any, Sequence

import onnx
from onnx import AttributeProto, FunctionProto, NodeProto

from . import dtypes
from .load import DEFAULT_DOMAINS


def find_function(model: Any, node: NodeProto, opset: int, input_types: Sequence[tuple[str, int] | None]
                  ) -> tuple[FunctionProto, int] | None:
    """The function body for `node` and the default-domain opset its nodes use, or None."""
    local = model.local_functions.get((node.domain, node.op_type))
    if local is not None:
        return local, _function_opset(local, opset)
    domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    body = None
    if schema.has_function:
        body = schema.get_function_with_opset_version(opset) if hasattr(
            schema, "get_function_with_opset_version") else schema.function_body
    elif schema.has_context_dependent_function:
        body = _context_dependent_body(schema, node, opset, input_types)
    if isinstance(body, bytes):
        parsed = FunctionProto()
        parsed.ParseFromString(body)
        body = parsed
    if body is None or not body.node:
        return None
    _add_schema_defaults(body, schema)
    return body, _function_opset(body, opset)


def _add_schema_defaults(body: FunctionProto, schema: Any) -> None:
    """A schema's function body refers to attributes whose defaults live in the schema."""
    present = {a.name for a in body.attribute_proto}
    for name, attr in schema.attributes.items():
        if name not in present and attr.default_value is not None and attr.default_value.name:
            body.attribute_proto.append(attr.default_value)


def _context_dependent_body(schema: Any, node: NodeProto, opset: int,
                            input_types: Sequence[tuple[str, int] | None]) -> FunctionProto | None:
    types = []
    for entry in input_types:
        if entry is None:
            types.append(onnx.TypeProto().SerializeToString())
            continue
        dtype, rank = entry
        types.append(onnx.helper.make_tensor_type_proto(dtypes.to_onnx(dtype), [None] * rank).SerializeToString())
    try:
        raw = schema.get_context_dependent_function_with_opset_version(opset, node.SerializeToString(), types)
    except Exception:
        return None
    body = FunctionProto()
    body.ParseFromString(raw)
    return body


def _function_opset(body: FunctionProto, default: int) -> int:
    for entry in body.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            return entry.version
    return default


def expand_function(node: NodeProto, body: FunctionProto, prefix: str) -> list[NodeProto]:
    """The body's nodes with names bound to `node`'s and attribute references resolved."""
    rename = dict(zip(body.input, node.input))
    rename.update(zip(body.output, node.output))
    given = {a.name: a for a in node.attribute}
    defaults = {a.name: a for a in body.attribute_proto}

    def new_name(name: str) -> str:
        if not name:
            return name
        return rename.get(name, f"{prefix}/{name}")

    nodes = []
    for inner in body.node:
        expanded = NodeProto()
        expanded.CopyFrom(inner)
        del expanded.input[:]
        del expanded.output[:]
        del expanded.attribute[:]
        expanded.input.extend(new_name(n) for n in inner.input)
        expanded.output.extend(new_name(n) for n in inner.output)
        for attr in inner.attribute:
            if attr.ref_attr_name:
                source = given.get(attr.ref_attr_name) or defaults.get(attr.ref_attr_name)
                if source is None:
                    continue  # an optional attribute the node leaves unset
                resolved = AttributeProto()
                resolved.CopyFrom(source)
                resolved.name = attr.name
                expanded.attribute.append(resolved)
            else:
                expanded.attribute.append(_renamed_subgraphs(attr, new_name))
        expanded.name = f"{prefix}/{inner.name or inner.op_type}"
        nodes.append(expanded)
    return nodes


def _renamed_subgraphs(attr: AttributeProto, new_name: Any) -> AttributeProto:
    """A body's If/Loop subgraphs read the body's names: rename every name inside them the
    same way (their own names get the prefix too, consistently)."""
    if attr.type not in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
        return attr
    renamed = AttributeProto()
    renamed.CopyFrom(attr)
    for graph in ([renamed.g] if attr.type == AttributeProto.GRAPH else list(renamed.graphs)):
        _rename_graph(graph, new_name)
    return renamed


def _rename_graph(graph: onnx.GraphProto, new_name: Any) -> None:
    for value in list(graph.input) + list(graph.output):
        value.name = new_name(value.name)
    for tensor in graph.initializer:
        tensor.name = new_name(tensor.name)
    for node in graph.node:
        node.input[:] = [new_name(n) for n in node.input]
        node.output[:] = [new_name(n) for n in node.output]
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                _rename_graph(attr.g, new_name)
            elif attr.type == AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _rename_graph(sub, new_name)
