"""Load, validate and compile a v1 response template into an immutable ``CompiledTemplate``.

Everything is checked here, once: unknown keys, conflicting keys, regexes, content parsers and their
arguments, transforms. The engine never looks at the raw dict again.
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import regex

from chatparse.content.registry import ContentParserSpec, get_content_parser, known_content_parsers
from chatparse.errors import TemplateError
from chatparse.limits import DEFAULT_LIMITS, MAX_PATTERN_LENGTH, check_pattern_limits
from chatparse.regex_info import PatternInfo, analyze, literal_strings
from chatparse.template.extensions import (
    EXTENSION_KEY,
    NO_FIELD_EXT,
    NO_TEMPLATE_EXT,
    FieldExt,
    TemplateExt,
    field_ext,
    template_ext,
)
from chatparse.template.fill import Filler, compile_transform
from chatparse.transform import check_copies, check_placeholders, check_transform, placeholder_uses

TOP_LEVEL_KEYS = ("version", "defaults", "fields", "start_anchor", "start_anchor_pattern", EXTENSION_KEY)
FIELD_KEYS = (
    "open",
    "open_pattern",
    "close",
    "close_pattern",
    "content",
    "content_args",
    "repeats",
    "join",
    "optional",
    "transform",
    "transform_each",
    EXTENSION_KEY,
)


@dataclass(frozen=True)
class Delimiter:
    """One open/close/anchor delimiter: a regex, plus its literals when it was given as literals."""

    field: str
    key: str  # the template key it came from, e.g. "close_pattern"
    pattern: Any  # compiled `regex` pattern
    literals: tuple[str, ...] | None  # alternation order: longest first, then first-seen
    can_extend: bool  # one literal is a strict prefix of another
    info: PatternInfo
    # Proper prefixes of the literals (or of a regex's ``info.anchors``): a delimiter still forming.
    prefixes: frozenset[str] = frozenset()
    first: Any = None  # compiled class of the first characters of the literals (or anchors)
    # Compiled class of ``info.after_lead`` for a `<run>* X...` pattern (where a match can start).
    after: Any = None
    starts: Any = None  # compiled class of ``info.first_chars`` (every match starts with one)

    @property
    def is_literal(self) -> bool:
        return self.literals is not None

    @property
    def longest_literal(self) -> int:
        return max(map(len, self.literals)) if self.literals else 0


@dataclass(frozen=True)
class CompiledField:
    name: str
    open: Delimiter | None
    close: Delimiter | None
    parser: ContentParserSpec
    content_args: Mapping[str, Any]
    repeats: bool
    join: str | None
    optional: bool
    transform: Any
    transform_each: bool
    ext: FieldExt = NO_FIELD_EXT  # chatparse's extension keys (see template.extensions)
    fill: Filler | None = field(default=None, repr=False, compare=False)  # the transform, compiled
    copies: int = 0  # placeholder uses in the transform (see Limits.transform_copies)

    @property
    def content(self) -> str:
        return self.parser.name

    @property
    def implicit(self) -> bool:
        return self.open is None


@dataclass(frozen=True)
class CompiledTemplate:
    """An immutable, validated response template. ``source`` is a private copy of the v1 dict."""

    defaults: Mapping[str, Any]
    fields: Mapping[str, CompiledField]
    implicit: str | None
    start_anchor: Delimiter
    source: Mapping[str, Any] = field(repr=False)
    context: int = 0  # consumed characters the delimiter patterns may look back at
    # Per parser state (None: no explicit region open), a class of the first characters of every
    # delimiter watched in that state; None when some delimiter's first characters are unknown.
    triggers: Mapping[str | None, Trigger | None] = field(default_factory=dict, repr=False)
    # Tables the engine derives from the template, built once by the first parser that needs them.
    engine_tables: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    ext: TemplateExt = NO_TEMPLATE_EXT  # chatparse's extension keys (see template.extensions)
    end: Delimiter | None = None  # the end-of-turn markers (``ext.end``) as a delimiter
    next_turn: Delimiter | None = None  # headers of a next turn (``ext.next_turn``): the turn ends before them
    drop: Delimiter | None = None  # stray markers removed outside regions (``ext.drop``)

    @property
    def chatparse_only(self) -> bool:
        """True when the template uses chatparse's extension keys or a content parser transformers lacks."""
        return (EXTENSION_KEY in self.source or any(not f.parser.compatible or f.ext is not NO_FIELD_EXT
                                                    for f in self.fields.values()))

    def to_dict(self) -> dict[str, Any]:
        """A fresh copy of the v1 template this was compiled from."""
        return copy.deepcopy(dict(self.source))

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickled (``multiprocessing``, Ray, ``copy.deepcopy``) as its source, compiled again on load: the
        compiled form holds read-only views and per-template engine tables that are not data. Loading
        goes through the template cache, so one process compiles each source once."""
        return load_template, (self.to_dict(),)


def _fail(message: str, code: str, *, field: str | None = None, key: str | None = None) -> TemplateError:
    return TemplateError(message, code=code, field=field, key=key)


MAX_NESTING = 64  # levels of dicts and lists in a template (the built-ins use at most 7)
MAX_VALUES = 100_000  # values in a template (the built-ins hold at most 125)


def _compile_regex(source: Any, *, field: str | None, key: str, scope: str) -> Any:
    if not isinstance(source, str):
        raise _fail(f"{scope}: '{key}' must be a regex string, found {type(source).__name__}", "bad_type",
                    field=field, key=key)
    check_pattern_limits(source, field=field, key=key, scope=scope)
    try:
        return regex.compile(source, regex.DOTALL)
    except (RecursionError, OverflowError, MemoryError) as exc:
        raise _fail(f"{scope}: {key} regex is too complex to compile ({type(exc).__name__}). Simplify it.",
                    "bad_regex", field=field, key=key) from None
    except regex.error as exc:
        raise _fail(f"{scope}: invalid {key} regex: {exc}. Fix the pattern {source!r} (the `regex` module "
                    "syntax, DOTALL on, MULTILINE off).", "bad_regex", field=field, key=key) from None


def _compile_delimiter(
    spec: Mapping[str, Any], literal_key: str, pattern_key: str, *, field: str | None, scope: str
) -> Delimiter | None:
    if literal_key in spec and pattern_key in spec:
        raise _fail(f"{scope}: cannot specify both '{literal_key}' and '{pattern_key}'. Keep one.",
                    "conflicting_keys", field=field, key=pattern_key)
    owner = field or ""
    if literal_key in spec:
        literals = _literal_list(spec[literal_key], key=literal_key, field=field, scope=scope)
        ordered = tuple(sorted(literals, key=len, reverse=True))
        can_extend = any(a != b and a.startswith(b) for a in literals for b in literals)
        joined = "|".join(regex.escape(s) for s in ordered)
        if len(joined) > MAX_PATTERN_LENGTH:
            raise _fail(f"{scope}: expected the '{literal_key}' literals to total at most {MAX_PATTERN_LENGTH} "
                        f"characters (escaped), found {len(joined)}", "pattern_too_long", field=field,
                        key=literal_key)
        pattern = regex.compile(joined, regex.DOTALL)
        return _literal_delimiter(owner, literal_key, pattern, ordered, can_extend)
    if pattern_key in spec:
        source = spec[pattern_key]
        pattern = _compile_regex(source, field=field, key=pattern_key, scope=scope)
        strings = literal_strings(source)
        if strings is not None and not any(a != b and a.startswith(b) for a in strings for b in strings):
            # A regex that only spells out literals (gpt-oss writes its channel headers so) is scanned as
            # those literals: no two can match at one position, so the alternation order cannot matter,
            # and like any regex match one ending at the text's edge waits for more text (can_extend).
            return _literal_delimiter(owner, pattern_key, pattern, tuple(sorted(strings, key=len, reverse=True)),
                                      True)
        info = analyze(source)
        after = char_class(info.after_lead) if info.lead is not None and info.after_lead else None
        anchors = info.anchors or ()
        return Delimiter(owner, pattern_key, pattern, None, False, info,
                         frozenset(a[:k] for a in anchors for k in range(1, len(a))),
                         char_class({a[0] for a in anchors}) if anchors else None, after,
                         char_class(info.first_chars) if info.first_chars else None)
    return None


def _literal_delimiter(owner: str, key: str, pattern: Any, ordered: tuple[str, ...], can_extend: bool) -> Delimiter:
    info = PatternInfo(max_width=max(map(len, ordered)), looks_ahead=False, context=0,
                       first_chars=frozenset(s[0] for s in ordered))
    prefixes = frozenset(lit[:k] for lit in ordered for k in range(1, len(lit)))
    first = char_class({lit[0] for lit in ordered})
    return Delimiter(owner, key, pattern, ordered, can_extend, info, prefixes, first, starts=first)


def _literal_list(raw: Any, *, key: str, field: str | None, scope: str) -> list[str]:
    if isinstance(raw, str):
        literals = [raw]
    elif isinstance(raw, list):
        if not raw:
            raise _fail(f"{scope}: '{key}' list must contain at least one literal", "empty_literal",
                        field=field, key=key)
        if not all(isinstance(s, str) for s in raw):
            raise _fail(f"{scope}: '{key}' list must contain only strings", "bad_type", field=field, key=key)
        literals = list(dict.fromkeys(raw))
    else:
        raise _fail(f"{scope}: '{key}' must be a string or list of strings, got {type(raw).__name__}",
                    "bad_type", field=field, key=key)
    if any(s == "" for s in literals):
        fix = ("Set it to the assistant-turn header the prompt ends with, e.g. '<|im_start|>assistant\\n' (a "
               "template needs one)" if key == "start_anchor" else "Omit the key instead")
        raise _fail(f"{scope}: '{key}' literals cannot be empty strings; an empty delimiter would match "
                    f"everywhere. {fix}.", "empty_literal", field=field, key=key)
    return literals


def _check_nesting(spec: Any) -> None:
    """Refuse a template nested deeper than ``MAX_NESTING`` (or holding itself), or holding more than
    ``MAX_VALUES`` values (a dict or list shared N times counts N times), before anything recurses into it:
    copying ``defaults`` or hashing the template would fail with ``RecursionError`` or never end. Iterative,
    and each shared dict or list is measured once."""
    measured: dict[int, tuple[int, int]] = {}  # id -> (levels, values)
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool]] = [(spec, False)]
    while stack:
        node, closing = stack.pop()
        children = [c for c in _children(node) if isinstance(c, Mapping | list | tuple)]
        if closing:
            open_ids.discard(id(node))
            levels = 1 + max((measured[id(c)][0] for c in children), default=0)
            scalars = len(_children(node)) - len(children)
            values = 1 + scalars + sum(measured[id(c)][1] for c in children)
            if levels > MAX_NESTING:
                raise _nesting_error(f"{levels} levels", "too_deep")
            if values > MAX_VALUES:
                raise _nesting_error(f"{values:,} values", "too_large")
            measured[id(node)] = (levels, values)
        elif id(node) in open_ids:
            raise _nesting_error("a dict or list that contains itself", "too_deep")
        elif id(node) not in measured:
            open_ids.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children)


def _children(node: Any) -> list[Any]:
    return list(node.values()) if isinstance(node, Mapping) else list(node) if isinstance(node, list | tuple) else []


def _nesting_error(found: str, code: str) -> TemplateError:
    expected = f"at most {MAX_NESTING} levels of dicts and lists" if code == "too_deep" else \
        f"at most {MAX_VALUES:,} values, each use of a shared dict or list counted"
    return _fail(f"Expected a response template of {expected} (a template is a few levels deep and holds a few "
                 f"hundred values), found {found}. Flatten the nested values (defaults, transform, content_args).",
                 code)


def _check_keys(spec: Any) -> None:
    """Refuse a key that is not a string anywhere in the template (JSON keys are strings; a Python dict may
    hold others, which no message or location could then name as JSON). Run after ``_check_nesting``."""
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(spec, "response_template")]
    while stack:
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Mapping):
            for key, value in node.items():
                if not isinstance(key, str):
                    shown = repr(key)[:80]
                    raise _fail(f"Expected string keys (a response template is JSON), found the "
                                f"{type(key).__name__} key {shown} in {where}. Write the key as a string.",
                                "bad_key", key=shown)
                stack.append((value, f"{where}.{key}"[:200]))
        elif isinstance(node, list | tuple):
            stack.extend((value, f"{where}[{i}]"[:200]) for i, value in enumerate(node))


def _check_shape(spec: Any) -> None:
    if not isinstance(spec, Mapping):
        raise _fail(f"response_template must be a dict, got {type(spec).__name__}", "bad_type")
    version = spec.get("version", 1)
    if version != 1:
        raise _fail(f"Unsupported response_template version: {version}; chatparse reads version 1",
                    "unsupported_version", key="version")
    unknown = sorted(set(spec) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise _fail(f"Unknown keys in response_template: {unknown}; allowed: {list(TOP_LEVEL_KEYS)}",
                    "unknown_key", key=unknown[0])
    if not isinstance(spec.get("defaults", {}), Mapping):
        raise _fail("response_template.defaults must be a dict", "bad_type", key="defaults")
    fields = spec.get("fields", {})
    if not isinstance(fields, Mapping) or not fields:
        raise _fail("response_template.fields must be a non-empty dict of field name -> field spec",
                    "bad_type", key="fields")


def _resolve_parser(name: Any, *, field: str) -> ContentParserSpec:
    try:
        return get_content_parser(name)
    except (KeyError, TypeError):
        raise _fail(f"Field '{field}': unknown content parser '{name}'. {_available_parsers()}",
                    "unknown_parser", field=field, key="content") from None


def _available_parsers() -> str:
    """transformers' list first (its wording), then the parsers only chatparse has."""
    names = known_content_parsers()
    shared = [n for n in names if get_content_parser(n).compatible]
    return f"Available: {shared}; chatparse also has {[n for n in names if n not in shared]}"


