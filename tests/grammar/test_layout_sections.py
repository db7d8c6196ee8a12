"""Layout ``sections`` (Kimi K3): the reasoning channel, the response channel (always written), the tools channel
with the calls, then the message close; free text holds none of the format's markers."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from tests.grammar.walk import accepts

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
]
HEAD = '<|open|>message role="user"<|sep|>Weather?<|close|>message<|sep|><|end_of_msg|><|open|>message role="assistant"<|sep|>'
THINKING = HEAD + "<|open|>think<|sep|>"  # the chat template's default prompt (thinking on)
ANSWERING = HEAD + "<|open|>response<|sep|>"  # thinking=False
WEATHER = '<|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"<|sep|>Seoul' \
          '<|close|>argument<|sep|><|close|>call<|sep|>'
TIME = '<|open|>call tool="get_time" index="2"<|sep|><|close|>call<|sep|>'
END = "<|close|>message<|sep|><|end_of_msg|>"


def _tools(*calls: str) -> str:
    return "<|open|>tools<|sep|>" + "".join(calls) + "<|close|>tools<|sep|>"


def _lark(choice: Any = "auto", prompt: str = THINKING, parallel: bool = True) -> str:
    return tool_grammar("kimi_k3", TOOLS, tool_choice=choice, prefix=prompt, parallel_tool_calls=parallel).lark


@pytest.mark.parametrize(("choice", "prompt", "text", "admitted"), [
    ("auto", THINKING, "Hm.<|close|>think<|sep|><|open|>response<|sep|>Sunny.<|close|>response<|sep|>" + END, True),
    ("auto", THINKING, "<|close|>think<|sep|><|open|>response<|sep|>Let me see.<|close|>response<|sep|>"
     + _tools(WEATHER, TIME) + END, True),
    ("auto", THINKING, "Hm.<|close|>think<|sep|>Sunny.<|close|>response<|sep|>" + END, False),  # no response open
    ("auto", THINKING, "Hm.<|close|>think<|sep|><|open|>response<|sep|>Sunny." + END, False),  # no response close
    ("auto", ANSWERING, "Sunny.<|close|>response<|sep|>" + END, True),
    ("auto", ANSWERING, "<|close|>response<|sep|>" + _tools(WEATHER) + END, True),
    ("auto", ANSWERING, "Sun<|open|>ny.<|close|>response<|sep|>" + END, False),  # a marker in the text
    ("auto", ANSWERING, "Sunny.<|close|>response<|sep|>" + _tools() + END, False),  # an empty tools channel
    ("required", THINKING, "<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>"
     + _tools(WEATHER, TIME) + END, True),
    ("required", ANSWERING, "<|close|>response<|sep|>" + _tools(WEATHER) + "<|close|>message<|sep|>", True),
    ("required", ANSWERING, "Sure.<|close|>response<|sep|>" + _tools(WEATHER) + END, False),  # text before calls
    ("required", ANSWERING, "<|close|>response<|sep|>" + END, False),  # no call
    ("get_time", ANSWERING, "<|close|>response<|sep|>" + _tools(TIME) + END, True),
    ("get_time", ANSWERING, "<|close|>response<|sep|>" + _tools(TIME, TIME) + END, False),  # one call only
    ("get_time", ANSWERING, "<|close|>response<|sep|>" + _tools(WEATHER) + END, False),  # another tool
    ("none", ANSWERING, "<|close|>response<|sep|>" + _tools(WEATHER) + END, False),
])
def test_the_turn_is_sections_in_order(choice: str, prompt: str, text: str, admitted: bool) -> None:
    ok, why = accepts(_lark(choice, prompt), text)
    assert ok is admitted, why
    if admitted:
        message = chatparse.parse_response(text, "kimi_k3", prefix=prompt, tools=TOOLS)
        names = [c["function"]["name"] for c in message.get("tool_calls", [])]
        assert names == [name for name in ("get_weather", "get_time") if f'tool="{name}"' in text]


def test_no_parallel_calls_is_one_call() -> None:
    text = "<|close|>response<|sep|>" + _tools(WEATHER, TIME) + END
    assert accepts(_lark("required", ANSWERING), text)[0]
    assert not accepts(_lark("required", ANSWERING, parallel=False), text)[0]


def test_the_sections_need_their_written_forms() -> None:
    template = chatparse.get_template("kimi_k3")
    del template["fields"]["tool_calls"]["chatparse"]["write"]["group"]
    with pytest.raises(GrammarError) as info:
        tool_grammar(template, TOOLS, tool_choice="required", prefix=ANSWERING)
    assert info.value.code == "bad_write_form"
    template = chatparse.get_template("kimi_k3")
    template["fields"]["content"]["chatparse"]["write"]["tail"] = 5
    with pytest.raises(GrammarError) as info:
        tool_grammar(template, TOOLS, prefix=ANSWERING)
    assert info.value.code == "bad_write_form"


def test_markers_that_are_tokens() -> None:
    import llguidance

    from tests.grammar.test_build_write_forms import _SpecialTokenizer

    specials = ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"]
    tokenizer = _SpecialTokenizer(specials)
    text = "Hm.<|close|>think<|sep|><|open|>response<|sep|>Let me see.<|close|>response<|sep|>" + \
        _tools(WEATHER, TIME) + END
    lark = tool_grammar("kimi_k3", TOOLS, prefix=THINKING, special_tokens=specials).lark
    matcher = llguidance.LLMatcher(llguidance.LLTokenizer(llguidance.TokenizerWrapper(tokenizer)), lark)
    assert not matcher.is_error(), matcher.get_error()
    assert all(matcher.consume_token(t) for t in tokenizer(text.encode())) and matcher.is_accepting()
