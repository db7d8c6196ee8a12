"""The ``typed-parameters`` body: a call's parameters one by one in schema order, each written by the
``parameter`` form with ``{key}``, ``{type}`` and ``{value}`` (Kimi K3's
``<|open|>argument key="{key}" type="{type}"<|sep|>{value}<|close|>argument<|sep|>``), then the call's end.

``{type}`` names the JSON type of the value written, as the chat template prints it from the value
(``string``, ``number`` for integers and other numbers, ``boolean``, ``null``, ``object``, ``array``;
``values: {"types": {"integer": "integer"}}`` renames a type, for templates that print integers so), so a
schema that admits several types gives one spelling per type. A string is raw text up to the parameter's
close: the parser ends a value at the first close the call's structure goes on after, and the grammar's
string holds no close at all. Other values are JSON by their schema, their strings without ``<`` (no
marker inside). A key is written with the entities the parser decodes in keys (``key_entities``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatparse.grammar.body_xml_parameters import _tags_apart
from chatparse.grammar.ir import Lit, Node, Until, alt, lit, rx_escape, seq
from chatparse.grammar.jsonschema import STRING_CHAR, GrammarError, value_kinds
from chatparse.grammar.layout_messages import split_close

# JSON Schema types, and the name the chat template prints for a value of each.
_PRINTED = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null",
            "object": "object", "array": "array"}
# Keywords a raw-text string cannot enforce.
_STRING_RULES = ("minLength", "maxLength", "pattern", "format")
_MAX_REFS = 32  # $ref hops followed at one parameter (a cycle of bare references has no value)


def write(builder: Any, tool: Any, begin: str, end: str) -> Node:
    """One call of ``tool``: ``begin``, its parameters, ``end``."""
    form = _Form(builder)
    schema = dict(tool.parameters)
    where = f"tools/{tool.name}/parameters"
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    unknown = required - set(props)
    if unknown:
        raise GrammarError(f"Schema at {where}: required {sorted(unknown)} not in properties", code="bad_schema",
                           path=where)
    members = [(key, form.parameter(key, sub, f"{where}/properties/{key}", schema), key in required)
               for key, sub in props.items()]
    return seq(lit(begin), builder.schemas.members(members, sep=Lit("")), lit(end))


def printed_type(value: Any) -> str:
    """The type name the chat template prints for ``value`` (Kimi K3's ``xtml_type``)."""
    return _PRINTED[_kind(value)]


def _kind(value: Any) -> str:
    """The JSON Schema type of ``value`` (``integer`` for whole numbers written without a fraction)."""
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, Mapping) else "array"