def _check_content_args(parser: ContentParserSpec, args: Any, *, field: str) -> Mapping[str, Any]:
    if not isinstance(args, Mapping):
        raise _fail(f"Field '{field}': content_args must be a dict, found {type(args).__name__}", "bad_type",
                    field=field, key="content_args")
    for key in _REGEX_ARGS:  # regexes a content parser runs: the same load-time limits as delimiters
        if isinstance(args.get(key), str):
            check_pattern_limits(args[key], field=field, key=f"content_args.{key}", scope=f"Field '{field}'")
    if parser.validate_args is not None:
        try:
            parser.validate_args(args)
        except ValueError as exc:
            raise _fail(f"Field '{field}': {parser.name}: {exc}", "bad_content_args", field=field,
                        key="content_args") from None
    return MappingProxyType(copy.deepcopy(dict(args)))


# content_args keys that hold a regex (xml-inline, xml-inline-typed, xml-params, json-sequence).
_REGEX_ARGS = ("tag_pattern", "param_open", "separator")


def _build_field(name: str, spec: Any) -> CompiledField:
    scope = f"Field '{name}'"
    if not isinstance(spec, Mapping):
        raise _fail(f"{scope} must be a dict, found {type(spec).__name__}", "bad_type", field=name)
    unknown = sorted(set(spec) - set(FIELD_KEYS))
    if unknown:
        raise _fail(f"{scope}: unknown keys {unknown}; allowed: {list(FIELD_KEYS)}", "unknown_key",
                    field=name, key=unknown[0])
    parser = _resolve_parser(spec.get("content", "text"), field=name)
    open_delim = _compile_delimiter(spec, "open", "open_pattern", field=name, scope=scope)
    close_delim = _compile_delimiter(spec, "close", "close_pattern", field=name, scope=scope)
    join = spec.get("join")
    if join is not None and not isinstance(join, str):
        raise _fail(f"{scope}: 'join' must be a string, got {type(join).__name__}", "bad_type",
                    field=name, key="join")
    if join is not None and not spec.get("repeats", False):
        raise _fail(f"{scope}: 'join' requires 'repeats': true", "join_without_repeats", field=name, key="join")
    transform = spec.get("transform")
    transform_each = spec.get("transform_each", False)
    if not isinstance(transform_each, bool):
        raise _fail(f"{scope}: transform_each must be a bool, got {type(transform_each).__name__}",
                    "bad_type", field=name, key="transform_each")
    if transform_each and transform is None:
        raise _fail(f"{scope}: transform_each is set but no transform was provided", "transform_each_without_transform",
                    field=name, key="transform_each")
    copies = placeholder_uses(transform)
    if transform is not None:
        check_transform(transform, field=name)
        check_copies(copies, field=name, limit=DEFAULT_LIMITS.transform_copies)
        if not transform_each:
            _check_placeholders(name, transform, parser, open_delim, close_delim)
    else:
        _check_no_orphan_captures(name, open_delim, close_delim)
    repeats = bool(spec.get("repeats", False))
    ext = field_ext(name, spec, repeats=repeats, join=join)
    return CompiledField(
        name=name,
        open=open_delim,
        close=close_delim,
        parser=parser,
        content_args=_check_content_args(parser, spec.get("content_args", {}), field=name),
        repeats=repeats,
        join=join,
        optional=bool(spec.get("optional", True)),
        transform=copy.deepcopy(transform),
        transform_each=transform_each,
        ext=ext,
        fill=None if transform is None else compile_transform(copy.deepcopy(transform), field=name),
        copies=copies,
    )


