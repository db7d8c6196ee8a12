"""``auto`` for a call trigger that is also ordinary text: ``chatparse.write.opens`` is a regex of what follows
the trigger when it starts a call (Llama 4 pythonic: ``[`` opens a call list only before ``NAME(``; ``[1]`` is
prose). The answer's text may then hold the trigger, provided what follows it does not start like a call.

    text  := UNTIL_TRIGGER after_trigger | ENDING
    after_trigger := calls text | UNTIL_TRIGGER' after_trigger | ENDING'

where the primed texts must not start with ``opens``. Without parallel calls, the text after a call is
``ENDING``, which holds no trigger.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from chatparse.grammar.ir import EMPTY, Alt, Node, Text, Until, alt, seq
from chatparse.grammar.jsonschema import GrammarError

if TYPE_CHECKING:
    from chatparse.grammar.build import Builder


def _not_starting(node: Node, not_start: tuple[str, ...]) -> Node:
    """``node`` (free text, or a choice of free texts) that must not start with ``not_start``."""
    if isinstance(node, Until | Text):
        return replace(node, not_start=node.not_start + not_start)
    if isinstance(node, Alt):
        return alt(*(_not_starting(item, not_start) for item in node.items))
    raise TypeError(f"free text expected, found {node!r}")


def answer(builder: Builder, start: Until, calls: Node, ending: Node, parallel: bool) -> Node:
    """The ``auto`` answer: text with calls after their trigger, and the trigger as text where no call
    follows it."""
    opens = builder.plan.calls.ext.write["opens"] if builder.plan.calls.ext.write else None
    if not isinstance(opens, str) or not opens:
        raise GrammarError(f"'chatparse.write.opens' must be a regex, found {opens!r}", code="bad_write_form",
                           field="tool_calls")
    not_start = (f"(?:{opens})",)
    grammar = builder.grammar
    text = grammar.add("text", EMPTY)
    after = grammar.add("after_trigger", EMPTY)
    grammar.rules[text.name] = alt(seq(start, after), ending)
    grammar.rules[after.name] = alt(seq(calls, text if parallel else ending),
                                    seq(_not_starting(start, not_start), after),
                                    _not_starting(ending, not_start))
    return text
