"""JSON Schema to grammar: the JSON texts a tool's schema admits, as grammar rules.

Supported: ``type`` (one or a list), ``enum``, ``const``, ``properties`` / ``required`` /
``additionalProperties``, ``items`` / ``prefixItems`` / ``minItems`` / ``maxItems``, ``minLength`` /
``maxLength``, ``anyOf`` / ``oneOf`` (as anyOf), ``allOf`` with one member, ``$ref`` to ``#/$defs/...`` or
``#/definitions/...`` (recursion allowed), ``nullable`` (OpenAPI). Objects are written with their declared
properties in schema order, required ones always present; an object schema with no ``properties``
admits any JSON object. Keywords a grammar cannot enforce (``pattern``, ``format``, ``minimum``, ...) raise
``GrammarError`` (``code="unsupported_schema"``), unless the caller asked for a lenient grammar: then they
are listed in ``unenforced`` and left free.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chatparse.errors import ChatparseError
from chatparse.grammar.ir import EMPTY, Grammar, Lit, Node, Ref, Rep, Rx, alt, lit, opt, seq


class GrammarError(ChatparseError, ValueError):
    """A template or a tool schema that no grammar can express exactly (``code`` says which part)."""

    code = "grammar_error"


WS = Rx(r"[ \t\n]{1,8}")
OWS = opt(WS)
# One character of a JSON string: anything but a quote, a backslash or a control character, or an escape.
STRING_CHAR = r'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))'
INTEGER = r"-?(?:0|[1-9][0-9]{0,17})"
# Exponents of two digits at most: a larger one overflows a float (readers give inf or fail).
NUMBER = INTEGER + r"(?:\.[0-9]{1,17})?(?:[eE][+-]?[0-9]{1,2})?"
# Keywords that only describe (no constraint on the text).
_NOTES = frozenset({"description", "title", "examples", "default", "$schema", "$id", "$comment", "deprecated",
                    "readOnly", "writeOnly", "strict", "x-guidance", "markdownDescription", "$defs", "definitions"})
_VALUE_RULES = frozenset({"pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                          "multipleOf", "uniqueItems", "minProperties", "maxProperties", "patternProperties",
                          "propertyNames", "contains", "dependentRequired", "dependentSchemas", "if", "then",
                          "else", "not", "unevaluatedProperties", "unevaluatedItems", "contentEncoding",
                          "contentMediaType"})
_KNOWN = _NOTES | _VALUE_RULES | {"type", "enum", "const", "properties", "required", "additionalProperties",
                                  "items", "prefixItems", "minItems", "maxItems", "minLength", "maxLength",
                                  "anyOf", "oneOf", "allOf", "$ref", "nullable"}


def json_string(min_len: int = 0, max_len: int | None = None, char: str = STRING_CHAR) -> Rx:
    upper = "" if max_len is None else str(max_len)
    count = "*" if (min_len, max_len) == (0, None) else f"{{{min_len},{upper}}}"
    return Rx(f'"{char}{count}"')


# ``json.dumps(value, ensure_ascii=False)`` without making an encoder per call.
json_text = json.JSONEncoder(ensure_ascii=False).encode


def _schema_key(schema: Mapping[str, Any], root: Any, string_char: str) -> str:
    """What a schema's grammar depends on, as text: the schema (its ``repr``: key order counts, and so do
    types, ``1`` and ``True``), the string character and, where it refers to definitions, its root's."""
    text = repr(schema)
    if "'$ref'" in text:
        text += repr([root.get("$defs"), root.get("definitions")] if isinstance(root, Mapping) else None)
    return string_char + "\x00" + text