def _check_placeholders(name: str, transform: Any, parser: ContentParserSpec, *delims: Delimiter | None) -> None:
    groups = {g for d in delims if d is not None for g in d.pattern.groupindex}
    # A streamable parser's value is the region's text or a scalar read from it: never a dict.
    check_placeholders(transform, field=name, groups=groups, scalar_parser=parser.name if parser.streamable else None)


def _check_defaults(defaults: Mapping[str, Any], fields: Mapping[str, CompiledField]) -> None:
    """A repeated field's default is what its matches are added to: a list, or with 'join' a string (or null)."""
    for name, f in fields.items():
        if not f.repeats or name not in defaults:
            continue
        value = defaults[name]
        if f.join is None and not isinstance(value, list):
            expected, how, fix = "a list", "each match is appended to it", "[]"
        elif f.join is not None and value is not None and not isinstance(value, str):
            expected, how, fix = "a string or null", "each match is joined onto it", '""'
        else:
            continue
        raise _fail(f"response_template.defaults['{name}'] must be {expected}, found {type(value).__name__} "
                    f"{value!r}: field '{name}' repeats, so {how}. Use {fix} or drop the default.",
                    "bad_default", field=name, key="defaults")


def _check_no_orphan_captures(name: str, *delims: Delimiter | None) -> None:
    captured = sorted({g for d in delims if d is not None for g in d.pattern.groupindex})
    if captured:
        raise _fail(
            f"Field '{name}': open_pattern/close_pattern declares named group(s) {captured}, but the field has "
            "no 'transform'. Named captures are only surfaced through a 'transform' template (where they appear "
            "alongside 'content'). Either add a 'transform' that uses the captures, or remove the named groups "
            "from the pattern.",
            "captures_without_transform", field=name, key="transform",
        )


