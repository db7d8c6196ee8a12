"""Write-form keys of build.py beyond the calls' spelling: ``avoid`` (openers the parser reads from a regex, kept
out of free text) and the markers a turn may end with."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from chatparse.templates import get_template
from tests.grammar.walk import accepts

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
]


@pytest.mark.parametrize(("family", "text", "admitted"), [
    ("hermes", 'Use {"a": 1} or <b>bold</b>.<|im_end|>', True),
    ("hermes", 'See {"name": "get_time", "arguments": {}}<|im_end|>', False),  # the parser reads a call
    ("hermes", "See <function=get_time></function><|im_end|>", False),
    ("hermes", '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call><|im_end|>', True),
    ("llama3_json", '{"name": "get_time", "parameters": {}}<|eom_id|>', True),
    ("llama3_json", 'Text {"a": 1}<|eot_id|>', True),
    ("llama3_json", 'Text {"name": "x"}<|eot_id|>', False),  # starts a call, which must follow
    ("llama3_json", 'Text { "name": 1}<|eot_id|>', False),
    ("llama3_json", '<|python_tag|>{"name": "get_time", "parameters": {}}<|eot_id|>', False),
    ("llama3_json", "Done.<|end_of_text|>", False),  # the parser discards after it: not written
])
def test_free_text_avoids_what_the_parser_reads_as_a_call(family: str, text: str, admitted: bool) -> None:
    prompt = ""
    assert accepts(tool_grammar(family, TOOLS, prefix=prompt).lark, text)[0] is admitted
    if admitted:
        message = chatparse.parse_response(text, family, prefix=prompt, tools=TOOLS)
        assert bool(message.get("tool_calls")) is ("get_time" in text)


@pytest.mark.parametrize("avoid", ["<function", [""], [3]])
def test_a_bad_avoid_is_named(avoid: Any) -> None:
    template = copy.deepcopy(get_template("hermes"))
    template["fields"]["tool_calls"]["chatparse"]["write"]["avoid"] = avoid
    with pytest.raises(GrammarError) as info:
        tool_grammar(template, TOOLS)
    assert info.value.code == "bad_write_form"


@pytest.mark.parametrize(("parallel", "text", "admitted"), [
    (True, "See [1] and [the docs](x).<|eot|>", True),
    (True, "See [get_time()] then [2] and [ get_time()] done<|eot|>", True),
    (True, "See [ 2]<|eot|>", False),  # whitespace after the trigger belongs to a call
    (True, "See [other(1)]<|eot|>", False),  # the parser opens a call for any name
    (True, "Cut [get_time(", False),
    (False, "[1] [get_time()] done<|eot|>", True),
    (False, "[get_time()] and [1]<|eot|>", False),  # after the one call, no trigger
])
def test_a_trigger_is_text_where_no_call_follows(parallel: bool, text: str, admitted: bool) -> None:
    grammar = tool_grammar("llama4_pythonic", TOOLS, prefix="", parallel_tool_calls=parallel)
    assert accepts(grammar.lark, text)[0] is admitted
    if admitted:
        message = chatparse.parse_response(text, "llama4_pythonic", prefix="", tools=TOOLS)
        assert len(message.get("tool_calls", [])) == text.count("get_time()")


def test_a_bad_opens_is_named() -> None:
    template = copy.deepcopy(get_template("llama4_pythonic"))
    template["fields"]["tool_calls"]["chatparse"]["write"]["opens"] = ""
    with pytest.raises(GrammarError) as info:
        tool_grammar(template, TOOLS)
    assert info.value.code == "bad_write_form"


class _SpecialTokenizer:
    """Bytes, plus ``specials`` as single added tokens (what a model's tokenizer does with its markers)."""

    def __init__(self, specials: list[str]) -> None:
        self.specials = specials
        self.tokens = [bytes([i]) for i in range(256)] + [s.encode() for s in specials] + [b"<eos>"]
        self.special_token_ids = list(range(256, len(self.tokens)))
        self.eos_token_id = len(self.tokens) - 1
        self.bos_token_id = None

    def __call__(self, data: bytes) -> list[int]:
        out: list[int] = []
        i = 0
        while i < len(data):
            hit = next((j for j, s in enumerate(self.specials) if data.startswith(s.encode(), i)), None)
            out.append(data[i] if hit is None else 256 + hit)
            i += 1 if hit is None else len(self.specials[hit].encode())
        return out


@pytest.mark.parametrize(("family", "specials", "text"), [
    ("llama4_pythonic", ["<|eot|>", "<|eom|>", "<|header_start|>", "<|python_start|>", "<|python_end|>"],
     'See [1]: [get_time(), create_event(title="Sync", attendees="[\'a\']")]<|eot|>'),
    ("gemma4", ['<|"|>', "<|tool_call>", "<tool_call|>", "<|tool_response>", "<turn|>", "<|turn>", "<|channel>",
                "<channel|>"], '<|tool_call>call:get_time{}<tool_call|>Done.<|tool_response>'),
])
def test_markers_that_are_tokens(family: str, specials: list[str], text: str) -> None:
    import llguidance

    tools = [*TOOLS, {"type": "function", "function": {"name": "create_event", "parameters": {
        "type": "object", "properties": {"title": {"type": "string"},
                                         "attendees": {"type": "array", "items": {"type": "string"}}}}}}]
    tokenizer = _SpecialTokenizer(specials)
    lark = tool_grammar(family, tools, prefix="", special_tokens=specials).lark
    matcher = llguidance.LLMatcher(llguidance.LLTokenizer(llguidance.TokenizerWrapper(tokenizer)), lark)
    assert not matcher.is_error(), matcher.get_error()
    assert all(matcher.consume_token(t) for t in tokenizer(text.encode())) and matcher.is_accepting()
