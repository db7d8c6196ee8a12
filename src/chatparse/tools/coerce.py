"""``coerce_arguments``: fix the *representation* of model-written tool arguments, never a choice.

The closed list of coercions is the table in ``docs/tools.md``; everything else is a named
``ToolArgumentError`` issue (all issues are reported at once, nothing is defaulted).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatparse.tools.errors import (
    NearJSONError,
    ToolArgumentError,
    ToolDefinitionError,
    combine_argument_errors,
)
from chatparse.tools.jsonvalue import (
    PathPart,
    describe_value,
    format_path,
    json_type,
    read_json_number,
    same_json_value,
    short_repr,
)
from chatparse.tools.near_json import MAX_DEPTH, parse_near_json

_TRUE, _FALSE, _NULL = ("true", "1"), ("false", "0"), ("null", "None")
_CONTAINER_OPENERS = {"array": "[", "object": "{"}
_SHOWN_CHOICES = 20
_SHOWN_CHARS = 200  # of one value in a message
# Schemas nested (anyOf, $ref) deeper than this without a level of the value are a cycle: a schema error.
MAX_SCHEMA_NESTING = 2 * MAX_DEPTH + 32
# anyOf/oneOf branches tried for one call at most: unions nested in unions multiply the tries.
MAX_UNION_TRIES = 100_000


@dataclass(frozen=True)
class Coercion:
    """One representation fix: where, which rule of the table, the value before and after."""

    path: str
    rule: str
    before: Any
    after: Any


def coerce_arguments(
    arguments: Mapping[str, Any] | str,
    parameters_schema: Mapping[str, Any],
    *,
    tool: str | None = None,
    coercions: list[Coercion] | None = None,
) -> dict[str, Any]:
    """Return ``arguments`` with representation fixed to match ``parameters_schema``.

    Raises ``ToolArgumentError`` carrying every issue (``invalid_choice``,
    ``missing_argument``, ``unknown_argument``, ``wrong_type``). ``arguments`` may also be
    the JSON/Python-literal text of the object. Applied fixes are appended to ``coercions``.
    """
    coercer = _Coercer(parameters_schema)
    result = coercer.arguments(arguments)
    if coercer.issues:
        raise combine_argument_errors(coercer.issues, tool)
    if coercions is not None:
        coercions.extend(coercer.coercions)
    return result


def find_argument_issues(
    arguments: Mapping[str, Any] | str, parameters_schema: Mapping[str, Any]
) -> tuple[dict[str, Any], list[ToolArgumentError]]:
    """Coerce without raising: the coerced arguments and the list of issues (possibly empty)."""
    coercer = _Coercer(parameters_schema)
    return coercer.arguments(arguments), coercer.issues


def coerce_value(
    value: Any, schema: Mapping[str, Any], *, path: Sequence[PathPart] = (), root: Mapping[str, Any] | None = None
) -> tuple[Any, list[ToolArgumentError]]:
    """Coerce one value against one property schema (``root`` resolves ``$ref``): value and issues."""
    coercer = _Coercer(schema if root is None else root)
    return coercer.value(value, schema, tuple(path)), coercer.issues


class _Coercer:
    """One coercion pass: walks value and schema together, collecting issues and fixes."""

    def __init__(self, root: Mapping[str, Any], nesting: int = 0, tries: list[int] | None = None) -> None:
        self.root = root
        self.issues: list[ToolArgumentError] = []
        self.coercions: list[Coercion] = []
        self.nesting = nesting  # value() calls open on the stack (a probe starts at its parent's)
        self.tries = [0] if tries is None else tries  # union branches tried, shared with every probe

    def fork(self) -> _Coercer:
        return _Coercer(self.root, self.nesting, self.tries)

    def arguments(self, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        if isinstance(arguments, str):
            arguments = self._decode_arguments(arguments)
            if self.issues:
                return {}
        if not isinstance(arguments, Mapping):
            self.wrong_type((), "object", arguments)
            return {}
        schema = self.resolve(self.root)
        return self.object(dict(arguments), schema, ())

    def _decode_arguments(self, text: str) -> Any:
        try:
            value = parse_near_json(text)
        except NearJSONError as problem:
            self.issue((), "wrong_type", f"expected a JSON object of arguments; {problem.message}",
                       expected="object", found=describe_value(text), reason=problem.code)
            return None
        self.record((), "arguments_in_string", text, value)
        return value

    # --- schema helpers -------------------------------------------------------------

    def resolve(self, schema: Any) -> Mapping[str, Any]:
        """Follow local ``$ref``s and single-entry ``allOf``; non-dict schemas mean "anything"."""
        for _ in range(32):  # bounded: a reference cycle cannot loop forever
            if not isinstance(schema, Mapping):
                return {}
            if isinstance(schema.get("$ref"), str):
                schema = {**_lookup_ref(self.root, schema["$ref"]), **_without(schema, "$ref")}
            elif isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
                schema = {**self.resolve(schema["allOf"][0]), **_without(schema, "allOf")}
            else:
                return schema
        return {}

    # --- dispatch -------------------------------------------------------------------

    def value(self, value: Any, schema: Any, path: tuple[PathPart, ...]) -> Any:
        schema = self.resolve(schema)
        _check_keywords(schema, path)
        if self.nesting >= MAX_SCHEMA_NESTING:
            raise ToolDefinitionError(
                f"Expected a parameters schema that reaches a type within {MAX_SCHEMA_NESTING} levels of anyOf, "
                f"oneOf and $ref; found deeper nesting at {format_path(path)} (a $ref that refers back to "
                "itself?). Fix the tool's parameters schema.",
                code="invalid_schema", path=format_path(path),
            )
        self.nesting += 1
        try:
            return self._value(value, schema, path)
        finally:
            self.nesting -= 1

    def _value(self, value: Any, schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> Any:
        if json_type(value) is None:
            return value  # not a JSON value (e.g. a model instance): left for the validator
        if len(path) > MAX_DEPTH:
            self.issue(path, "too_deep", f"expected at most {MAX_DEPTH} levels of nesting.", limit=MAX_DEPTH)
            return value
        if isinstance(schema.get("anyOf") or schema.get("oneOf"), list):
            return self.union(value, schema, path)
        if "enum" in schema or "const" in schema:
            return self.choice(value, schema, path)
        kinds = schema_types(schema)
        if not kinds:
            return value
        return self.typed(value, schema, kinds, path)

    def typed(self, value: Any, schema: Mapping[str, Any], kinds: list[str], path: tuple[PathPart, ...]) -> Any:
        kind = json_type(value)
        if kind == "string":
            for target in _string_last(kinds):  # "string" last: a string stays one only if nothing else fits
                converted = value if target == "string" else self.from_string(value, target, schema, path)
                if converted is not _FAILED:
                    return converted
        elif _accepts(kinds, kind):
            return self.structure(value, schema, path)
        elif kind == "number" and "integer" in kinds and float(value).is_integer():
            self.record(path, "whole_number_to_integer", value, int(value))
            return int(value)
        self.wrong_type(path, describe_schema(schema), value)
        return value

    def structure(self, value: Any, schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> Any:
        if isinstance(value, dict):
            return self.object(value, schema, path)
        if isinstance(value, list):
            return self.array(value, schema, path)
        return value

    # --- representation rules -------------------------------------------------------

    def from_string(self, text: str, target: str, schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> Any:
        stripped = text.strip()
        if target in ("integer", "number"):
            return self.numeric_string(text, stripped, target, path)
        if target == "boolean" and stripped.lower() in _TRUE + _FALSE:
            result = stripped.lower() in _TRUE
            self.record(path, "boolean_string", text, result)
            return result
        if target == "null" and stripped in _NULL:
            self.record(path, "null_string", text, None)
            return None
        if target in _CONTAINER_OPENERS and stripped.startswith(_CONTAINER_OPENERS[target]):
            return self.container_string(text, target, schema, path)
        return _FAILED

    def numeric_string(self, text: str, stripped: str, target: str, path: tuple[PathPart, ...]) -> Any:
        number = read_json_number(stripped)
        if number is None:
            return _FAILED
        if target == "integer":
            if isinstance(number, float) and not number.is_integer():
                return _FAILED
            number = int(number)
        self.record(path, "numeric_string", text, number)
        return number

    def container_string(self, text: str, target: str, schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> Any:
        try:
            decoded = parse_near_json(text)
        except NearJSONError:
            return _FAILED
        if json_type(decoded) != target:
            return _FAILED
        self.record(path, f"{target}_in_string", text, decoded)
        return self.structure(decoded, schema, path)

    # --- choices and unions ---------------------------------------------------------

    def choice(self, value: Any, schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> Any:
        allowed = list(schema["enum"]) if "enum" in schema else [schema["const"]]
        if any(same_json_value(value, option) for option in allowed):
            return value
        kinds = schema_types(schema) or _kinds_of(allowed)
        probe = self.fork()
        converted = probe.typed(value, schema, kinds, path)
        if not probe.issues and any(same_json_value(converted, option) for option in allowed):
            self.coercions.extend(probe.coercions)
            return converted
        self.invalid_choice(path, value, allowed)
        return value

    def union(self, value: Any, schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> Any:
        branches = list(schema.get("anyOf") or schema.get("oneOf") or [])
        if schema.get("nullable"):
            branches.append({"type": "null"})
        ordered = sorted(branches, key=lambda b: "string" in schema_types(self.resolve(b)))  # stable: string last
        attempts: list[_Coercer] = []
        for branch in ordered:
            self.tries[0] += 1
            if self.tries[0] > MAX_UNION_TRIES:
                raise ToolDefinitionError(
                    f"Expected a parameters schema whose anyOf/oneOf branches take at most {MAX_UNION_TRIES:,} "
                    f"tries for one call; found more at {format_path(path)} (unions nested in unions multiply "
                    "the tries). Flatten the nested unions.",
                    code="schema_too_complex", path=format_path(path),
                )
            probe = self.fork()
            result = probe.value(value, branch, path)
            if not probe.issues:
                self.coercions.extend(probe.coercions)
                return result
            attempts.append(probe)
        self.report_union_failure(value, schema, ordered, attempts, path)
        return value

    def report_union_failure(
        self, value: Any, schema: Mapping[str, Any], branches: list[Any],
        attempts: list[_Coercer], path: tuple[PathPart, ...],
    ) -> None:
        kind = json_type(value)
        for branch, probe in zip(branches, attempts, strict=True):
            if _accepts(schema_types(self.resolve(branch)), kind):
                self.issues.extend(probe.issues)  # the branch of the right type says what is wrong inside
                return
        self.wrong_type(path, describe_schema(schema), value)

    # --- containers -----------------------------------------------------------------

    def object(self, value: dict[str, Any], schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else None
        extra = schema.get("additionalProperties", properties is None)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):  # only a Python caller can write one: JSON keys are strings
                found = describe_value(key)
                self.issue(path, "wrong_type", f"expected string keys; found the key {found}.",
                           expected="string key", found=found)
            elif properties is not None and key in properties:
                out[key] = self.value(item, properties[key], (*path, key))
            elif isinstance(extra, Mapping):
                out[key] = self.value(item, extra, (*path, key))
            elif extra is True or properties is None:
                out[key] = item
            else:
                self.unknown_argument((*path, key), list(properties))
        for key in required_keys(schema):
            if key not in value:
                self.missing_argument((*path, key), required_keys(schema))
        return out

    def array(self, value: list[Any], schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> list[Any]:
        items = schema.get("items")
        positional = schema.get("prefixItems")
        if isinstance(items, list):  # draft-4 tuple form
            positional, items = items, schema.get("additionalItems")
        positional = positional if isinstance(positional, list) else []
        out = []
        for index, item in enumerate(value):
            item_schema = positional[index] if index < len(positional) else items
            out.append(self.value(item, item_schema, (*path, index)))
        return out

    # --- bookkeeping ----------------------------------------------------------------

    def record(self, path: tuple[PathPart, ...], rule: str, before: Any, after: Any) -> None:
        self.coercions.append(Coercion(format_path(path), rule, before, after))

    def issue(self, path: tuple[PathPart, ...], code: str, message: str, **details: Any) -> None:
        where = format_path(path)
        field = path[0] if path and isinstance(path[0], str) else None
        key = path[-1] if path and isinstance(path[-1], str) else None
        self.issues.append(ToolArgumentError(
            f"{where}: {message}", code=code, field=field, key=key, path=where, loc=path, **details
        ))

    def wrong_type(self, path: tuple[PathPart, ...], expected: str, value: Any) -> None:
        found = describe_value(value)
        self.issue(path, "wrong_type", f"expected {expected}; found {found}.", expected=expected, found=found)

    def invalid_choice(self, path: tuple[PathPart, ...], value: Any, allowed: list[Any]) -> None:
        shown = ", ".join(short_repr(v, _SHOWN_CHARS, as_json=True) for v in allowed[:_SHOWN_CHOICES])
        if len(allowed) > _SHOWN_CHOICES:
            shown += f", … ({len(allowed)} options in total)"
        hint = _closest(value, allowed)
        message = f"expected one of {shown}; got {short_repr(value, _SHOWN_CHARS, as_json=True)}.{hint}"
        self.issue(path, "invalid_choice", message, got=value, allowed=allowed)

    def missing_argument(self, path: tuple[PathPart, ...], required: list[str]) -> None:
        listed = ", ".join(repr(k) for k in required)
        self.issue(path, "missing_argument", f"missing required argument {path[-1]!r} (required: {listed}).",
                   required=required)

    def unknown_argument(self, path: tuple[PathPart, ...], known: list[str]) -> None:
        listed = ", ".join(repr(k) for k in known) or "none"
        self.issue(path, "unknown_argument", f"unknown argument {path[-1]!r}; known arguments: {listed}.",
                   known=known)


_FAILED: Any = object()


def _check_keywords(schema: Mapping[str, Any], path: tuple[PathPart, ...]) -> None:
    """``type`` and ``enum`` decide which values are valid: of the wrong shape, the schema is named wrong
    (a ``ToolDefinitionError``) rather than read as "any value" or crashing."""
    declared = schema.get("type")
    if declared is not None and not _is_type_names(declared):
        _bad_keyword("type", "a JSON type name or an array of them", declared, path)
    if "enum" in schema and not isinstance(schema["enum"], list):
        _bad_keyword("enum", "an array of the allowed values", schema["enum"], path)


def _is_type_names(declared: Any) -> bool:
    return isinstance(declared, str) or (isinstance(declared, list) and all(isinstance(t, str) for t in declared))


def _bad_keyword(keyword: str, expected: str, found: Any, path: tuple[PathPart, ...]) -> None:
    where = format_path(path)
    raise ToolDefinitionError(
        f"Expected '{keyword}' to be {expected}; found {describe_value(found)} in the schema of the argument at "
        f"{where}. Fix the tool's parameters schema.",
        code="invalid_schema", key=keyword, path=where,
    )


def schema_types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a schema accepts, in declared order (``nullable`` adds ``null``). Keywords of the
    wrong shape count as absent here; ``coerce_arguments`` names them."""
    declared = schema.get("type")
    kinds = [declared] if isinstance(declared, str) else [t for t in declared if isinstance(t, str)] \
        if isinstance(declared, list) else []
    if not kinds and isinstance(schema.get("enum"), list):
        kinds = _kinds_of(schema["enum"])
    if not kinds and "const" in schema:
        kinds = _kinds_of([schema["const"]])
    if not kinds and "properties" in schema:
        kinds = ["object"]
    if not kinds and ("items" in schema or "prefixItems" in schema):
        kinds = ["array"]
    if schema.get("nullable") and kinds and "null" not in kinds:
        kinds.append("null")
    return kinds


