"""Layout ``parts``: a turn made of parts, each addressed to a recipient (Functionary v3.2:
``all\\nText>>>get_weather\\n{...}``, Inkling's typed blocks), chosen by the content field's ``chatparse.write``
``{"layout": "parts", "open": ..., "close": ..., "separator": ...}``: the text part's ``open`` (``all\\n``)
and ``close``, and the ``separator`` that starts every part after the first (the prompt wrote the first
one's). Reasoning, where the template has it, is its block before the parts. A call part is a call as the
``call`` form writes it (``{name}\\n{body}``).

Inside a text part the parser watches only the separator (the next part) and the turn's markers, so the
text excludes those; a call part's JSON ends it.
"""

from __future__ import annotations

from chatparse.grammar.build import Builder, _excludes, inside_excludes, region_texts
from chatparse.grammar.ir import EMPTY, Node, Rep, Until, alt, lit, opt, rx_escape, seq
from chatparse.grammar.jsonschema import GrammarError


def reasoning(builder: Builder, state: str) -> Node:
    return builder.reasoning_block(state)


def answer(builder: Builder, choice: str | None, name: str | None, parallel: bool) -> Node:
    content = builder.template.fields["content"]
    sep = (content.ext.write or {}).get("separator")
    if not isinstance(sep, str) or not sep:
        raise GrammarError(f"Layout 'parts' needs the parts' 'separator' on the content field's written form, found "
                           f"{sep!r}", code="bad_write_form", field="content")
    opened, closed = region_texts(content)
    ext = builder.template.ext
    ends = builder.plan.ends
    markers = tuple(dict.fromkeys((sep, closed, *ext.end, *ext.next_turn, *ext.drop)))  # all the parser watches
    markers = tuple(m for m in markers if m)
    # A text part followed by the next part, or ending the turn (one lexeme for its text in both).
    last_text: Node
    if closed:
        text = Until(rx_escape(closed), _excludes(markers, closed) + inside_excludes(markers, closed))
        text_then_next = seq(lit(opened), text, lit(sep))
        last_text = seq(lit(opened), text, opt(alt(*map(lit, ends))))
    else:
        text_then_next = seq(lit(opened), Until(rx_escape(sep), _excludes(markers, sep) + inside_excludes(markers, sep)))
        last_text = seq(lit(opened), builder.ending(markers))
    texts = Rep(text_then_next)
    if choice == "none":
        return seq(texts, last_text)
    tools = [t for t in builder.tools if name is None or t.name == name]
    call = builder.grammar.add("call", alt(*(builder.call(t) for t in tools)))
    last_call = seq(call, opt(alt(*map(lit, ends))) if ends else EMPTY)
    call_then_next = seq(call, lit(sep))
    one_call = alt(last_call, seq(call_then_next, texts, last_text))
    if choice == "required" or name is not None:
        if name is not None or not parallel:
            return seq(texts, one_call)
        many = builder.grammar.add("parts", Rep(alt(text_then_next, call_then_next)))
        return seq(texts, alt(last_call, seq(call_then_next, many, alt(last_call, last_text))))
    if not parallel:
        return seq(texts, alt(one_call, last_text))
    many = builder.grammar.add("parts", Rep(alt(text_then_next, call_then_next)))
    return seq(many, alt(last_call, last_text))