class _Form:
    """The parameter form of one builder: its texts around the key, the type and the value."""

    def __init__(self, builder: Any) -> None:
        template = builder.form.parameter
        places = [template.find(p) for p in ("{key}", "{type}", "{value}")]
        if any(template.count(p) != 1 for p in ("{key}", "{type}", "{value}")) or places != sorted(places):
            raise GrammarError(f"'chatparse.write.parameter' must hold '{{key}}', '{{type}}' and '{{value}}' once each, "
                               f"in that order, found {template!r}", code="bad_write_form", field="tool_calls")
        self.builder = builder
        self.head, rest = template.split("{key}")
        self.between, tail = rest.split("{value}")
        # The value's close, then the layout after it (a newline before the next parameter).
        self.close = tail.rstrip()
        self.layout = tail[len(self.close):]
        if not self.close.strip():
            raise GrammarError(f"'chatparse.write.parameter' {template!r} needs text after the value (its close)",
                               code="bad_write_form", field="tool_calls")
        names = builder.form.values.get("types", {})
        if not isinstance(names, Mapping) or not all(k in _PRINTED and isinstance(v, str) for k, v in names.items()):
            raise GrammarError(f"'chatparse.write.values.types' maps JSON Schema types to the names the chat template "
                               f"prints, found {names!r}", code="bad_write_form", field="tool_calls")
        self.printed = {**_PRINTED, **names}
        entities = builder.plan.calls.content_args.get("key_entities", {})
        self.entities = {text: entity for entity, text in entities.items() if len(text) == 1}
        self.schemas = builder.schemas
        self.schemas.string_char = STRING_CHAR.replace('[^"', '[^<"', 1)

    def parameter(self, key: str, schema: Any, where: str, root: Any) -> Node:
        """The parameter ``key`` written with each type its schema admits."""
        if key != key.strip() or not key:
            raise GrammarError(f"Parameter name {key!r} at {where}: the parser strips a key, so a name with "
                               "whitespace at its ends cannot be written", code="unsupported_schema", path=where)
        # (the key apart from the tags around it, and each tag apart, as other spellings of a call write them)
        head = seq(lit(self.head), lit("".join(self.entities.get(c, c) for c in key)))
        options: list[Node] = []
        for printed, value in self.branches(schema, where, root, 0).items():
            opened = seq(head, _tags_apart(self.between.replace("{type}", printed)))
            if value is None:  # raw text up to the first close (up to its first marker token, the rest follows)
                stop, rest = split_close(self.close)
                options.append(seq(opened, Until(rx_escape(stop)), lit(rest + self.layout)))
            else:
                options.append(seq(opened, value, lit(self.close + self.layout)))
        return alt(*options)

    def branches(self, schema: Any, where: str, root: Any, hops: int) -> dict[str, Node | None]:
        """The values ``schema`` admits by printed type (None: a raw-text string)."""
        if schema is True or schema is None or (isinstance(schema, Mapping) and not shaping(schema)):
            return self.typed(["string", "number", "boolean", "null", "object", "array"], {}, where, root)
        if not isinstance(schema, Mapping):
            self.schemas.value(schema, where, root)  # raises the schema error
            return {}
        if "$ref" in schema:
            return self.branches(ref_target(schema["$ref"], where, root, hops), where, root, hops + 1)
        if "const" in schema or "enum" in schema:
            return self.literals(schema, where, root)
        for union in ("anyOf", "oneOf"):
            if isinstance(schema.get(union), list):
                base = {k: v for k, v in schema.items() if k != union}
                out: dict[str, Node | None] = {}
                for i, member in enumerate(schema[union]):
                    merged = {**base, **member} if isinstance(member, Mapping) else member
                    _merge(out, self.branches(merged, f"{where}/{union}/{i}", root, hops))
                return out
        if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            base = {k: v for k, v in schema.items() if k != "allOf"}
            return self.branches({**base, **schema["allOf"][0]}, f"{where}/allOf/0", root, hops)
        kinds = value_kinds(schema)
        if not kinds:
            kinds = ["string", "number", "boolean", "null", "object", "array"]
        return self.typed(kinds, schema, where, root)

    def typed(self, kinds: list[Any], schema: Mapping[str, Any], where: str, root: Any) -> dict[str, Node | None]:
        out: dict[str, Node | None] = {}
        rest = {k: v for k, v in schema.items() if k not in ("type", "nullable")}
        for kind in kinds:
            if kind not in _PRINTED:
                self.schemas.value({"type": kind}, where, root)  # raises: an unknown type
            if kind == "string":
                raw_string(self.schemas, schema, where)
                _merge(out, {"string": None})
            else:
                _merge(out, {self.printed[kind]: self.schemas.value({**rest, "type": kind}, where, root)})
        return out

    def literals(self, schema: Mapping[str, Any], where: str, root: Any) -> dict[str, Node | None]:
        """An enum's or a constant's values, each under its printed type (strings raw)."""
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if not isinstance(values, list) or not values:
            self.schemas.value(schema, where, root)  # raises: a bad enum
            return {}
        out: dict[str, Node | None] = {}
        for value in values:
            printed = self.printed[_kind(value)]
            if printed == "string":
                if self.close in value:
                    raise GrammarError(f"Enum value {value!r} at {where} holds the parameter's close {self.close!r}, "
                                       "which ends a raw value", code="unsupported_schema", path=where)
                node: Node = Lit(value)
            else:
                node = self.schemas.value({"const": value}, where, root)
            previous = out.get(printed)
            out[printed] = node if previous is None else alt(previous, node)
        return out



def raw_string(schemas: Any, schema: Mapping[str, Any], where: str) -> None:
    """A string written as raw text enforces no length or pattern: such keywords raise (or, lenient, are
    listed as unenforced and stay free)."""
    for key in _STRING_RULES:
        if key in schema:
            if not schemas.lenient:
                raise GrammarError(f"Schema keyword {key!r} at {where} cannot be enforced on a string written as raw "
                                   "text; drop it from the tool's schema, or build the grammar with lenient=True to "
                                   "leave it free", code="unsupported_schema", path=where, key=key)
            schemas.unenforced.append(f"{where}/{key}")


def ref_target(ref: Any, where: str, root: Any, hops: int) -> Any:
    """The schema ``ref`` names in ``root``'s ``$defs`` or ``definitions`` (``hops``: references followed so far)."""
    if hops >= _MAX_REFS or not isinstance(ref, str) or not ref.startswith(("#/$defs/", "#/definitions/")):
        raise GrammarError(f"Schema $ref {ref!r} at {where}: expected a reference into the same schema's $defs or "
                           "definitions that leads to a schema", code="unsupported_schema", path=where)
    section, name = ref[2:].split("/", 1)
    found = (root.get(section) or {}).get(name) if isinstance(root, Mapping) else None
    if found is None:
        raise GrammarError(f"Schema $ref {ref!r} at {where} names no definition", code="bad_schema", path=where)
    return found


def shaping(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` holds a keyword that shapes values (not only notes such as ``description``)."""
    return any(key not in ("description", "title", "examples", "default", "$comment", "deprecated") for key in schema)


def _merge(out: dict[str, Node | None], more: Mapping[str, Node | None]) -> None:
    """Add ``more``'s values to ``out`` by printed type (a raw string admits every string)."""
    for printed, node in more.items():
        if printed not in out:
            out[printed] = node
        elif out[printed] is not None:
            out[printed] = None if node is None else alt(out[printed], node)  # type: ignore[arg-type]
