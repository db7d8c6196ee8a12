"""Layout ``messages``: a turn made of messages, each a channel of its own (OpenAI's harmony format, gpt-oss),
chosen by the content field's ``chatparse.write`` ``{"layout": "messages", "header": ...}``.

The turn: an optional reasoning message (the reasoning field's written open, its text, its close), then
``header`` (the next message's start, which the prompt wrote for the first one), then one message:
the answer (the content field's written open, its text, its close or the end of the output) or one call
(the tool call field's ``call``, or one of its other spellings in ``also``). Text beside these messages has
no place in the format, so ``auto`` is the answer or a call, ``required`` and a named choice a call,
``none`` the answer. A call ends the turn (the model stops after it), so at most one is written.

A message's text holds none of the format's markers (each ``<|...|>`` token in the written forms and in
the template's end, next-turn and dropped markers), and ends in no first part of one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from chatparse.grammar.build import _partials, region_texts
from chatparse.grammar.ir import EMPTY, Node, Rep, Text, Until, alt, lit, opt, rx_escape, seq
from chatparse.grammar.jsonschema import GrammarError

if TYPE_CHECKING:
    from chatparse.grammar.build import Builder
    from chatparse.tools.schema import Tool

_MARKER = re.compile(r"<\|[^|<>\s]{1,64}\|>")
# Keys of written forms that hold texts a model writes.
_TEXT_KEYS = ("open", "close", "header", "call", "tail", "parameter")


def _written(builder: Builder) -> list[str]:
    """Every text a layout writes or the parser watches, markers and all."""
    template = builder.template
    ext = template.ext
    texts: list[str] = [*ext.end, *ext.next_turn, *ext.drop, builder.form.begin, builder.form.end]
    for field in template.fields.values():
        form = field.ext.write or {}
        texts.extend(v for k, v in form.items() if k in _TEXT_KEYS and isinstance(v, str))
        texts.extend(v for k in ("also", "group") for v in form.get(k) or () if isinstance(v, str))
    return texts


def split_close(close: str) -> tuple[str, str]:
    """``close`` as (its first marker token, the rest) when it starts with one and goes on (Kimi K3's
    ``<|close|>`` + ``think<|sep|>``), else (``close``, ""): free text that ends at the token alone is the same
    text, and a tokenizer that has the marker as a special token can end it there (llguidance matches no
    special token inside a regex)."""
    found = _MARKER.match(close)
    return (found.group(), close[found.end():]) if found and found.end() < len(close) else (close, "")


def markers(builder: Builder) -> tuple[str, ...]:
    """The format's marker tokens (``<|...|>``) in every text the template writes or watches."""
    return tuple(sorted({m for text in _written(builder) for m in _MARKER.findall(text)}))


def _header(builder: Builder) -> str:
    content = builder.template.fields["content"]
    header = (content.ext.write or {}).get("header", "")
    if not isinstance(header, str):
        raise GrammarError(f"'chatparse.write.header' must be a string, found {header!r}", code="bad_write_form",
                           field="content")
    return header


def message_text(builder: Builder, stop: str | None) -> Node:
    """A message's text up to and including ``stop`` (None: up to the end of the output)."""
    found = markers(builder)
    if stop is None:
        return Text(tuple(rx_escape(m) for m in found), _partials(found))
    return Until(rx_escape(stop), tuple(rx_escape(m) for m in found if m not in stop))


def reasoning(builder: Builder, state: str) -> Node:
    """The reasoning message and the next message's header (nothing when the prompt closed reasoning)."""
    thinking = builder.plan.thinking
    header = lit(_header(builder))
    if state == "none":  # the grammar starts where reasoning ended: before the next header, or after it
        return opt(header)
    if thinking is None or state == "closed":
        return EMPTY
    opened, closed = region_texts(thinking)
    body = seq(message_text(builder, closed), header)
    return body if state == "open" else opt(seq(lit(opened), body))


def _call(builder: Builder, tool: Tool, end: str | None = None) -> Node:
    """One call of ``tool`` in any of its spellings (the arguments one rule, shared); ``end``: the message
    ends with this instead of the call's own end (a call followed by another message)."""
    spellings = (builder.plan.calls.ext.write or {}).get("also", ())
    if not spellings and end is None:
        return builder.call(tool)
    form = builder.form
    arguments = builder.grammar.add("arguments", builder.arguments(tool))
    calls: list[Node] = []
    for spelling in (form.begin + "{body}" + form.end, *spellings):
        if not isinstance(spelling, str) or spelling.count("{body}") != 1 or form.body != "json-arguments":
            raise GrammarError(f"'chatparse.write.also' holds calls spelled like 'call' (with '{{body}}' once, a "
                               f"json-arguments body), found {spelling!r}", code="bad_write_form", field="tool_calls")
        begin, own_end = spelling.replace("{name}", tool.name).split("{body}")
        calls.append(seq(lit(begin), arguments, lit(own_end if end is None else end)))
    return alt(*calls)


def answer(builder: Builder, choice: str | None, name: str | None, parallel: bool) -> Node:
    """The one message after the header: the answer, or a call."""
    opened, closed = region_texts(builder.template.fields["content"])
    text = seq(lit(opened), alt(message_text(builder, closed), message_text(builder, None)))
    if choice == "none":
        return text
    tools = [t for t in builder.tools if name is None or t.name == name]
    call: Node = builder.grammar.add("call", alt(*(_call(builder, t) for t in tools)))
    thinking = builder.plan.thinking
    close = builder.plan.calls.close
    ends_calls = thinking is not None and close is not None and \
        close.pattern.fullmatch(region_texts(thinking)[1]) is not None
    if parallel and name is None and ends_calls:  # the message end also closes a call (gpt-oss's <|end|>)
        # Parallel calls: each but the last ends its message with the message end and the next header (as
        # chat templates render several calls), the last with the call's own end.
        message_end = region_texts(thinking)[1]  # type: ignore[arg-type]
        earlier = builder.grammar.add("call", alt(*(_call(builder, t, message_end) for t in tools)))
        call = seq(Rep(seq(earlier, lit(_header(builder)))), call)
    if choice == "required" or name is not None:
        return call
    return alt(text, call)
