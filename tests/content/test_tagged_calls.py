"""The tagged-call content parser: one call written as its name followed by tagged parameters, or as a
JSON call object (K2 Horizon's three tool_call_format bodies)."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.content.registry import get_content_parser
from chatparse.content.tagged_calls import parse_tagged_call
from chatparse.errors import TemplateError

PARAMS: dict[str, Any] = {
    "param_open": r"<k>(?P<key>[^<]*)</k>\s*(?:<t>(?P<kind>[^<]*)</t>\s*)?<v>",
    "value_close": "</v>",
    "value_ends": "close",
    "value_parsers": {"string": {"name": "text", "args": {"strip": False}},
                      "integer": {"name": "json", "args": {"allow_non_json": True}}},
}
ARGS: dict[str, Any] = {"params": PARAMS, "json_call": True}


def test_registered_as_a_chatparse_only_parser() -> None:
    spec = get_content_parser("tagged-call")
    assert not spec.compatible and not spec.streamable and spec.recover is None
    assert spec.description


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("get_weather\n<k>city</k>\n<v>Seoul</v>\n<k>days</k>\n<v>2</v>\n",
         {"name": "get_weather", "arguments": {"city": "Seoul", "days": "2"}}),
        # typed: the kind picks the value parser
        ("get_weather<k>city</k><t>string</t><v> 007 </v><k>days</k><t>integer</t><v>2</v>",
         {"name": "get_weather", "arguments": {"city": " 007 ", "days": 2}}),
        ("get_time", {"name": "get_time", "arguments": {}}),
        ("\nget_time\n", {"name": "get_time", "arguments": {}}),
        # close text inside a value is data (a value ends at the close followed by the next parameter)
        ("f<k>a</k><v>x </v> y</v><k>b</k><v>z</v>", {"name": "f", "arguments": {"a": "x </v> y", "b": "z"}}),
        ('{"name": "get_weather", "arguments": {"city": "Seoul", "days": 2}}',
         {"name": "get_weather", "arguments": {"city": "Seoul", "days": 2}}),
        ('  {"name": "f", "parameters": {"a": [1, {"b": null}]}}\n', {"name": "f", "arguments": {"a": [1, {"b": None}]}}),
        ('{"name": "f", "arguments": "{\\"a\\": 1}"}', {"name": "f", "arguments": {"a": 1}}),
        ('{"name": "f"}', {"name": "f", "arguments": {}}),
        ('{"name": "f", "arguments": null}', {"name": "f", "arguments": {}}),
    ],
)
def test_reads_both_forms(body: str, expected: dict[str, Any]) -> None:
    assert parse_tagged_call(body, ARGS) == expected


@pytest.mark.parametrize(
    ("body", "args", "message"),
    [
        ("", ARGS, "has no name"),
        ("<k>a</k><v>1</v>", ARGS, "has no name"),
        ("get weather<k>a</k><v>1</v>", ARGS, "no whitespace"),
        ("f<k>a</k><v>1</v> stray", ARGS, "text between parameters"),
        ("f<k>a</k><v>1", ARGS, "has no '</v>'"),
        ('{"name": "f", "arguments": {', ARGS, "not JSON"),
        ('["f"]', ARGS, "quotes or brackets"),  # not an object: no JSON call, and no name either
        ('{"arguments": {}}', ARGS, "has no name"),
        ('{"name": "f", "arguments": [1]}', ARGS, "not a JSON object"),
        ('{"name": "f", "arguments": "{oops"}', ARGS, "not JSON"),
        # without json_call a JSON body is a (bad) name
        ('{"name": "f"}', {"params": PARAMS}, "quotes or brackets"),
    ],
)
def test_rejects_what_is_not_one_call(body: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_tagged_call(body, args)


def _template(args: dict[str, Any]) -> dict[str, Any]:
    return {"start_anchor": "A:", "defaults": {"role": "assistant"}, "fields": {
        "tool_calls": {"open": "<c>", "close": "</c>", "repeats": True, "content": "tagged-call", "content_args": args,
                       "transform": {"type": "function", "function": {"name": "{content.name}",
                                                                      "arguments": "{content.arguments}"}}},
        "content": {"repeats": True, "join": "", "content": "text"}}}


@pytest.mark.parametrize(
    "args",
    [{}, {"json_call": True}, {"params": {}}, {"params": {"param_open": "<k>"}},
     {"params": {"param_open": "(?P<key>x)", "value_close": "</v>", "value_ends": "later"}},
     {"params": PARAMS, "json_call": "yes"}, {"params": PARAMS, "other": 1}],
)
def test_bad_content_args_are_rejected_at_load_time(args: dict[str, Any]) -> None:
    with pytest.raises(TemplateError):
        chatparse.load_template(_template(args))


def test_runs_inside_a_template_with_its_name_from_the_body() -> None:
    out = ('Sure.<c>get_weather<k>city</k><v>Seoul</v><k>days</k><v>2</v></c>'
           '<c>{"name": "get_time", "arguments": {}}</c>')
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]
    message = chatparse.parse_response(out, _template(ARGS), prefix="A:", tools=tools)
    assert message == {"role": "assistant", "content": "Sure.", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Seoul", "days": 2}}},
        {"type": "function", "function": {"name": "get_time", "arguments": {}}}]}


def test_a_value_read_by_its_declared_type_keeps_its_text() -> None:
    call = parse_tagged_call("f<k>z</k><t>integer</t><v>12</v><k>c</k><t>string</t><v>Oslo</v>", ARGS)
    assert call["arguments"] == {"z": 12, "c": "Oslo"}
    assert call["arguments"].written == {("z",): "12"}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "12"),  # the schema decides, not the type the model declared
        ({"type": ["string", "null"]}, "12"),
        ({"type": "integer"}, 12),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, 12),
    ],
)
def test_the_schema_types_a_value_whatever_type_the_model_declared(schema: dict[str, Any], expected: Any) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"zip": schema}}}}]
    prompt = "<|ifm|im_start|>assistant\n"
    output = ("<ifm|think>\n</ifm|think>\n<ifm|tool_calls>\n<ifm|tool_call>f\n<ifm|arg_key>zip</ifm|arg_key>\n"
              "<ifm|arg_type>integer</ifm|arg_type>\n<ifm|arg_value>12</ifm|arg_value>\n</ifm|tool_call>\n"
              "</ifm|tool_calls><|ifm|im_end|>")
    from tests.streamcheck import assert_chunking_equivalent

    message = assert_chunking_equivalent("k2_horizon", prompt, output, tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"] == {"zip": expected}
