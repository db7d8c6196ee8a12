"""Body ``spellings`` (K2 Horizon): a call in each format the chat template switches between (xml, xml_typed,
json), every one parsing back to the same call; and a reasoning block with several spellings (``also``)."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from tests.grammar.walk import accepts

FAMILY = "k2_horizon"
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
]
PROMPT = "<|ifm|im_start|>user\nWeather?<|ifm|im_end|><|ifm|im_start|>assistant\n"
XML = "<ifm|arg_key>city</ifm|arg_key>\n<ifm|arg_value>Seoul <b></ifm|arg_value>\n<ifm|arg_key>days</ifm|arg_key>\n" \
      "<ifm|arg_value>2</ifm|arg_value>\n"
TYPED = "<ifm|arg_key>city</ifm|arg_key>\n<ifm|arg_type>string</ifm|arg_type>\n<ifm|arg_value>Seoul <b>" \
        "</ifm|arg_value>\n<ifm|arg_key>days</ifm|arg_key>\n<ifm|arg_type>integer</ifm|arg_type>\n" \
        "<ifm|arg_value>2</ifm|arg_value>\n"


def _turn(body: str) -> str:
    return f"<ifm|tool_calls>\n<ifm|tool_call>{body}</ifm|tool_call>\n</ifm|tool_calls><|ifm|im_end|>"


@pytest.mark.parametrize("body", [
    "get_weather\n" + XML,
    "get_weather\n" + TYPED,
    '{"name": "get_weather", "arguments": {"city": "Seoul <b>", "days": 2}}',
])
def test_each_spelling_is_admitted_and_parses_back(body: str) -> None:
    text = _turn(body)
    ok, why = accepts(tool_grammar(FAMILY, TOOLS, tool_choice="required", prefix=PROMPT).lark, text)
    assert ok, why
    (call,) = chatparse.parse_response(text, FAMILY, prefix=PROMPT, tools=TOOLS)["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": {"city": "Seoul <b>", "days": 2}}


@pytest.mark.parametrize("body", [
    "get_weather\n" + TYPED.replace("integer", "number"),  # the template prints 'integer' for whole numbers
    "get_weather\n" + TYPED.split("<ifm|arg_key>days")[0] + "<ifm|arg_key>days" + XML.split("<ifm|arg_key>days")[1],
    # (one call in one spelling: a typed parameter, then an untyped one)
    '{"name": "get_weather", "arguments": {"days": 2}}',  # the required city missing
])
def test_other_spellings_are_not(body: str) -> None:
    assert not accepts(tool_grammar(FAMILY, TOOLS, tool_choice="required", prefix=PROMPT).lark, _turn(body))[0]


@pytest.mark.parametrize(("opened", "closed"), [("<ifm|think>", "</ifm|think>"),
                                                ("<ifm|think_fast>", "</ifm|think_fast>"),
                                                ("<ifm|think_faster>", "</ifm|think_faster>")])
def test_the_reasoning_block_has_each_effort_s_spelling(opened: str, closed: str) -> None:
    answer = f"Hm.\n{closed}\nSunny.<|ifm|im_end|>"
    assert accepts(tool_grammar(FAMILY, TOOLS, prefix=PROMPT + opened + "\n").lark, answer)[0]  # opened by the prompt
    assert accepts(tool_grammar(FAMILY, TOOLS, prefix=PROMPT).lark, opened + answer)[0]  # by the model
    message = chatparse.parse_response(answer, FAMILY, prefix=PROMPT + opened + "\n", tools=TOOLS)
    assert (message["thinking"], message["content"]) == ("Hm.", "Sunny.")


@pytest.mark.parametrize(("field", "key", "value"), [
    ("tool_calls", "spellings", [{"call": "{body}", "body": "json-call"},
                                 {"call": "{name}\n{body}", "body": "xml-parameters",
                                  "parameter": "<ifm|arg_key>{key}</ifm|arg_key>\n<ifm|arg_value>{value}</ifm|arg_value>\n"}]),
    ("tool_calls", "spellings", [{"call": "{body}", "body": "spellings"}]),
    ("tool_calls", "spellings", []),
    ("thinking", "also", [["<ifm|think_fast>"]]),
])
def test_bad_forms_are_named(field: str, key: str, value: Any) -> None:
    template = chatparse.get_template(FAMILY)
    template["fields"][field]["chatparse"]["write"][key] = value
    with pytest.raises(GrammarError) as info:
        tool_grammar(template, TOOLS, tool_choice="required", prefix=PROMPT)
    assert info.value.code == "bad_write_form"


@pytest.mark.parametrize("body", [
    "get_weather\n" + TYPED,
    '{"name": "get_weather", "arguments": {"city": "Seoul <b>", "days": 2}}',
])
def test_markers_that_are_tokens(body: str) -> None:
    import llguidance

    from tests.grammar.test_build_write_forms import _SpecialTokenizer

    tags = ("think", "think_fast", "think_faster", "tool_calls", "tool_call", "arg_key", "arg_type", "arg_value")
    specials = [f"<{s}ifm|{tag}>" for tag in tags for s in ("", "/")] + ["<|ifm|im_end|>", "<|ifm|im_start|>"]
    tokenizer = _SpecialTokenizer(specials)
    lark = tool_grammar(FAMILY, TOOLS, prefix=PROMPT + "<ifm|think_fast>\n", special_tokens=specials).lark
    matcher = llguidance.LLMatcher(llguidance.LLTokenizer(llguidance.TokenizerWrapper(tokenizer)), lark)
    assert not matcher.is_error(), matcher.get_error()
    text = "Hm.\n</ifm|think_fast>\n" + _turn(body)
    assert all(matcher.consume_token(t) for t in tokenizer(text.encode())) and matcher.is_accepting()
