"""XML-like parameters: ``xml-params`` (a call's parameters read by the format's structure, strictly, so a
value missing its close, marker text inside a value and a JSON object as the whole body come out right:
Qwen3-Coder / Qwen 3.5, Seed-OSS, GLM, MiniMax-M2, Step-3, DeepSeek DSML) and ``xml-inline-typed`` (flat
tags whose value parser is picked per tag). Both are chatparse extensions."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import regex

from chatparse.content.args import (
    WrittenArguments,
    check_allowed,
    check_choice,
    check_regex,
    compiled,
    excerpt,
    timed_finditer,
)
from chatparse.content.builtin import check_value_parser, parse_value
from chatparse.content.regex_search import Searcher, searcher
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
    for m in timed_finditer(pattern, text):
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


# --- xml-params -----------------------------------------------------------------------------------

_PLACEHOLDER = regex.compile(r"\{(\w+)\}")
# The layout before a value's close: its newline and the indentation after it (``    </parameter>``).
_LAYOUT_END = regex.compile(r"\n[ \t]*\Z")
# How much stray text (no tag in it) after a close may stand before the call's end (the templates' span
# follow patterns read the same: ``[^<>]{0,256}?</function>``).
_STRAY = 256
_NEXT_TAG = regex.compile(r"[<>]")
_VALUE_ENDS = ("next_param", "close")
_XML_PARAMS_ARGS: dict[str, type | tuple[type, ...]] = {
    "param_open": str,
    "value_close": str,
    "value_ends": str,
    "strip_newlines": bool,
    "trailer": str,
    "json_body": bool,
    "value_parsers": Mapping,
    "default_parser": Mapping,
    "key_entities": Mapping,
}


def _close_literal(template: str, groups: Mapping[str, str | None]) -> str:
    """``value_close`` with its ``{group}`` placeholders filled from the parameter opener's captures."""
    return str(_PLACEHOLDER.sub(lambda m: groups.get(m.group(1)) or "", template))


def _blank(text: str, trailer: str) -> bool:
    """Only whitespace, or whitespace around one ``trailer`` (a call close left in the body)."""
    rest = text.strip()
    return not rest or (bool(trailer) and rest == trailer)


def _unclosed(text: str, trailer: str) -> str:
    """A value whose close is missing: it ends at the trailer (when the body ends with it) and loses the
    one newline the format writes before the next tag."""
    stripped = text.rstrip()
    if trailer and stripped.endswith(trailer):
        text = stripped[: -len(trailer)]
    return text[:-1] if text.endswith("\n") else text


def _first_structural_close(body: str, close: str, start: int, opener: Searcher, trailer: str, *,
                            strict: bool = False) -> int:
    """Where the value that starts at ``start`` ends: the first ``close`` followed by whitespace and then
    the next parameter, the trailer or the end of the body (the format's structure goes on after it);
    failing that, the first ``close`` (``strict``: -1); -1 when there is none."""
    first = at = body.find(close, start)
    while at >= 0:
        after = at + len(close)
        gap = after
        while gap < len(body) and body[gap].isspace():
            gap += 1
        if gap == len(body) or opener.match(body, gap) or (trailer and body.startswith(trailer, gap)):
            return at
        # Stray text (no tag) and then the call's end: a close with junk after it, which the caller
        # reports, never the start of a value that swallows the next call.
        tag = _NEXT_TAG.search(body, after, after + _STRAY + 1)
        stray_end = tag.start() if tag is not None else len(body)
        if stray_end - after <= _STRAY and (stray_end == len(body) or (
                trailer and body.startswith(trailer, stray_end) and not body[stray_end + len(trailer) :].strip())):
            return at
        at = body.find(close, after)
    return -1 if strict else first


