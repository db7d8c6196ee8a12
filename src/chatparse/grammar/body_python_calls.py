"""Body ``python-calls``: one call written as a Python call with keyword arguments, ``NAME(key=value, ...)``
(Llama 4 pythonic, LFM2, OLMo 3), values as Python literals per JSON Schema type.

The field's ``chatparse.write.values`` says how values are spelled (every key optional):

- ``string``: the quote of a parameter that is a plain string (``"`` or ``'``; default: ``quote``);
- ``quote``: the quote of strings inside values (list items, dict keys and values, unions; default ``"``);
- ``constants``: ``python`` (``True``/``False``/``None``, the default) or ``json`` (``true``/``false``/``null``,
  which the parser reads when its ``json_literals`` is on);
- ``typed``: ``literal`` (the default) or ``literal-or-string``: a parameter whose schema admits no string
  may also be written as a string holding its Python literal (``days="2"``, ``tags="['a']"``), as chat
  templates that print every argument between quotes do; the parser reads it back by the tool's types.

Arguments are the schema's declared properties in schema order (required ones always written); a
string holds no raw quote (it is escaped) and holds a raw newline only where the parser's ``repairs``
keeps one. A tool whose schema declares no properties is called with no arguments.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from chatparse.grammar.ir import EMPTY, Lit, Node, Rx, alt, lit, seq
from chatparse.grammar.jsonschema import GrammarError, SchemaGrammar
from chatparse.grammar.styled import StyledValues

if TYPE_CHECKING:
    from chatparse.grammar.build import Builder
    from chatparse.tools.schema import Tool

_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_NAME = re.compile(r"[^\W\d]\w*(?:[.\-][^\W\d]\w*)*")  # a function name as the parser reads it
_QUOTES = ('"', "'")
_CONSTANTS = {"python": ("True", "False", "None"), "json": ("true", "false", "null")}
_TYPED = ("literal", "literal-or-string")
_NOT_STRING = frozenset({"integer", "number", "boolean", "array", "object"})


def _fail(message: str) -> GrammarError:
    return GrammarError(message, code="bad_write_form", field="tool_calls")


def string_pattern(quote: str, *, raw_newline: bool, forbid: str = "", low: int = 0, high: int | None = None) -> str:
    """A Python string literal between ``quote``\\ s: no raw quote, backslash or control character (a raw
    newline only with ``raw_newline``), simple escapes; none of the characters in ``forbid`` (then no
    escapes either: the literal sits inside another string, whose reading would take them first)."""
    banned = re.escape(quote + forbid) + r"\\\x00-\x09\x0b-\x1f" + ("" if raw_newline else r"\n")
    escapes = "" if forbid else "|" + r"\\[\\'" + '"' + "nrt]"
    count = "*" if (low, high) == (0, None) else f"{{{low},{'' if high is None else high}}}"
    return f"{quote}(?:[^{banned}]{escapes}){count}{quote}"


class PythonLiterals(StyledValues):
    """JSON Schema to Python literals: strings between ``quote``, the chosen constants, ``[...]`` lists and
    ``{key: value}`` dicts with string keys."""

    def __init__(self, base: SchemaGrammar, *, quote: str, constants: str, raw_newline: bool,
                 forbid: str = "") -> None:
        super().__init__(base)
        self.quote = quote
        self.true, self.false, self.none = _CONSTANTS[constants]
        self.raw_newline = raw_newline
        self.forbid = forbid

    def quoted(self, text: str) -> str:
        escaped = text.replace("\\", "\\\\").replace(self.quote, "\\" + self.quote)
        escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        if (self.forbid and escaped != text) or any(ch in escaped for ch in self.forbid) or \
                any(ord(ch) < 0x20 for ch in escaped):
            raise GrammarError(f"Enum or const value {text!r} cannot be written in this call format",
                               code="unsupported_schema")
        return self.quote + escaped + self.quote

    def string(self, low: int = 0, high: int | None = None) -> Node:
        return Rx(string_pattern(self.quote, raw_newline=self.raw_newline, forbid=self.forbid, low=low,
                                 high=high))


class _Style:
    """The literal grammars of one builder (made once, shared by its calls)."""

    def __init__(self, builder: Builder) -> None:
        form = builder.form
        values: Mapping[str, Any] = form.values or {}
        unknown = sorted(set(values) - {"string", "quote", "constants", "typed"})
        if unknown:
            raise _fail(f"'chatparse.write.values' of a python-calls body has unknown keys {unknown}; allowed: "
                        "string, quote, constants, typed")
        quote, constants = values.get("quote", '"'), values.get("constants", "python")
        self.top_quote = values.get("string", quote)
        typed = values.get("typed", "literal")
        if quote not in _QUOTES or self.top_quote not in _QUOTES or constants not in _CONSTANTS or \
                typed not in _TYPED:
            raise _fail(f"'chatparse.write.values' {dict(values)!r}: expected quotes in {list(_QUOTES)}, constants in "
                        f"{list(_CONSTANTS)}, typed in {list(_TYPED)}")
        args = builder.plan.calls.content_args or {}
        self.raw_newline = bool(args.get("repairs", False))
        base = builder.schemas
        self.nested = PythonLiterals(base, quote=quote, constants=constants, raw_newline=self.raw_newline)
        self.top = PythonLiterals(base, quote=self.top_quote, constants=constants, raw_newline=self.raw_newline)
        # Inside a string holding a literal: the other quote, no escapes of the outer one.
        inner = "'" if self.top_quote == '"' else '"'
        self.inner = PythonLiterals(base, quote=inner, constants="python", raw_newline=False,
                                    forbid=self.top_quote) if typed == "literal-or-string" else None
        self.bodies: dict[str, Node] = {}  # one rule per tool: the call after its begin


_STYLES: weakref.WeakKeyDictionary[Builder, _Style] = weakref.WeakKeyDictionary()


def _style(builder: Builder) -> _Style:
    style = _STYLES.get(builder)
    if style is None:
        style = _STYLES[builder] = _Style(builder)
    return style


def _admits_string(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return True
    kinds = schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    return not (kinds and set(kinds) <= _NOT_STRING and not {"enum", "const", "anyOf", "oneOf", "allOf", "$ref"}
                & set(schema))


def argument(builder: Builder, schema: Any, where: str, root: Any) -> Node:
    """One argument's value: a plain string in the parameter quote, else a literal (or, where the style
    allows and the schema admits no string, that literal as a string)."""
    style = _style(builder)
    if isinstance(schema, Mapping) and schema.get("type") == "string" and not {"enum", "const"} & set(schema):
        return style.top.value(schema, where, root)
    value = style.nested.value(schema, where, root)
    if style.inner is None or _admits_string(schema):
        return value
    quote = style.top_quote
    return alt(value, seq(Lit(quote), style.inner.value(schema, where, root), Lit(quote)))


def write(builder: Builder, tool: Tool, begin: str, end: str) -> Node:
    """``begin`` ``NAME(key=value, ...)`` ``end`` (the part after ``begin`` one rule per tool)."""
    bodies = _style(builder).bodies
    if tool.name not in bodies:
        bodies[tool.name] = builder.grammar.add("body", _call(builder, tool, end))
    return seq(lit(begin), bodies[tool.name])


def _call(builder: Builder, tool: Tool, end: str) -> Node:
    if not _NAME.fullmatch(tool.name):
        raise GrammarError(f"Tool name {tool.name!r} cannot be written as a Python call; expected letters, digits "
                           "and '_' (words joined by '.' or '-'), not starting with a digit", code="unsupported_name",
                           field=tool.name)
    schema = dict(tool.parameters)
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    where = f"tools/{tool.name}/parameters"
    members: list[tuple[str, Node, bool]] = []
    for name, sub in props.items():
        if not _IDENTIFIER.fullmatch(name):
            raise GrammarError(f"Parameter {name!r} of tool {tool.name!r} is not a Python identifier, so it cannot "
                               "be written as a keyword argument; expected identifier parameter names",
                               code="unsupported_schema", path=f"{where}/properties/{name}")
        members.append((name, seq(Lit(name + "="), argument(builder, sub, f"{where}/properties/{name}", schema)),
                        name in required))
    args = builder.schemas.members(members, sep=Lit(", ")) if members else EMPTY
    return seq(Lit(tool.name + "("), args, Lit(")"), lit(end))
