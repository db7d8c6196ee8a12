"""Layout ``messages`` (harmony, gpt-oss): an optional analysis message, then the final answer or one call, each a
message of its own; message text holds none of the format's markers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from chatparse.grammar.build import Builder
from chatparse.grammar.ir import seq
from chatparse.grammar.lark import to_lark
from chatparse.template.compile import load_template
from chatparse.templates import get_template
from chatparse.tools.schema import as_tool
from tests.grammar.walk import accepts

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
]
PROMPT = "<|start|>user<|message|>Weather?<|end|><|start|>assistant"
FINAL = "<|channel|>final<|message|>It is sunny.<|return|>"
ANALYSIS = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
CALL = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Seoul"}<|call|>'
RENDERED_CALL = ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Seoul"}<|call|>'


def _lark(choice: Any = "auto", prompt: str = PROMPT, family: Any = "gpt_oss") -> str:
    return tool_grammar(family, TOOLS, tool_choice=choice, prefix=prompt).lark


@pytest.mark.parametrize(("choice", "text", "admitted"), [
    ("auto", FINAL, True),
    ("auto", ANALYSIS + FINAL, True),
    ("auto", CALL, True),
    ("auto", ANALYSIS + RENDERED_CALL, True),
    ("auto", "<|channel|>final<|message|>Cut short", True),
    ("auto", "Hello" + FINAL, False),  # text outside a message
    ("auto", "<|channel|>final<|message|>a<|end|>b<|return|>", False),  # a marker inside the text
    ("auto", "<|channel|>final<|message|>a<|cha", False),  # ends in the first part of a marker
    ("auto", CALL + "<|start|>assistant" + CALL, False),  # a call ends the turn
    ("auto", ANALYSIS + ANALYSIS + FINAL, False),
    ("required", FINAL, False),
    ("required", ANALYSIS + CALL, True),
    ("none", CALL, False),
    ("none", ANALYSIS + FINAL, True),
    ("get_time", CALL, False),
    ("get_time", "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>", True),
])
@pytest.mark.parametrize("family", ["gpt_oss", "llm_jp_4.1"])
def test_turns(family: str, choice: str, text: str, admitted: bool) -> None:
    assert accepts(_lark(choice, family=family), text)[0] is admitted
    if admitted:
        message = chatparse.parse_response(text, family, prefix=PROMPT, tools=TOOLS)
        assert bool(message.get("tool_calls")) is (choice not in ("none",) and "to=functions" in text)


def test_an_unknown_layout_is_named() -> None:
    template = copy.deepcopy(get_template("gpt_oss"))
    template["fields"]["content"]["chatparse"]["write"]["layout"] = "pages"
    with pytest.raises(GrammarError) as info:
        _lark(family=template)
    assert info.value.code == "bad_write_form"


@pytest.mark.parametrize(("state", "text", "admitted"), [
    ("open", "Thinking.<|end|><|start|>assistant" + FINAL, True),
    ("open", FINAL, False),
    ("closed", FINAL, True),
    ("closed", ANALYSIS + FINAL, False),
])
def test_reasoning_by_the_prompts_state(state: str, text: str, admitted: bool) -> None:
    builder = Builder(load_template("gpt_oss"), [as_tool(t) for t in TOOLS], lenient=False)
    builder.grammar.rules["turn"] = seq(builder.reasoning(state), builder.answer("auto", None, True))
    assert accepts(to_lark(builder.grammar, "turn"), text)[0] is admitted


def test_another_spelling_needs_its_body() -> None:
    template = copy.deepcopy(get_template("gpt_oss"))
    template["fields"]["tool_calls"]["chatparse"]["write"]["also"] = [" to=functions.{name}<|message|>"]
    with pytest.raises(GrammarError) as info:
        _lark(family=template)
    assert info.value.code == "bad_write_form"


def test_after_reasoning_the_header_may_come_first() -> None:
    lark = tool_grammar("gpt_oss", TOOLS, prefix=PROMPT, reasoning=False).lark
    assert accepts(lark, "<|start|>assistant" + FINAL)[0]
    assert accepts(lark, FINAL)[0]
    assert not accepts(lark, ANALYSIS + FINAL)[0]
