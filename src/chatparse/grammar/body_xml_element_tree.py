"""The ``xml-element-tree`` body: a call's arguments as nested elements named after the parameters (MiniMax M3),
written by the ``parameter`` form with ``{key}`` in the open and the close tag (``]<]minimax[>[<{key}>{value}
]<]minimax[>[</{key}>``). A value is its text (a string raw, another scalar as JSON), an array one list item
element (the parser's ``list_item``) per item, an object one element per property, in schema order.

The parser reads every tag the format writes as structure, so text never holds a bracket (the tags' and the
turn markers' first character); an array holds at least one item and an object at least one property (an
empty element reads as text).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chatparse.grammar.ir import EMPTY, Lit, Node, Rep, Rx, alt, lit, seq
from chatparse.grammar.jsonschema import INTEGER, NUMBER, GrammarError

_TEXT = Rx(r"[^\[\]]*")


def _fail(message: str, code: str = "bad_write_form", **where: Any) -> GrammarError:
    return GrammarError(message, code=code, **where)


def write(builder: Any, tool: Any, begin: str, end: str) -> Node:
    """One call of ``tool``: ``begin``, one element per parameter, ``end``."""
    form = builder.form.parameter
    if form.count("{value}") != 1 or "{key}" not in form.split("{value}")[0] or "{key}" not in form.split("{value}")[1]:
        raise _fail(f"'chatparse.write.parameter' must hold '{{key}}' in the open tag, then '{{value}}', then "
                    f"'{{key}}' in the close tag, found {form!r}", field="tool_calls")
    item = builder.plan.calls.content_args.get("list_item", "item")
    tree = _Tree(builder, form, item, f"tools/{tool.name}/parameters")
    return seq(lit(begin), tree.members(dict(tool.parameters), tree.where, allow_empty=True), lit(end))


class _Tree:
    def __init__(self, builder: Any, form: str, item: str, where: str) -> None:
        self.builder = builder
        self.open, self.close = form.split("{value}")
        self.item = item
        self.where = where

    def element(self, name: str, value: Node) -> Node:
        return seq(Lit(self.open.replace("{key}", name)), value, Lit(self.close.replace("{key}", name)))

    def value(self, schema: Any, where: str) -> Node:
        if not isinstance(schema, Mapping) or schema in ({}, True):
            return _TEXT
        for key in ("enum", "const"):
            if key in schema:
                values = schema["enum"] if key == "enum" else [schema["const"]]
                return alt(*(Lit(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)) for v in values))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return alt(*(self.value(m, f"{where}/{key}/{i}") for i, m in enumerate(schema[key])))
        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else list(kinds or ["string"])
        if "string" in kinds:  # any text reads back as the string
            return _TEXT
        return alt(*(self.typed(kind, schema, where) for kind in kinds))

    def typed(self, kind: str, schema: Mapping[str, Any], where: str) -> Node:
        if kind == "integer":
            return Rx(INTEGER)
        if kind == "number":
            return Rx(NUMBER)
        if kind == "boolean":
            return alt(Lit("true"), Lit("false"))
        if kind == "null":
            return Lit("null")
        if kind == "array":
            item = self.element(self.item, self.value(schema.get("items", {}), f"{where}/items"))
            high = schema.get("maxItems")
            return Rep(item, max(1, int(schema.get("minItems", 0))), None if high is None else int(high))
        if kind == "object":
            return self.members(schema, where, allow_empty=False)
        raise _fail(f"Schema at {where}: type {kind!r} has no element form", "unsupported_schema", path=where)

    def members(self, schema: Mapping[str, Any], where: str, *, allow_empty: bool) -> Node:
        """One element per property in schema order, the required ones always (and, unless ``allow_empty``,
        at least one: an empty element reads as text)."""
        props: Mapping[str, Any] = schema.get("properties") or {}
        if not props:
            if allow_empty:
                return EMPTY
            raise _fail(f"Schema at {where}: an object without properties has no element form", "unsupported_schema",
                        path=where)
        required = set(schema.get("required") or ())
        if not allow_empty and not required:
            required = {next(iter(props))}
        members = [(name, self.element(name, self.value(sub, f"{where}/properties/{name}")), name in required)
                   for name, sub in props.items()]
        node: Node = self.builder.schemas.members(members, sep=EMPTY)
        return node