class SchemaGrammar:
    """Writes JSON Schemas into ``grammar``; one instance per tool set (it names rules for ``$defs``)."""

    def __init__(self, grammar: Grammar, *, lenient: bool = False, string_char: str = STRING_CHAR) -> None:
        """``string_char``: a regex for one character of a string (where strings must avoid some text)."""
        self.grammar = grammar
        self.lenient = lenient
        self.string_char = string_char
        self.unenforced: list[str] = []
        self._any: Ref | None = None
        # By the root's id (the root kept, so that its id names no other schema while this lives).
        self._defs: dict[tuple[int, str], tuple[Any, Ref]] = {}
        self._values: dict[str, Node] = {}  # by the schema's JSON text (tools repeat sub-schemas)

    # -- the whole value ------------------------------------------------------------------------------
    def value(self, schema: Any, where: str, root: Any = None) -> Node:
        """The JSON texts ``schema`` admits (``where`` names it in errors). Equal schemas give one node
        (shared rules), except under ``lenient``, where each place's unenforced keywords are listed."""
        root = schema if root is None else root
        key = None if self.lenient or not isinstance(schema, Mapping) else _schema_key(schema, root, self.string_char)
        if key is not None:
            hit = self._values.get(key)
            if hit is not None:
                return hit
        node = self._value(schema, where, root)
        if key is not None:
            self._values[key] = node
        return node

    def _value(self, schema: Any, where: str, root: Any) -> Node:
        if schema is True or schema == {} or schema is None:
            return self.any_value()
        if schema is False:
            raise GrammarError(f"Schema at {where} admits no value (false); expected a schema a tool can be "
                               "called with", code="unsupported_schema", path=where)
        if not isinstance(schema, Mapping):
            raise GrammarError(f"Schema at {where} must be an object, found {type(schema).__name__}",
                               code="bad_schema", path=where)
        self._check_keywords(schema, where)
        if "$ref" in schema:
            return self._ref(schema["$ref"], where, root)
        if "const" in schema:
            return lit(json_text(schema["const"]))
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise GrammarError(f"Schema at {where}: enum must be a non-empty list", code="bad_schema",
                                   path=where)
            return alt(*(lit(json_text(v)) for v in values))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                members = schema[key]
                base = {k: v for k, v in schema.items() if k not in (key, *_NOTES)}
                return alt(*(self.value({**base, **m} if isinstance(m, Mapping) else m,
                                        f"{where}/{key}/{i}", root) for i, m in enumerate(members)))
        if "allOf" in schema:
            members = schema["allOf"]
            if len(members) != 1:
                raise GrammarError(f"Schema at {where}: allOf with {len(members)} members cannot be written as "
                                   "a grammar; expected one member (merge them into one schema)",
                                   code="unsupported_schema", path=where)
            base = {k: v for k, v in schema.items() if k != "allOf"}
            return self.value({**base, **members[0]}, f"{where}/allOf/0", root)
        kinds = schema.get("type")
        if kinds is None:
            kinds = self._implied_type(schema)
        if isinstance(kinds, str):
            kinds = [kinds]
        if schema.get("nullable") and "null" not in kinds:
            kinds = [*kinds, "null"]
        if not kinds:
            return self.any_value()
        return alt(*(self._typed(kind, schema, where, root) for kind in kinds))

    def _implied_type(self, schema: Mapping[str, Any]) -> list[str]:
        if "properties" in schema or "additionalProperties" in schema:
            return ["object"]
        if "items" in schema or "prefixItems" in schema:
            return ["array"]
        return []

    def _check_keywords(self, schema: Mapping[str, Any], where: str) -> None:
        for key in schema:
            if key in _VALUE_RULES or (key not in _KNOWN and not key.startswith("x-")):
                if not self.lenient:
                    raise GrammarError(
                        f"Schema keyword {key!r} at {where} cannot be enforced by a grammar; expected only "
                        "keywords that shape the text (type, enum, properties, items, anyOf, ...). Fix: drop "
                        "it from the tool's schema, or build the grammar with lenient=True to leave it free "
                        "(listed in ToolGrammar.unenforced)", code="unsupported_schema", path=where, key=key)
                self.unenforced.append(f"{where}/{key}")

    def _ref(self, ref: Any, where: str, root: Any) -> Node:
        if not isinstance(ref, str) or not ref.startswith(("#/$defs/", "#/definitions/")):
            raise GrammarError(f"Schema $ref {ref!r} at {where}: expected a reference into the same schema's "
                               "$defs or definitions", code="unsupported_schema", path=where)
        section, name = ref[2:].split("/", 1)
        key = (id(root), ref)
        if key in self._defs:
            return self._defs[key][1]
        target = (root.get(section) or {}).get(name) if isinstance(root, Mapping) else None
        if target is None:
            raise GrammarError(f"Schema $ref {ref!r} at {where} names no definition", code="bad_schema",
                               path=where)
        rule = f"def_{len(self._defs) + 1}"
        self._defs[key] = (root, Ref(rule))
        self.grammar.rules[rule] = EMPTY  # placeholder while the definition is written (recursion)
        self.grammar.rules[rule] = self.value(target, f"{section}/{name}", root)
        return self._defs[key][1]

    # -- by type --------------------------------------------------------------------------------------
    def _typed(self, kind: Any, schema: Mapping[str, Any], where: str, root: Any) -> Node:
        if kind == "string":
            return json_string(int(schema.get("minLength", 0)), schema.get("maxLength"), self.string_char)
        if kind == "integer":
            return Rx(INTEGER)
        if kind == "number":
            return Rx(NUMBER)
        if kind == "boolean":
            return alt(Lit("true"), Lit("false"))
        if kind == "null":
            return Lit("null")
        if kind == "array":
            return self._array(schema, where, root)
        if kind == "object":
            return self._object(schema, where, root)
        raise GrammarError(f"Schema at {where}: unknown type {kind!r}; expected string, integer, number, boolean, "
                           "null, array or object", code="bad_schema", path=where)

    def _array(self, schema: Mapping[str, Any], where: str, root: Any) -> Node:
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        prefix = schema.get("prefixItems")
        if prefix:
            items = [self.value(s, f"{where}/prefixItems/{i}", root) for i, s in enumerate(prefix)]
            body: Node = items[0]
            for item in items[1:]:
                body = seq(body, OWS, Lit(","), OWS, item)
            return seq(Lit("["), OWS, body, OWS, Lit("]"))
        item = self.value(schema.get("items", True), f"{where}/items", root)
        if high is not None and int(high) == 0:
            return seq(Lit("["), OWS, Lit("]"))
        more = Rep(seq(OWS, Lit(","), OWS, item), max(low - 1, 0), None if high is None else int(high) - 1)
        body = seq(item, more)
        return seq(Lit("["), OWS, body if low > 0 else opt(seq(body, OWS)), OWS if low > 0 else EMPTY, Lit("]"))

    def _object(self, schema: Mapping[str, Any], where: str, root: Any) -> Node:
        props = schema.get("properties") or {}
        if not props:
            extra = schema.get("additionalProperties", True)
            if extra is False:
                return seq(Lit("{"), OWS, Lit("}"))
            return self._any_object(None if extra is True else extra, where, root)
        required = set(schema.get("required") or ())
        unknown = required - set(props)
        if unknown:
            raise GrammarError(f"Schema at {where}: required {sorted(unknown)} not in properties",
                               code="bad_schema", path=where)
        members = [(name, seq(Lit(json_text(name)), OWS, Lit(":"), OWS,
                              self.value(sub, f"{where}/properties/{name}", root)), name in required)
                   for name, sub in props.items()]
        return seq(Lit("{"), OWS, self.members(members, sep=seq(OWS, Lit(","), OWS)), OWS, Lit("}"))

    def members(self, members: list[tuple[str, Node, bool]], *, sep: Node) -> Node:
        """Members in the given order, each optional one skippable, at least the required ones: a chain of
        rules ``after_i`` = what may follow member ``i``, each a choice of the next member ``j`` (``sep``,
        member ``j``, ``after_j``); such a choice that several ``after_i`` hold is one rule."""
        count = len(members)
        # after_i (i >= 1; nothing refers to after_0) offers j = i .. the first required member from i on.
        offers = [0] * count
        for i in range(1, count):
            for j in range(i, count):
                offers[j] += 1
                if members[j][2]:
                    break
        chain: list[Node] = [EMPTY] * (count + 1)
        nexts: list[Node] = [EMPTY] * count
        for i in range(count - 1, 0, -1):
            nxt = seq(sep, members[i][1], chain[i + 1])
            nexts[i] = self.grammar.add("next", nxt) if offers[i] > 1 else nxt
            options = []
            for j in range(i, count):
                options.append(nexts[j])
                if members[j][2]:
                    break
            else:
                options.append(EMPTY)
            chain[i] = self.grammar.add("after", alt(*options)) if len(options) > 1 else options[0]
        firsts: list[Node] = []
        for j in range(count):
            firsts.append(seq(members[j][1], chain[j + 1]))
            if members[j][2]:
                break
        else:
            firsts.append(EMPTY)
        return alt(*firsts)

    def any_value(self) -> Ref:
        """Any JSON value (recursive)."""
        if self._any is None:
            self._any = Ref("json_value")
            obj = self._any_object(True, "", None)
            arr = seq(Lit("["), OWS, opt(seq(self._any, Rep(seq(OWS, Lit(","), OWS, self._any)), OWS)), Lit("]"))
            self.grammar.rules["json_value"] = alt(json_string(char=self.string_char), Rx(NUMBER), Lit("true"), Lit("false"),
                                                   Lit("null"), obj, arr)
        return self._any

    def _any_object(self, values: Any, where: str, root: Any) -> Node:
        value = self.any_value() if values in (None, True) else self.value(values, f"{where}/additionalProperties",
                                                                           root)
        member = seq(json_string(char=self.string_char), OWS, Lit(":"), OWS, value)
        return seq(Lit("{"), OWS, opt(seq(member, Rep(seq(OWS, Lit(","), OWS, member)), OWS)), Lit("}"))


def value_kinds(schema: Mapping[str, Any]) -> list[Any]:
    """The JSON types ``schema`` admits, as its ``type`` says (or its object or array keywords imply), with
    ``null`` for ``nullable``; empty: any type."""
    kinds = schema.get("type")
    if kinds is None:
        kinds = ["object"] if "properties" in schema or "additionalProperties" in schema else \
            ["array"] if "items" in schema or "prefixItems" in schema else []
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    if schema.get("nullable") and "null" not in kinds:
        kinds.append("null")
    return kinds