def compile_template(spec: Any) -> CompiledTemplate:
    """Validate and compile a v1 template dict."""
    _check_nesting(spec)
    _check_keys(spec)
    _check_shape(spec)
    fields = {name: _build_field(name, raw) for name, raw in spec["fields"].items()}
    implicit = [name for name, f in fields.items() if f.implicit]
    if len(implicit) > 1:
        raise _fail(
            "At most one field may omit 'open'/'open_pattern' (that field becomes the implicit-open / leftover "
            f"sink). Found: {', '.join(implicit)}. Give the others an open delimiter.",
            "multiple_implicit", field=implicit[1],
        )
    _check_defaults(spec.get("defaults", {}), fields)
    anchor = _compile_delimiter(spec, "start_anchor", "start_anchor_pattern", field=None, scope="response_template")
    if anchor is None:
        raise _fail("response_template must define 'start_anchor' or 'start_anchor_pattern'. It is the "
                    "assistant-turn header, e.g. '<|im_start|>assistant\\n'.", "missing_start_anchor",
                    key="start_anchor")
    delims = [d for f in fields.values() for d in (f.open, f.close) if d is not None]
    ext = template_ext(spec)
    end = _marker_delimiter(ext.end, "end")
    next_turn = _marker_delimiter(ext.next_turn, "next_turn")
    drop = _marker_delimiter(ext.drop, "drop")
    _check_lone_close(fields, implicit, ext.drop)
    always = [d for d in (end, next_turn) if d is not None]
    idle = [f.open for f in fields.values() if f.open is not None] + always + ([drop] if drop is not None else [])
    implicit_close = fields[implicit[0]].close if implicit else None
    if implicit_close is not None:
        idle.append(implicit_close)
    triggers: dict[str | None, Any] = {None: _trigger(idle)}
    for f in fields.values():
        if f.open is not None:
            # A region that ends with its value closes where no trigger character is: no fast path.
            triggers[f.name] = None if f.ext.ends_with_value else _trigger(
                ([f.close] if f.close is not None else []) + always)
    return CompiledTemplate(
        defaults=MappingProxyType(copy.deepcopy(dict(spec.get("defaults", {})))),
        fields=MappingProxyType(fields),
        implicit=implicit[0] if implicit else None,
        start_anchor=anchor,
        source=MappingProxyType(copy.deepcopy(dict(spec))),
        context=max((d.info.context for d in delims), default=0),
        triggers=MappingProxyType(triggers),
        ext=ext,
        end=end,
        next_turn=next_turn,
        drop=drop,
    )


