"""The json-list body: all calls of a region in one JSON array, as many items as the tool choice allows."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chatparse.grammar import GrammarError, tool_grammar
from chatparse.templates import get_template
from tests.grammar.walk import accepts

TOOLS = [{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
         {"type": "function", "function": {"name": "echo", "parameters": {
             "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}]
ONE = '[TOOL_CALLS][{"name": "echo", "arguments": {"text": "hi"}}]'
TWO = '[TOOL_CALLS][{"name": "echo", "arguments": {"text": "hi"}}, {"name": "get_time", "arguments": {}}]'


def _admits(choice: Any, parallel: bool, text: str, template: Any = "mistral_v3") -> bool:
    return accepts(tool_grammar(template, TOOLS, tool_choice=choice, parallel_tool_calls=parallel).lark, text)[0]


def test_the_array_holds_the_calls_the_choice_allows() -> None:
    assert _admits("required", True, TWO)
    assert _admits("required", False, ONE)
    assert not _admits("required", False, TWO)
    assert _admits("echo", True, ONE)
    assert not _admits("echo", True, TWO)
    assert not _admits("required", True, "[TOOL_CALLS][]")
    assert _admits("auto", True, "Sure. " + TWO + "</s>")
    assert not _admits("auto", False, "Sure. " + ONE + " " + ONE)
    assert not _admits("none", True, ONE)


def test_an_id_key_is_optional_before_the_name() -> None:
    assert _admits("required", True, '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "echo", '
                   '"parameters": {"text": "hi"}}]<|END_ACTION|>', "cohere_command")
    assert _admits("required", True, '<|START_ACTION|>[{"tool_name": "get_time", "parameters": {}}]<|END_ACTION|>',
                   "cohere_command")


def test_names_as_keys() -> None:
    assert _admits("required", True, '<|tools_prefix|>[{"echo": {"text": "hi"}}]<|tools_suffix|>', "apertus")


@pytest.mark.parametrize("write", [
    {"call": "[TOOL_CALLS]{body}", "body": "json-list", "group": ["<a>", "</a>"]},
    {"call": "[TOOL_CALLS]{name}{body}", "body": "json-list"},
])
def test_a_list_takes_no_group_and_no_name(write: dict[str, Any]) -> None:
    template = copy.deepcopy(get_template("mistral_v3"))
    template["fields"]["tool_calls"]["chatparse"]["write"] = write
    with pytest.raises(GrammarError) as info:
        tool_grammar(template, TOOLS, tool_choice="required")
    assert info.value.code == "bad_write_form"
