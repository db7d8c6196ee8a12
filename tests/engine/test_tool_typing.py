"""engine.tool_typing: the types a tools schema admits, read without ever failing (issue 13)."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.engine.tool_typing import schema_types


def test_types_in_declaration_order_with_unions_flattened() -> None:
    schema = {"anyOf": [{"type": "integer"}, {"oneOf": [{"type": ["boolean", "null"]}]}], "type": "string"}
    assert schema_types(schema) == ("string", "integer", "boolean", "null")
    assert schema_types({"type": "integer", "nullable": True}) == ("integer", "null")


def _self_holding() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    schema["anyOf"] = [schema, schema]
    return schema


@pytest.mark.parametrize("schema", [{"anyOf": 5}, {"oneOf": {"a": 1}}, {"anyOf": [5, None]}, _self_holding()],
                         ids=["anyOf 5", "oneOf dict", "anyOf of non-schemas", "holds itself twice"])
def test_unions_of_the_wrong_shape_or_size_add_nothing_and_end(schema: dict[str, Any]) -> None:
    """"anyOf": 5 used to raise TypeError inside the parser (an EngineFault); a schema holding itself in two
    branches recursed 2^n times."""
    assert set(schema_types(schema)) <= {"integer"}


def test_a_call_typed_by_such_a_tool_parses() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"anyOf": 5}, "b": {"type": "integer"}}}}}]
    text = '<tool_call>{"name": "f", "arguments": {"a": "1", "b": "2"}}</tool_call>'
    message = chatparse.parse_response(text, "qwen3", prefix="", tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"] == {"a": "1", "b": 2}
