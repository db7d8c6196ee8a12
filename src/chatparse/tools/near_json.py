"""``parse_near_json``: read a Python literal (``ast.literal_eval``) first, then JSON.

Never executes code; input size and nesting depth are bounded before any parser runs;
only JSON-typed results are returned; failures are a ``NearJSONError`` with a code.
"""

from __future__ import annotations

import ast
import json
import math
import warnings
from typing import Any, Literal

from chatparse.errors import excerpt
from chatparse.tools.errors import NearJSONError
from chatparse.tools.jsonvalue import JSONValue

MAX_BYTES = 65_536
MAX_DEPTH = 64

Reader = Literal["python_literal", "json"]


def parse_near_json(text: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> JSONValue:
    """Read ``text`` as a Python literal, else as JSON; return a JSON-typed value.

    Python repr (single quotes, ``True``/``False``/``None``) is accepted; tuples, sets,
    bytes, complex and non-finite numbers are not JSON values and are rejected, as are
    duplicate keys. Where both readers accept the text they agree except on escapes
    (``\\/``, surrogate pairs), and there the JSON reading is used.
    """
    return read_near_json(text, max_bytes=max_bytes, max_depth=max_depth)[0]


def read_near_json(
    text: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> tuple[JSONValue, Reader]:
    """Like ``parse_near_json`` but also says which reader succeeded."""
    _check_bounds(text, max_bytes, max_depth)
    literal_problem: NearJSONError | None = None
    try:
        value = _read_python_literal(text)
    except NearJSONError as problem:
        literal_problem = problem
    else:
        if "\\" in text:  # escapes are the one place the two readers disagree
            try:
                return _read_json(text), "json"
            except NearJSONError:
                pass
        return value, "python_literal"
    try:
        return _read_json(text), "json"
    except NearJSONError as json_problem:
        raise _pick_problem(literal_problem, json_problem, text) from None


def _check_bounds(text: Any, max_bytes: int, max_depth: int) -> None:
    if not isinstance(text, str):
        raise NearJSONError(f"Expected text; found {type(text).__name__}.", code="not_text")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise NearJSONError(
            f"Expected at most {max_bytes} bytes; found {size}.", code="too_large", size=size, limit=max_bytes
        )
    depth = nesting_depth(text)
    if depth > max_depth:
        raise NearJSONError(
            f"Expected nesting of at most {max_depth} levels; found {depth}.",
            code="too_deep", depth=depth, limit=max_depth,
        )


def nesting_depth(text: str) -> int:
    """Deepest bracket nesting outside quoted strings (either quote style), in one pass."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for char in text:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]})":
            depth -= 1
    return deepest


def _read_python_literal(text: str) -> JSONValue:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes warn; they are not our caller's problem
            tree = ast.parse(text.strip(), mode="eval")
        _reject_duplicate_keys(tree)
        value = ast.literal_eval(tree)
    except NearJSONError:
        raise
    except Exception as problem:  # SyntaxError, ValueError, MemoryError, RecursionError, ...
        raise NearJSONError(f"Not a Python literal: {problem}", code="invalid_syntax") from None
    return _as_json_value(value, "python_literal")


def _reject_duplicate_keys(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            seen: set[Any] = set()
            for key in keys:
                if isinstance(key, str) and key in seen:
                    raise NearJSONError(f"Duplicate key {key!r}.", code="duplicate_key", key=key)
                seen.add(key)


def _read_json(text: str) -> JSONValue:
    try:
        # strict=False: a raw control character (a literal newline or tab) inside a string is kept.
        value = json.loads(text, object_pairs_hook=_unique_object, parse_constant=_reject_constant, strict=False)
    except NearJSONError:
        raise
    except (ValueError, RecursionError) as problem:
        raise NearJSONError(f"Not JSON: {problem}", code="invalid_syntax") from None
    return _as_json_value(value, "json")


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise NearJSONError(f"Duplicate key {key!r}.", code="duplicate_key", key=key)
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise NearJSONError(f"Expected a finite number; found {name}.", code="not_json_value")


def _as_json_value(value: Any, reader: str) -> JSONValue:
    """Walk a parsed value iteratively; anything that is not a JSON type is a named rejection."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    raise _not_json(f"a {type(key).__name__} dict key", reader)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise _not_json(f"the non-finite number {item}", reader)
        elif item is not None and not isinstance(item, (bool, int, float, str)):
            raise _not_json(f"a {type(item).__name__}", reader)
    return value  # type: ignore[no-any-return]


def _not_json(what: str, reader: str) -> NearJSONError:
    return NearJSONError(f"Expected JSON-typed data; found {what} ({reader}).", code="not_json_value")


def _pick_problem(literal: NearJSONError | None, json_problem: NearJSONError, text: str) -> NearJSONError:
    """Report the more specific failure: a readable-but-not-JSON value beats a syntax error."""
    for problem in (literal, json_problem):
        if problem is not None and problem.code != "invalid_syntax":
            return problem
    return NearJSONError(
        f"Expected a Python literal or JSON; found {excerpt(text)}. {json_problem.message}",
        code="invalid_syntax",
    )


__all__ = ["MAX_BYTES", "MAX_DEPTH", "parse_near_json", "read_near_json"]
