"""Type parsed tool-call arguments from the request's tools, with transformers' rules: a string argument
is cast to the first schema type it reads as (integer, number, boolean, null, object, array); strings
stay strings; duplicate keys merged into lists are cast item by item."""

from __future__ import annotations

import ast
import json
from typing import Any

# Python literals longer than this are read as JSON only (``ast.literal_eval`` parses into a tree first).
MAX_LITERAL = 1 << 20


# Schemas read for one property at most, and union nesting at most: a deep, wide or self-holding union (only
# a Python caller can build one) adds no more types.
MAX_SCHEMAS = 256
MAX_UNION_DEPTH = 32


def schema_types(schema: Any) -> tuple[str, ...]:
    """The JSON Schema types a property admits, in declaration order (unions flattened). Keywords of the
    wrong shape (``"anyOf": 5``) admit nothing, as a ``type`` that is not a name does."""
    return tuple(_types(schema, 0, [MAX_SCHEMAS]))


def _types(schema: Any, depth: int, budget: list[int]) -> list[str]:
    budget[0] -= 1
    if not isinstance(schema, dict) or depth > MAX_UNION_DEPTH or budget[0] < 0:
        return []
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else []
    if isinstance(declared, list):
        types.extend(t for t in declared if isinstance(t, str))
    for union in ("anyOf", "oneOf"):
        choices = schema.get(union)
        for choice in choices if isinstance(choices, list) else []:
            types.extend(_types(choice, depth + 1, budget))
    if schema.get("nullable") and "null" not in types:
        types.append("null")
    return types


def _as_integer(raw: str) -> int | None:
    try:
        return int(raw)
    except ValueError:
        number = float(raw)  # whole numbers written as floats ("3.0") are integers too
        return int(number) if number.is_integer() else None


def _as_number(raw: str) -> int | float | None:
    number = float(raw)
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return int(number) if number.is_integer() and "." not in raw else number


_MISS = object()


def _cast(raw: str, type_name: str, python_literals: bool = False) -> Any:
    if type_name == "integer":
        value = _as_integer(raw)
        return _MISS if value is None else value
    if type_name == "number":
        number = _as_number(raw)
        return _MISS if number is None else number
    if type_name == "boolean":
        word = raw.strip().lower()
        return word in ("true", "1") if word in ("true", "1", "false", "0") else _MISS
    if type_name == "null":
        return None if raw.strip() in ("null", "None") else _MISS
    if type_name in ("object", "array"):
        kind = dict if type_name == "object" else list
        if python_literals and len(raw) <= MAX_LITERAL:
            literal = _python_literal(raw)
            if isinstance(literal, kind):
                return literal
        decoded = json.loads(raw, strict=False)  # a raw newline or tab inside a string is kept
        return decoded if isinstance(decoded, kind) else _MISS
    return _MISS


def _python_literal(raw: str) -> Any:
    """``raw`` read as a Python literal (``['a', 'b c']``, ``{'k': None}``), or ``_MISS``; never evaluates code."""
    try:
        return ast.literal_eval(raw.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISS


def coerce_string(raw: str, types: tuple[str, ...], python_literals: bool = False) -> Any:
    """``raw`` cast to the first type in ``types`` it reads as; otherwise ``raw`` unchanged. With
    ``python_literals`` (formats that write Python reprs), objects and arrays are read as Python literals
    before JSON (the near-JSON rule of the tool boundary)."""
    for type_name in types:
        try:
            value = _cast(raw, type_name, python_literals)
        except (ValueError, RecursionError):  # nested past the JSON reader's depth: not an object/array
            continue
        if value is not _MISS:
            return value
    return raw


def coerce_tool_calls(value: Any, params: dict[str, dict[str, Any]], python_literals: bool = False) -> Any:
    """Cast the arguments of every ``{"function": {"name", "arguments"}}`` in ``value``, in place."""
    if isinstance(value, list):
        return [coerce_tool_calls(item, params, python_literals) for item in value]
    fn = value.get("function") if isinstance(value, dict) else None
    if not isinstance(fn, dict):
        return value
    name, arguments = fn.get("name"), fn.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return value
    properties = params.get(name)
    if not properties:
        return value
    for key, argument in arguments.items():
        types = schema_types(properties[key]) if key in properties else ()
        if not types:
            continue
        if isinstance(argument, str):
            arguments[key] = coerce_string(argument, types, python_literals)
        elif isinstance(argument, list) and "array" not in types:
            arguments[key] = [coerce_string(v, types, python_literals) if isinstance(v, str) else v for v in argument]
    return value
