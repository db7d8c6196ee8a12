"""The ``xml-parameters`` body: a call's parameters one by one in schema order, each written by the
``parameter`` form (``<parameter={key}>\\n{value}\\n</parameter>\\n``), then the call's end.

A string value is raw text that ends at its close only where the next parameter or the call's end follows
(the parser's structural rule, ``chatparse.structure`` spans), so it may hold any marker but that close
followed by structure. Other values are JSON (an enum or a constant: its values, strings raw). Keys of the
``write`` form this body reads besides ``parameter``:

- ``{string}`` in ``parameter``: ``true`` for a value written as raw text, ``false`` for one written as
  JSON (DeepSeek's DSML ``string="..."`` attribute).
- ``values``: ``{"syntax": "python"}`` (typed values may also be Python literals, ``['a', 'b c']``, as
  chat templates that write Python reprs do); ``{"text": "xml"}`` (string values are XML element text:
  raw text without ``<`` or ``&``, or one ``<![CDATA[...]]>`` section).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from chatparse.grammar.build import watched_texts
from chatparse.grammar.ir import (
    EMPTY,
    Alt,
    Lit,
    Node,
    Ref,
    Rep,
    Rx,
    Seq,
    Until,
    alt,
    any_of,
    lit,
    opt,
    rx_escape,
    seq,
    trie,
)
from chatparse.grammar.jsonschema import STRING_CHAR, GrammarError

# Whitespace between a value's close and what follows it. The parser looks up to 256 characters ahead; the
# grammar ends a value only after a short gap and keeps longer runs out of values (llguidance's lexer
# cannot afford long counted repetitions inside a complement).
# ASCII whitespace only (a Unicode class costs llguidance's lexer fuel; other spaces after a close count
# as text that is not the next structure, which a value never holds).
_SPACE = r"[ \t\n\r\f\v]"
GAP = _SPACE + "*"
_SHORT_GAP = _SPACE + "{0,8}"
_LONG_GAP = _SPACE + "{9}"
# Whitespace a model may write between the tags of a call where the chat template writes none or other.
LAYOUT = opt(Rx(r"[ \t\n]{1,4}"))
_PY_CHAR = r"(?:[^'\\\x00-\x1f]|\\(?:['\\nrt]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}))"
_PY_WORDS = {"true": "True", "false": "False", "null": "None"}
_CDATA_OPEN, _CDATA_CLOSE = "<![CDATA[", "]]>"


def _fail(message: str) -> GrammarError:
    return GrammarError(message, code="bad_write_form", field="tool_calls")


def write(builder: Any, tool: Any, begin: str, end: str) -> Node:
    """One call of ``tool``: ``begin``, its parameters, ``end``."""
    return seq(lit(begin), _Parameters(_form(builder, end), tool).node())


class _Form:
    """How parameters are written for one builder and call end: what every tool's parameters share (the
    string values' free text, the typed values' string character, rules)."""

    def __init__(self, builder: Any, end: str) -> None:
        form = builder.form
        template = form.parameter
        if template.count("{key}") != 1 or template.count("{value}") != 1 or \
                template.index("{key}") > template.index("{value}"):
            raise _fail(f"'chatparse.write.parameter' must hold '{{key}}' then '{{value}}', found {template!r}")
        self.builder, self.end = builder, end
        self.head, rest = template.split("{key}")
        self.between, self.tail = rest.split("{value}")
        self.marker, self.head_marker = self.tail.strip(), self.head.lstrip()
        self.following = end.lstrip()
        self.end_marker = self.following[: self.following.index(">") + 1] if ">" in self.following else \
            self.following
        if not self.marker or not self.head_marker or not self.end_marker:
            raise _fail(f"'chatparse.write.parameter' {template!r} (with the call's end {end!r}) needs text "
                        "before the key, after the value and after the last parameter")
        values = form.values
        self.python = values.get("syntax") == "python"
        self.xml_text = values.get("text") == "xml"
        # What the parser takes as structure after a value's close: the next parameter, the markers of the
        # call's end, the region's close, and every marker it watches in the turn.
        ends = re.findall(r"<[^<>]+>", self.following)
        self.structure = list(dict.fromkeys(w for w in (self.head_marker, self.end_marker, *ends,
                                                        *watched_texts(builder.plan.calls.close),
                                                        *builder.plan.watched) if w))
        # A typed value is read by the parser's structure first: its strings hold no marker's first
        # character (nor, for XML text, a reference's).
        firsts = {_first_symbol(w) for w in (self.marker, *self.structure)} | ({"&"} if self.xml_text else set())
        self.banned = "".join(sorted(_class_char(c) for c in firsts))
        self.closing, self.bare = _value_close(self.between, self.tail)
        # A parser that splits the region into calls first (xml-invokes) reads a call's tags anywhere.
        opener = re.match(r"\s*(<[^\s{>]+)", form.begin)
        self.call_tags = [opener.group(1), self.end_marker] if \
            builder.plan.calls.content == "xml-invokes" and opener else []
        self.stops: dict[str, Until] = {}
        self.pythons: dict[int, tuple[Node, Node]] = {}  # by id: (a JSON value's node, as Python literals)
        self._element_text: Node | None = None

    def stop(self, cont: str) -> Until:
        """A string value, its close and ``cont`` (the next structure's first marker)."""
        hit = self.stops.get(cont)
        if hit is not None:
            return hit
        # Nothing but ``cont`` follows a close inside a value: other structure (the parser's), stray text before
        # the call's end, anything at all (so a close is the value's last one: walks and models move on).
        others = [w for w in self.structure if w.startswith(cont) and w != cont]
        after = [_diverging(cont), trie(others)] if others else [_diverging(cont)]
        excludes = [rx_escape(self.marker) + GAP + any_of(after), rx_escape(self.marker) + _LONG_GAP,
                    *self.bare(cont)]
        # A parameter opener at the start of a line in a value without close text is a parameter whose close
        # the model dropped (the parser reads it so): only the stop may end with one, nothing follows it.
        excludes.append(rx_escape("\n" + self.head_marker) + "(?s:.)")
        if self.call_tags:  # (the call's close only ends the stop)
            excludes += [rx_escape(self.call_tags[0]), rx_escape(self.call_tags[1]) + "(?s:.)"]
        # (at the value's start when the head ends with a newline)
        not_start = (rx_escape(self.head_marker),) if self.between.endswith("\n") else ()
        stop = self.stops[cont] = Until(self.closing + _SHORT_GAP + rx_escape(cont), tuple(dict.fromkeys(excludes)),
                                        not_start)
        return stop

    def element_text(self) -> Node:
        """XML element text: raw text without ``<`` or ``&``, or one CDATA section that holds no marker."""
        if self._element_text is None:
            markers = [self.marker, *self.structure]
            cdata = Until(rx_escape(_CDATA_CLOSE), (trie(markers),))
            self._element_text = opt(alt(Rx(r"[^<&]+"), seq(Lit(_CDATA_OPEN), cdata)))
        return self._element_text

    def as_python(self, node: Node) -> Node:
        """``node`` (JSON texts) as Python literals: strings quoted ``'...'``, ``True`` ``False`` ``None``."""
        hit = self.pythons.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        written = self._as_python(node)
        self.pythons[id(node)] = (node, written)
        return written

    def _as_python(self, node: Node) -> Node:
        if isinstance(node, Lit):
            return Lit(_python_text(node.text))
        if isinstance(node, Rx):
            quoted = re.fullmatch(r'"(.*)"', node.pattern, re.S)
            if quoted is None:
                return node
            count = quoted.group(1)[len(self.builder.schemas.string_char):]
            return Rx("'" + _PY_CHAR.replace("[^'", f"[^{self.banned}'", 1) + count + "'")
        if isinstance(node, Seq):
            return Seq(tuple(self.as_python(item) for item in node.items))
        if isinstance(node, Alt):
            return Alt(tuple(self.as_python(item) for item in node.items))
        if isinstance(node, Rep):
            return Rep(self.as_python(node.item), node.min, node.max)
        if isinstance(node, Ref):
            rules, name = self.builder.grammar.rules, f"py_{node.name}"
            if name not in rules:
                rules[name] = EMPTY  # placeholder against recursion
                rules[name] = self.as_python(rules[node.name])
            return Ref(name)
        return node


def _form(builder: Any, end: str) -> _Form:
    # (by what _Form reads: the call end and the call form, which a body of several spellings switches)
    call = builder.form
    key = (__name__, end, call.parameter, call.begin, repr(call.values))
    form: _Form | None = builder.made.get(key)
    if form is None:
        form = builder.made[key] = _Form(builder, end)
    # (typed values' strings avoid the markers' first characters: the builder's schemas write them so)
    builder.schemas.string_char = STRING_CHAR.replace('[^"', f'[^{form.banned}"', 1)
    return form


class _Parameters:
    """The parameters of one call (rules shared through ``builder.grammar``)."""

    def __init__(self, form: _Form, tool: Any) -> None:
        self.form, self.tool = form, tool
        schema = dict(tool.parameters)
        self.schema = schema
        self.props: dict[str, Any] = dict(schema.get("properties") or {})
        self.required = set(schema.get("required") or ())
        self.names = list(self.props)
        self.picks: dict[int, Node] = {}
        self.options: dict[int, Node] = {}

    def node(self) -> Node:
        form = self.form
        first, may_end = self.more(0)
        options: list[Node] = []
        if first is not None:
            options.append(seq(LAYOUT, lit(form.head), first))
        if may_end:
            options.append(seq(LAYOUT, lit(form.end)))
        return alt(*options)

    def more(self, i: int) -> tuple[Node | None, bool]:
        """(the choice of the next member from ``i`` on, None if none may come; whether the call may end)."""
        may_end = not any(n in self.required for n in self.names[i:])
        return (self.pick(i) if i < len(self.names) else None), may_end

    def pick(self, i: int) -> Node:
        if i not in self.picks:
            self.picks[i] = EMPTY  # placeholder against re-entry
            options: list[Node] = []
            for j in range(i, len(self.names)):
                options.append(self.option(j))
                if self.names[j] in self.required:
                    break
            one = options[0] if len(options) == 1 and isinstance(options[0], Ref) else None
            self.picks[i] = one or self.form.builder.grammar.add("param", alt(*options))
        return self.picks[i]

    def option(self, j: int) -> Node:
        """Member ``j`` (its key, its value, what follows it): the same in the choice from each ``i <= j`` that
        may skip to it, so one rule where there are several (an optional member before it)."""
        hit = self.options.get(j)
        if hit is None:
            sub = self.props[self.names[j]]
            between = self.form.between.replace("{string}", "true" if _text_value(sub) else "false")
            hit = seq(lit(self.names[j]), _tags_apart(between), self.member(j))
            if j and self.names[j - 1] not in self.required:
                hit = self.form.builder.grammar.add("member", hit)
            self.options[j] = hit
        return hit

    def member(self, j: int) -> Node:
        """Member ``j``'s value and what follows it: the next member or the call's end."""
        form = self.form
        nxt, may_end = self.more(j + 1)
        sub = self.props[self.names[j]]
        raw = _raw_string(sub)
        if raw and not form.xml_text:
            options: list[Node] = []
            if nxt is not None:
                options.append(seq(form.stop(form.head_marker), nxt))
            if may_end:
                options.append(seq(form.stop(form.end_marker), lit(form.following[len(form.end_marker):])))
            return alt(*options)
        written = _written_literals(sub)
        if raw:
            value = form.element_text()
        elif written is not None:  # an enum or a constant: strings raw, as the chat template writes them
            value = alt(*(Lit(v) for v in written))
        elif isinstance(sub, Mapping) and sub.get("type") == "boolean":  # chat templates write Python's too
            value = alt(*(Lit(v) for v in ("true", "false", "True", "False")))
        else:
            where = f"tools/{self.tool.name}/parameters/properties/{self.names[j]}"
            value = form.builder.schemas.value(sub, where, self.schema)
            if form.python:
                value = alt(value, form.as_python(value))
        after: list[Node] = []
        if nxt is not None:
            after.append(seq(LAYOUT, lit(form.head_marker), nxt))
        if may_end:
            after.append(seq(LAYOUT, lit(form.end)))  # the call's end with its layout (a string's stop holds it)
        return seq(value, lit(form.tail), alt(*after))  # no whitespace around it: the parser keeps it


def _python_text(text: str) -> str:
    """A JSON literal's text as Python writes the same value."""
    if text in _PY_WORDS:
        return _PY_WORDS[text]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            return repr(json.loads(text))
        except ValueError:
            return text
    return text


def _value_close(between: str, tail: str) -> tuple[str, Callable[[str], list[str]]]:
    """(a regex for a string value's close, a function giving what the value must not hold before ``cont``).

    The parser's structure closes a value at its close text with the layout around it (``\\n</parameter>``,
    ``</parameter>\\n``): the layout before is the value's last character, or the head's last one when the
    value is empty. The content parser reads the close without the layout, so a close without that layout
    must not be followed by ``cont`` anywhere in the value."""
    stripped = tail.lstrip()
    marker = stripped.rstrip()
    before, after = tail[: len(tail) - len(stripped)], stripped[len(marker):]
    closing = rx_escape(marker + after)
    bare: list[str] = []
    if before:
        optional = between.endswith(before[-1])  # an empty value: the head's layout closes it
        closing = (f"(?:{rx_escape(before)})?" if optional else rx_escape(before)) + closing
        bare.append(f"[^{_class_char(before[-1])}]{rx_escape(marker)}{GAP}")
    if after:
        others = _SPACE[1:-1].replace(_class_char(after[0]), "")
        bare.append(f"{rx_escape(marker)}(?:[{others}]{GAP})?")
    return closing, lambda cont: [b + rx_escape(cont) for b in bare]


def _class_char(ch: str) -> str:
    """``ch`` as a member of a regex character class."""
    return rx_escape(ch) if ch not in "]^\\-" else "\\" + ch


@functools.lru_cache(maxsize=256)
def _tags_apart(text: str) -> Node:
    """``text`` with optional layout where one tag ends and the next begins (``</arg_key><arg_value>``)."""
    parts = re.split(r"(?<=>)[ \t\n]*(?=<)", text)
    out: list[Node] = [lit(parts[0])]
    for part in parts[1:]:
        out += [LAYOUT, lit(part)]
    return seq(*out)


def _diverging(text: str) -> str:
    """A regex for what starts differently from ``text`` (whitespace first never counts as different: it is
    the gap before it)."""
    pattern = ""
    for i in range(len(text) - 1, -1, -1):
        blank = _SPACE[1:-1] if i == 0 else ""
        pattern = f"(?:[^{_class_char(text[i])}{blank}]" + (f"|{rx_escape(text[i])}{pattern})" if pattern else ")")
    return pattern


def _first_symbol(marker: str) -> str:
    """The character of ``marker`` strings avoid: its first that is not a letter, digit or space (``user<|x|>``
    gives ``<``), else its first."""
    return next((c for c in marker if not c.isalnum() and not c.isspace()), marker[0])


def _raw_string(schema: Any) -> bool:
    """A parameter written as raw text: a string that is not an enum or a constant."""
    if not isinstance(schema, Mapping) or "enum" in schema or "const" in schema:
        return False
    kinds = schema.get("type")
    if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
        return True
    members = schema.get("anyOf") or schema.get("oneOf") or []
    return any(_raw_string(m) for m in members)  # raw text is a string member's value


def _text_value(schema: Any) -> bool:
    """A parameter whose value is written as text (``string="true"``): a string, or an enum of strings."""
    written = _written_literals(schema)
    if written is not None:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        return all(isinstance(v, str) for v in values)
    return _raw_string(schema)


def _written_literals(schema: Any) -> list[str] | None:
    """The texts of an enum's or a constant's values as raw-text parameters write them (a string as itself,
    anything else as JSON), or None for other schemas."""
    if not isinstance(schema, Mapping) or not ("enum" in schema or "const" in schema):
        return None
    values = schema["enum"] if "enum" in schema else [schema["const"]]
    if not isinstance(values, list) or not values:
        return None
    return [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values]
