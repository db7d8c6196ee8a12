"""A template's grammar: what a model may write after the prompt, built from the template's fields and
their ``write`` forms (how the model writes each one; derived from literal delimiters when absent).

The output, top to bottom: reasoning where the template has it (free text up to its close; already open
when the prompt opened it), then the answer: free text and calls under ``auto``, calls only under
``required`` or a named choice, no call under ``none``; then, optionally, the turn's end marker.

Free text never holds what the template's parser would read as a marker there (an opener, the end of
the turn, a next-turn header, a stray marker it drops) and, when it ends the output, never ends in the
first part of one: so whatever the grammar admits parses back to the calls it spelled.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chatparse.grammar import prose_trigger
from chatparse.grammar.ir import (
    EMPTY,
    Grammar,
    Lit,
    Node,
    Rep,
    Rx,
    Text,
    Until,
    alt,
    lit,
    opt,
    rx_escape,
    seq,
    trie,
)
from chatparse.grammar.jsonschema import OWS, GrammarError, SchemaGrammar
from chatparse.grammar.respell import respell, spelled_schema
from chatparse.template.compile import CompiledField, CompiledTemplate, Delimiter

CHOICES = ("auto", "required", "none")
# Bodies written by modules of their own (each has ``write(builder, tool, begin, end) -> Node``).
BODY_MODULES: dict[str, str] = {
    "json-list": "chatparse.grammar.body_json_list",
    "xml-parameters": "chatparse.grammar.body_xml_parameters",
    "python-calls": "chatparse.grammar.body_python_calls",
    "bare-key-object": "chatparse.grammar.body_bare_key_object",
    "typed-parameters": "chatparse.grammar.body_typed_parameters",
    "element-tree": "chatparse.grammar.body_element_tree",
    "spellings": "chatparse.grammar.body_spellings",
}
# Turn layouts beyond reasoning then answer, written by modules of their own (each has
# ``reasoning(builder, state) -> Node`` and ``answer(builder, choice, name, parallel) -> Node``), named by the
# content field's 'chatparse.write.layout'.
LAYOUT_MODULES: dict[str, str] = {
    "messages": "chatparse.grammar.layout_messages",
    "parts": "chatparse.grammar.layout_parts",
    "sections": "chatparse.grammar.layout_sections",
}
BODIES = ("json-call", "json-arguments", *BODY_MODULES)
# Whitespace a model writes between calls and around them when no separator is spelled out.
_BETWEEN = Rx(r"[ \t\n]{1,4}")


@dataclass(frozen=True)
class CallForm:
    """How one call is written: ``begin`` (may hold ``{name}``), the body, ``end``."""

    begin: str
    end: str
    body: str
    separator: str
    group: tuple[str, str] | None
    keys: Mapping[str, str]
    parameter: str
    values: Mapping[str, str]
    triggers: tuple[str, ...]
    arguments: tuple[str, ...] = ("json",)  # how arguments are spelled (see grammar.respell)


def _fail(message: str, code: str, **where: Any) -> GrammarError:
    return GrammarError(message, code=code, **where)


def delimiter_text(delim: Delimiter | None) -> str | None:
    """The text a model writes for ``delim``: its first literal, or the one literal every match of its regex
    contains when that literal alone is a match (``\\s*<think>`` is written ``<think>``)."""
    if delim is None:
        return None
    if delim.literals:
        return delim.literals[0]
    for candidate in delim.info.anchors or ():
        if delim.pattern.fullmatch(candidate):
            return str(candidate)
    return None


def watched_texts(delim: Delimiter | None) -> tuple[str, ...]:
    """Literal texts at least one of which every match of ``delim`` contains (empty: unknown)."""
    if delim is None:
        return ()
    if delim.literals:
        return delim.literals
    anchors = delim.info.anchors
    if anchors and all(anchors):
        return tuple(anchors)
    chars = delim.info.first_chars
    return tuple(sorted(chars)) if chars else ()


def _write(field: CompiledField) -> Mapping[str, Any]:
    return field.ext.write or {}


def region_texts(field: CompiledField) -> tuple[str, str]:
    """(open, close) as the model writes them for a reasoning or content field."""
    form = _write(field)
    opened = form.get("open", delimiter_text(field.open))
    closed = form.get("close", delimiter_text(field.close))
    if not isinstance(opened, str) or not isinstance(closed, str):
        raise _fail(f"Field '{field.name}' has delimiters given as regexes and no written form; expected "
                    f"'chatparse.write': {{\"open\": ..., \"close\": ...}} on the field (how the model writes them)",
                    "no_write_form", field=field.name)
    return opened, closed


def call_form(field: CompiledField) -> CallForm:
    form = dict(_write(field))
    body = form.get("body", "json-call" if field.content in ("json-calls",) else
                    "json-arguments" if field.content in ("json", "json-or-code") else None)
    if body not in BODIES:
        raise _fail(f"Field '{field.name}' ({field.content} parser): no written form a grammar can be built from "
                    f"(found body {body!r}); expected 'chatparse.write' with 'body' one of {list(BODIES)}",
                    "no_write_form", field=field.name)
    call = form.get("call")
    if call is None:
        opened, closed = delimiter_text(field.open), delimiter_text(field.close)
        if opened is None or closed is None:
            raise _fail(f"Field '{field.name}': its delimiters are regexes; expected 'chatparse.write': "
                        "{\"call\": \"...{body}...\"} (how the model writes one call)", "no_write_form",
                        field=field.name)
        call = opened + "{body}" + closed
    if not isinstance(call, str) or call.count("{body}") != 1:
        raise _fail(f"Field '{field.name}': 'chatparse.write.call' must hold '{{body}}' once, found {call!r}",
                    "bad_write_form", field=field.name)
    begin, end = call.split("{body}")
    group = form.get("group")
    triggers = form.get("trigger")
    if triggers is None:
        first = group[0] if group else begin.split("{name}")[0]
        # The call starts where the parser sees it start: the longest opener text it begins with.
        openers = sorted((w for w in watched_texts(field.open) if w and first.startswith(w)), key=len)
        triggers = [openers[-1]] if openers else [first] if first else []
    if not triggers:
        raise _fail(f"Field '{field.name}': a call starts with no fixed text; expected 'chatparse.write.trigger' "
                    "(the text that starts a call)", "bad_write_form", field=field.name)
    return CallForm(begin=begin, end=end, body=body, separator=form.get("separator", ""),
                    group=tuple(group) if group else None, keys=form.get("keys", {}),
                    parameter=form.get("parameter", ""), values=form.get("values", {}),
                    triggers=tuple(triggers), arguments=tuple(form.get("arguments", ("json",))))


def _partials(markers: Iterable[str]) -> tuple[str, ...]:
    """A regex for the first part of any marker, as a trie (a whole marker matches too)."""
    markers = [m for m in markers if m]
    return (trie(markers, prefixes=True),) if markers else ()


@dataclass(frozen=True)
class Plan:
    """What the grammar builder needs from a template."""

    thinking: CompiledField | None
    calls: CompiledField
    end: str | None
    watched: tuple[str, ...]  # texts the parser reacts to in the answer's free text
    reasoning_watched: tuple[str, ...]
    ends: tuple[str, ...] = ()  # the markers a model ends its turn with
    avoid: tuple[str, ...] = ()  # regexes of openers given by 'chatparse.write.avoid' (free text avoids them)


def plan(template: CompiledTemplate) -> Plan:
    fields = template.fields
    calls = fields.get("tool_calls")
    if calls is None:
        raise _fail("The template has no 'tool_calls' field; expected a template whose model calls tools",
                    "no_tool_calls")
    thinking = fields.get("thinking") if "thinking" in fields and fields["thinking"].open is not None else None
    ext = template.ext
    watched: list[str] = [*ext.end, *ext.next_turn, *ext.drop]
    avoid: list[str] = []
    for f in fields.values():
        written = _avoided(f)
        avoid.extend(written)
        watched.extend(_write(f).get("trigger", ()) if written else watched_texts(f.open))
        watched.extend(f.ext.lone_close)
    reasoning_watched: list[str] = [*ext.end, *ext.next_turn]
    if thinking is not None:
        reasoning_watched.extend(_reasoning_closes(thinking, calls))
        # A close regex also ends the reasoning at each answer marker it matches (Inkling's <|end_message|>).
        reasoning_watched.extend(w for w in watched if w and thinking.close and thinking.close.pattern.match(w))
    return Plan(thinking=thinking, calls=calls, end=ext.end[0] if ext.end else None,
                watched=tuple(dict.fromkeys(watched)), reasoning_watched=tuple(dict.fromkeys(reasoning_watched)),
                avoid=tuple(dict.fromkeys(avoid)), ends=_turn_ends(ext.end, ext.discard_after_end))


def _turn_ends(ends: tuple[str, ...], discarded: tuple[str, ...]) -> tuple[str, ...]:
    """The end markers a model may end its turn with: every one the template lists (the parser ends the turn
    at each). One it also discards after the end is still a real end for some models (Nemotron Nano 2's
    ``<SPECIAL_12>``), so ``discarded`` keeps none out; the first stays first (the canonical one)."""
    return tuple(dict.fromkeys(ends))


def _avoided(field: CompiledField) -> tuple[str, ...]:
    """The field's 'chatparse.write.avoid': regexes free text must not match (the openers the parser reacts to,
    where its open pattern gives no literal text), in place of what the opener's regex implies (its written
    triggers stay watched)."""
    avoid = _write(field).get("avoid", ())
    if isinstance(avoid, str) or not all(isinstance(a, str) and a for a in avoid):
        raise _fail(f"Field '{field.name}': 'chatparse.write.avoid' must be a list of regexes, found {avoid!r}",
                    "bad_write_form", field=field.name)
    return tuple(avoid)


def _reasoning_closes(thinking: CompiledField, calls: CompiledField) -> tuple[str, ...]:
    """Texts that close the reasoning. A close regex with no fixed texts (``</think>|(?=<tool_call>...)``:
    reasoning also ends where a call starts) is its written close and the calls' openers."""
    close = thinking.close
    if close is None or close.literals or close.info.anchors:
        return watched_texts(close)
    return (region_texts(thinking)[1], *watched_texts(calls.open))


