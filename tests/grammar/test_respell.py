"""Respelled argument grammars admit exactly respelled values: random walks through a schema's grammar
written as a Python literal or as JSON text inside a JSON string decode to values valid against the
schema, and the respelled forms of valid values are admitted."""

from __future__ import annotations

import ast
import json
import random
from typing import Any

import jsonschema
import pytest

from chatparse.grammar.ir import Grammar
from chatparse.grammar.jsonschema import GrammarError, SchemaGrammar
from chatparse.grammar.lark import to_lark
from chatparse.grammar.respell import respell, spelled_schema
from tests.grammar.test_builtins import STRESS_TOOLS
from tests.grammar.walk import accepts, walk

SCHEMA: dict[str, Any] = STRESS_TOOLS[0]["function"]["parameters"]
# In schema order (the grammar writes an object's properties in the schema's order).
VALUE = {"city": "Sé'oul \"x\"\n\\", "budget": None, "mode": "car", "stops": [{"name": "a", "nights": 2}],
         "flexible": False, "note": 3}


def _lark(spelling: str, schema: dict[str, Any] = SCHEMA) -> str:
    grammar = Grammar()
    value = SchemaGrammar(grammar).value(spelled_schema(schema, spelling), "schema")
    grammar.rules["start_value"] = respell(grammar, value, spelling)
    return to_lark(grammar, "start_value")


def _decode(text: str, spelling: str) -> Any:
    if spelling == "python":
        return ast.literal_eval(text)
    decoded = json.loads(text)
    return json.loads(decoded) if spelling == "json-string" else decoded


@pytest.mark.parametrize("spelling", ["json", "json-sorted", "python", "json-string"])
def test_walks_decode_to_valid_values(spelling: str) -> None:
    lark = _lark(spelling)
    rng = random.Random(spelling)
    done = 0
    for _ in range(12):
        text = walk(lark, rng, ['"', "'", "\\", "True", "None", "\\\\\\\""])
        if text is None:
            continue
        done += 1
        value = _decode(text, spelling)
        jsonschema.validate(value, SCHEMA)
        if spelling == "json-sorted":
            assert list(value) == sorted(value), text
    assert done >= 6


@pytest.mark.parametrize(("spelling", "text"), [
    ("python", repr(VALUE)),
    ("json-string", json.dumps(json.dumps(VALUE))),
    ("json-sorted", json.dumps(VALUE, sort_keys=True)),
])
def test_the_respelled_text_of_a_value_is_admitted(spelling: str, text: str) -> None:
    ok, why = accepts(_lark(spelling), text)
    assert ok, why


def test_python_and_json_spellings_do_not_mix() -> None:
    ok, _ = accepts(_lark("python"), json.dumps(VALUE))
    assert not ok


def test_an_unknown_spelling_is_an_error() -> None:
    grammar = Grammar()
    with pytest.raises(GrammarError) as info:
        respell(grammar, SchemaGrammar(grammar).value(SCHEMA, "schema"), "yaml")
    assert info.value.code == "bad_write_form"
