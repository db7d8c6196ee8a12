"""``tool_grammar``: choices, errors, the reasoning state from the prompt, special tokens, the cache, and the
JSON Schema subset (what is enforced, what raises, what ``lenient`` leaves free)."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.grammar import GrammarError, ToolGrammar, tool_grammar
from tests.grammar.walk import accepts

WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"]}}}]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Seoul"}}\n</tool_call>'


def schema_tool(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": schema}, "required": ["x"]}}}]


def admits(grammar: ToolGrammar, text: str) -> bool:
    return accepts(grammar.lark, text)[0]


def test_the_four_choices() -> None:
    auto = tool_grammar("qwen3", WEATHER)
    assert admits(auto, "Sure." + CALL + "<|im_end|>") and admits(auto, "Just text.")
    required = tool_grammar("qwen3", WEATHER, tool_choice="required")
    assert admits(required, CALL) and not admits(required, "Just text.")
    assert not admits(required, "Sure." + CALL)
    named = tool_grammar("qwen3", WEATHER, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert named.tool_choice == "get_weather" and admits(named, CALL) and not admits(named, CALL + "\n" + CALL)
    none = tool_grammar("qwen3", WEATHER, tool_choice="none")
    assert admits(none, "Just text.") and not admits(none, "x" + CALL)
    single = tool_grammar("qwen3", WEATHER, tool_choice="required", parallel_tool_calls=False)
    assert admits(single, CALL) and not admits(single, CALL + "\n" + CALL)
    assert admits(tool_grammar("qwen3", WEATHER, tool_choice="required"), CALL + "\n" + CALL)


def test_arguments_follow_the_schema() -> None:
    grammar = tool_grammar("qwen3", WEATHER, tool_choice="required")
    assert not admits(grammar, CALL.replace('"Seoul"', "5"))  # a number where a string belongs
    assert not admits(grammar, CALL.replace('{"city": "Seoul"}', "{}"))  # a required property missing
    assert admits(grammar, CALL.replace('"Seoul"}', '"Seoul", "days": 2}'))
    assert not admits(grammar, CALL.replace('"Seoul"}', '"Seoul", "other": 2}'))  # only declared properties
    assert not admits(grammar, CALL.replace("get_weather", "get_time"))  # an unknown tool


def test_bad_choices_and_missing_tools_are_named_errors() -> None:
    with pytest.raises(GrammarError) as info:
        tool_grammar("qwen3", WEATHER, tool_choice="get_time")
    assert info.value.code == "unknown_tool" and "get_weather" in str(info.value)
    with pytest.raises(GrammarError) as info:
        tool_grammar("qwen3", [], tool_choice="required")
    assert info.value.code == "no_tools"
    with pytest.raises(GrammarError) as info:
        tool_grammar("qwen3", WEATHER, tool_choice=3)
    assert info.value.code == "bad_tool_choice"


def test_a_template_without_tool_calls_or_a_written_form_says_so() -> None:
    with pytest.raises(GrammarError) as info:
        tool_grammar("gemma2", WEATHER)
    assert info.value.code == "no_tool_calls"
    spec = chatparse.get_template("qwen3")
    spec["fields"]["tool_calls"].pop("open")
    spec["fields"]["tool_calls"]["open_pattern"] = "<tool_call>(?=\\s*\\{)"
    del spec["fields"]["tool_calls"]["chatparse"]["write"]
    with pytest.raises(GrammarError) as info:
        tool_grammar(spec, WEATHER)
    assert info.value.code == "no_write_form" and "chatparse.write" in str(info.value)


def test_a_literal_template_needs_no_written_form() -> None:
    spec = chatparse.get_template("qwen3")
    del spec["fields"]["tool_calls"]["chatparse"]["write"]
    grammar = tool_grammar(spec, WEATHER, tool_choice="required")
    assert admits(grammar, CALL.replace("\n", ""))


def test_reasoning_follows_the_prompt() -> None:
    opened = tool_grammar("qwen3", WEATHER, prefix="<|im_start|>assistant\n<think>\n")
    assert opened.reasoning == "open"
    assert admits(opened, "hmm, weather.\n</think>\n\n" + CALL)
    assert not admits(opened, CALL)  # the reasoning block must close first
    free = tool_grammar("qwen3", WEATHER, prefix="<|im_start|>assistant\n")
    assert free.reasoning == "optional"
    assert admits(free, "<think>\nhmm\n</think>\n\n" + CALL) and admits(free, CALL)
    after = tool_grammar("qwen3", WEATHER, reasoning=False)
    assert after.reasoning == "none" and not admits(after, "<think>\nhmm\n</think>\n\n" + CALL)


def test_reasoning_text_holds_no_end_of_turn() -> None:
    grammar = tool_grammar("qwen3", WEATHER, prefix="<|im_start|>assistant\n<think>\n")
    assert not admits(grammar, "a<|im_end|>b</think>\n\nok")


def test_special_tokens_are_named_as_tokens() -> None:
    grammar = tool_grammar("qwen3", WEATHER, special_tokens=["<tool_call>", "</tool_call>", "<|im_end|>"])
    assert "<tool_call>" in grammar.lark and '"<tool_call>' not in grammar.lark
    assert '"<|im_end|>"' not in grammar.lark


def test_results_are_cached_by_request() -> None:
    first = tool_grammar("qwen3", WEATHER, tool_choice="required")
    assert tool_grammar("qwen3", WEATHER, tool_choice="required") is first
    assert tool_grammar("qwen3", WEATHER, tool_choice="auto") is not first


def test_the_cache_tells_property_orders_apart() -> None:
    # The grammar writes properties in schema order: the same properties in another order are another request.
    ab = schema_tool({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}})
    ba = schema_tool({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}})
    tool_grammar("qwen3", ab, tool_choice="required")
    grammar = tool_grammar("qwen3", ba, tool_choice="required")

    def call(value: str) -> str:
        return f'<tool_call>\n{{"name": "f", "arguments": {{"x": {value}}}}}\n</tool_call>'

    assert admits(grammar, call('{"b": 1, "a": "s"}')) and not admits(grammar, call('{"a": "s", "b": 1}'))


@pytest.mark.parametrize(("schema", "good", "bad"), [
    ({"type": "string", "enum": ["a", "b"]}, '"a"', '"c"'),
    ({"type": ["integer", "null"]}, "null", '"1"'),
    ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "true", '"x"'),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}, "[1, 2]", "[1, 2, 3]"),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1}, "[1]", "[]"),
    ({"type": "string", "maxLength": 3}, '"abc"', '"abcd"'),
    ({"type": "object", "properties": {"k": {"type": "boolean"}}, "required": ["k"]}, '{"k": false}', "{}"),
    ({"type": "object"}, '{"any": [1, {"x": null}]}', "[]"),
    ({"const": "fixed"}, '"fixed"', '"other"'),
    ({"type": "number"}, "-1.5e3", "01"),
])
def test_schema_features(schema: dict[str, Any], good: str, bad: str) -> None:
    grammar = tool_grammar("qwen3", schema_tool(schema), tool_choice="required")

    def call(value: str) -> str:
        return f'<tool_call>\n{{"name": "f", "arguments": {{"x": {value}}}}}\n</tool_call>'

    assert admits(grammar, call(good)), good
    assert not admits(grammar, call(bad)), bad


def test_refs_and_recursion() -> None:
    tree = {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {
        "$ref": "#/$defs/node"}}}}}, "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}},
        "required": ["root"]}
    tools = [{"type": "function", "function": {"name": "t", "parameters": tree}}]
    grammar = tool_grammar("qwen3", tools, tool_choice="required")
    assert admits(grammar, '<tool_call>\n{"name": "t", "arguments": {"root": {"kids": [{"kids": []}, {}]}}}\n'
                           '</tool_call>')


def test_unenforceable_keywords_raise_or_are_listed_when_lenient() -> None:
    tools = schema_tool({"type": "integer", "minimum": 1})
    with pytest.raises(GrammarError) as info:
        tool_grammar("qwen3", tools)
    assert info.value.code == "unsupported_schema" and "minimum" in str(info.value) and "lenient" in str(info.value)
    grammar = tool_grammar("qwen3", tools, lenient=True)
    assert grammar.unenforced == ("tools/f/parameters/properties/x/minimum",)