class Builder:
    def __init__(self, template: CompiledTemplate, tools: list[Any], *, lenient: bool) -> None:
        self.template = template
        self.tools = tools
        self.grammar = Grammar()
        self.schemas = SchemaGrammar(self.grammar, lenient=lenient)
        self.plan = plan(template)
        self.form = call_form(self.plan.calls)
        self._bodies: dict[str, Node] = {}
        self._calls: dict[tuple[str, str], Node] = {}
        self._respellers: dict[str, Any] = {}
        self.made: dict[Any, Any] = {}  # what body modules make once per builder (keys name the module)
        self.layout = _layout(template)

    # -- one call -------------------------------------------------------------------------------------
    def call(self, tool: Any, skip: str = "") -> Node:
        """One call of ``tool``, without its first ``skip`` characters (a trigger already written)."""
        form = self.form
        name = tool.name
        begin = form.begin.replace("{name}", name)
        if not begin.startswith(skip):
            raise _fail(f"A call starts with {begin!r}, not with its trigger {skip!r}; expected every call to "
                        "start with the trigger text ('chatparse.write.trigger')", "bad_write_form")
        begin = begin[len(skip):]
        end = form.end.replace("{name}", name)
        key = (name, skip)
        if key not in self._calls:
            # The body is one rule per tool, shared by the call written whole and the one after a trigger.
            if name not in self._bodies:
                if form.body == "json-call":
                    node = seq(self.json_call(tool), _spelled(end))
                elif form.body == "json-arguments":
                    node = seq(self.arguments(tool), _spelled(end))
                else:  # a body written by its own module: write(builder, tool, begin, end) -> the whole call
                    module = importlib.import_module(BODY_MODULES[form.body])
                    node = module.write(self, tool, "", end)
                self._bodies[name] = self.grammar.add("body", node)
            self._calls[key] = seq(_spelled(begin), self._bodies[name])
        return self._calls[key]

    def arguments(self, tool: Any) -> Node:
        where = f"tools/{tool.name}/parameters"
        return alt(*(respell(self.grammar, self.schemas.value(spelled_schema(dict(tool.parameters), s), where), s,
                             self._respellers) for s in self.form.arguments))

    def json_call(self, tool: Any) -> Node:
        keys = self.form.keys
        name_key, args_key = keys.get("name", "name"), keys.get("arguments", "arguments")
        return seq(Lit("{"), OWS, Lit(json.dumps(name_key)), OWS, Lit(":"), OWS, Lit(json.dumps(tool.name)), OWS,
                   Lit(","), OWS, Lit(json.dumps(args_key)), OWS, Lit(":"), OWS, self.arguments(tool), OWS, Lit("}"))

    # -- the turn -------------------------------------------------------------------------------------
    def calls_node(self, tools: list[Any], *, least: int, most: int | None, skip: str = "") -> Node:
        """``least``..``most`` calls of ``tools`` (with the group around them, separators between), without
        the first ``skip`` characters (a trigger already written). A body module with ``calls(builder, tools,
        least=, most=, skip=)`` writes the whole run itself (all calls of a region in one value)."""
        run_of_calls = getattr(importlib.import_module(BODY_MODULES[self.form.body]), "calls", None) \
            if self.form.body in BODY_MODULES else None
        if run_of_calls is not None:
            return run_of_calls(self, tools, least=least, most=most, skip=skip)  # type: ignore[no-any-return]
        group = self.form.group
        one = self.grammar.add("call", alt(*(self.call(t) for t in tools)))
        first = one if group or not skip else self.grammar.add("call", alt(*(self.call(t, skip) for t in tools)))
        sep = lit(self.form.separator) if self.form.separator else opt(_BETWEEN)
        run: Node = first
        if most != 1:
            run = seq(first, Rep(seq(sep, one), max(least - 1, 0), None if most is None else most - 1))
        if group:
            if not group[0].startswith(skip):
                raise _fail(f"The calls' group starts with {group[0]!r}, not with its trigger {skip!r}",
                            "bad_write_form")
            run = seq(lit(group[0][len(skip):]), opt(_BETWEEN), run, opt(_BETWEEN), lit(group[1]))
        return run

    def answer(self, choice: str | None, name: str | None, parallel: bool) -> Node:
        if self.layout is not None:
            return self.layout.answer(self, choice, name, parallel)  # type: ignore[no-any-return]
        watched = self.plan.watched
        end = self.plan.end
        ending = self.ending(watched)
        if choice == "none":
            return ending
        tools = [t for t in self.tools if name is None or t.name == name]
        if choice == "required" or name is not None:
            most = 1 if (name is not None or not parallel) else None
            tail = opt(alt(*map(lit, self.plan.ends))) if end else EMPTY
            wrapped = self.wrapped_text(watched)
            return seq(opt(_BETWEEN), self.calls_node(tools, least=1, most=most), opt(_BETWEEN),
                       alt(tail, wrapped) if wrapped else tail)
        # auto: text, then calls started by their trigger (the lazy text holds it), then more text.
        form = self.form
        first = form.triggers[0]
        after = self.calls_node(tools, least=1, most=None if parallel else 1, skip=first)
        start = Until(rx_escape(first), _excludes(watched, first) + inside_excludes(watched, first) + self.plan.avoid)
        if "opens" in _write(self.plan.calls):  # a trigger that is text unless a call follows it
            return prose_trigger.answer(self, start, after, ending, parallel)
        block = seq(start, after)
        return seq(Rep(block, 0, None if parallel else 1), ending)

    def ending(self, watched: tuple[str, ...], not_start: tuple[str, ...] = ()) -> Node:
        end = self.plan.end
        avoid = self.plan.avoid
        text = Text(_excludes(watched, "") + avoid, _partials(watched), not_start)
        wrapped = self.wrapped_text(watched)
        if end is None:
            return alt(text, wrapped) if wrapped else text
        return alt(*(Until(rx_escape(e), _excludes(watched, e) + avoid, not_start) for e in self.plan.ends), text,
                   *([wrapped] if wrapped else []))

    def wrapped_text(self, watched: tuple[str, ...]) -> Node | None:
        """The answer's text between the markers the content field's written form puts around it (Cohere's
        ``<|START_RESPONSE|>...<|END_RESPONSE|>``, markers the parser drops), then the end of the turn."""
        content = self.template.fields.get("content")
        if content is None or not content.ext.write or self.layout is not None:
            return None
        opened, closed = region_texts(content)
        body = Until(rx_escape(closed), _excludes(watched, closed) + inside_excludes(watched, closed))
        return seq(lit(opened), body, opt(_BETWEEN), opt(alt(*map(lit, self.plan.ends))) if self.plan.ends else EMPTY)

    def reasoning(self, state: str) -> Node:
        if self.layout is not None:
            return self.layout.reasoning(self, state)  # type: ignore[no-any-return]
        return self.reasoning_block(state)

    def reasoning_block(self, state: str) -> Node:
        """The reasoning field's block, when the template has one (optional; already open: its text)."""
        thinking = self.plan.thinking
        if thinking is None or state in ("closed", "none"):
            return EMPTY
        spellings = block_spellings(thinking)
        closes = [closed for _, closed in spellings]
        body = _block_text(self.plan.reasoning_watched, closes)
        if state == "open":  # (the prompt opened one of the spellings: its text ends at any close)
            return body
        blocks = [seq(lit(opened), body) for opened, _ in spellings]
        skip = _write(thinking).get("skip")  # how the model writes a block it skips (MiniMax M3's lone close)
        return opt(alt(*blocks, *([lit(skip)] if isinstance(skip, str) else [])))


