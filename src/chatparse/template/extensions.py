"""chatparse's extension keys: what real model outputs need beyond the v1 response template.

A template (or one of its fields) may hold a ``"chatparse"`` object. Templates that use one are
chatparse-only (transformers rejects unknown keys). Every key is checked here, at load time.

Template level:
- ``end``: literal end-of-turn / end-of-sequence markers. The first one found (outside a string or span
  of a guarded region) ends the message; the open region is closed as at the end of the text.
- ``next_turn``: literal headers of a next turn (``<|im_start|>``, another author's message) written past
  a missed stop: the turn ends right before the first one, which starts ``message["trailing"]``.
- ``discard_after_end``: literals that may follow the end and are dropped with whitespace (EOS and
  padding tokens of batched decoding); any other text after the end is kept as ``message["trailing"]``.
- ``drop``: stray markers removed where no region is open (a second ``</think>``).

Field level:
- ``structure``: the body's syntax, ``"json"``, ``"python"`` or ``{"syntax": ..., "spans": [[open,
  close], ...]}`` (opaque spans such as ``<arg_value>`` … ``</arg_value>``), followed as it streams. A
  span may name a third item, a regex the text right after its close must match for the close to count
  (``</parameter>`` closes a value only where the next parameter or the call's close follows).
- ``guard`` (default true with a structure): the close and the end markers count only outside strings
  and spans, so marker text inside a value is data.
- ``span_fallback``: for formats whose models drop a value's close. When the text ends with a span still
  open, the first marker the guard took as data inside that span (the region's close, an end marker, a
  next-turn header) counts after all, as if the guard had been off from there on.
- ``ends_with_value``: the region closes where its top-level bracketed value ends (bare JSON calls),
  unless its opener captured the group ``to_end`` (even empty): then it runs to its close or the turn's end.
- ``truncation``: a region the end of the text (or the end marker) closes instead of its own close is
  checked: an incomplete body (or one that fails to parse) is reported as ``truncated`` and never
  returned as a value; complete items of a list before the cut are kept.
- ``extend``: a ``repeats`` field whose region value is a list extends the field's list.
- ``strip_joined``: a ``join`` field's joined value is stripped at its ends (its pieces are not).
- ``python_literals``: raw-text argument values typed by the request's tools are read as Python
  literals (``['a', 'b c']``, ``{'k': None}``) before JSON, for formats that write Python reprs.
- ``lone_close``: literal closes of this (reasoning) field, each also a ``drop`` marker. When the prompt
  opened no region of the field, text from the start of the output to the first of them written with no
  region open is this field's (the model opened it implicitly); without one it stays content.
- ``known_tools``: an opener match that captures ``name`` opens the region only when the request's tools
  name that tool (and tools were given); otherwise its text is text. Matches without ``name`` always open.
  For lax spellings a model may also write in prose (a bare JSON object, a code fence).
- ``needs_end``: a region whose opener captured the (empty) group ``code`` (raw code: no syntax of its own
  says where it ends) is a value only when its end was written (the region's close, an end-of-turn marker,
  a next-turn header) or the finish reason says the model stopped; a text that simply ends inside it is
  ``truncated``.
- ``write``: how a model writes this field, for grammars (``chatparse.tool_grammar``): a dict such as
  ``{"open": "<think>", "close": "</think>"}`` or, for tool calls, ``{"call": "<tool_call>\\n{body}\\n</tool_call>",
  "body": "json-call"}``. Optional where the field's delimiters are literals. Other keys: ``separator``,
  ``group``, ``keys``, ``parameter``, ``values``, ``trigger``, ``avoid``, ``opens``, ``also`` (tool calls),
  ``spellings`` (tool calls), ``layout``, ``header`` and ``tail`` (content), ``skip`` and ``also``
  (reasoning). JSON families: ``body`` ``json-list`` (``{body}`` is one JSON
  array of all the region's calls), ``arguments`` (spellings among ``json``, ``json-sorted``, ``python``,
  ``json-string``), ``{index}`` in ``call`` (a call counter); on content, ``open``/``close`` around the
  answer's text (markers the parser drops) and ``separator`` (a turn made of parts, each for a
  recipient). See docs/grammar.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import regex

from chatparse.errors import TemplateError
from chatparse.structure import SYNTAXES, Structure

EXTENSION_KEY = "chatparse"
TEMPLATE_EXT_KEYS = ("end", "next_turn", "discard_after_end", "drop")
FIELD_EXT_KEYS = ("structure", "guard", "ends_with_value", "truncation", "extend", "strip_joined",
                  "python_literals", "span_fallback", "lone_close",
                  "known_tools", "needs_end", "write")


@dataclass(frozen=True)
class TemplateExt:
    end: tuple[str, ...] = ()
    next_turn: tuple[str, ...] = ()
    discard_after_end: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()


@dataclass(frozen=True)
class FieldExt:
    structure: Structure | None = None
    guard: bool = False
    ends_with_value: bool = False
    truncation: bool = False
    extend: bool = False
    strip_joined: bool = False
    python_literals: bool = False
    span_fallback: bool = False
    lone_close: tuple[str, ...] = ()
    known_tools: bool = False
    needs_end: bool = False
    write: Mapping[str, Any] | None = dc_field(default=None, compare=False)


NO_TEMPLATE_EXT = TemplateExt()
NO_FIELD_EXT = FieldExt()


def _fail(message: str, code: str, *, field: str | None = None, key: str | None = None) -> TemplateError:
    return TemplateError(message, code=code, field=field, key=f"{EXTENSION_KEY}.{key}" if key else EXTENSION_KEY)


def _mapping(raw: Any, scope: str, field: str | None) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise _fail(f"{scope}: '{EXTENSION_KEY}' must be a dict of chatparse extension keys, found "
                    f"{type(raw).__name__}", "bad_type", field=field)
    return raw


def _unknown(raw: Mapping[str, Any], allowed: tuple[str, ...], scope: str, field: str | None) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise _fail(f"{scope}: unknown chatparse extension keys {unknown}; allowed: {list(allowed)}",
                    "unknown_key", field=field, key=unknown[0])


def _literals(raw: Any, key: str, scope: str, field: str | None = None) -> tuple[str, ...]:
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items or not all(isinstance(s, str) and s for s in items):
        raise _fail(f"{scope}: '{EXTENSION_KEY}.{key}' must be a non-empty string or a non-empty list of "
                    f"non-empty strings, found {raw!r}", "bad_type", field=field, key=key)
    return tuple(dict.fromkeys(items))


def _flag(raw: Mapping[str, Any], key: str, scope: str, field: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise _fail(f"{scope}: '{EXTENSION_KEY}.{key}' must be true or false, found {value!r}", "bad_type",
                    field=field, key=key)
    return value


def template_ext(spec: Mapping[str, Any]) -> TemplateExt:
    """The template-level extension keys of ``spec`` (checked), or the empty set."""
    if EXTENSION_KEY not in spec:
        return NO_TEMPLATE_EXT
    scope = "response_template"
    raw = _mapping(spec[EXTENSION_KEY], scope, None)
    _unknown(raw, TEMPLATE_EXT_KEYS, scope, None)
    end = _literals(raw["end"], "end", scope) if "end" in raw else ()
    next_turn = _literals(raw["next_turn"], "next_turn", scope) if "next_turn" in raw else ()
    discard = _literals(raw["discard_after_end"], "discard_after_end", scope) if "discard_after_end" in raw else ()
    if discard and not end:
        raise _fail(f"{scope}: '{EXTENSION_KEY}.discard_after_end' needs '{EXTENSION_KEY}.end' (text after the end "
                    "of the turn)", "discard_without_end", key="discard_after_end")
    drop = _literals(raw["drop"], "drop", scope) if "drop" in raw else ()
    return TemplateExt(end=end, next_turn=next_turn, discard_after_end=discard, drop=drop)


def _structure(raw: Any, scope: str, field: str) -> Structure:
    if isinstance(raw, str):
        raw = {"syntax": raw}
    if not isinstance(raw, Mapping):
        raise _fail(f"{scope}: '{EXTENSION_KEY}.structure' must be one of {list(SYNTAXES)} or a dict with "
                    f"'syntax' and/or 'spans', found {raw!r}", "bad_type", field=field, key="structure")
    unknown = sorted(set(raw) - {"syntax", "spans"})
    if unknown:
        raise _fail(f"{scope}: unknown keys {unknown} in '{EXTENSION_KEY}.structure'; allowed: ['syntax', 'spans']",
                    "unknown_key", field=field, key="structure")
    syntax = raw.get("syntax")
    if syntax is not None and syntax not in SYNTAXES:
        raise _fail(f"{scope}: '{EXTENSION_KEY}.structure.syntax' must be one of {list(SYNTAXES)} or null, found "
                    f"{syntax!r}", "bad_value", field=field, key="structure")
    spans = raw.get("spans", [])
    if not isinstance(spans, list) or not all(
        isinstance(pair, list) and len(pair) in (2, 3) and all(isinstance(s, str) and s for s in pair)
        for pair in spans
    ):
        raise _fail(f"{scope}: '{EXTENSION_KEY}.structure.spans' must be a list of [open, close] (or [open, close, "
                    f"follow regex]) lists of non-empty strings, found {spans!r}", "bad_type", field=field,
                    key="structure")
    if syntax is None and not spans:
        raise _fail(f"{scope}: '{EXTENSION_KEY}.structure' names no syntax and no spans; give one of them",
                    "empty_structure", field=field, key="structure")
    follows = []
    for span in spans:
        if len(span) == 3:
            try:
                regex.compile(span[2])
            except regex.error as exc:
                raise _fail(f"{scope}: the follow pattern of span {span[:2]!r} in '{EXTENSION_KEY}.structure.spans' "
                            f"is not a valid regex ({exc}): {span[2]!r}", "bad_regex", field=field,
                            key="structure") from exc
            follows.append((span[1], span[2]))
    return Structure(syntax=syntax, spans=tuple((span[0], span[1]) for span in spans), follows=tuple(follows))


def field_ext(name: str, spec: Mapping[str, Any], *, repeats: bool, join: str | None) -> FieldExt:
    """The field-level extension keys of ``spec`` (checked against the field's own keys)."""
    if EXTENSION_KEY not in spec:
        return NO_FIELD_EXT
    scope = f"Field '{name}'"
    raw = _mapping(spec[EXTENSION_KEY], scope, name)
    _unknown(raw, FIELD_EXT_KEYS, scope, name)
    structure = _structure(raw["structure"], scope, name) if "structure" in raw else None
    guard = raw.get("guard", structure is not None)
    if not isinstance(guard, bool):
        raise _fail(f"{scope}: '{EXTENSION_KEY}.guard' must be true or false, found {guard!r}", "bad_type",
                    field=name, key="guard")
    if guard and structure is None:
        raise _fail(f"{scope}: '{EXTENSION_KEY}.guard' needs '{EXTENSION_KEY}.structure' (what counts as a string "
                    "or span)", "guard_without_structure", field=name, key="guard")
    ends = _flag(raw, "ends_with_value", scope, name)
    if ends and (structure is None or structure.syntax is None):
        raise _fail(f"{scope}: '{EXTENSION_KEY}.ends_with_value' needs a structure with a syntax ('json' or "
                    "'python') to know where the value ends", "ends_without_syntax", field=name, key="ends_with_value")
    extend = _flag(raw, "extend", scope, name)
    if extend and not repeats:
        raise _fail(f"{scope}: '{EXTENSION_KEY}.extend' needs 'repeats': true", "extend_without_repeats",
                    field=name, key="extend")
    strip_joined = _flag(raw, "strip_joined", scope, name)
    if strip_joined and join is None:
        raise _fail(f"{scope}: '{EXTENSION_KEY}.strip_joined' needs 'join'", "strip_without_join", field=name,
                    key="strip_joined")
    span_fallback = _flag(raw, "span_fallback", scope, name)
    if span_fallback and (not guard or structure is None or not structure.spans):
        raise _fail(f"{scope}: '{EXTENSION_KEY}.span_fallback' needs a guarded structure with spans",
                    "fallback_without_spans", field=name, key="span_fallback")
    lone_close = _literals(raw["lone_close"], "lone_close", scope, name) if "lone_close" in raw else ()
    return FieldExt(structure=structure, guard=guard, ends_with_value=ends,
                    truncation=_flag(raw, "truncation", scope, name), extend=extend, strip_joined=strip_joined,
                    python_literals=_flag(raw, "python_literals", scope, name), span_fallback=span_fallback,
                    lone_close=lone_close, known_tools=_flag(raw, "known_tools", scope, name),
                    needs_end=_flag(raw, "needs_end", scope, name),
                    write=_write(raw["write"], scope, name) if "write" in raw else None)


WRITE_KEYS = ("open", "close", "call", "body", "separator", "group", "keys", "parameter", "values", "trigger",
              "avoid", "opens", "also", "layout", "header", "arguments", "tail", "skip", "spellings")


def _write(raw: Any, scope: str, field: str) -> Mapping[str, Any]:
    """The shape of a ``write`` form (its meaning is checked when a grammar is built from it)."""
    if not isinstance(raw, Mapping):
        raise _fail(f"{scope}: '{EXTENSION_KEY}.write' must be a dict (how the model writes the field), found "
                    f"{raw!r}", "bad_type", field=field, key="write")
    unknown = sorted(set(raw) - set(WRITE_KEYS))
    if unknown:
        raise _fail(f"{scope}: unknown keys {unknown} in '{EXTENSION_KEY}.write'; allowed: {list(WRITE_KEYS)}",
                    "unknown_key", field=field, key="write")
    return dict(raw)
