"""coerce_arguments: every row of the coercion table, every rejection code, never a choice."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatparse.tools import Coercion, ToolArgumentError, ToolDefinitionError, coerce_arguments
from chatparse.tools import coerce as coerce_module

STR_LIST = {"type": "array", "items": {"type": "string"}}
INT_LIST = {"type": "array", "items": {"type": "integer"}}
OBJ = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}}
MODE = {"type": "string", "enum": ["write", "append"]}


def one(schema: dict[str, Any], value: Any) -> Any:
    """Coerce a single argument ``x`` against ``schema``."""
    return coerce_arguments({"x": value}, {"type": "object", "properties": {"x": schema}})["x"]


def rejection(schema: dict[str, Any], value: Any) -> ToolArgumentError:
    with pytest.raises(ToolArgumentError) as caught:
        one(schema, value)
    return caught.value


# (schema, model-written value, coerced value, rule recorded) — the table in docs/tools.md
TABLE = [
    (STR_LIST, '["a", "b"]', ["a", "b"], "array_in_string"),
    (STR_LIST, "['a', 'b']", ["a", "b"], "array_in_string"),
    (OBJ, '{"a": 1, "b": true}', {"a": 1, "b": True}, "object_in_string"),
    (OBJ, "{'a': 1, 'b': True}", {"a": 1, "b": True}, "object_in_string"),
    (INT_LIST, '["1", 2]', [1, 2], "array_in_string"),
    ({"type": "integer"}, "42", 42, "numeric_string"),
    ({"type": "integer"}, " -7 ", -7, "numeric_string"),
    ({"type": "integer"}, "3.0", 3, "numeric_string"),
    ({"type": "integer"}, "1e3", 1000, "numeric_string"),
    ({"type": "integer"}, 3.0, 3, "whole_number_to_integer"),
    ({"type": "number"}, "2.5", 2.5, "numeric_string"),
    ({"type": "number"}, "-1e-3", -0.001, "numeric_string"),
    ({"type": "boolean"}, "true", True, "boolean_string"),
    ({"type": "boolean"}, "False", False, "boolean_string"),
    ({"type": "boolean"}, "1", True, "boolean_string"),
    ({"type": "boolean"}, "0", False, "boolean_string"),
    ({"type": "integer", "nullable": True}, "null", None, "null_string"),
    ({"type": ["integer", "null"]}, "None", None, "null_string"),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "5", 5, "numeric_string"),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "5", 5, "numeric_string"),
    ({"anyOf": [{"type": ["string", "null"]}, {"type": "integer"}]}, "5", 5, "numeric_string"),
    ({"type": ["string", "array"], "items": {"type": "string"}}, "['a']", ["a"], "array_in_string"),
    ({"type": "integer", "enum": [1, 2]}, "2", 2, "numeric_string"),
]


@pytest.mark.parametrize(("schema", "value", "expected", "rule"), TABLE)
def test_coercion_table(schema: dict[str, Any], value: Any, expected: Any, rule: str) -> None:
    log: list[Coercion] = []
    result = coerce_arguments({"x": value}, {"type": "object", "properties": {"x": schema}}, coercions=log)
    assert result["x"] == expected
    assert type(result["x"]) is type(expected)
    assert rule in {c.rule for c in log}


# Values that stay exactly as written.
UNCHANGED = [
    ({"type": "string"}, "007"),
    ({"type": "string"}, '["a"]'),
    ({"type": "string"}, "true"),
    ({"type": "string"}, "None"),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "007"),
    ({"type": ["integer", "string"]}, "12 apples"),
    ({"type": "number"}, 3),
    ({"type": "integer"}, 3),
    (STR_LIST, ["a", "b"]),
    ({}, "anything"),
    ({"description": "no type"}, {"k": [1]}),
    ({"type": "string", "nullable": True}, None),
]


@pytest.mark.parametrize(("schema", "value"), UNCHANGED)
def test_values_that_stay_as_written(schema: dict[str, Any], value: Any) -> None:
    log: list[Coercion] = []
    result = coerce_arguments({"x": value}, {"type": "object", "properties": {"x": schema}}, coercions=log)
    assert result["x"] == value
    assert type(result["x"]) is type(value)
    assert log == []


def test_string_007_stays_a_string() -> None:
    assert one({"type": "string"}, "007") == "007"


def test_string_007_is_not_an_integer() -> None:
    error = rejection({"type": "integer"}, "007")  # leading zeros are not a JSON number: an identifier?
    assert error.code == "wrong_type"


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "integer"}, "1.5"),
        ({"type": "integer"}, 1.5),
        ({"type": "integer"}, "12 apples"),
        ({"type": "integer"}, "1,000"),
        ({"type": "integer"}, "0x10"),
        ({"type": "integer"}, True),
        ({"type": "number"}, "NaN"),
        ({"type": "number"}, "Infinity"),
        ({"type": "number"}, "1e400"),
        ({"type": "number"}, False),
        ({"type": "boolean"}, "yes"),
        ({"type": "boolean"}, 1),
        ({"type": "string"}, 42),
        ({"type": "string"}, None),
        ({"type": "integer"}, None),
        (STR_LIST, "a, b"),
        (STR_LIST, "a"),
        (STR_LIST, '"[\\"a\\"]"'),  # decoded once only: a JSON string holding an array stays a string
        (STR_LIST, "{'a': 1}"),
        (STR_LIST, "(1, 2)"),  # a tuple repr is not JSON data
        (OBJ, "[1]"),
        (OBJ, "{'a': 1, 'a': 2}"),  # duplicate keys are not silently merged
        ({"type": "null"}, "nothing"),
    ],
)
def test_wrong_type(schema: dict[str, Any], value: Any) -> None:
    error = rejection(schema, value)
    assert error.code in {"wrong_type"}, error
    assert error.path == "$.x"
    assert error.field == "x"
    assert error.expected
    assert error.found


def test_wrong_type_names_expected_found_and_path() -> None:
    schema = {"type": "object", "properties": {"files": {"type": "array", "items": OBJ}}}
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments({"files": [{"a": 1}, {"a": "two"}]}, schema)
    error = caught.value
    assert error.code == "wrong_type"
    assert error.path == "$.files[1].a"
    assert error.field == "files"
    assert error.expected == "integer"
    assert error.found == "string 'two'"
    assert str(error) == "Invalid argument: $.files[1].a: expected integer; found string 'two'."


def test_near_miss_choice_is_rejected_with_the_allowed_list() -> None:
    error = rejection(MODE, "Write")
    assert error.code == "invalid_choice"
    assert error.field == "x"
    assert error.got == "Write"
    assert error.allowed == ["write", "append"]
    assert '"write", "append"' in str(error)
    assert 'Did you mean "write"?' in str(error)  # a hint, never applied


@pytest.mark.parametrize("value", ["Write", "WRITE", " write", "write ", "wrte", "overwrite", "", 1, None, ["write"]])
def test_choices_are_never_coerced(value: Any) -> None:
    assert rejection(MODE, value).code == "invalid_choice"


def test_const_and_literal_style_enums() -> None:
    assert one({"const": "only"}, "only") == "only"
    assert rejection({"const": "only"}, "Only").allowed == ["only"]
    assert one({"enum": [1, 2, None]}, "None") is None
    assert rejection({"enum": [1, 2]}, True).code == "invalid_choice"  # True is not 1
    assert rejection({"enum": [1, 2]}, "1.5").code == "invalid_choice"


def test_large_choice_sets_are_listed_in_full_in_allowed_but_shortened_in_the_message() -> None:
    options = [f"opt{n}" for n in range(60)]
    error = rejection({"type": "string", "enum": options}, "nope")
    assert error.allowed == options
    assert "60 options in total" in str(error)


def test_missing_argument() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments({}, schema)
    assert caught.value.code == "missing_argument"
    assert caught.value.field == "path"
    assert caught.value.path == "$.path"


def test_unknown_argument_lists_the_known_ones() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "mode": MODE}}
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments({"path": "p", "colour": "red"}, schema)
    error = caught.value
    assert error.code == "unknown_argument"
    assert error.known == ["path", "mode"]
    assert "'path', 'mode'" in str(error)


def test_additional_properties_rules() -> None:
    free = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True}
    assert coerce_arguments({"a": 1, "b": "x"}, free) == {"a": 1, "b": "x"}
    typed = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert coerce_arguments({"a": "1", "b": "2"}, typed) == {"a": 1, "b": 2}
    assert coerce_arguments({"any": "thing"}, {"type": "object"}) == {"any": "thing"}


def test_every_issue_is_reported_not_just_the_first() -> None:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "mode": MODE, "count": {"type": "integer"}},
        "required": ["path", "mode"],
    }
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments({"mode": "Write", "count": "many", "extra": 1}, schema, tool="write_file")
    error = caught.value
    assert error.code == "invalid_arguments"
    assert sorted(e.code for e in error.errors) == ["invalid_choice", "missing_argument", "unknown_argument", "wrong_type"]
    assert str(error).startswith("4 invalid arguments for tool 'write_file': (1) ")
    payload = error.to_dict()
    assert payload["tool"] == "write_file"
    assert {e["code"] for e in payload["errors"]} == {"invalid_choice", "missing_argument", "unknown_argument", "wrong_type"}
    json.dumps(payload)  # ready to send back to the model


def test_single_issue_keeps_its_own_code_and_location() -> None:
    error = rejection(MODE, "Write")
    assert error.errors[0].code == "invalid_choice"
    assert len(error.errors) == 1
    assert error.path == "$.x"


def test_nested_properties_and_items_are_coerced_recursively() -> None:
    schema = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"line": {"type": "integer"}, "tags": STR_LIST, "mode": MODE},
                    "required": ["line"],
                },
            }
        },
    }
    raw = {"edits": "[{'line': '3', 'tags': '[\"a\"]', 'mode': 'append'}]"}
    assert coerce_arguments(raw, schema) == {"edits": [{"line": 3, "tags": ["a"], "mode": "append"}]}


def test_prefix_items_and_draft4_tuple_items() -> None:
    pair = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}
    assert one(pair, '["1", "a"]') == [1, "a"]
    old = {"type": "array", "items": [{"type": "integer"}, {"type": "boolean"}]}
    assert one(old, ["1", "true"]) == [1, True]


def test_union_tries_branches_in_order_with_string_last() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}
    assert one(schema, "[1, '2']") == [1, 2]
    assert one(schema, "null") is None
    assert one(schema, "plain") == "plain"
    error = rejection({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]}, ["x"])
    assert error.path == "$.x[0]"  # the array branch (the value's own type) explains the failure


def test_transformers_style_nullable_union() -> None:
    schema = {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "object"}], "nullable": True}
    assert one(schema, "None") is None
    assert one(schema, "[1]") == [1]
    assert rejection(schema, "x").expected == "array of integer or object or null"


def test_refs_and_defs_from_pydantic_schemas() -> None:
    schema = {
        "$defs": {"Mode": {"enum": ["write", "append"], "type": "string"}},
        "type": "object",
        "properties": {"mode": {"$ref": "#/$defs/Mode"}},
    }
    assert coerce_arguments({"mode": "append"}, schema) == {"mode": "append"}
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments({"mode": "Append"}, schema)
    assert caught.value.allowed == ["write", "append"]


def test_arguments_given_as_text() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert coerce_arguments('{"n": "1"}', schema) == {"n": 1}
    assert coerce_arguments("{'n': 2}", schema) == {"n": 2}
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments("[1]", schema)
    assert caught.value.code == "wrong_type" and caught.value.path == "$"
    with pytest.raises(ToolArgumentError):
        coerce_arguments("not json", schema)


def test_arguments_text_with_a_raw_newline_in_a_string() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}}
    coercions: list[Any] = []
    text = '{"code": "def f():\n\treturn 1", "n": "2"}'
    assert coerce_arguments(text, schema, coercions=coercions) == {"code": "def f():\n\treturn 1", "n": 2}
    assert [c.rule for c in coercions] == ["arguments_in_string", "numeric_string"]


def test_no_silent_defaults() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 5}}}
    assert coerce_arguments({}, schema) == {}


def test_input_is_not_mutated() -> None:
    args = {"x": "1"}
    coerce_arguments(args, {"type": "object", "properties": {"x": {"type": "integer"}}})
    assert args == {"x": "1"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)
schemas = st.sampled_from(
    [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, STR_LIST, INT_LIST, OBJ, MODE,
     {"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"type": "integer", "nullable": True}, {}]
)


@given(schema=schemas, value=json_values)
def test_only_tool_argument_errors_escape_and_coercion_is_idempotent(schema: dict[str, Any], value: Any) -> None:
    try:
        once = one(schema, value)
    except ToolArgumentError as error:
        assert error.errors and all(e.code in {"wrong_type", "invalid_choice", "unknown_argument", "missing_argument"}
                                    for e in error.errors)
        return
    assert one(schema, once) == once


@given(value=st.text())
def test_any_string_stays_identical_for_a_string_schema(value: str) -> None:
    assert one({"type": "string"}, value) is value


def test_unreadable_arguments_text_is_one_issue() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments("{'a': ", schema)
    assert [e.code for e in caught.value.errors] == ["wrong_type"]
    assert caught.value.details["reason"] == "invalid_syntax"


def test_recursive_schema_depth_is_bounded() -> None:
    tree = {"$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
            "type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}}
    value: dict[str, Any] = {}
    for _ in range(200):
        value = {"child": value}
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments({"root": value}, tree)
    assert caught.value.code == "too_deep"
    shallow: dict[str, Any] = {"child": {"child": {}}}
    assert coerce_arguments({"root": shallow}, tree) == {"root": shallow}


# --- hostile schemas and values (issue 13): named errors, never TypeError/ValueError/RecursionError ----


def nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("schema", "keyword"), [
    ({"enum": 5}, "enum"), ({"type": 5}, "type"), ({"type": ["integer", 5]}, "type"), ({"enum": "ab"}, "enum"),
    ({"anyOf": [{"type": {"t": 1}}]}, "type"),
])
def test_a_type_or_enum_of_the_wrong_shape_is_a_named_schema_error(schema: dict[str, Any], keyword: str) -> None:
    """`"enum": 5` and `"type": 5` used to escape as TypeError ('int' object is not iterable)."""
    with pytest.raises(ToolDefinitionError) as caught:
        one(schema, 1)
    assert (caught.value.code, caught.value.key, caught.value.path) == ("invalid_schema", keyword, "$.x")
    assert f"Expected '{keyword}' to be" in str(caught.value) and "Fix the tool's parameters schema" in str(caught.value)


@pytest.mark.parametrize("schema", [{"type": "string"}, {"enum": [1]}, {"const": 1}, {"anyOf": [{"type": "boolean"}]}])
def test_an_integer_past_the_digit_limit_is_described_not_written(schema: dict[str, Any]) -> None:
    """str(10**5000) raises ValueError (4,300-digit limit): the messages used to crash with it."""
    error = rejection(schema, 10**5000)
    assert "<integer of about 5001 digits>" in str(error) and len(str(error)) < 400
    assert one({"type": "integer"}, 10**5000) == 10**5000  # a valid value stays as it is


@pytest.mark.parametrize("schema", [{"type": "string"}, {"enum": [[1]]}, {"const": [1]}, {"anyOf": [{"type": "null"}]}])
def test_a_list_nested_a_thousand_deep_gets_a_short_message(schema: dict[str, Any]) -> None:
    """repr/json.dumps of the value used to raise RecursionError."""
    error = rejection(schema, nested_list(1000))
    assert error.code in ("wrong_type", "invalid_choice") and len(str(error)) < 600
    deep = nested_list(1000)
    assert one({"const": nested_list(1000)}, deep) is deep  # deep equality is iterative


@pytest.mark.parametrize("key", [None, 1, ("a",)])
def test_a_key_that_is_not_a_string_is_a_wrong_type_issue(key: Any) -> None:
    """A None key used to escape as TypeError from the path formatter."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    with pytest.raises(ToolArgumentError) as caught:
        coerce_arguments({key: 1, "a": "2"}, schema)
    assert caught.value.code == "wrong_type" and caught.value.path == "$"
    assert "expected string keys" in str(caught.value)


def test_a_self_referring_union_is_a_named_schema_error() -> None:
    schema = {"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}]}}, "type": "object",
              "properties": {"x": {"$ref": "#/$defs/A"}}}
    with pytest.raises(ToolDefinitionError) as caught:
        coerce_arguments({"x": 1}, schema)
    assert caught.value.code == "invalid_schema" and caught.value.path == "$.x"


def test_unions_nested_in_unions_stop_at_the_tries_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each level doubles the tries (2^30 unbounded); the budget ends it with a named error."""
    monkeypatch.setattr(coerce_module, "MAX_UNION_TRIES", 1000)
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(30):
        schema = {"anyOf": [schema, schema]}
    with pytest.raises(ToolDefinitionError) as caught:
        one(schema, "x")
    assert caught.value.code == "schema_too_complex"
    assert one({"anyOf": [{"anyOf": [{"type": "integer"}]}]}, "5") == 5  # shallow nesting is unaffected


def test_a_cyclic_schema_is_described_briefly() -> None:
    cyclic: dict[str, Any] = {"type": "array"}
    cyclic["items"] = cyclic
    error = rejection(cyclic, "x")
    assert error.code == "wrong_type" and "array of array of" in str(error) and len(str(error)) < 300