def block_spellings(thinking: CompiledField) -> list[tuple[str, str]]:
    """(open, close) of the reasoning block, then of its other spellings (the written form's ``also``: K2
    Horizon's ``<ifm|think_fast>``...``</ifm|think_fast>`` by reasoning effort)."""
    also = _write(thinking).get("also", [])
    if not isinstance(also, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(t, str) and t
                                                                                         for t in p) for p in also):
        raise _fail(f"Field '{thinking.name}': 'chatparse.write.also' must be a list of [open, close] pairs, found "
                    f"{also!r}", "bad_write_form", field=thinking.name)
    return [region_texts(thinking), *((p[0], p[1]) for p in also)]


def _block_text(watched: tuple[str, ...], closes: list[str]) -> Node:
    """A block's text up to its close (any of ``closes``, one free text per close: a close that is a special
    token ends its text as a token), holding no other marker the parser watches."""
    return alt(*(Until(rx_escape(c), _excludes(watched, c) + inside_excludes(watched, c)) for c in closes))


def _layout(template: CompiledTemplate) -> Any:
    """The module of the turn layout the content field's written form names (None: reasoning then answer)."""
    content = template.fields.get("content")
    name = _write(content).get("layout") if content is not None else None
    if name is None:
        return None
    if name not in LAYOUT_MODULES:
        raise _fail(f"'chatparse.write.layout' is {name!r}; expected one of {list(LAYOUT_MODULES)}", "bad_write_form",
                    field="content")
    return importlib.import_module(LAYOUT_MODULES[name])


def _spelled(text: str) -> Node:
    """A call form's text, each ``{index}`` in it a call counter (Kimi's ``functions.NAME:0``): digits."""
    pieces = text.split("{index}")
    return seq(*(node for i, piece in enumerate(pieces) for node in ((Rx("[0-9]{1,3}"),) if i else ()) + (lit(piece),)))


def inside_excludes(watched: Iterable[str], stop: str) -> tuple[str, ...]:
    """Markers the ``stop`` text holds may stand in free text up to ``stop`` only as part of it: each is
    excluded when more text follows it than follows it in ``stop`` (``Action:`` inside ``\\nAction:``)."""
    found = []
    for w in watched:
        if len(w) > 1 and stop.count(w) == 1:  # one character: a regex's first characters, no marker
            after = len(stop) - stop.rindex(w) - len(w)
            found.append(rx_escape(w) + f"(?s:.){{{after + 1}}}")
    return tuple(found)


def _excludes(watched: Iterable[str], stop: str) -> tuple[str, ...]:
    return tuple(rx_escape(w) for w in watched if w and w not in stop)
