"""Named content-parser extensions for tool-call formats the v1 response template cannot express.

Each parser is generic and configured through ``content_args``; a template that names one is
chatparse-only. ``register()`` adds them to the registry (idempotent); importing the module calls it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import regex

from chatparse.content.builtin import check_value_parser, parse_value
from chatparse.content.registry import register_extensions

Args = Mapping[str, Any]

_DECODER = json.JSONDecoder()
_PATTERN_CACHE: dict[str, Any] = {}
DEFAULT_SEPARATOR = r"\s*;?\s*"


def _compiled(pattern: str) -> Any:
    if pattern not in _PATTERN_CACHE:
        _PATTERN_CACHE[pattern] = regex.compile(pattern, regex.DOTALL)
    return _PATTERN_CACHE[pattern]


# --- json-sequence ----------------------------------------------------------------------------------


def parse_json_sequence(text: str, args: Args) -> list[Any]:
    """One or more JSON values written back to back, separated by ``separator``; returns them as a list.

    Needed by Llama 3.x JSON tool calls (``llama3_json``): the calls are bare JSON objects with no close
    tag, several of them separated by ``;`` or a newline, so the region runs to the end of the turn and
    only a JSON-aware reader can tell where one object ends (braces and ``;`` inside strings are data).

    ``content_args``: ``separator`` (regex matched between values, default ``\\s*;?\\s*``; leading and
    trailing whitespace of the body is always allowed) and ``key_aliases`` (``{alias: canonical}``
    renames of top-level object keys, e.g. ``{"parameters": "arguments"}``; an object holding both
    spellings is an error). Anything that is not a JSON value or a separator is an error.
    """
    separator = _compiled(args.get("separator", DEFAULT_SEPARATOR))
    aliases: Mapping[str, str] = args.get("key_aliases", {})
    end = len(text.rstrip())
    position = len(text) - len(text.lstrip())
    if position >= end:
        raise ValueError("json-sequence: expected at least one JSON value, found only whitespace")
    values: list[Any] = []
    while position < end:
        try:
            value, position = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"json-sequence: expected a JSON value at offset {position}, found "
                f"{text[position : position + 20]!r} ({exc.msg})"
            ) from None
        values.append(_rename_keys(value, aliases))
        gap = separator.match(text, position)
        if gap is not None:
            position = gap.end()
    return values


def _rename_keys(value: Any, aliases: Mapping[str, str]) -> Any:
    if not aliases or not isinstance(value, dict):
        return value
    for alias, canonical in aliases.items():
        if alias in value and canonical in value and alias != canonical:
            raise ValueError(
                f"json-sequence: the object has both {alias!r} and {canonical!r}; keep one spelling"
            )
    return {aliases.get(key, key): item for key, item in value.items()}


def _check_json_sequence(args: Args) -> None:
    _check_allowed(args, {"separator", "key_aliases"})
    if "separator" in args:
        _check_regex(args, "separator")
    aliases = args.get("key_aliases", {})
    if not isinstance(aliases, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise ValueError("content_args.key_aliases must be a dict of {alias: canonical key} strings")


# --- xml-inline-typed ---------------------------------------------------------------------------------


def parse_xml_inline_typed(text: str, args: Args) -> dict[str, Any]:
    """Flat tags into a dict, like ``xml-inline``, but each value's parser is picked per tag.

    Needed by DeepSeek-V3.2's DSML parameters (``deepseek_v3.2``): ``string="true"`` marks a raw-text
    value and ``string="false"`` a JSON value, inside the same call, so one ``value_parser`` cannot serve
    both (JSON-first would turn the string ``"007"`` into a number even when the schema says string).

    ``content_args``: ``tag_pattern`` (regex with named groups ``key``, ``value`` and optionally
    ``kind``), ``value_parsers`` (``{kind: {"name": parser, "args": {...}}}``) and ``default_parser``
    (used when ``kind`` did not match or is not in ``value_parsers``; omitted: the raw text).
    """
    pattern = _compiled(args["tag_pattern"])
    parsers: Mapping[str, Mapping[str, Any]] = args.get("value_parsers", {})
    default: Mapping[str, Any] | None = args.get("default_parser")
    out: dict[str, Any] = {}
    for m in pattern.finditer(text):
        groups = m.groupdict()
        kind = groups.get("kind")
        spec = parsers.get(kind, default) if kind is not None else default
        out[groups["key"]] = parse_value(groups.get("value") or "", spec)
    return out


def _check_xml_inline_typed(args: Args) -> None:
    _check_allowed(args, {"tag_pattern", "value_parsers", "default_parser"})
    if "tag_pattern" not in args:
        raise ValueError(
            "content_args.tag_pattern is required: a regex with named groups 'key', 'value', 'kind'"
        )
    compiled = _check_regex(args, "tag_pattern")
    if not {"key", "value"} <= set(compiled.groupindex):
        raise ValueError("content_args.tag_pattern must have the named groups 'key' and 'value'")
    parsers = args.get("value_parsers", {})
    if not isinstance(parsers, Mapping):
        raise ValueError("content_args.value_parsers must be a dict of {kind: {'name': ..., 'args': ...}}")
    for spec in parsers.values():
        check_value_parser(spec)
    if "default_parser" in args:
        check_value_parser(args["default_parser"])


# --- shared argument checks ---------------------------------------------------------------------------


def _check_allowed(args: Args, allowed: set[str]) -> None:
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise ValueError(f"content_args {unknown} are not known to this parser; allowed: {sorted(allowed)}")


def _check_regex(args: Args, key: str) -> Any:
    pattern = args[key]
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"content_args.{key} must be a non-empty regex string, found {pattern!r}")
    try:
        return _compiled(pattern)
    except regex.error as exc:
        raise ValueError(f"content_args.{key} is not a valid regex: {exc}") from exc


EXTENSIONS = {
    "json-sequence": (parse_json_sequence, _check_json_sequence),
    "xml-inline-typed": (parse_xml_inline_typed, _check_xml_inline_typed),
}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
