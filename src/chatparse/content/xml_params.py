"""XML-like parameters whose value parser is picked per tag (``xml-inline-typed``): DeepSeek DSML's
``string="true|false"`` parameters, raw text beside JSON in one call. A chatparse extension."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatparse.content.args import check_allowed, check_regex, compiled
from chatparse.content.builtin import check_value_parser, parse_value
from chatparse.content.registry import register_extensions

Args = Mapping[str, Any]


def parse_xml_inline_typed(text: str, args: Args) -> dict[str, Any]:
    """Flat tags into a dict, like ``xml-inline``, but each value's parser is picked per tag.

    Needed by DeepSeek-V3.2's DSML parameters (``deepseek_v3.2``): ``string="true"`` marks a raw-text
    value and ``string="false"`` a JSON value, inside the same call, so one ``value_parser`` cannot serve
    both (JSON-first would turn the string ``"007"`` into a number even when the schema says string).

    ``content_args``: ``tag_pattern`` (regex with named groups ``key``, ``value`` and optionally
    ``kind``), ``value_parsers`` (``{kind: {"name": parser, "args": {...}}}``) and ``default_parser``
    (used when ``kind`` did not match or is not in ``value_parsers``; omitted: the raw text).
    """
    pattern = compiled(args["tag_pattern"])
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
    check_allowed("xml-inline-typed", args, {"tag_pattern", "value_parsers", "default_parser"})
    if "tag_pattern" not in args:
        raise ValueError(
            "content_args.tag_pattern is required: a regex with named groups 'key', 'value', 'kind'"
        )
    pattern = check_regex("xml-inline-typed", args, "tag_pattern")
    if not {"key", "value"} <= set(pattern.groupindex):
        raise ValueError("content_args.tag_pattern must have the named groups 'key' and 'value'")
    parsers = args.get("value_parsers", {})
    if not isinstance(parsers, Mapping):
        raise ValueError("content_args.value_parsers must be a dict of {kind: {'name': ..., 'args': ...}}")
    for spec in parsers.values():
        check_value_parser(spec)
    if "default_parser" in args:
        check_value_parser(args["default_parser"])



EXTENSIONS = {
    "xml-inline-typed": (parse_xml_inline_typed, _check_xml_inline_typed, None),
}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