def describe_schema(schema: Mapping[str, Any]) -> str:
    """A short human description: ``integer``, ``array of string``, ``integer or null``."""
    return _describe(schema, [_DESCRIBED_SCHEMAS])


_DESCRIBED_SCHEMAS = 16  # schemas described at most (a deep, wide or cyclic schema stays short): then "…"


def _describe(schema: Mapping[str, Any], budget: list[int]) -> str:
    budget[0] -= 1
    if budget[0] < 0:
        return "…"
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            parts = [_describe(b, budget) if isinstance(b, Mapping) else "any" for b in schema[union][:_DESCRIBED_SCHEMAS]]
            if schema.get("nullable"):
                parts.append("null")
            return " or ".join(dict.fromkeys(parts))
    kinds = schema_types(schema)
    if not kinds:
        return "any value"
    return " or ".join(_describe_kind(kind, schema, budget) for kind in kinds)


def _describe_kind(kind: str, schema: Mapping[str, Any], budget: list[int]) -> str:
    items = schema.get("items")
    if kind == "array" and isinstance(items, Mapping) and schema_types(items):
        return f"array of {_describe(items, budget)}"
    return kind


def _accepts(kinds: Sequence[str], kind: str | None) -> bool:
    return kind in kinds or (kind == "integer" and "number" in kinds)