def _check_lone_close(fields: Mapping[str, CompiledField], implicit: list[str], drop: tuple[str, ...]) -> None:
    """``chatparse.lone_close``: on one explicit field, beside an implicit one, each marker a ``drop`` marker
    (the engine meets a lone close as a stray marker)."""
    owners = [name for name, f in fields.items() if f.ext.lone_close]
    if not owners:
        return
    name = owners[0]
    key = f"{EXTENSION_KEY}.lone_close"
    if len(owners) > 1:
        raise _fail(f"Field '{owners[1]}': expected '{key}' on one field only, found it on {owners}. Keep it on "
                    "the reasoning field.", "multiple_lone_close", field=owners[1], key=key)
    if fields[name].implicit or not implicit:
        raise _fail(f"Field '{name}': '{key}' needs an explicit field (with 'open') and an implicit one (the "
                    "content the text stays in when no lone close comes)", "lone_close_without_implicit",
                    field=name, key=key)
    missing = [m for m in fields[name].ext.lone_close if m not in drop]
    if missing:
        raise _fail(f"Field '{name}': every '{key}' marker must also be in the template's "
                    f"'{EXTENSION_KEY}.drop', found {missing} missing. Add them to 'drop'.",
                    "lone_close_not_dropped", field=name, key=key)


