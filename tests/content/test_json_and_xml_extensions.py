"""The part-A content-parser extensions: json-sequence and xml-inline-typed."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.content.json_calls import parse_json_sequence
from chatparse.content.registry import get_content_parser
from chatparse.content.xml_params import parse_xml_inline_typed
from chatparse.errors import TemplateError

DSML_ARGS: dict[str, Any] = {
    "tag_pattern": r'<p name="(?P<key>[^"]+)"(?: string="(?P<kind>true|false)")?>(?P<value>.*?)</p>',
    "value_parsers": {"true": {"name": "text", "args": {"strip": False}}, "false": {"name": "json"}},
    "default_parser": {"name": "json", "args": {"allow_non_json": True}},
}


@pytest.mark.parametrize("name", ["json-sequence", "xml-inline-typed"])
def test_registered_as_chatparse_only_structured_parsers(name: str) -> None:
    spec = get_content_parser(name)
    assert not spec.compatible and not spec.streamable
    assert spec.description


# --- json-sequence ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"a": 1}', [{"a": 1}]),
        ('  {"a": 1};{"b": 2} ; {"c": 3}\n{"d": [4]}  ', [{"a": 1}, {"b": 2}, {"c": 3}, {"d": [4]}]),
        ('{"a": 1}{"b": 2}', [{"a": 1}, {"b": 2}]),
        ('{"a": 1};', [{"a": 1}]),
        ('{"s": "x}; {y"}; [1, 2]', [{"s": "x}; {y"}, [1, 2]]),
        ('{"s": "日本 🙂"}', [{"s": "日本 🙂"}]),
    ],
)
def test_json_sequence_reads_values_back_to_back(body: str, expected: list[Any]) -> None:
    assert parse_json_sequence(body, {}) == expected


def test_json_sequence_renames_aliased_keys() -> None:
    args = {"key_aliases": {"parameters": "arguments"}}
    body = '{"name": "f", "parameters": {"x": 1}}; {"name": "g", "arguments": {}}'
    assert parse_json_sequence(body, args) == [
        {"name": "f", "arguments": {"x": 1}},
        {"name": "g", "arguments": {}},
    ]
    with pytest.raises(ValueError, match="both 'parameters' and 'arguments'"):
        parse_json_sequence('{"parameters": {}, "arguments": {}}', args)


def test_json_sequence_custom_separator() -> None:
    args = {"separator": r"\s*(?:<sep>)?\s*"}
    assert parse_json_sequence('{"a": 1} <sep> {"b": 2}', args) == [{"a": 1}, {"b": 2}]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("   ", "only whitespace"),
        ('{"a": 1', "expected a JSON value at offset 0"),
        ('{"a": 1} and then prose', "expected a JSON value at offset 9"),
        ('{"a": 1};; {"b": 2}', "expected a JSON value at offset 9"),
    ],
)
def test_json_sequence_rejects_anything_else(body: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_json_sequence(body, {})


# --- xml-inline-typed ---------------------------------------------------------------------------------


def test_xml_inline_typed_picks_the_parser_per_tag() -> None:
    body = (
        '<p name="zip" string="true">02139</p><p name="n" string="false">1.5</p>'
        '<p name="obj" string="false">{"k": [1]}</p><p name="pad" string="true"> x </p><p name="bare">7</p>'
        '<p name="word">hello</p>'
    )
    assert parse_xml_inline_typed(body, DSML_ARGS) == {
        "zip": "02139", "n": 1.5, "obj": {"k": [1]}, "pad": " x ", "bare": 7, "word": "hello",
    }  # fmt: skip


def test_xml_inline_typed_without_default_keeps_raw_text() -> None:
    args = {**DSML_ARGS, "default_parser": None}
    del args["default_parser"]
    assert parse_xml_inline_typed('<p name="a">7</p>', args) == {"a": "7"}
    assert parse_xml_inline_typed("no tags", args) == {}


def test_xml_inline_typed_propagates_value_parser_errors() -> None:
    with pytest.raises(ValueError):
        parse_xml_inline_typed('<p name="a" string="false">{oops</p>', DSML_ARGS)


# --- load-time argument checks ------------------------------------------------------------------------


def _template(content: str, args: dict[str, Any]) -> dict[str, Any]:
    field = {"open": "<c>", "close": "</c>", "content": content, "content_args": args}
    return {"start_anchor": "A:", "fields": {"tool_calls": field}}


@pytest.mark.parametrize(
    ("content", "args"),
    [
        ("json-sequence", {"separator": "("}),
        ("json-sequence", {"separator": ""}),
        ("json-sequence", {"key_aliases": ["parameters"]}),
        ("json-sequence", {"unknown": 1}),
        ("xml-inline-typed", {}),
        ("xml-inline-typed", {"tag_pattern": "<(?P<key>x)>"}),
        ("xml-inline-typed", {**DSML_ARGS, "value_parsers": {"true": {"name": "no-such-parser"}}}),
        ("xml-inline-typed", {**DSML_ARGS, "default_parser": "json"}),
    ],
)
def test_bad_content_args_are_rejected_at_load_time(content: str, args: dict[str, Any]) -> None:
    with pytest.raises(TemplateError):
        chatparse.load_template(_template(content, args))


def test_xml_params_key_entities_decode_keys_in_one_pass_and_nothing_else() -> None:
    """Kimi K3 escapes '&' and '"' in attribute values: keys come back decoded ('&amp;quot;' is the
    text '&quot;', as in XML); values are not attributes and stay as written."""
    from chatparse.content.xml_params import parse_xml_params

    args = {"param_open": '<arg key="(?P<key>[^"]*)">', "value_close": "</arg>", "value_ends": "close",
            "key_entities": {"&quot;": '"', "&amp;": "&"}}
    body = '<arg key="a &amp; b">R&amp;D</arg><arg key="&amp;quot;x&quot;">1</arg>'
    assert parse_xml_params(body, args) == {"a & b": "R&amp;D", '&quot;x"': "1"}
