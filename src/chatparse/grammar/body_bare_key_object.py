"""Body ``bare-key-object``: a call's arguments as an object with bare keys and strings between delimiter
tokens, ``{city:<|"|>Seoul<|"|>,days:2}`` (Gemma 4) or ``<escape>`` ... ``<escape>`` (FunctionGemma), the
field's first ``string_delims`` pair. Written compact (no spaces), as the chat templates render it.

A string is any text without its closing delimiter (the parser ends it at the first one). Keys are written
bare where the parser reads them back whole (a word of letters, digits, ``_``, ``-`` and ``.``), else
delimited. ``chatparse.write.values`` ``{"order": "sorted"}`` writes an object's keys in sorted order (the
Gemma templates sort them); the default is schema order.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from chatparse.grammar.ir import Lit, Node, Rx, Until, lit, rx_escape, seq
from chatparse.grammar.jsonschema import GrammarError, SchemaGrammar
from chatparse.grammar.styled import StyledValues

if TYPE_CHECKING:
    from chatparse.grammar.build import Builder
    from chatparse.tools.schema import Tool

# A key written bare: ASCII word characters only (narrower than the parser's \w, and exact in every grammar
# form: \w's Unicode tables differ between engines); any other key is written quoted.
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,127}")
_ORDERS = ("schema", "sorted")
_TOOL_NAME = re.compile(r"[\w.\-]{1,128}")  # a name the call's opener captures


class BareKeyValues(StyledValues):
    pair_sep = Lit(":")
    item_sep = Lit(",")
    space = seq()
    written_sep, written_colon = ",", ":"

    def __init__(self, base: SchemaGrammar, opener: str, closer: str, *, sort_keys: bool) -> None:
        super().__init__(base)
        self.opener, self.closer = opener, closer
        self.sort_keys = sort_keys
        self.bodies: dict[str, Node] = {}  # one rule per tool: the call after its begin

    def quoted(self, text: str) -> str:
        if self.closer in text:
            raise GrammarError(f"Enum or const value {text!r} holds the string delimiter {self.closer!r}, which no "
                               "string of this call format can hold", code="unsupported_schema")
        return self.opener + text + self.closer

    def key(self, name: str) -> str:
        return name if _BARE_KEY.fullmatch(name) else self.quoted(name)

    def any_key(self) -> Node:
        return Rx(_BARE_KEY.pattern)

    def string(self, low: int = 0, high: int | None = None) -> Node:
        if low or high is not None:
            if not self.lenient:
                raise GrammarError("minLength/maxLength cannot be enforced on a delimited string; drop them or "
                                   "build the grammar with lenient=True", code="unsupported_schema")
            self.unenforced.append("minLength/maxLength")
        return seq(Lit(self.opener), Until(rx_escape(self.closer)))


_VALUES: weakref.WeakKeyDictionary[Builder, BareKeyValues] = weakref.WeakKeyDictionary()


def _values(builder: Builder) -> BareKeyValues:
    values = _VALUES.get(builder)
    if values is None:
        form: Mapping[str, Any] = builder.form.values or {}
        order = form.get("order", "schema")
        if set(form) - {"order"} or order not in _ORDERS:
            raise GrammarError(f"'chatparse.write.values' of a bare-key-object body must be {{\"order\": one of "
                               f"{list(_ORDERS)}}}, found {dict(form)!r}", code="bad_write_form", field="tool_calls")
        delims = (builder.plan.calls.content_args or {}).get("string_delims") or []
        if not delims:
            raise GrammarError("A bare-key-object field needs content_args 'string_delims'", code="bad_write_form",
                               field="tool_calls")
        opener, closer = delims[0]
        values = _VALUES[builder] = BareKeyValues(builder.schemas, opener, closer, sort_keys=order == "sorted")
    return values


def write(builder: Builder, tool: Tool, begin: str, end: str) -> Node:
    """``begin`` ``{key:value,...}`` ``end`` (the part after ``begin`` one rule per tool)."""
    values = _values(builder)
    if not _TOOL_NAME.fullmatch(tool.name):
        raise GrammarError(f"Tool name {tool.name!r} cannot be written in this call format; expected letters, digits, "
                           "'_', '.' and '-'", code="unsupported_name", field=tool.name)
    if tool.name not in values.bodies:
        arguments = values.value(dict(tool.parameters), f"tools/{tool.name}/parameters")
        values.bodies[tool.name] = builder.grammar.add("body", seq(arguments, lit(end)))
    return seq(lit(begin), values.bodies[tool.name])