def _marker_delimiter(literals: tuple[str, ...], key: str) -> Delimiter | None:
    """A literal delimiter for extension markers (``chatparse.end`` / ``chatparse.drop``)."""
    if not literals:
        return None
    ordered = tuple(sorted(literals, key=len, reverse=True))
    pattern = regex.compile("|".join(regex.escape(s) for s in ordered), regex.DOTALL)
    can_extend = any(a != b and a.startswith(b) for a in literals for b in literals)
    return _literal_delimiter("", f"{EXTENSION_KEY}.{key}", pattern, ordered, can_extend)


def char_class(chars: set[str] | frozenset[str]) -> Any:
    """A compiled pattern matching any one of ``chars``. A set of explicit characters means the same to
    both engines; the standard library's searches such short classes in about a third of the time."""
    return re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]")


@dataclass(frozen=True)
class Trigger:
    r"""What must appear in unresolved text before any watched delimiter can match: one of ``chars``.
    ``leads`` are delimiters shaped ``<run>* X...`` (e.g. ``\s*<tool_call>``): without a trigger
    character they can only be forming as a run at the very end of the text."""

    chars: Any
    leads: tuple[Delimiter, ...] = ()
    charset: frozenset[str] = frozenset()  # the characters ``chars`` matches (empty: nothing to watch)


_NEVER = re.compile("(?!)")


def _trigger(delims: list[Delimiter]) -> Trigger | None:
    chars: set[str] = set()
    leads: list[Delimiter] = []
    for delim in delims:
        info = delim.info
        if info.first_chars is not None:
            chars |= info.first_chars
        elif info.lead is not None and info.after_lead is not None:
            chars |= info.after_lead
            leads.append(delim)
        else:
            return None
    if not delims:
        return Trigger(_NEVER)  # a region without a close: nothing can end it before the text does
    return Trigger(char_class(chars), tuple(leads), frozenset(chars)) if chars else None


def load_template(obj: Any) -> CompiledTemplate:
    """Compile a template from a dict, a JSON string, a path to a template JSON file, a path to a
    ``tokenizer_config.json`` (its ``response_template`` key), or a built-in template name."""
    if isinstance(obj, CompiledTemplate):
        return obj
    if isinstance(obj, Mapping):
        return _compile_cached(obj)
    if isinstance(obj, os.PathLike) or isinstance(obj, str):
        return _load_text(obj)
    raise _fail(f"response_template must be a dict, got {type(obj).__name__}; load_template also takes JSON text, "
                "a path or a built-in name", "bad_type")


_CACHE: dict[str, CompiledTemplate] = {}
_CACHE_SIZE = 64
# Guards ``_CACHE`` and ``_BUILTIN_COMPILED``: parsers in many threads load templates at once. A template
# compiles outside it; when two threads compile the same one, the first stored is the one every later
# load returns (so its parsers share one set of engine tables).
_CACHE_LOCK = threading.Lock()


