"""JSON Schema to grammar: objects admit exactly their members in schema order (each optional one skippable),
and equal schemas are written once (one node, shared rules), except where that would lose what a lenient
grammar reports."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

from chatparse.grammar.ir import Grammar
from chatparse.grammar.jsonschema import SchemaGrammar
from chatparse.grammar.lark import to_lark
from tests.grammar.walk import accepts

OBJECT: dict[str, Any] = {"type": "object", "properties": {
    "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "integer"}, "d": {"type": "boolean"},
    "e": {"type": "integer"}}, "required": ["c"]}


def _lark(schema: Any) -> str:
    grammar = Grammar()
    grammar.rules["start_value"] = SchemaGrammar(grammar).value(schema, "schema")
    return to_lark(grammar, "start_value")


def test_an_object_admits_exactly_its_members_in_order() -> None:
    # Members after a skipped optional one are offered by several 'after' chains (one shared rule each).
    lark = _lark(OBJECT)
    samples = {"a": 1, "b": "x", "c": 2, "d": True, "e": 3}
    names = list(samples)
    for size in range(len(names) + 1):
        for chosen in itertools.combinations(names, size):
            text = json.dumps({k: samples[k] for k in chosen})
            assert accepts(lark, text)[0] == ("c" in chosen), text
    assert not accepts(lark, '{"c": 2, "a": 1}')[0]
    assert not accepts(lark, '{"c": 2, "e": 3, "d": true}')[0]


def test_equal_schemas_give_one_node() -> None:
    schemas = SchemaGrammar(Grammar())
    first = schemas.value(OBJECT, "first")
    assert schemas.value(copy.deepcopy(OBJECT), "second") is first
    reordered = {**OBJECT, "properties": dict(reversed(OBJECT["properties"].items()))}
    assert schemas.value(reordered, "third") is not first  # (property order is written order)
    assert schemas.value({"type": "integer"}, "x") is not schemas.value({"type": "number"}, "y")
    assert schemas.value({"const": 1}, "x") is not schemas.value({"const": True}, "y")


def test_a_reference_depends_on_its_roots_definitions() -> None:
    schemas = SchemaGrammar(Grammar())
    ref = {"type": "object", "properties": {"v": {"$ref": "#/$defs/V"}}}
    ints, strings = ({**ref, "$defs": {"V": {"type": kind}}} for kind in ("integer", "string"))
    lark_ints, lark_strings = Grammar(), Grammar()
    lark_ints.rules["start_value"] = schemas.value(ints, "ints")
    lark_strings.rules["start_value"] = schemas.value(strings, "strings")
    assert lark_ints.rules["start_value"] is not lark_strings.rules["start_value"]
    lark_ints.rules.update(schemas.grammar.rules)
    lark_strings.rules.update(schemas.grammar.rules)
    assert accepts(to_lark(lark_ints, "start_value"), '{"v": 1}')[0]
    assert accepts(to_lark(lark_strings, "start_value"), '{"v": "s"}')[0]
    assert not accepts(to_lark(lark_strings, "start_value"), '{"v": 1}')[0]


def test_a_lenient_grammar_lists_every_place_it_leaves_free() -> None:
    schemas = SchemaGrammar(Grammar(), lenient=True)
    dated = {"type": "string", "format": "date"}
    schemas.value(dated, "first")
    schemas.value(copy.deepcopy(dated), "second")
    assert schemas.unenforced == ["first/format", "second/format"]


def test_the_string_character_is_part_of_a_schema_s_grammar() -> None:
    schemas = SchemaGrammar(Grammar())
    plain = schemas.value({"type": "string"}, "x")
    schemas.string_char = r"(?:[^<\"\\\x00-\x1f])"
    assert schemas.value({"type": "string"}, "x") is not plain


def test_definitions_of_schemas_made_one_after_another_stay_apart() -> None:
    # Each root is dropped before the next is made (CPython may give the next one the same address).
    for lenient in (False, True):
        grammar = Grammar()
        schemas = SchemaGrammar(grammar, lenient=lenient)
        for i, kind in enumerate(("integer", "string", "boolean", "null")):
            root = {"type": "object", "properties": {"v": {"$ref": "#/$defs/V"}}, "required": ["v"],
                    "$defs": {"V": {"type": kind}}}
            grammar.rules[f"value_{i}"] = schemas.value(root, "root")
            del root
        for i, good in enumerate(('{"v": 1}', '{"v": "s"}', '{"v": true}', '{"v": null}')):
            grammar.rules["start_value"] = grammar.rules[f"value_{i}"]
            lark = to_lark(grammar, "start_value")
            assert accepts(lark, good)[0] and not accepts(lark, '{"v": []}')[0], (lenient, good)
            assert not accepts(lark, '{"v": 1}' if i else '{"v": "s"}')[0], (lenient, good)
