"""The ``element-tree`` body: a call's arguments as nested elements named after the parameters (MiniMax M3), as
the ``xml-element-tree`` parser reads them, every tag behind its ``prefix`` (``]<]minimax[>[``)::

    PREFIX<city>Seoul PREFIX</city> PREFIX<stops> PREFIX<item> PREFIX<name>Oslo PREFIX</name> PREFIX</item> PREFIX</stops>

(no spaces between tags). A string is raw text holding no tag prefix and no end-of-turn or next-turn marker;
an integer, a number or a boolean is its JSON text (as the chat template prints it); null is ``null`` (the
chat template omits null values; a parameter that may be null may be left out); an array is one list-item
element per item (at least one: an empty element reads as the empty string); an object is one element per
property in schema order, required ones present, at least one written. An enum's values are written as the
chat template prints them, each only where the parser reads that text back as that value.

A free-form object (no ``properties``) and a schema that admits any value are written as elements of any
name, whose closes no grammar can match to their opens: they raise ``GrammarError``
(``unsupported_schema``), lenient or not (free text there would be read as elements, not as one value).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from chatparse.content.bare_key_objects import _scalar  # how the parser reads a nested leaf
from chatparse.engine.tool_typing import coerce_string, schema_types
from chatparse.grammar.body_typed_parameters import raw_string, ref_target, shaping
from chatparse.grammar.ir import EMPTY, Lit, Node, Rep, Rx, Until, alt, lit, rx_escape, seq
from chatparse.grammar.jsonschema import INTEGER, NUMBER, GrammarError, value_kinds

_NAME = re.compile(r"[^\s<>/]+")  # an element name the parser reads


def write(builder: Any, tool: Any, begin: str, end: str) -> Node:
    """One call of ``tool``: ``begin``, its parameters as elements, ``end``."""
    return seq(lit(begin), _Tree(builder).arguments(tool), lit(end))


def _unwritable(where: str, what: str) -> GrammarError:
    return GrammarError(f"Schema at {where}: {what} is written as nested elements of any name, whose closes no "
                        "grammar can match to their opens; expected an object schema with 'properties' (a grammar is "
                        "built for those)", code="unsupported_schema", path=where)


class _Tree:
    """The element form of one builder: the tag prefix, the list item's name, the markers text avoids."""

    def __init__(self, builder: Any) -> None:
        calls = builder.plan.calls
        if calls.content != "xml-element-tree":
            raise GrammarError(f"Body 'element-tree' writes what the xml-element-tree parser reads; the tool call "
                               f"field's parser is {calls.content!r}", code="bad_write_form", field="tool_calls")
        args = calls.content_args
        self.builder = builder
        self.prefix: str = args.get("prefix", "")
        self.item: str = args.get("list_item", "item")
        self.json_leaves = args.get("nested_scalars", "text") == "json"
        ext = builder.template.ext
        self.markers = tuple(m for m in (*ext.end, *ext.next_turn) if m)

    def arguments(self, tool: Any) -> Node:
        schema = dict(tool.parameters)
        return self.members(schema, f"tools/{tool.name}/parameters", schema, 0, at_least_one=False)

    # -- elements -------------------------------------------------------------------------------------
    def element(self, name: str, schema: Any, where: str, root: Any, depth: int) -> Node:
        """The element ``name`` holding a value of ``schema`` (``depth`` 0: a parameter)."""
        if not _NAME.fullmatch(name):
            raise GrammarError(f"Property name {name!r} at {where} cannot be an element name (it holds whitespace, "
                               "'<', '>' or '/')", code="unsupported_schema", path=where)
        opened, closed = f"{self.prefix}<{name}>", f"{self.prefix}</{name}>"
        options: list[Node] = []
        for kind, node in self.values(schema, where, root, depth, 0).items():
            if kind == "string":  # raw text up to the tag prefix, which starts the element's close
                stop = self.prefix or "<"
                avoid = tuple(rx_escape(m) for m in self.markers)
                options.append(seq(Lit(opened), Until(rx_escape(stop), avoid), Lit(closed[len(stop):])))
            else:
                options.append(seq(Lit(opened), node, Lit(closed)))
        return alt(*options)

    def members(self, schema: Mapping[str, Any], where: str, root: Any, depth: int, *, at_least_one: bool) -> Node:
        """An object's properties as elements in schema order, required ones present (``at_least_one``: an
        element that holds none would read as the empty string)."""
        props: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        if required - set(props):
            raise GrammarError(f"Schema at {where}: required {sorted(required - set(props))} not in properties",
                               code="bad_schema", path=where)
        if depth > 0 and self.item in props:
            raise GrammarError(f"Schema at {where}: a property named {self.item!r} (the list item's name) makes an "
                               "object read as a list", code="unsupported_schema", path=where)
        elements = [(key, self.element(key, sub, f"{where}/properties/{key}", root, depth), key in required)
                    for key, sub in props.items()]
        schemas = self.builder.schemas
        if not at_least_one or required:
            return schemas.members(elements, sep=EMPTY)  # type: ignore[no-any-return]
        return alt(*(seq(node, schemas.members(elements[i + 1:], sep=EMPTY)) for i, (_, node, _) in enumerate(elements)))

    # -- values ---------------------------------------------------------------------------------------
    def values(self, schema: Any, where: str, root: Any, depth: int, hops: int) -> dict[str, Node]:
        """What an element of ``schema`` holds, by kind (``"string"``: raw text, written by ``element``)."""
        if schema is True or schema is None or (isinstance(schema, Mapping) and not shaping(schema)):
            raise _unwritable(where, "a value of any type (objects included)")
        if not isinstance(schema, Mapping):
            self.builder.schemas.value(schema, where, root)  # raises the schema error
            return {}
        if "$ref" in schema:
            return self.values(ref_target(schema["$ref"], where, root, hops), where, root, depth, hops + 1)
        if "const" in schema or "enum" in schema:
            return self.literals(schema, where, depth)
        for union in ("anyOf", "oneOf"):
            if isinstance(schema.get(union), list):
                base = {k: v for k, v in schema.items() if k != union}
                out: dict[str, Node] = {}
                for i, member in enumerate(schema[union]):
                    merged = {**base, **member} if isinstance(member, Mapping) else member
                    for kind, node in self.values(merged, f"{where}/{union}/{i}", root, depth, hops).items():
                        out[kind] = alt(out[kind], node) if kind in out else node
                return out
        if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            base = {k: v for k, v in schema.items() if k != "allOf"}
            return self.values({**base, **schema["allOf"][0]}, f"{where}/allOf/0", root, depth, hops)
        self.builder.schemas._check_keywords(schema, where)
        kinds = value_kinds(schema)
        if not kinds:
            raise _unwritable(where, "a value of any type (objects included)")
        return {str(kind): self.typed(kind, schema, where, root, depth) for kind in kinds}

    def typed(self, kind: Any, schema: Mapping[str, Any], where: str, root: Any, depth: int) -> Node:
        if kind == "string":
            raw_string(self.builder.schemas, schema, where)
            return EMPTY
        if kind in ("integer", "number"):
            return Rx(INTEGER if kind == "integer" else NUMBER)
        if kind == "boolean":
            return alt(Lit("true"), Lit("false"))
        if kind == "null":
            return Lit("null")
        if kind == "array":
            return self.array(schema, where, root, depth)
        if kind == "object":
            if not schema.get("properties"):
                raise _unwritable(where, "a free-form object (no 'properties')")
            return self.members(schema, where, root, depth + 1, at_least_one=True)
        self.builder.schemas.value({"type": kind}, where, root)  # raises: an unknown type
        return EMPTY

    def array(self, schema: Mapping[str, Any], where: str, root: Any, depth: int) -> Node:
        """One list-item element per item, at least one."""
        prefix = schema.get("prefixItems")
        if prefix:
            return seq(*(self.element(self.item, s, f"{where}/prefixItems/{i}", root, depth + 1)
                         for i, s in enumerate(prefix)))
        low, high = max(int(schema.get("minItems", 0)), 1), schema.get("maxItems")
        if high is not None and int(high) < low:
            raise GrammarError(f"Schema at {where}: an array of at most {high} items cannot be written as elements (an "
                               "empty element reads as the empty string)", code="unsupported_schema", path=where)
        item = self.builder.grammar.add("item", self.element(self.item, schema.get("items", True), f"{where}/items",
                                                             root, depth + 1))
        return seq(item, Rep(item, low - 1, None if high is None else int(high) - 1))

    def literals(self, schema: Mapping[str, Any], where: str, depth: int) -> dict[str, Node]:
        """An enum's or a constant's values as the chat template prints them, each one the parser reads back as
        that value (a string as raw text)."""
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if not isinstance(values, list) or not values:
            raise GrammarError(f"Schema at {where}: enum must be a non-empty list", code="bad_schema", path=where)
        out: dict[str, Node] = {}
        for value in values:
            text = value if isinstance(value, str) else json.dumps(value)
            if isinstance(value, dict | list) or any(m in text for m in (self.prefix, *self.markers) if m) or \
                    not _same(self.read(text, schema, depth), value):
                continue
            out[text] = Lit(text)
        if not out:
            raise GrammarError(f"Schema at {where}: no value of the enum can be written as an element's text that "
                               "reads back as that value", code="unsupported_schema", path=where)
        return {"literal": alt(*out.values())}

    def read(self, text: str, schema: Any, depth: int) -> Any:
        """``text`` as the parser reads an element's text, then types it by ``schema``."""
        value = _scalar(text) if depth > 0 and self.json_leaves else text
        types = schema_types(schema)
        if isinstance(value, str):
            return coerce_string(value, types) if types else value
        kind = "boolean" if isinstance(value, bool) else "null" if value is None else \
            "integer" if isinstance(value, int) else "number"
        admitted = kind in types or (kind == "integer" and "number" in types)
        return text if types and not admitted and "string" in types else value


def _same(read: Any, value: Any) -> bool:
    return bool(read == value and type(read) is type(value))
