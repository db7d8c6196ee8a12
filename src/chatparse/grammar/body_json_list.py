"""``json-list``: the calls of one region written as one JSON array, ``[call, call, ...]`` (Mistral's
``[TOOL_CALLS][...]``, ``<tool_calls>[...]``, Cohere's ``<|START_ACTION|>[...]``): ``{body}`` in the ``call``
form is the whole array, so a region holds as many calls as its array has items.

An item is a call object written with the form's ``keys`` (``name``, ``arguments`` and, when given, ``id``:
an optional leading ``"<id key>": "<digits>"`` member, as Cohere's template renders it), or
``{"<name>": {arguments}}`` when the parser reads the name as the key (content_args ``name_as_key``,
Apertus).
"""

from __future__ import annotations

import json
from typing import Any

from chatparse.grammar.build import Builder
from chatparse.grammar.ir import Lit, Node, Rep, Rx, alt, lit, opt, seq
from chatparse.grammar.jsonschema import OWS, GrammarError

_ID = Rx(r'"[0-9]{1,4}"')


def _member(key: str, value: Node) -> Node:
    return seq(Lit(json.dumps(key)), OWS, Lit(":"), OWS, value)


def item(builder: Builder, tool: Any) -> Node:
    """One call object of the array."""
    arguments = builder.arguments(tool)
    if builder.plan.calls.content_args.get("name_as_key"):
        return seq(Lit("{"), OWS, _member(tool.name, arguments), OWS, Lit("}"))
    keys = builder.form.keys
    ident = opt(seq(_member(keys["id"], _ID), OWS, Lit(","), OWS)) if "id" in keys else lit("")
    return seq(Lit("{"), OWS, ident, _member(keys.get("name", "name"), Lit(json.dumps(tool.name))), OWS, Lit(","),
               OWS, _member(keys.get("arguments", "arguments"), arguments), OWS, Lit("}"))


def write(builder: Builder, tool: Any, begin: str, end: str) -> Node:
    """One call alone in its array."""
    return seq(lit(begin), Lit("["), OWS, item(builder, tool), OWS, Lit("]"), lit(end))


def calls(builder: Builder, tools: list[Any], *, least: int, most: int | None, skip: str) -> Node:
    """One region holding ``least``..``most`` calls of ``tools`` in its array, without the first ``skip``
    characters of the region's opening, its ``begin`` and the array's ``[`` (a trigger already written: a
    bare array's trigger is ``[``)."""
    form = builder.form
    if form.group or "{name}" in form.begin + form.end:
        raise GrammarError("Body 'json-list' writes all calls of a region in one array: its 'call' form holds no "
                           f"'{{name}}' and it takes no 'group'; found call {form.begin + '{body}' + form.end!r}",
                           code="bad_write_form", field="tool_calls")
    opening = form.begin + "["
    if not opening.startswith(skip):
        raise GrammarError(f"A call starts with {opening!r}, not with its trigger {skip!r}; expected every call "
                           "to start with the trigger text ('chatparse.write.trigger')", code="bad_write_form",
                           field="tool_calls")
    one = builder.grammar.add("item", alt(*(item(builder, t) for t in tools)))
    items: Node = one
    if most != 1:
        items = seq(one, Rep(seq(OWS, Lit(","), OWS, one), max(least - 1, 0), None if most is None else most - 1))
    return seq(lit(opening[len(skip):]), OWS, items, OWS, Lit("]"), lit(form.end))
