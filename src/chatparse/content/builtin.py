"""The content parsers that transformers also has: text, int, float, bool, json, xml-inline, kv-lines,
python-call-list. Same inputs give the same values; each raises ``ValueError`` on bad input."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

import regex

from chatparse.content.args import timed_finditer
from chatparse.content.registry import register_content_parser
from chatparse.errors import TemplateWarning, excerpt

Args = Mapping[str, Any]


def _strip(text: str, args: Args) -> str:
    return text.strip() if args.get("strip", True) else text


def parse_text(text: str, args: Args) -> str:
    return _strip(text, args)


def parse_int(text: str, args: Args) -> int:
    return int(_strip(text, args))


def parse_float(text: str, args: Args) -> float:
    return float(_strip(text, args))


def parse_bool(text: str, args: Args) -> bool:
    return _strip(text, args).lower() in ("true", "1")


def parse_value(raw: str, value_parser: Mapping[str, Any] | None) -> Any:
    """Run a nested ``{"name": ..., "args": ...}`` parser spec over ``raw`` (no spec: ``raw`` itself)."""
    if value_parser is None:
        return raw
    from chatparse.content.registry import get_content_parser

    return get_content_parser(value_parser.get("name", "text")).parse(raw, value_parser.get("args", {}))


# --- json -----------------------------------------------------------------------------------------

# Sentinels for strings lifted out by `string_delims`; control characters a model never writes.
_LIFT_OPEN, _LIFT_CLOSE = "\x01", "\x02"
_BARE_KEY = regex.compile(r'"(?:\\.|[^"\\])*"|(?<=[{,])(\s*)(\w+)(\s*):')
_DELIM_CACHE: dict[tuple[str, str], Any] = {}


def _delim_pattern(open_d: str, close_d: str) -> Any:
    key = (open_d, close_d)
    if key not in _DELIM_CACHE:
        _DELIM_CACHE[key] = regex.compile(regex.escape(open_d) + r"(.*?)" + regex.escape(close_d), regex.DOTALL)
    return _DELIM_CACHE[key]


def _quote_bare_keys(text: str) -> str:
    # Quoted strings match the first branch and go back untouched; only the second branch is a key.
    def fix(m: Any) -> str:
        if m.group(2) is None:
            return str(m.group(0))
        return f'{m.group(1)}"{m.group(2)}"{m.group(3)}:'

    return str(_BARE_KEY.sub(fix, text))


def _lift_strings(text: str, string_delims: list[list[str]]) -> tuple[str, list[str]]:
    lifted: list[str] = []

    def lift(m: Any) -> str:
        lifted.append(m.group(1))
        return f"{_LIFT_OPEN}{len(lifted) - 1}{_LIFT_CLOSE}"

    for open_d, close_d in string_delims:
        text = _delim_pattern(open_d, close_d).sub(lift, text)
    return text, lifted


def parse_json(text: str, args: Args) -> Any:
    """JSON with opt-in dialect knobs: ``unquoted_keys``, ``string_delims``, ``allow_non_json``."""
    string_delims = args.get("string_delims") or []
    if string_delims and (_LIFT_OPEN in text or _LIFT_CLOSE in text):
        raise ValueError("json: input contains reserved sentinel characters (\\x01/\\x02); cannot parse safely.")
    working, lifted = _lift_strings(text, string_delims) if string_delims else (text, [])
    if args.get("unquoted_keys", False):
        working = _quote_bare_keys(working)
    for index, value in enumerate(lifted):
        working = working.replace(f"{_LIFT_OPEN}{index}{_LIFT_CLOSE}", json.dumps(value))
    try:
        # ``raw_control_chars`` (a chatparse knob the built-ins set): a raw control character (a literal
        # newline or tab) inside a string is kept, the one near-JSON repair of this reader. Without it the
        # reader is transformers' json.loads, which rejects it (see docs/tools.md).
        return json.loads(working, strict=not args.get("raw_control_chars", False))
    except json.JSONDecodeError as exc:
        if args.get("allow_non_json"):
            return _strip(text, args)
        # transformers' wording, with excerpts where it quotes the whole region
        if working == text:
            raise ValueError(f"json parser could not parse region as JSON.\nContent: {excerpt(text)}\nError: {exc}") from exc
        raise ValueError(
            f"json: could not parse after dialect transforms.\nOriginal: {excerpt(text)}\n"
            f"Transformed: {excerpt(working)}\nError: {exc}"
        ) from exc


# --- xml-inline / kv-lines -------------------------------------------------------------------------


def parse_xml_inline(text: str, args: Args) -> dict[str, Any]:
    """Flat ``<tag>value</tag>`` sequences into a dict, via ``tag_pattern``'s ``key``/``value`` groups."""
    pattern = args.get("tag_pattern")
    if pattern is None:
        raise ValueError("xml-inline: 'tag_pattern' content_arg is required")
    compiled = pattern if hasattr(pattern, "finditer") else _compiled_tag_pattern(pattern)
    value_parser = args.get("value_parser")
    merge = args.get("merge_duplicates", False)
    out: dict[str, Any] = {}
    merged: set[str] = set()
    for m in timed_finditer(compiled, text):
        groups = m.groupdict()
        key = groups.get("key")
        if key is None:
            raise ValueError(f"xml-inline: tag_pattern must have a named group 'key'. Pattern: {pattern}")
        value = parse_value(groups.get("value", ""), value_parser)
        if merge and key in out:
            if key not in merged:
                out[key] = [out[key]]
                merged.add(key)
            out[key].append(value)
        else:
            out[key] = value
    return out


