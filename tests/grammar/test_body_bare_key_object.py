"""Body ``bare-key-object``: ``{key:<|"|>text<|"|>,n:1}`` arguments (Gemma 4, FunctionGemma), keys in sorted order
as their chat templates write them; every admitted call parses back to schema-valid arguments."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from tests.grammar.walk import accepts

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "write_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"]}}},
    {"type": "function", "function": {"name": "create_event", "parameters": {
        "type": "object", "properties": {
            "title": {"type": "string"}, "attendees": {"type": "array", "items": {"type": "string"}},
            "location": {"type": "object"}, "all_day": {"type": "boolean"}, "first name": {"type": "string"},
            "mode": {"enum": ["a b", "c"]}, "ratio": {"type": ["number", "null"]}},
        "required": ["title"]}}},
]


def _required(family: str, tools: list[dict[str, Any]] = TOOLS, **options: Any) -> str:
    return tool_grammar(family, tools, tool_choice="required", prefix="", **options).lark


@pytest.mark.parametrize(("family", "text"), [
    ("gemma4", '<|tool_call>call:write_file{content:<|"|>line 1\nline 2 {a:1}, "q" <b>&</b><|"|>,'
               'path:<|"|>notes/a.txt<|"|>}<tool_call|>'),
    ("gemma4", '<|tool_call>call:create_event{all_day:false,attendees:[<|"|>a<|"|>,<|"|>b c<|"|>],'
               '<|"|>first name<|"|>:<|"|>Ann<|"|>,location:{room:5,tags:[true,null]},mode:<|"|>a b<|"|>,'
               'ratio:null,title:<|"|>Sync<|"|>}<tool_call|>'),
    ("gemma4", '<|tool_call>call:create_event{ratio:-1.5E-3,title:<|"|><tool_call|><|"|>}<tool_call|>'),
    ("functiongemma", "<start_function_call>call:write_file{content:<escape>x, y: z<escape>,path:<escape>p<escape>}"
                      "<end_function_call>"),
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
    ("gemma4", '<|tool_call>call:write_file{path:<|"|>p<|"|>,content:<|"|>x<|"|>}<tool_call|>'),  # unsorted
    ("gemma4", '<|tool_call>call:write_file{content:"x",path:<|"|>p<|"|>}<tool_call|>'),  # JSON string
    ("gemma4", '<|tool_call>call:write_file{content: <|"|>x<|"|>,path:<|"|>p<|"|>}<tool_call|>'),  # a space
    ("gemma4", '<|tool_call>call:create_event{all_day:False,title:<|"|>x<|"|>}<tool_call|>'),
    ("gemma4", '<|tool_call>call:create_event{ratio:1e400,title:<|"|>x<|"|>}<tool_call|>'),  # not finite
    ("functiongemma", "<start_function_call>call:write_file{content:<escape>x<escape>path:<escape>p<escape>}"
                      "<end_function_call>"),  # the parser's missing-comma repair is not written
])
def test_rejects_other_spellings(family: str, text: str) -> None:
    assert not accepts(_required(family), text)[0]


def test_string_lengths_cannot_be_enforced_on_a_delimited_string() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}}}]
    with pytest.raises(GrammarError) as info:
        _required("gemma4", tools)
    assert info.value.code == "unsupported_schema"
    grammar = tool_grammar("gemma4", tools, tool_choice="required", prefix="", lenient=True)
    assert grammar.unenforced
    assert accepts(grammar.lark, '<|tool_call>call:f{s:<|"|>longer<|"|>}<tool_call|>')[0]


def test_an_enum_value_holding_the_delimiter_has_no_grammar() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"s": {"enum": ['a<|"|>b']}}}}}]
    with pytest.raises(GrammarError) as info:
        _required("gemma4", tools)
    assert info.value.code == "unsupported_schema"


def test_a_turn_with_calls_may_end_with_the_tool_response_marker() -> None:
    lark = tool_grammar("gemma4", TOOLS, prefix="").lark
    call = '<|tool_call>call:write_file{content:<|"|>x<|"|>,path:<|"|>p<|"|>}<tool_call|>'
    assert accepts(lark, call + "<|tool_response>")[0]
    assert accepts(lark, call + "Done.<turn|>")[0]
    assert not accepts(lark, call + "<eos>")[0]  # a marker the parser discards after is not written


def test_a_tool_name_the_opener_cannot_capture_is_named() -> None:
    tools = [{"type": "function", "function": {"name": "a b", "parameters": {"type": "object", "properties": {}}}}]
    with pytest.raises(GrammarError) as info:
        _required("gemma4", tools)
    assert info.value.code == "unsupported_name"
