"""Layout ``sections``: a turn written as fixed sections in a fixed order (Kimi K3's XTML channels), chosen by
the content field's ``chatparse.write`` ``{"layout": "sections", "open": ..., "close": ..., "tail": ...}``:

    [reasoning block] OPEN answer text CLOSE [GROUP-OPEN call call ... GROUP-CLOSE] TAIL [end marker]

The answer's section is always written (empty when the model only calls tools, as the chat template renders
it); the calls, when there are any, are one group after it (the tool call field's ``group``, calls written
back to back by its ``call`` form); ``tail`` closes the turn's message before its end marker. When the prompt
opened the reasoning block, the grammar starts inside it; when it opened the answer's section (a prompt
without reasoning), the grammar starts inside that: its ``open`` is optional wherever it may come.

Free text (the reasoning and the answer) holds none of the format's markers (each ``<|...|>`` token in the
written forms and in the template's end, next-turn and dropped markers) except as its own close.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatparse.grammar.build import inside_excludes, region_texts
from chatparse.grammar.ir import EMPTY, Node, Rep, Until, alt, lit, opt, rx_escape, seq
from chatparse.grammar.jsonschema import GrammarError
from chatparse.grammar.layout_messages import markers, split_close

if TYPE_CHECKING:
    from chatparse.grammar.build import Builder


def _content_form(builder: Builder) -> tuple[str, str, str]:
    """(open, close, tail) of the answer's section."""
    content = builder.template.fields["content"]
    opened, closed = region_texts(content)
    tail = (content.ext.write or {}).get("tail", "")
    if not isinstance(tail, str) or not opened or not closed:
        raise GrammarError(f"Layout 'sections' needs the answer section's 'open' and 'close' and a string 'tail' on "
                           f"the content field's written form, found {opened!r}, {closed!r}, {tail!r}",
                           code="bad_write_form", field="content")
    return opened, closed, tail


def section_text(builder: Builder, close: str) -> Node:
    """A section's free text up to and including ``close``: no marker but the ones ``close`` holds, those only
    as part of it (the text ends at the close's first marker token, the rest follows)."""
    stop, rest = split_close(close)
    found = markers(builder)
    excludes = tuple(rx_escape(m) for m in found if m not in stop)
    return seq(Until(rx_escape(stop), excludes + inside_excludes(found, stop)), lit(rest))


def reasoning(builder: Builder, state: str) -> Node:
    """The reasoning block (when the prompt did not close it) and the answer section's open."""
    opened, _, _ = _content_form(builder)
    thinking = builder.plan.thinking
    if thinking is None or state in ("closed", "none"):
        return opt(lit(opened))
    think_open, think_close = region_texts(thinking)
    block = seq(section_text(builder, think_close), lit(opened))
    if state == "open":
        return block
    return alt(seq(lit(think_open), block), opt(lit(opened)))


def answer(builder: Builder, choice: str | None, name: str | None, parallel: bool) -> Node:
    """The answer's section, the group of calls and the turn's close."""
    _, closed, tail = _content_form(builder)
    ends = builder.plan.ends
    finish = seq(lit(tail), opt(alt(*map(lit, ends))) if ends else EMPTY)
    text = section_text(builder, closed)
    if choice == "none":
        return seq(text, finish)
    group = builder.form.group
    if group is None:
        raise GrammarError("Layout 'sections' writes the calls as one group: expected 'group' ([open, close]) on the "
                           "tool call field's written form", code="bad_write_form", field="tool_calls")
    tools = [t for t in builder.tools if name is None or t.name == name]
    one = builder.grammar.add("call", alt(*(builder.call(t) for t in tools)))
    more = EMPTY if (name is not None or not parallel) else Rep(one)
    calls = seq(lit(group[0]), one, more, lit(group[1]))
    if choice == "required" or name is not None:
        return seq(lit(closed), calls, finish)  # an empty answer, as the chat template renders a turn of calls
    return seq(text, opt(calls), finish)
