"""JSON value helpers shared by the tool modules: type names, exact equality, JSON paths.

Equality here is JSON equality: ``True`` is not ``1`` and ``"1"`` is not ``1``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from itertools import islice
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
    """JSON equality: numbers compare by value, but booleans, numbers and strings never mix. Iterative, so
    nesting depth does not matter; past ``_MAX_COMPARED_DEPTH`` levels (only a cycle gets there) values differ."""
    pending: list[tuple[Any, Any, int]] = [(a, b, 0)]
    while pending:
        a, b, depth = pending.pop()
        if a is b and isinstance(a, list | dict):
            continue
        kind_a, kind_b = json_type(a), json_type(b)
        if kind_a in _NUMERIC and kind_b in _NUMERIC:
            if not a == b:
                return False
        elif kind_a != kind_b or depth > _MAX_COMPARED_DEPTH:
            return False
        elif isinstance(a, list):
            if len(a) != len(b):
                return False
            pending.extend((x, y, depth + 1) for x, y in zip(a, b, strict=True))
        elif isinstance(a, dict):
            if a.keys() != b.keys():
                return False
            pending.extend((a[k], b[k], depth + 1) for k in a)
        elif not a == b:
            return False
    return True


_NUMERIC = frozenset({"integer", "number"})
_MAX_COMPARED_DEPTH = 10_000


def format_path(parts: Sequence[Any]) -> str:
    """``("files", 0, "mode")`` → ``$.files[0].mode``; odd keys are quoted: ``$["a b"]``; a key that is
    not a string (only a Python caller can make one) is shown short: ``$[<None>]``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif not isinstance(part, str):
            out.append(f"[<{short_repr(part, 40)}>]")
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
    return f"{kind} {short_repr(value, limit)}" if value is not None else "null"


# Integers of more digits are described, not written out (``str`` refuses past 4,300 digits anyway).
_SHOWN_DIGITS = 40


def short_repr(value: Any, limit: int = 60, *, as_json: bool = False) -> str:
    """``repr(value)`` (or its JSON text with ``as_json``) of at most ``limit`` characters, ``…`` marking a
    cut. Written piece by piece from the front, so a deep, cyclic or huge value costs ``O(limit)``."""
    out: list[str] = []
    size = 0
    stack: list[Any] = [value]
    while stack and size <= limit:
        piece = _piece(stack.pop(), stack, limit, as_json)
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    return text if size <= limit and not stack else text[: limit - 1] + "…"


class _Text(str):
    """Punctuation already written out (a bracket, a separator), pushed between a container's items."""


def _piece(item: Any, stack: list[Any], limit: int, as_json: bool) -> str:
    """The text of one item; a container's separators, closer and first ``limit`` entries go onto ``stack``."""
    if isinstance(item, _Text):
        return str(item)
    shown: list[list[Any]]
    if isinstance(item, dict):
        shown = [[key, _Text(": "), value] for key, value in islice(item.items(), limit)]
        opener, closer = "{", "}"
    elif isinstance(item, list | tuple):
        shown = [[entry] for entry in islice(item, limit)]
        opener, closer = ("(", ")") if isinstance(item, tuple) else ("[", "]")
    else:
        return _scalar(item, limit, as_json)
    later = [part for position, entry in enumerate(shown) for part in [_Text(", ")] * bool(position) + entry]
    if len(item) > len(shown):
        later.append(_Text(", …"))
    later.append(_Text(closer))
    stack.extend(reversed(later))
    return opener


def _scalar(item: Any, limit: int, as_json: bool) -> str:
    if isinstance(item, str):
        return json.dumps(item[: limit + 1], ensure_ascii=False) if as_json else repr(item[: limit + 1])
    if as_json and (item is None or isinstance(item, bool)):
        return json.dumps(item)
    if isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 10**_SHOWN_DIGITS:
        digits = int(item.bit_length() * math.log10(2)) + 1
        return f"<integer of about {digits} digits>"
    try:
        return repr(item)[: limit + 1]
    except Exception:  # a foreign object whose repr fails: its type is enough to name it
        return f"<{type(item).__name__} object>"
