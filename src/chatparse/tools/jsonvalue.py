"""JSON value helpers shared by the tool modules: type names, exact equality, JSON paths.

Equality here is JSON equality: ``True`` is not ``1`` and ``"1"`` is not ``1``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, TypeAlias

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"
PathPart: TypeAlias = "str | int"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")


def json_type(value: Any) -> str | None:
    """The JSON type name of a Python value, or ``None`` if it is not a JSON-native value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else None
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def read_json_number(text: str) -> int | float | None:
    """The number a JSON number literal denotes, or ``None`` if it is not one or is not finite."""
    if not _JSON_NUMBER.match(text):
        return None
    try:
        number: int | float = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:  # more digits than Python converts
        return None
    if isinstance(number, float) and not math.isfinite(number):
        return None
    return number


def same_json_value(a: Any, b: Any) -> bool:
    """JSON equality: numbers compare by value, but booleans, numbers and strings never mix."""
    kind_a, kind_b = json_type(a), json_type(b)
    numeric = {"integer", "number"}
    if kind_a in numeric and kind_b in numeric:
        return bool(a == b)
    if kind_a != kind_b:
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json_value(a[k], b[k]) for k in a)
    return bool(a == b)


def format_path(parts: Sequence[PathPart]) -> str:
    """``("files", 0, "mode")`` → ``$.files[0].mode``; odd keys are quoted: ``$["a b"]``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{_quote(part)}]")
    return "".join(out)


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def describe_value(value: Any, limit: int = 60) -> str:
    """``string '12 apples'``: the JSON type and a short repr, for error messages."""
    kind = json_type(value) or type(value).__name__
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{kind} {text}" if value is not None else "null"
