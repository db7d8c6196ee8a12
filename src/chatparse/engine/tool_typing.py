"""Type parsed tool-call arguments from the request's tools, with transformers' rules: a string argument
is cast to the first schema type it reads as (integer, number, boolean, null, object, array); strings
stay strings; duplicate keys merged into lists are cast item by item. Arguments a reader structured
(``WrittenArguments``) are typed by the schema at every level, and a value whose schema wants a string
gets back the text it was read from."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from chatparse.content.args import WrittenArguments

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
    """Type the arguments of every ``{"function": {"name", "arguments"}}`` in ``value`` by ``params`` (tool
    name to its parameters' ``properties``; may be empty), in place. Runs on every region's value, with or
    without tools: ``WrittenArguments`` become a plain ``dict``."""
    if isinstance(value, list):
        return [coerce_tool_calls(item, params, python_literals) for item in value]
    fn = value.get("function") if isinstance(value, dict) else None
    if not isinstance(fn, dict):
        return value
    name, arguments = fn.get("name"), fn.get("arguments")
    if not isinstance(arguments, dict):
        return value
    properties = params.get(name) if isinstance(name, str) else None
    if isinstance(arguments, WrittenArguments):
        fn["arguments"] = _typed_tree(arguments, properties or {}, arguments.written)
        return value
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


Path = tuple[str | int, ...]
_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (dict, "object"), (list, "array"),
    (type(None), "null"),
)


def _kind(value: Any) -> str:
    return next((kind for cls, kind in _KINDS if isinstance(value, cls)), "")


def _admits(types: tuple[str, ...], value: Any) -> bool:
    kind = _kind(value)
    return kind in types or (kind == "integer" and "number" in types)


def _typed_tree(arguments: dict[str, Any], properties: Mapping[str, Any], written: dict[Path, str]) -> dict[str, Any]:
    """A structured call's arguments typed by their schemas (a plain dict)."""
    return {key: _typed_value(item, properties.get(key), (key,), written) for key, item in arguments.items()}


def _typed_value(value: Any, schema: Any, path: Path, written: dict[Path, str]) -> Any:
    """``value`` (read at ``path``) typed by ``schema``: a string is cast to the first type it reads as; a
    structured or typed value the schema does not admit, where the schema admits a string, is the text it
    was read from; objects and lists are typed member by member (their schema found through unions)."""
    types = schema_types(schema)
    if not types:
        return value
    if isinstance(value, str):
        return coerce_string(value, types)
    if path in written and not _admits(types, value) and "string" in types:
        return written[path]
    if isinstance(value, dict):
        shape = _branch(schema, "object")
        members = shape.get("properties")
        members = members if isinstance(members, Mapping) else {}
        extra = shape.get("additionalProperties")
        return {key: _typed_value(item, members.get(key, extra), (*path, key), written)
                for key, item in value.items()}
    if isinstance(value, list):
        items = _branch(schema, "array").get("items") if "array" in types else schema  # merged repeats
        return [_typed_value(item, items, (*path, index), written) for index, item in enumerate(value)]
    return value


def _branch(schema: Any, kind: str) -> Mapping[str, Any]:
    """The part of ``schema`` that describes values of ``kind``: itself, or its first union branch that
    admits ``kind`` (``{}`` when none does)."""
    if not isinstance(schema, Mapping):
        return {}
    if kind in _types(schema, 0, [MAX_SCHEMAS]) and not any(isinstance(schema.get(u), list) for u in ("anyOf", "oneOf")):
        return schema
    for union in ("anyOf", "oneOf"):
        choices = schema.get(union)
        for choice in choices if isinstance(choices, list) else []:
            if kind in schema_types(choice):
                return _branch(choice, kind)
    return schema if kind in schema_types(schema) else {}