def _dropped_closes(raw: str, groups: dict[str, Any], opener: Searcher, close: str,
                    ) -> list[tuple[dict[str, Any], str, bool]]:
    """A value that holds no close text but holds parameter openers at the start of a line, as the
    format lays a parameter out: the model dropped the closes before them (vLLM's Qwen3-Coder parser reads
    it so), and each opener starts a parameter. Any other opener in a value is data: one mid-line, or in a
    value that also holds close text (a quote of the format writes both). ``(captures, value, closed)``
    for each parameter, in order."""
    if close in raw:
        return [(groups, raw, True)]
    out: list[tuple[dict[str, Any], str, bool]] = []
    start = 0
    m = opener.search(raw, 0)
    while m is not None:
        if m.start() > 0 and raw[m.start() - 1] == "\n":
            out.append((groups, raw[start : m.start()], False))
            groups, start = m.groupdict(), m.end()
        m = opener.search(raw, m.end())
    out.append((groups, raw[start:], True))
    return out


def parse_xml_params(text: str, args: Args) -> dict[str, Any]:
    """XML-like parameters (``<parameter=K>V</parameter>``, ``<arg_key>K</arg_key><arg_value>V…``) read by
    the format's structure, strictly: a call's body holds parameters and nothing else.

    ``content_args``:

    - ``param_open`` (required): regex of a parameter's opening tag, with the named group ``key`` and
      optionally ``kind`` (picks the value parser) and any group ``value_close`` refers to.
    - ``value_close`` (required): the literal that closes a value; ``{group}`` placeholders are filled from
      the opener's captures, so each opener spelling pairs with its own close.
    - ``value_ends``: ``"next_param"`` (default; formats whose models drop a value's close) or ``"close"``.
      Either way a value ends at the first close the format's structure goes on after (whitespace, then
      the next parameter opener, the trailer or the end of the body): close text followed by anything
      else is data, and so is an opener inside a value. ``"close"``: a value without such a close is an
      error. ``"next_param"``: a value without one runs to the trailer (the model dropped the last
      close), and a value that holds no close text but holds openers at the start of a line is several
      parameters whose closes the model dropped.
    - ``strip_newlines``: the newline after a parameter's opener and the newline plus indentation before
      its close are layout (the format writes ``<parameter=K>\nV\n</parameter>``).
    - ``trailer``: a literal that may end the body (a call close the region left in it, ``</function>``);
      it also ends a value whose close is missing.
    - ``json_body``: a body with no parameter that holds a JSON object is the arguments themselves.
    - ``value_parsers`` (``{kind: {"name", "args"}}``) and ``default_parser``: how values are read
      (default: the raw text, typed later by the request's tools).
    - ``key_entities``: the entities the format writes in a key's attribute value (``{"&quot;": '"',
      "&amp;": "&"}`` for Kimi K3's ``key="..."``), decoded in one pass; nothing else is decoded.

    Keys are stripped; a repeated key keeps its last value. Text outside the parameters (other than
    whitespace and the trailer), an unclosed value in ``close`` mode and a body that is neither
    parameters nor (with ``json_body``) a JSON object raise ``ValueError``, so a broken call is reported
    instead of read as a call with fewer arguments.
    """
    opener = searcher(args["param_open"])
    close_template: str = args["value_close"]
    fixed_close = close_template if "{" not in close_template else None
    next_param = args.get("value_ends", "next_param") == "next_param"
    strip_newlines = args.get("strip_newlines", False)
    trailer: str = args.get("trailer", "")
    parsers: Mapping[str, Mapping[str, Any]] = args.get("value_parsers", {})
    default: Mapping[str, Any] | None = args.get("default_parser")
    entities: Mapping[str, str] = args.get("key_entities", {})
    decode = _entity_decoder(tuple(entities.items())) if entities else None
    out: dict[str, Any] = {}
    written: dict[tuple[str | int, ...], str] = {}  # the text of each value a value parser typed
    m = opener.search(text)
    if m is None:
        return _whole_body(text, args, trailer)
    if text[: m.start()].strip():
        raise ValueError(f"xml-params: text before the first parameter: {excerpt(text[: m.start()])}")
    while m is not None:
        groups = m.groupdict()
        close = fixed_close or _close_literal(close_template, groups)
        start = m.end()
        at = _first_structural_close(text, close, start, opener, trailer, strict=next_param)
        if at >= 0:
            raw = text[start:at]
            after = at + len(close)
            m = opener.search(text, after)
            between = text[after : m.start() if m is not None else len(text)]
            if not _blank(between, trailer if m is None else ""):
                where = "after the call's close" if trailer and between.lstrip().startswith(trailer) else \
                    "between parameters"
                raise ValueError(f"xml-params: text {where}: {excerpt(between)}")
        elif next_param:  # the last value's close was dropped: it runs to the call's close
            raw, m = _unclosed(text[start:], trailer), None
        else:
            raise ValueError(f"xml-params: the value of {groups['key'].strip()!r} has no {close!r} that the "
                             f"call goes on after (the next parameter, the call's close or its end)")
        values = _dropped_closes(raw, groups, opener, close) if next_param else [(groups, raw, True)]
        for captures, value, closed in values:
            if not closed:
                value = value[:-1] if value.endswith("\n") else value
            if strip_newlines:
                value = value[1:] if value.startswith("\n") else value
                value = _LAYOUT_END.sub("", value, count=1)
            kind = captures.get("kind")
            spec = parsers.get(kind, default) if kind is not None else default
            key = captures["key"].strip()
            key = decode(key) if decode is not None else key
            out[key] = parsed = parse_value(value, spec)
            if spec is not None and not isinstance(parsed, str):
                written[(key,)] = value
            else:
                written.pop((key,), None)
    # The request's tools decide what a value is (``engine.tool_typing``): a parameter whose schema is
    # ``string`` gets the text the model wrote back, whatever type the model declared for it.
    return WrittenArguments(out, written) if written else out


