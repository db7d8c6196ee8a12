"""The ``spellings`` body: a call written in any of several forms the template's parser reads, for a chat template
that switches its call format by a request option (K2 Horizon's ``tool_call_format``: ``xml``, ``xml_typed``,
``json``), so a grammar admits each. The tool call field's written form lists them in ``spellings``: each a
dict with the keys of a written form (``call`` holding ``{body}`` once, the text inside the outer ``call``;
``body``, a body other than ``spellings``; ``parameter``, ``values``, ``keys`` as that body reads them).
JSON spellings come last (a JSON value written first, with every string character, could be shared by a
later spelling whose JSON strings avoid the format's markers).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from typing import Any

from chatparse.grammar.ir import Node, alt, lit, seq
from chatparse.grammar.jsonschema import STRING_CHAR, GrammarError

_JSON = ("json-call", "json-arguments")


def write(builder: Any, tool: Any, begin: str, end: str) -> Node:
    """One call of ``tool`` in each spelling: ``begin``, the spelling's call, ``end``."""
    outer, chars = builder.form, builder.schemas.string_char
    options: list[Node] = []
    try:
        for spelling in _spellings(builder):
            builder.form = spelling  # the spelling's body reads its form from the builder
            options.append(seq(lit(begin), lit(spelling.begin.replace("{name}", tool.name)),
                               _body(builder, tool, spelling.end.replace("{name}", tool.name) + end)))
    finally:
        builder.form, builder.schemas.string_char = outer, chars
    return alt(*options)


def _body(builder: Any, tool: Any, end: str) -> Node:
    from chatparse.grammar.build import BODY_MODULES  # (build imports body modules by name)

    body = builder.form.body
    if body in _JSON:
        # A JSON body's strings are JSON strings to the parser (any character); a body written before may have
        # narrowed them for its own values.
        builder.schemas.string_char = STRING_CHAR
        return seq(builder.json_call(tool) if body == "json-call" else builder.arguments(tool), lit(end))
    return importlib.import_module(BODY_MODULES[body]).write(builder, tool, "", end)  # type: ignore[no-any-return]


def _spellings(builder: Any) -> list[Any]:
    """Each spelling as a call form (the outer form with the spelling's keys)."""
    from chatparse.grammar.build import BODIES

    raw = (builder.plan.calls.ext.write or {}).get("spellings")
    if not isinstance(raw, list) or not raw:
        raise _bad(f"body 'spellings' needs 'spellings', a non-empty list of written forms, found {raw!r}")
    out: list[Any] = []
    for spelling in raw:
        call = spelling.get("call") if isinstance(spelling, Mapping) else None
        body = spelling.get("body") if isinstance(spelling, Mapping) else None
        if not isinstance(call, str) or call.count("{body}") != 1 or body not in BODIES or body == "spellings":
            raise _bad(f"each of 'spellings' needs 'call' with '{{body}}' once and a 'body' among {list(BODIES)} "
                       f"other than 'spellings', found {spelling!r}")
        if out and out[-1].body in _JSON and body not in _JSON:
            raise _bad("list JSON spellings last (a JSON value written first, with every string character, could be "
                       f"shared by a later spelling whose strings avoid markers), found {spelling!r} after one")
        begin, end = call.split("{body}")
        out.append(dataclasses.replace(builder.form, begin=begin, end=end, body=body,
                                       parameter=spelling.get("parameter", ""), values=spelling.get("values", {}),
                                       keys=spelling.get("keys", {})))
    return out


def _bad(message: str) -> GrammarError:
    return GrammarError(f"'chatparse.write': {message}", code="bad_write_form", field="tool_calls")
