"""Body ``element-tree`` (MiniMax M3): arguments as nested elements named after the parameters, every tag behind
``]<]minimax[>[``; lists as ``<item>`` elements, objects with ``properties`` as their members; free-form objects
raise; every admitted call parses back to schema-valid arguments."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from tests.grammar.walk import accepts

FAMILY = "minimax_m3"
NS = "]<]minimax[>["
PROMPT = "]~b]user\nPlan it.[e~[\n]~b]ai\n"
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "plan", "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"},
            "stops": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "nights": {"type": "integer"}}, "required": ["name"]}},
            "flags": {"type": "object", "properties": {"fast": {"type": "boolean"}, "seat": {"enum": ["1A", 2]}}},
            "budget": {"type": ["number", "null"]},
            "mode": {"enum": [1, "a"]},
        }, "required": ["city"]}}},
]


def _el(name: str, inner: str) -> str:
    return f"{NS}<{name}>{inner}{NS}</{name}>"


def _call(args: str) -> str:
    return f'</mm:think>{NS}<tool_call>\n{NS}<invoke name="plan">{args}{NS}</invoke>\n{NS}</tool_call>[e~['


def _required(tools: list[dict[str, Any]] = TOOLS, **options: Any) -> str:
    return tool_grammar(FAMILY, tools, tool_choice="required", prefix=PROMPT, **options).lark


@pytest.mark.parametrize("args", [
    _el("city", "Oslo <b>&</b>\n"),
    _el("city", "") + _el("stops", _el("item", _el("name", "a") + _el("nights", "2")) + _el("item", _el("name", "true"))),
    _el("city", "x") + _el("flags", _el("seat", "1A")) + _el("budget", "2.5"),
    _el("city", "x") + _el("flags", _el("fast", "false") + _el("seat", "2")) + _el("budget", "null"),
    _el("city", "x") + _el("mode", "a"),
])
def test_admits_nested_elements_and_parses_back(args: str) -> None:
    text = _call(args)
    ok, why = accepts(_required(), text)
    assert ok, why
    (call,) = chatparse.parse_response(text, FAMILY, prefix=PROMPT, tools=TOOLS)["tool_calls"]
    jsonschema.validate(call["function"]["arguments"], TOOLS[0]["function"]["parameters"])


@pytest.mark.parametrize("args", [
    _el("city", "x") + _el("stops", ""),  # an empty list reads as the empty string
    _el("city", "x") + _el("flags", ""),  # so does an object with no member
    _el("city", "x") + " " + _el("budget", "1"),  # text between parameters
    _el("city", f"a{NS}<b>c{NS}</b>"),  # tags inside a string
    _el("city", "x[e~[y"),  # the end of the turn inside a string
    _el("city", "x") + _el("mode", "1"),  # 1 is read back as the text '1', not the enum's number
    _el("city", "x") + _el("flags", _el("seat", "3")),
])
def test_rejects_what_the_parser_reads_otherwise(args: str) -> None:
    ok, _ = accepts(_required(), _call(args))
    assert not ok


@pytest.mark.parametrize(("schema", "path"), [
    ({"type": "object"}, "tools/f/parameters/properties/p"),
    ({"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string"}}},
     "tools/f/parameters/properties/p/items"),
    ({"description": "anything"}, "tools/f/parameters/properties/p"),
    ({"type": "array", "items": {"type": "string"}, "maxItems": 0}, "tools/f/parameters/properties/p"),
    ({"type": "object", "properties": {"item": {"type": "string"}}}, "tools/f/parameters/properties/p"),
    ({"type": "object", "properties": {"a b": {"type": "string"}}}, "tools/f/parameters/properties/p/properties/a b"),
])
def test_values_no_element_grammar_writes_raise(schema: dict[str, Any], path: str) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"p": schema}}}}]
    for lenient in (False, True):
        with pytest.raises(GrammarError) as info:
            _required(tools, lenient=lenient)
        assert (info.value.code, info.value.path) == ("unsupported_schema", path)


def test_a_turn_may_start_with_the_lone_close_the_chat_template_writes() -> None:
    lark = tool_grammar(FAMILY, TOOLS, prefix=PROMPT).lark
    for text in ("</mm:think>It is sunny.[e~[", "<mm:think>Hm.</mm:think>It is sunny.[e~[", "It is sunny.[e~["):
        assert accepts(lark, text)[0], text
    assert not accepts(lark, "</mm:think></mm:think>It is sunny.[e~[")[0]


def test_markers_that_are_tokens() -> None:
    import llguidance

    from tests.grammar.test_build_write_forms import _SpecialTokenizer

    # (the tag prefix and '[e~[' are added tokens too, but the Lark form names only '<...>' tokens)
    specials = ["<mm:think>", "</mm:think>"]
    tokenizer = _SpecialTokenizer(specials)
    text = "</mm:think>Let me check." + _call(_el("city", "Oslo") + _el("stops", _el("item", _el("name", "a"))))[
        len("</mm:think>"):]
    lark = tool_grammar(FAMILY, TOOLS, prefix=PROMPT, special_tokens=specials).lark
    matcher = llguidance.LLMatcher(llguidance.LLTokenizer(llguidance.TokenizerWrapper(tokenizer)), lark)
    assert not matcher.is_error(), matcher.get_error()
    assert all(matcher.consume_token(t) for t in tokenizer(text.encode())) and matcher.is_accepting()