def _string_last(kinds: Sequence[str]) -> list[str]:
    return [k for k in kinds if k != "string"] + (["string"] if "string" in kinds else [])


def _kinds_of(values: Sequence[Any]) -> list[str]:
    kinds: list[str] = []
    for value in values:
        kind = json_type(value)
        if kind is not None and kind not in kinds:
            kinds.append(kind)
    return kinds


def required_keys(schema: Mapping[str, Any]) -> list[str]:
    """The schema's ``required`` names (strings only; a ``required`` of another shape names none)."""
    required = schema.get("required")
    return [k for k in required if isinstance(k, str)] if isinstance(required, list) else []


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _lookup_ref(root: Mapping[str, Any], ref: str) -> Mapping[str, Any]:
    """Resolve a local JSON pointer like ``#/$defs/Mode``; anything else means "any value"."""
    if not ref.startswith("#"):
        return {}
    node: Any = root
    for part in ref[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _closest(value: Any, allowed: list[Any]) -> str:
    """A hint shown to the model, never applied: the nearest valid spelling, if any is near."""
    if not isinstance(value, str):
        return ""
    options = [o for o in allowed if isinstance(o, str)]
    lowered = {o.lower(): o for o in options}
    match = lowered.get(value.lower()) or next(iter(difflib.get_close_matches(value, options, n=1)), None)
    return f" Did you mean {json.dumps(match, ensure_ascii=False)}? (Not applied: choices must match exactly.)" if match else ""


__all__ = [
    "Coercion", "coerce_arguments", "coerce_value", "describe_schema", "find_argument_issues", "required_keys",
    "schema_types",
]
