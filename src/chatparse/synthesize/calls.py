"""Infer how a chat template writes tool calls from the call sections of its renders (one call, two calls,
a call without arguments, a call with arguments of every JSON type): where each call starts and ends, what
wraps them all, and how names and arguments are written (a JSON call object, a JSON array of them, a name
then JSON arguments, XML-like parameters, Python call syntax, a bare-key object)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from chatparse.content.registry import get_content_parser
from chatparse.structure import Structure
from chatparse.synthesize.probes import CALL_TYPED, Call
from chatparse.synthesize.text import Lexer, digits_as_wildcards, escape

NAME_CLASS = r'[^\s<>"]'  # characters a function name is read from


@dataclass(frozen=True)
class Sections:
    """The call sections (the text a message's calls take, without what every message has) of the probes:
    ``one`` (CALL_A), ``two`` (CALL_A, CALL_B; None when the template refuses or drops the second),
    ``none`` (a call without arguments) and ``typed`` (arguments of every JSON type)."""

    one: str
    two: str | None
    none: str | None
    typed: str | None


@dataclass(frozen=True)
class CallFormat:
    """How calls are written. Literal texts are as rendered (whitespace included); ``name_after`` is a regex
    source (digit runs of call ids generalised)."""

    syntax: str  # json-object | json-array | name-json | xml-params | python-calls | bare-key-object
    section_open: str = ""
    section_close: str = ""
    item_open: str = ""
    item_open_pattern: str = ""  # a regex for item_open when calls differ in it (a rendered call id)
    item_close: str = ""
    separator: str = ""
    name_after: str = ""
    json_keys: Mapping[str, Any] = field(default_factory=dict)
    xml: Mapping[str, Any] = field(default_factory=dict)
    python: Mapping[str, Any] = field(default_factory=dict)
    delimiters: tuple[str, str] | None = None
    multiple: bool = True
    evidence: tuple[str, ...] = ()
    typing: tuple[str, ...] = ()
    write: Mapping[str, Any] = field(default_factory=dict)  # chatparse.write (empty: none fits the renders)
    lead: str = ""  # whitespace the template writes before calls that follow the prompt directly


@dataclass
class _Item:
    start: int  # where the call's own text starts (its name, or its JSON object)
    end: int  # where its arguments end
    name_end: int = -1
    args_start: int = -1


class CallSyntaxError(ValueError):
    """The renders do not fit a call syntax (the message says what was looked for)."""


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values (``False`` is not ``0``; key order does not matter)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def json_values(text: str) -> list[tuple[int, int, Any]]:
    """The outermost JSON objects and arrays in ``text``, left to right, as ``(start, end, value)``."""
    decoder = json.JSONDecoder()
    out: list[tuple[int, int, Any]] = []
    at = 0
    while True:
        match = regex.compile(r"[\[{]").search(text, at)
        if match is None:
            return out
        try:
            value, end = decoder.raw_decode(text, match.start())
        except ValueError:
            at = match.start() + 1
            continue
        out.append((match.start(), end, value))
        at = end


def _call_keys(obj: Any, call: Call) -> dict[str, Any] | None:
    """How a JSON call object holds ``call``: its name key and arguments key (or the name as the key)."""
    if not isinstance(obj, dict):
        return None
    if len(obj) == 1 and call.name in obj and same_json(obj[call.name], call.arguments):
        return {"name_as_key": True}
    name_key = next((k for k, v in obj.items() if v == call.name), None)
    if name_key is None:
        return None
    for key, value in obj.items():
        if key == name_key:
            continue
        if same_json(value, call.arguments):
            return {"name_key": name_key, "arguments_key": key, "string_arguments": False}
        if isinstance(value, str):
            try:
                if same_json(json.loads(value), call.arguments):
                    return {"name_key": name_key, "arguments_key": key, "string_arguments": True}
            except ValueError:
                continue
    return None


class _Reader:
    """Locates calls in a section text by one syntax; returns their spans or None."""

    def __init__(self, lexer: Lexer) -> None:
        self.lexer = lexer

    # --- JSON -------------------------------------------------------------------------------------

    def json_objects(self, text: str, calls: Sequence[Call]) -> tuple[list[_Item], dict[str, Any]] | None:
        items: list[_Item] = []
        keys: dict[str, Any] | None = None
        values = json_values(text)
        for call in calls:
            found = next(((a, b, k) for a, b, v in values if (k := _call_keys(v, call)) is not None
                          and (not items or a >= items[-1].end)), None)
            if found is None or (keys is not None and found[2] != keys):
                return None
            keys = found[2]
            items.append(_Item(found[0], found[1]))
        return (items, keys or {}) if items else None

    def json_array(self, text: str, calls: Sequence[Call]) -> tuple[int, int, dict[str, Any]] | None:
        for a, b, value in json_values(text):
            if isinstance(value, list) and len(value) == len(calls):
                keys = [_call_keys(v, c) for v, c in zip(value, calls, strict=True)]
                if all(k is not None and k == keys[0] for k in keys):
                    return a, b, keys[0] or {}
        return None

    def name_json(self, text: str, calls: Sequence[Call]) -> list[_Item] | None:
        items: list[_Item] = []
        at = 0
        values = json_values(text)
        for call in calls:
            first = text.find(call.name, at)
            if first < 0:
                return None
            found = next(((a, b) for a, b, v in values if a >= first + len(call.name) and same_json(v, call.arguments)),
                         None)
            if found is None:
                return None
            start = text.rfind(call.name, at, found[0])  # the name nearest the arguments (not one in an id)
            after = start + len(call.name)
            if "\n\n" in text[after:found[0]] or len(text[after:found[0]]) > 200:
                return None
            items.append(_Item(start, found[1], after, found[0]))
            at = found[1]
        return items

    # --- Python call syntax ----------------------------------------------------------------------

    def python_calls(self, text: str, calls: Sequence[Call]) -> list[_Item] | None:
        parse = get_content_parser("python-calls").parse
        items: list[_Item] = []
        at = 0
        for call in calls:
            start = text.find(call.name + "(", at)
            if start < 0:
                return None
            paren = start + len(call.name)
            consumed = Structure(syntax="python").tracker().feed(text[paren:], stop_at_value_end=True)
            if consumed < 0:
                return None
            end = paren + consumed
            try:
                parsed = parse(text[start:end], {"brackets": "forbidden", "repairs": True})
            except ValueError:
                return None
            if len(parsed) != 1 or parsed[0]["name"] != call.name:
                return None
            items.append(_Item(start, end, paren, paren))
            at = end
        return items

    # --- bare-key objects --------------------------------------------------------------------------

    def bare_key(self, text: str, calls: Sequence[Call]) -> tuple[list[_Item], tuple[str, str]] | None:
        delims = self._string_delimiters(text, calls)
        if delims is None:
            return None
        parse = get_content_parser("bare-key-object").parse
        structure = Structure(syntax="json", spans=(delims,))
        items: list[_Item] = []
        at = 0
        for call in calls:
            start = text.find(call.name, at)
            if start < 0:
                return None
            brace = start + len(call.name)
            if not text.startswith("{", brace):
                return None
            consumed = structure.tracker().feed(text[brace:], stop_at_value_end=True)
            if consumed < 0:
                return None
            end = brace + consumed
            try:
                value = parse(text[brace:end], {"string_delims": [list(delims)]})
            except ValueError:
                return None
            if not same_json(value, call.arguments):
                return None
            items.append(_Item(start, end, brace, brace))
            at = end
        return items, delims

    def _string_delimiters(self, text: str, calls: Sequence[Call]) -> tuple[str, str] | None:
        """The text around a string argument written after ``key:`` (``<|"|>Seoul<|"|>``)."""
        for call in calls:
            for key, value in call.arguments.items():
                if not isinstance(value, str):
                    continue
                match = regex.search(regex.escape(key) + r"\s*:\s*(.{0,16}?)" + regex.escape(value) + r"(.{0,16}?)[,}]",
                                     text, regex.DOTALL)
                if match and match.group(1) and match.group(1) == match.group(2) and match.group(1) != '"':
                    return match.group(1), match.group(2)
        return None


@dataclass
class _Params:
    """One call's XML-like parameters as rendered: the gaps between name, keys and values."""

    after_name: str  # name end -> first key
    connectors: list[str]  # key end -> value start, per parameter
    betweens: list[str]  # value end -> next key start
    tail: str  # last value end -> section end
    values: list[tuple[str, Any, str]]  # (key, original value, rendered text)
    end: int  # where the last value ends


def _renderings(value: Any) -> list[tuple[str, str]]:
    """How a non-string argument may be written: (label, text)."""
    out = [("json", json.dumps(value, ensure_ascii=False)), ("json", json.dumps(value)),
           ("json", json.dumps(value, ensure_ascii=False, separators=(",", ":"))), ("python", repr(value))]
    if value is None or isinstance(value, bool):
        out.append(("python", str(value)))
    return out


def _xml_params(text: str, call: Call, start: int) -> _Params | None:
    name_end = text.find(call.name, start)
    if name_end < 0:
        return None
    name_end += len(call.name)
    keys = sorted(((text.find(k, name_end), k) for k in call.arguments), key=lambda p: p[0])
    if not keys or keys[0][0] < 0:
        return None
    connectors: list[str] = []
    betweens: list[str] = []
    values: list[tuple[str, Any, str]] = []
    at = name_end
    previous_end = -1
    after_name = ""
    for index, (_, key) in enumerate(keys):
        key_at = text.find(key, at)
        if key_at < 0:
            return None
        if index == 0:
            after_name = text[name_end:key_at]
        else:
            betweens.append(text[previous_end:key_at])
        key_end = key_at + len(key)
        value = call.arguments[key]
        candidates = [("raw", value)] if isinstance(value, str) else _renderings(value)
        best: tuple[int, str, str] | None = None
        for label, rendered in candidates:
            found = text.find(rendered, key_end)
            if found >= 0 and found - key_end <= 64 and (best is None or found < best[0]):
                best = (found, label, rendered)
        if best is None:
            return None
        connectors.append(text[key_end:best[0]])
        values.append((key, value, best[1]))
        previous_end = best[0] + len(best[2])
        at = previous_end
    return _Params(after_name, connectors, betweens, text[previous_end:], values, previous_end)


class CallInference:
    """Tries the call syntaxes in turn on the sections of one probe form."""

    def __init__(self, lexer: Lexer, sections: Sections) -> None:
        self.lexer = lexer
        self.s = sections
        self.read = _Reader(lexer)

    def infer(self, calls_one: Call, calls_two: Sequence[Call]) -> CallFormat:
        attempts = (self._json_array, self._json_object, self._name_json, self._python, self._bare_key, self._xml)
        for attempt in attempts:
            found = attempt(calls_one, calls_two)
            if found is not None:
                return found
        raise CallSyntaxError(
            f"the call {calls_one.name!r} is rendered as {self.s.one[:200]!r}, which is none of the known call "
            "syntaxes (a JSON call object or array, a name then JSON arguments, XML-like parameters, Python "
            "call syntax, a bare-key object)")

    # --- framing: what is around the calls ---------------------------------------------------------

    def _frame(self, text: str, items: list[_Item]) -> dict[str, Any]:
        before = text[: items[0].start]
        after = text[items[-1].end:]
        if len(items) < 2:
            return {"section_open": "", "item_open": before, "separator": "", "item_close": after,
                    "section_close": ""}
        between = text[items[0].end: items[1].start]
        k = self.lexer.suffix_len([before, between])
        c = self.lexer.prefix_len([between[: len(between) - k], after])
        return {"section_open": before[: len(before) - k], "item_open": between[len(between) - k:],
                "separator": between[c: len(between) - k], "item_close": between[:c], "section_close": after[c:]}

    def _two(self, reader: Any, calls_two: Sequence[Call]) -> tuple[str, Any] | None:
        if self.s.two is None:
            return None
        found = reader(self.s.two, calls_two)
        return (self.s.two, found) if found else None

    # --- the syntaxes ----------------------------------------------------------------------------

    def _json_array(self, one: Call, two: Sequence[Call]) -> CallFormat | None:
        found = self.read.json_array(self.s.one, [one])
        if found is None:
            return None
        a, b, keys = found
        evidence = [f"one call: a JSON array of call objects {self.s.one[a:b][:80]!r} ({_keys_text(keys)})"]
        multiple = self.s.two is not None and self.read.json_array(self.s.two, two) is not None
        if multiple:
            evidence.append("two calls: both objects in one array")
        return CallFormat("json-array", section_open=self.s.one[:a], section_close=self.s.one[b:],
                          json_keys={**keys, "order": list(json.loads(self.s.one[a:b])[0])}, multiple=multiple,
                          evidence=tuple(evidence), typing=_JSON_TYPING)

    def _json_object(self, one: Call, two: Sequence[Call]) -> CallFormat | None:
        found = self.read.json_objects(self.s.one, [one])
        if found is None:
            return None
        items, keys = found
        evidence = [f"one call: a JSON call object {self.s.one[items[0].start:items[0].end][:80]!r} "
                    f"({_keys_text(keys)})"]
        framed = self._frame(self.s.one, items)
        pair = self._two(lambda t, c: self.read.json_objects(t, c), two)
        if pair is not None:
            framed = self._frame(pair[0], pair[1][0])
            evidence.append(f"two calls: {framed['item_open']!r} before and {framed['item_close']!r} after each "
                            f"object; {framed['section_open']!r} / {framed['section_close']!r} around them")
        obj = json.loads(self.s.one[items[0].start: items[0].end])
        return CallFormat("json-object", json_keys={**keys, "order": list(obj)},
                          multiple=pair is not None, evidence=tuple(evidence), typing=_JSON_TYPING, **framed)

    def _name_json(self, one: Call, two: Sequence[Call]) -> CallFormat | None:
        items = self.read.name_json(self.s.one, [one])
        if items is None:
            return None
        text = self.s.one
        seps = [text[items[0].name_end: items[0].args_start]]
        framed = self._frame(text, items)
        pair = self._two(self.read.name_json, two)
        if pair is not None:
            text, items = pair[0], pair[1]
            framed = self._frame(text, items)
            seps = [text[i.name_end: i.args_start] for i in items]
        name_after = digits_as_wildcards(seps) or escape(seps[0])
        if pair is not None:
            aligned = _id_aligned_open(text[: items[0].start], text[items[0].end: items[1].start], self.lexer)
            if aligned is not None:
                framed["section_open"], framed["item_open"], framed["separator"] = aligned[0], aligned[1], ""
                framed["item_open_pattern"] = aligned[2]
        evidence = [f"one call: the name {one.name!r}, then {seps[0]!r}, then the arguments as JSON",
                    f"{framed['item_open']!r} before the name, {framed['item_close']!r} after the arguments"]
        if pair is not None:
            evidence.append(f"two calls: {framed['section_open']!r} / {framed['section_close']!r} around them")
        return CallFormat("name-json", name_after=name_after, multiple=pair is not None, evidence=tuple(evidence),
                          typing=_JSON_TYPING, **framed)

    def _python(self, one: Call, two: Sequence[Call]) -> CallFormat | None:
        items = self.read.python_calls(self.s.one, [one])
        if items is None:
            return None
        framed = self._frame(self.s.one, items)
        pair = self._two(self.read.python_calls, two)
        if pair is not None:
            framed = self._frame(pair[0], pair[1])
        rendered = self.s.one[items[0].start: items[0].end]
        separator = framed["separator"].strip() if pair is not None else ","
        quoted = bool(regex.search(r"=\s*\"\d", rendered)) or bool(regex.search(r"=\s*'\d", rendered))
        typing = ["arguments are Python literals (JSON's true/false/null read too)"]
        if quoted:
            typing.append("numbers and other non-strings written inside quotes are typed by the request's tools")
        evidence = [f"one call: Python call syntax {rendered[:80]!r}"]
        if pair is not None:
            evidence.append(f"two calls: separated by {framed['separator']!r}")
        opener, closer = framed["section_open"] + framed["item_open"], framed["item_close"] + framed["section_close"]
        bracketed = opener.rstrip().endswith("[") and closer.lstrip().startswith("]")
        return CallFormat("python-calls", section_open=opener, section_close=closer, separator=separator,
                          python={"bracketed": bracketed, "quoted_values": quoted},
                          multiple=pair is not None, evidence=tuple(evidence), typing=tuple(typing))

    def _bare_key(self, one: Call, two: Sequence[Call]) -> CallFormat | None:
        found = self.read.bare_key(self.s.one, [one])
        if found is None:
            return None
        items, delims = found
        framed = self._frame(self.s.one, items)
        pair = self._two(lambda t, c: self.read.bare_key(t, c), two)
        if pair is not None:
            framed = self._frame(pair[0], pair[1][0])
        evidence = [f"one call: the name then an object with bare keys, strings between {delims[0]!r} and "
                    f"{delims[1]!r}: {self.s.one[items[0].start:items[0].end][:80]!r}"]
        typing = (f"strings between {delims[0]!r} and {delims[1]!r}; numbers, booleans and null written bare",)
        return CallFormat("bare-key-object", delimiters=delims, multiple=pair is not None, evidence=tuple(evidence),
                          typing=typing, **framed)

    def _xml(self, one: Call, two: Sequence[Call]) -> CallFormat | None:
        params = _xml_params(self.s.one, one, 0)
        if params is None or not params.betweens:
            return None
        lexer = self.lexer
        close_len = lexer.prefix_len([*params.betweens, params.tail])
        value_close = params.betweens[0][:close_len]
        prefix_len = lexer.suffix_len([*params.betweens, params.after_name])
        param_prefix = params.after_name[len(params.after_name) - prefix_len:]
        if not value_close.strip() or not param_prefix.strip():
            return None
        if len(value_close) + len(param_prefix) > min(map(len, params.betweens)):
            param_prefix = param_prefix.lstrip()
            value_close = value_close.rstrip()
        name_after = params.after_name[: len(params.after_name) - len(param_prefix)]
        connector = _connector(params.connectors)
        if connector is None:
            return None
        newlines = all(c.endswith("\n") for c in params.connectors) and value_close.startswith("\n")
        close_literal = value_close.strip()
        typing, kinds = _xml_typing(params, connector)
        items = [_Item(self.s.one.find(one.name), params.end + len(value_close))]
        framed = self._frame(self.s.one, items)
        multiple = False
        if self.s.two is not None:
            spans = _xml_items(self.s.two, two, value_close)
            if spans is not None:
                framed = self._frame(self.s.two, spans)
                multiple = True
        evidence = [f"one call: the name {one.name!r}, then parameters {param_prefix.strip()!r}KEY"
                    f"{params.connectors[0]!r}VALUE{value_close!r}",
                    f"{framed['item_open']!r} before the name, {framed['item_close']!r} after the last parameter"]
        xml = {"param_prefix": param_prefix.strip(), "connector": connector["pattern"], "value_close": close_literal,
               "strip_newlines": newlines, "kinds": kinds,
               "python_values": any(label == "python" for _, v, label in params.values if not isinstance(v, str))}
        if self.s.typed is not None:
            typed = _xml_params(self.s.typed, CALL_TYPED, 0)
            if typed is not None:
                typing, kinds = _xml_typing(typed, _connector(typed.connectors) or connector)
                xml["kinds"] = kinds
                xml["python_values"] = any(label == "python" for _, v, label in typed.values
                                           if not isinstance(v, str))
                evidence.append("typed call: " + "; ".join(typing))
        # Digits after the name are a call index (Kimi K3's index="1"): any index.
        after = regex.sub(r"\d+", lambda _: r"\d+", escape(name_after.strip()))
        return CallFormat("xml-params", name_after=after,
                          xml=xml, multiple=multiple, evidence=tuple(evidence), typing=tuple(typing), **framed)


_ID_LIKE = regex.compile(r"[\w.:\-]+")
_ID = r"[\w.:\-]+?"


def _id_aligned_open(before: str, between: str, lexer: Lexer) -> tuple[str, str, str] | None:
    """The opener before each call's name when it holds a per-call id (``<|tool_call:begin|>ID<|tool_call:
    name|>``): the texts before the first and the second name aligned token by token from the right, id-like
    tokens that differ becoming one wildcard, up to the leftmost marker reached. Returns (section open,
    opener as first rendered, opener regex), or None when no id differs."""
    left, right = lexer.tokens(before), lexer.tokens(between)
    steps: list[tuple[int, str, bool]] = []  # (offset in before, regex part, the token is a marker)
    i, j = len(left) - 1, len(right) - 1
    while i >= 0 and j >= 0:
        x, y = before[left[i][0]:left[i][1]], between[right[j][0]:right[j][1]]
        if x == y:
            steps.append((left[i][0], escape(x), left[i][2] == "m"))
        elif _ID_LIKE.fullmatch(x) and _ID_LIKE.fullmatch(y):
            steps.append((left[i][0], _ID, False))
        else:
            break
        i, j = i - 1, j - 1
    markers = [k for k, step in enumerate(steps) if step[2]]
    if not markers:
        return None
    kept = steps[: markers[-1] + 1]
    if not any(part == _ID for _, part, _ in kept):
        return None
    parts: list[str] = []
    for _, part, _ in reversed(kept):
        if not (part == _ID and parts and parts[-1] == _ID):
            parts.append(part)
    offset = kept[-1][0]
    return before[:offset], before[offset:], "".join(parts)


def _xml_items(text: str, calls: Sequence[Call], value_close: str) -> list[_Item] | None:
    items: list[_Item] = []
    at = 0
    for call in calls:
        params = _xml_params(text, call, at)
        if params is None:
            return None
        items.append(_Item(text.find(call.name, at), params.end + len(value_close)))
        at = items[-1].end
    return items


def _connector(connectors: Sequence[str]) -> dict[str, Any] | None:
    """The text between a parameter's key and its value as a regex; a part that differs between parameters
    (``string="true"`` / ``string="false"``) is a ``kind`` group."""
    if len(set(connectors)) == 1:
        return {"pattern": _flex_ws(connectors[0]), "kinds": ()}
    first = connectors[0]
    head = len(_common([*connectors]))
    tail = len(_common([c[::-1] for c in connectors]))
    while head and first[head - 1].isalnum():  # the kind is a whole word ("true", not "tru")
        head -= 1
    while tail and first[len(first) - tail].isalnum():
        tail -= 1
    variants = sorted({c[head: len(c) - tail] for c in connectors})
    if not all(v and regex.fullmatch(r"\w+", v) for v in variants):
        return None
    return {"pattern": _flex_ws(first[:head]) + "(?P<kind>" + "|".join(map(escape, variants)) + ")"
            + _flex_ws(first[len(first) - tail:]), "kinds": tuple(variants)}


def _flex_ws(text: str) -> str:
    """``text`` as a regex in which each whitespace run may be any whitespace, and so may the gap between
    two tags written side by side (``</arg_key><arg_value>``: models put a newline there)."""
    out = []
    for part in regex.split(r"(\s+)", text):
        if part.isspace():
            out.append(r"\s*")
        elif part:
            out.append(r">\s*<".join(escape(t) for t in part.split("><")))
    return "".join(out)


def _common(items: list[str]) -> str:
    first = min(items, key=len)
    for i, ch in enumerate(first):
        if any(t[i] != ch for t in items):
            return first[:i]
    return first


def _xml_typing(params: _Params, connector: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """What the rendered values say about typing, and for a ``kind`` group which kinds hold raw text."""
    kinds: dict[str, str] = {}
    if connector.get("kinds"):
        for (_, value, _label), text in zip(params.values, params.connectors, strict=True):
            match = regex.search(connector["pattern"], text)
            if match is not None and match.groupdict().get("kind"):
                kinds[match.group("kind")] = "text" if isinstance(value, str) else "json"
    typing = []
    if kinds:
        raw = sorted(k for k, v in kinds.items() if v == "text")
        typed = sorted(k for k, v in kinds.items() if v == "json")
        typing.append(f"the parameter's kind says how its value is written: {raw} raw text, {typed} JSON; "
                      "no tools needed")
    else:
        labels = {label for _, v, label in params.values if not isinstance(v, str)}
        typing.append("string values are raw text (kept exactly, no quotes); other values are typed by the "
                      "request's tools (pass tools=): without a schema every value is a string")
        if "python" in labels:
            typing.append("lists, objects, booleans and null are written as Python literals (read by schema "
                          "typing with Python literals)")
        elif labels:
            typing.append("lists and objects are written as JSON")
    return typing, kinds


def _keys_text(keys: Mapping[str, Any]) -> str:
    if keys.get("name_as_key"):
        return "the function name is the key"
    extra = ", arguments as a JSON string" if keys.get("string_arguments") else ""
    return f"name in {keys.get('name_key')!r}, arguments in {keys.get('arguments_key')!r}{extra}"


_JSON_TYPING = ("arguments are JSON: every JSON type round-trips without the request's tools",)
