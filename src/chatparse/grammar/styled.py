"""JSON Schema to grammar for value syntaxes that are JSON-like but not JSON (Python literals, bare-key
objects): a subclass says how a string, a constant, a key and a literal value are written; lists,
objects, unions, ``$ref`` and the schema checks are the JSON writer's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chatparse.grammar.ir import EMPTY, Lit, Node, Ref, Rep, Rx, alt, opt, seq
from chatparse.grammar.jsonschema import INTEGER, OWS, GrammarError, SchemaGrammar

# A float every reader here reads as a finite number (an exponent of at most two digits).
NUMBER = INTEGER + r"(?:\.[0-9]{1,17})?(?:[eE][+-]?[0-9]{1,2})?"


class StyledValues(SchemaGrammar):
    """The values a schema admits, in a syntax given by the subclass; it shares ``base``'s grammar and its
    list of unenforced keywords (one list per request)."""

    true, false, none = "true", "false", "null"
    pair_sep: Node = seq(OWS, Lit(":"), OWS)
    item_sep: Node = seq(OWS, Lit(","), OWS)
    space: Node = OWS
    sort_keys = False
    written_sep, written_colon = ", ", ": "  # in enum and const literals

    def __init__(self, base: SchemaGrammar) -> None:
        super().__init__(base.grammar, lenient=base.lenient)
        self.unenforced = base.unenforced
        self._styled_any: Ref | None = None

    # -- what a subclass says -------------------------------------------------------------------------
    def string(self, low: int = 0, high: int | None = None) -> Node:
        raise NotImplementedError

    def quoted(self, text: str) -> str:
        """``text`` as a string literal."""
        raise NotImplementedError

    def key(self, name: str) -> str:
        """An object key as written."""
        return self.quoted(name)

    def any_key(self) -> Node:
        return self.string()

    # -- shared ---------------------------------------------------------------------------------------
    def literal(self, value: Any) -> str:
        """``value`` written in this syntax (an enum member or a constant)."""
        if value is True:
            return self.true
        if value is False:
            return self.false
        if value is None:
            return self.none
        if isinstance(value, str):
            return self.quoted(value)
        if isinstance(value, int | float):
            return json.dumps(value)
        sep, colon = self.written_sep, self.written_colon
        if isinstance(value, list):
            return "[" + sep.join(self.literal(v) for v in value) + "]"
        if isinstance(value, Mapping):
            return "{" + sep.join(f"{self.key(str(k))}{colon}{self.literal(v)}" for k, v in value.items()) + "}"
        raise GrammarError(f"Enum or const value {value!r} is not JSON", code="bad_schema")

    def value(self, schema: Any, where: str, root: Any = None) -> Node:
        if isinstance(schema, Mapping) and ("const" in schema or "enum" in schema) and "$ref" not in schema:
            self._check_keywords(schema, where)
            values = [schema["const"]] if "const" in schema else schema["enum"]
            if not isinstance(values, list) or not values:
                raise GrammarError(f"Schema at {where}: enum must be a non-empty list", code="bad_schema",
                                   path=where)
            return alt(*(Lit(self.literal(v)) for v in values))
        return super().value(schema, where, root)

    def _typed(self, kind: Any, schema: Mapping[str, Any], where: str, root: Any) -> Node:
        if kind == "string":
            return self.string(int(schema.get("minLength", 0)), schema.get("maxLength"))
        if kind == "number":
            return Rx(NUMBER)
        if kind == "boolean":
            return alt(Lit(self.true), Lit(self.false))
        if kind == "null":
            return Lit(self.none)
        if kind == "array":
            return self._styled_array(schema, where, root)
        return super()._typed(kind, schema, where, root)

    def _styled_array(self, schema: Mapping[str, Any], where: str, root: Any) -> Node:
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        if schema.get("prefixItems"):
            items = [self.value(s, f"{where}/prefixItems/{i}", root) for i, s in enumerate(schema["prefixItems"])]
            body: Node = items[0]
            for item in items[1:]:
                body = seq(body, self.item_sep, item)
            return seq(Lit("["), self.space, body, self.space, Lit("]"))
        if high is not None and int(high) == 0:
            return seq(Lit("["), self.space, Lit("]"))
        item = self.value(schema.get("items", True), f"{where}/items", root)
        run = seq(item, Rep(seq(self.item_sep, item), max(low - 1, 0), None if high is None else int(high) - 1))
        return seq(Lit("["), self.space, run if low > 0 else opt(run), self.space, Lit("]"))

    def _object(self, schema: Mapping[str, Any], where: str, root: Any) -> Node:
        props = schema.get("properties") or {}
        if not props:
            extra = schema.get("additionalProperties", True)
            if extra is False:
                return seq(Lit("{"), self.space, Lit("}"))
            return self._any_object(None if extra is True else extra, where, root)
        required = set(schema.get("required") or ())
        unknown = required - set(props)
        if unknown:
            raise GrammarError(f"Schema at {where}: required {sorted(unknown)} not in properties",
                               code="bad_schema", path=where)
        names = sorted(props) if self.sort_keys else list(props)
        members = [(name, seq(Lit(self.key(name)), self.pair_sep,
                              self.value(props[name], f"{where}/properties/{name}", root)), name in required)
                   for name in names]
        return seq(Lit("{"), self.space, self.members(members, sep=self.item_sep), self.space, Lit("}"))

    def any_value(self) -> Ref:
        if self._styled_any is None:
            self._styled_any = self.grammar.add("any_value", EMPTY)
            value = self._styled_any
            arr = seq(Lit("["), self.space, opt(seq(value, Rep(seq(self.item_sep, value)))), self.space, Lit("]"))
            self.grammar.rules[value.name] = alt(self.string(), Rx(NUMBER), Lit(self.true), Lit(self.false),
                                                 Lit(self.none), self._any_object(None, "", None), arr)
        return self._styled_any

    def _any_object(self, values: Any, where: str, root: Any) -> Node:
        value = self.any_value() if values in (None, True) else self.value(values, f"{where}/additionalProperties",
                                                                           root)
        member = seq(self.any_key(), self.pair_sep, value)
        return seq(Lit("{"), self.space, opt(seq(member, Rep(seq(self.item_sep, member)))), self.space, Lit("}"))