def _compile_cached(spec: Mapping[str, Any]) -> CompiledTemplate:
    """Compiled templates are immutable, so the same dict compiles once (keyed by its canonical JSON)."""
    _check_nesting(spec)  # before hashing: a deep or self-multiplying dict would not hash in bounded time
    _check_keys(spec)  # before hashing: json.dumps writes the key 1 as "1", a hit for a different template
    try:
        key = json.dumps(spec, sort_keys=True)
    except (TypeError, ValueError):
        return compile_template(spec)
    compiled = _CACHE.get(key)
    if compiled is not None:
        return compiled
    compiled = compile_template(spec)
    with _CACHE_LOCK:
        stored = _CACHE.get(key)
        if stored is not None:
            return stored
        while len(_CACHE) >= _CACHE_SIZE:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = compiled
    return compiled


_BUILTIN_COMPILED: dict[str, CompiledTemplate] = {}


def _load_text(obj: str | os.PathLike[str]) -> CompiledTemplate:
    """JSON text, then an existing file, then a built-in name (compiled once: built-ins never change)."""
    text = os.fspath(obj)
    if isinstance(obj, str) and text.lstrip().startswith("{"):
        return _compile_cached(_parse_json_text(text, where="the template string"))
    path = Path(text)
    if path.is_dir() and (path / "tokenizer_config.json").is_file():
        path = path / "tokenizer_config.json"  # a model directory: its tokenizer's config
    if path.is_file():
        data = _parse_json_text(_read_text(path), where=str(path))
        if isinstance(data, Mapping) and "response_template" in data:
            data = data["response_template"]
        elif isinstance(data, Mapping) and "template" in data and "fields" not in data:
            data = data["template"]  # a chatparse built-in data file
        elif isinstance(data, Mapping) and "fields" not in data and path.name == "tokenizer_config.json":
            raise _fail(
                f"Expected a response template, found none: {path} has no 'response_template' key. Pass a "
                "template (a built-in name, a dict or a template file), or write a built-in one into the "
                "tokenizer with `chatparse templates install NAME MODEL_DIR` (`chatparse templates detect "
                "MODEL_DIR` names the one that fits).", "no_response_template", key="response_template")
        return _compile_cached(data) if isinstance(data, Mapping) else compile_template(data)
    compiled = _BUILTIN_COMPILED.get(text)
    if compiled is not None:
        return compiled
    builtin = _builtin_template(text)
    if builtin is not None:
        compiled = compile_template(builtin)
        with _CACHE_LOCK:
            return _BUILTIN_COMPILED.setdefault(text, compiled)
    raise _fail(f"Expected a template dict, JSON text, an existing file or a built-in name; found {text!r}, "
                "which is none of these. Run `chatparse templates list` for built-in names.", "template_not_found")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(f"Expected a UTF-8 JSON file in {path}, found bytes that are not UTF-8 at byte {exc.start} "
                    "(a binary file?). Pass the template's JSON file or a tokenizer_config.json.",
                    "bad_json") from None


def _parse_json_text(text: str, *, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(f"Expected JSON in {where}, found invalid JSON: {exc.msg} at line {exc.lineno} column "
                    f"{exc.colno}", "bad_json") from None
    except ValueError as exc:  # a number past Python's integer-string limit (4,300 digits)
        raise _fail(f"Expected JSON in {where} that Python can read, found a number it refuses: {exc}",
                    "bad_json") from None
    except RecursionError:
        raise _fail(f"Expected a response template in {where}, found JSON nested too deeply to read (a template "
                    "is a few levels deep)", "too_deep") from None


def set_builtin_lookup(lookup: Callable[[str], Mapping[str, Any] | None]) -> None:
    """Let ``load_template`` resolve built-in names: ``lookup`` maps a name to its template dict, or None.
    ``chatparse.templates`` (the layer above, which holds the built-ins) sets it when it loads, so the
    compiler never imports the registry."""
    global _builtin_lookup
    _builtin_lookup = lookup


_builtin_lookup: Callable[[str], Mapping[str, Any] | None] | None = None


def _builtin_template(name: str) -> Mapping[str, Any] | None:
    return None if _builtin_lookup is None else _builtin_lookup(name)
