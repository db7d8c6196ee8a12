"""Body ``python-calls``: calls as ``NAME(key=value)`` with Python literals, in each family's spelling (quotes,
constants, typed values written as strings); every admitted call parses back to schema-valid arguments."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from chatparse.templates import get_template
from tests.grammar.walk import accepts

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "create_event", "parameters": {
        "type": "object", "properties": {
            "title": {"type": "string"}, "attendees": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["it's", "plain"]}, "all_day": {"type": "boolean"}, "ratio": {"type": "number"}},
        "required": ["title"]}}},
]


def _required(family: str, template: Any = None) -> str:
    return tool_grammar(template or family, TOOLS, tool_choice="required", prefix="").lark


@pytest.mark.parametrize(("family", "text"), [
    ("lfm2", '<|tool_call_start|>[get_weather(city="Seoul", days=2)]<|tool_call_end|>'),
    ("lfm2", '<|tool_call_start|>[get_weather(city="a \\"b\\"\\n"), create_event(title="x", all_day=True)]'
             '<|tool_call_end|>'),
    ("lfm2", '<|tool_call_start|>[create_event(title="x", kind="it\'s", ratio=1.5e3)]<|tool_call_end|>'),
    ("olmo3", "<function_calls>\nget_weather(city='Seoul', days=2)\ncreate_event(title='line 1\nline 2', "
              'attendees=["a", "b c"], all_day=false)\n</function_calls>'),
    ("llama4_pythonic", '[get_weather(city="Seoul", days="2"), create_event(title="Sync", '
                        "attendees=\"['a', 'b c']\", all_day=\"False\")]"),
    ("llama4_pythonic", '[create_event(title="Sync", attendees=["a"], all_day=False, ratio=0.5)]'),
])
def test_admits_the_familys_spelling_and_parses_back(family: str, text: str) -> None:
    ok, why = accepts(_required(family), text)
    assert ok, why
    message = chatparse.parse_response(text, family, prefix="", tools=TOOLS)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    assert message.get("tool_calls")
    for call in message["tool_calls"]:
        jsonschema.validate(call["function"]["arguments"], schemas[call["function"]["name"]])


@pytest.mark.parametrize(("family", "text"), [
    ("lfm2", "<|tool_call_start|>[get_weather(city='Seoul')]<|tool_call_end|>"),  # LFM2 quotes with "
    ("lfm2", '<|tool_call_start|>[get_weather("Seoul")]<|tool_call_end|>'),  # positional
    ("lfm2", '<|tool_call_start|>[get_weather(days=2)]<|tool_call_end|>'),  # required city missing
    ("lfm2", '<|tool_call_start|>[get_weather(city="x", unit="c")]<|tool_call_end|>'),  # undeclared
    ("lfm2", '<|tool_call_start|>[get_weather(city="a\\x41")]<|tool_call_end|>'),  # escapes beyond the simple
    ("lfm2", '<|tool_call_start|>[create_event(title="x", ratio=1e400)]<|tool_call_end|>'),  # not finite
    ("olmo3", "<function_calls>\ncreate_event(title='x', all_day=False)\n</function_calls>"),  # JSON constants
    ("llama4_pythonic", '[get_weather(city=2)]'),  # a string parameter is a string
    ("llama4_pythonic", '[get_weather(city="x", days="two")]'),
    ("llama4_pythonic", "[create_event(title=\"x\", attendees=\"['a\\\\n']\")]"),  # no escapes inside
])
def test_rejects_other_spellings(family: str, text: str) -> None:
    assert not accepts(_required(family), text)[0]


def test_a_parameter_that_is_no_identifier_has_no_grammar() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"first-name": {"type": "string"}}}}}]
    with pytest.raises(GrammarError) as info:
        tool_grammar("lfm2", tools)
    assert info.value.code == "unsupported_schema"


@pytest.mark.parametrize("values", [{"quote": "`"}, {"constants": "yaml"}, {"typed": "any"}, {"bogus": "x"}])
def test_bad_values_are_named(values: dict[str, str]) -> None:
    template = copy.deepcopy(get_template("lfm2"))
    template["fields"]["tool_calls"]["chatparse"]["write"]["values"] = values
    with pytest.raises(GrammarError) as info:
        _required("lfm2", template)
    assert info.value.code == "bad_write_form"


def test_a_tool_without_properties_is_called_without_arguments() -> None:
    tools = [{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]
    lark = tool_grammar("lfm2", tools, tool_choice="required", prefix="").lark
    assert accepts(lark, "<|tool_call_start|>[now()]<|tool_call_end|>")[0]
    assert not accepts(lark, '<|tool_call_start|>[now(x=1)]<|tool_call_end|>')[0]


@pytest.mark.parametrize(("tool", "code"), [
    ({"name": "2fast", "parameters": {"type": "object", "properties": {}}}, "unsupported_name"),
    ({"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}}},
     "unsupported_schema"),
])
def test_what_cannot_be_written_is_named(tool: dict[str, Any], code: str) -> None:
    with pytest.raises(GrammarError) as info:
        tool_grammar("llama4_pythonic", [{"type": "function", "function": tool}])
    assert info.value.code == code