@functools.lru_cache(maxsize=64)
def _entity_decoder(items: tuple[tuple[str, str], ...]) -> Any:
    """One pass over a key: each entity the format writes becomes its character (``&amp;quot;`` is
    ``&quot;``, as in XML). Built once per template's entity table, not per call."""
    entities = dict(items)
    pattern = regex.compile("|".join(regex.escape(e) for e in sorted(entities, key=len, reverse=True)))
    return lambda text: pattern.sub(lambda m: entities[m.group()], text)


def _whole_body(text: str, args: Args, trailer: str) -> dict[str, Any]:
    """A body without parameters: no arguments, or (``json_body``) a JSON object as the arguments."""
    if _blank(text, trailer):
        return {}
    body = text.strip()
    if trailer and body.endswith(trailer):
        body = body[: -len(trailer)].rstrip()
    if args.get("json_body", False) and body.startswith("{"):
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ValueError(f"xml-params: the call body is not a JSON object ({exc.msg}): {excerpt(body)}") from exc
        if isinstance(value, dict):
            return value
    raise ValueError(f"xml-params: the call body holds no parameters: {excerpt(body)}")


def _check_xml_params(args: Args) -> None:
    check_allowed("xml-params", args, _XML_PARAMS_ARGS)
    for key in ("param_open", "value_close"):
        if key not in args:
            raise ValueError(f"xml-params: content_args.{key} is required")
    pattern = check_regex("xml-params", args, "param_open")
    if "key" not in pattern.groupindex:
        raise ValueError("xml-params: content_args.param_open must have the named group 'key'")
    if not args["value_close"]:
        raise ValueError("xml-params: content_args.value_close must be a non-empty string")
    unknown = set(_PLACEHOLDER.findall(args["value_close"])) - set(pattern.groupindex)
    if unknown:
        raise ValueError(f"xml-params: value_close names groups that param_open lacks: {sorted(unknown)}")
    check_choice("xml-params", args, "value_ends", _VALUE_ENDS)
    entities = args.get("key_entities", {})
    if not entities or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in entities.items()):
        if "key_entities" in args:
            raise ValueError("xml-params: content_args.key_entities must map non-empty entity strings to text")
    for spec in args.get("value_parsers", {}).values():
        check_value_parser(spec)
    if "default_parser" in args:
        check_value_parser(args["default_parser"])


EXTENSIONS = {
    "xml-inline-typed": (parse_xml_inline_typed, _check_xml_inline_typed, None),
    "xml-params": (parse_xml_params, _check_xml_params, None),
}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