_TAG_CACHE: dict[str, Any] = {}


def _compiled_tag_pattern(pattern: str) -> Any:
    if pattern not in _TAG_CACHE:
        _TAG_CACHE[pattern] = regex.compile(pattern, regex.DOTALL)
    return _TAG_CACHE[pattern]


def parse_kv_lines(text: str, args: Args) -> dict[str, Any]:
    """``key<kv_sep>value`` lines into a dict; blank lines and lines without the separator are skipped."""
    line_sep = args.get("line_sep", "\n")
    kv_sep = args.get("kv_sep", ":")
    value_parser = args.get("value_parser")
    out: dict[str, Any] = {}
    for raw_line in text.split(line_sep):
        line = _strip(raw_line, args)
        if not line or kv_sep not in line:
            continue
        key, value = line.split(kv_sep, 1)
        out[_strip(key, args)] = parse_value(_strip(value, args), value_parser)
    return out


# --- load-time argument checks -----------------------------------------------------------------


def _check_keys(args: Args, allowed: set[str]) -> None:
    # transformers ignores unknown content_args, so a template using them must still load: warn only.
    unknown = sorted(set(args) - allowed)
    if unknown:
        warnings.warn(
            f"content_args {unknown} are not used by this parser and are ignored; allowed: {sorted(allowed)}",
            TemplateWarning,
            stacklevel=2,
        )


def _check_bool(args: Args, key: str) -> None:
    if key in args and not isinstance(args[key], bool):
        raise ValueError(f"content_args.{key} must be a bool, found {type(args[key]).__name__}")


def _check_str(args: Args, key: str, *, nonempty: bool = False) -> None:
    if key in args and (not isinstance(args[key], str) or (nonempty and not args[key])):
        raise ValueError(f"content_args.{key} must be a {'non-empty ' if nonempty else ''}string, found {args[key]!r}")


def check_value_parser(spec: Any) -> None:
    """A nested value_parser is ``{"name": <registered parser>, "args": {...}}``."""
    from chatparse.content.registry import get_content_parser, known_content_parsers

    if not isinstance(spec, Mapping):
        raise ValueError(f"value_parser must be a dict like {{'name': 'json'}}, found {type(spec).__name__}")
    _check_keys(spec, {"name", "args"})
    name = spec.get("name", "text")
    try:
        nested = get_content_parser(name)
    except KeyError:
        raise ValueError(f"value_parser names unknown parser {name!r}; known: {known_content_parsers()}") from None
    nested_args = spec.get("args", {})
    if not isinstance(nested_args, Mapping):
        raise ValueError("value_parser.args must be a dict")
    if nested.validate_args is not None:
        nested.validate_args(nested_args)


def _check_strip_only(args: Args) -> None:
    _check_keys(args, {"strip"})
    _check_bool(args, "strip")


def _check_json(args: Args) -> None:
    _check_keys(args, {"unquoted_keys", "string_delims", "allow_non_json", "strip", "raw_control_chars"})
    for key in ("unquoted_keys", "allow_non_json", "strip", "raw_control_chars"):
        _check_bool(args, key)
    delims = args.get("string_delims", [])
    if not isinstance(delims, list) or not all(
        isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(d, str) and d for d in pair)
        for pair in delims
    ):
        raise ValueError("content_args.string_delims must be a list of [open, close] pairs of non-empty strings")


def _check_xml_inline(args: Args) -> None:
    _check_keys(args, {"tag_pattern", "value_parser", "merge_duplicates"})
    pattern = args.get("tag_pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("'tag_pattern' content_arg is required: a regex with named groups 'key' and 'value'")
    try:
        compiled = _compiled_tag_pattern(pattern)
    except regex.error as exc:
        raise ValueError(f"content_args.tag_pattern is not a valid regex: {exc}") from exc
    if "key" not in compiled.groupindex:
        raise ValueError(f"tag_pattern must have a named group 'key'. Pattern: {pattern} (add (?P<key>...), "
                         "and usually (?P<value>...))")
    _check_bool(args, "merge_duplicates")
    if "value_parser" in args:
        check_value_parser(args["value_parser"])


def _check_kv_lines(args: Args) -> None:
    _check_keys(args, {"line_sep", "kv_sep", "strip", "value_parser"})
    _check_str(args, "line_sep", nonempty=True)
    _check_str(args, "kv_sep", nonempty=True)
    _check_bool(args, "strip")
    if "value_parser" in args:
        check_value_parser(args["value_parser"])


def register_builtin_parsers() -> None:
    from chatparse.content.python_call_list import parse_python_call_list, recover_python_call_list

    recovers = {"python-call-list": recover_python_call_list}
    for name, func, streamable, check in (
        ("text", parse_text, True, _check_strip_only),
        ("int", parse_int, True, _check_strip_only),
        ("float", parse_float, True, _check_strip_only),
        ("bool", parse_bool, True, _check_strip_only),
        ("json", parse_json, False, _check_json),
        ("xml-inline", parse_xml_inline, False, _check_xml_inline),
        ("kv-lines", parse_kv_lines, False, _check_kv_lines),
        ("python-call-list", parse_python_call_list, False, lambda a: _check_keys(a, set())),
    ):
        register_content_parser(
            name, func, streamable=streamable, validate_args=check, compatible=True, replace=True,
            description=(func.__doc__ or "").strip().split("\n")[0], recover=recovers.get(name),
        )
