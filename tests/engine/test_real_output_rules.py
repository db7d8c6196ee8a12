"""The engine's real-output rules on small templates: the end of the turn, guarded closes, regions that
end with their value, truncation, recovery item by item, extend, strip_joined, python_literals."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from tests.streamcheck import SIZES, check_event_stream, split, stream

CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}
BASE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>",
    "chatparse": {"end": ["<|end|>", "<eos>"], "discard_after_end": ["<pad>"], "drop": ["</think>"]},
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>", "repeats": True, "join": "\n"},
        "tool_calls": {"open": "<call>", "close": "</call>", "repeats": True, "content": "json-calls",
                       "content_args": {"accept": ["object"]}, "transform_each": True, "transform": CALL,
                       "chatparse": {"structure": "json", "truncation": True, "extend": True}},
        "content": {"repeats": True, "join": "", "content_args": {"strip": False},
                    "chatparse": {"strip_joined": True}},
    },
}
LIST = {**BASE, "fields": {**BASE["fields"], "tool_calls": {
    "open": "<calls>", "close": "</calls>", "repeats": True, "content": "json-calls", "transform_each": True,
    "transform": CALL, "chatparse": {"structure": "json", "truncation": True, "extend": True}}}}
BARE = {**BASE, "fields": {"tool_calls": {
    "open_pattern": r"(?=\{\"name\")", "repeats": True, "content": "json-calls",
    "content_args": {"accept": ["object"]}, "transform_each": True, "transform": CALL,
    "chatparse": {"structure": "json", "ends_with_value": True, "truncation": True, "extend": True}},
    "content": BASE["fields"]["content"]}}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def parse(text: str, spec: dict[str, Any] = BASE, **options: Any) -> dict[str, Any]:
    """The one-shot message, checked equal to the message of every chunking (and events well formed)."""
    message = chatparse.parse_response(text, spec, prefix="", **options)
    for size in SIZES:
        streamed, events = stream(spec, "", split(text, size), **options)
        assert streamed == message, f"{size}-character chunks"
        check_event_stream(events, streamed, spec)
    return message


def test_the_turn_ends_at_the_first_end_marker() -> None:
    assert parse("Hi.<|end|><pad><pad>\n") == {"role": "assistant", "content": "Hi."}
    assert parse("Hi.<|end|>\nUser: more") == {"role": "assistant", "content": "Hi.",
                                                "trailing": "\nUser: more"}
    assert parse("<think>cut off<eos>") == {"role": "assistant", "thinking": "cut off"}


def test_an_end_marker_in_the_prompt_tail_is_the_prompt_s() -> None:
    message = chatparse.parse_response("Hi.", BASE, prefix="<|assistant|><|end|>")
    assert message == {"role": "assistant", "content": "Hi."}


def test_content_is_the_text_as_written_and_stray_closers_drop() -> None:
    text = "<think>a</think>\n  Sure: <call>{\"name\": \"f\"}</call> and\n\nmore</think>!  "
    assert parse(text) == {"role": "assistant", "thinking": "a", "content": "Sure:  and\n\nmore!",
                           "tool_calls": [call("f")]}


def test_markers_inside_a_json_string_are_data() -> None:
    text = '<call>{"name": "f", "arguments": {"s": "a</call><|end|><eos> b"}}</call>after'
    assert parse(text) == {"role": "assistant", "content": "after", "tool_calls": [call("f", s="a</call><|end|><eos> b")]}


@pytest.mark.parametrize(("text", "raw"), [
    ('<call>{"name": "f", "arguments": {"s": "cut', '<call>{"name": "f", "arguments": {"s": "cut'),
    ('<call>{"name": "f", "arguments": {}', '<call>{"name": "f", "arguments": {}'),
    ("<call>", "<call>"),
    ("<cal", "<cal"),
    ('<call>{"name": "f", "arguments": {"s": "x"<|end|>', '<call>{"name": "f", "arguments": {"s": "x"'),
])
def test_a_cut_call_is_reported_not_returned(text: str, raw: str) -> None:
    message = parse('<call>{"name": "g"}</call>Done. ' + text)
    assert message["tool_calls"] == [call("g")]
    assert message["content"] == "Done."
    assert message["malformed"] == [{"field": "tool_calls", "code": "truncated", "raw": raw}]


def test_a_whole_call_without_its_close_is_a_call() -> None:
    assert parse('<call>{"name": "f", "arguments": {"q": 1}}') == {"role": "assistant", "tool_calls": [call("f", q=1)]}
    assert parse('<call>{"name": "f"}</ca') == {"role": "assistant", "tool_calls": [call("f")]}


@pytest.mark.parametrize("reason", [None, "stop", "length", "MAX_TOKENS"])
def test_a_cut_call_list_is_one_unit(reason: str | None) -> None:
    """A list whose close bracket never came presents none of its calls as complete, whatever the finish
    reason (only the end of the text can stop a list half-way): the whole list is reported with its raw
    text, and a call block before it is kept."""
    text = '<calls>[{"name": "a"}, {"name": "b", "arguments": {"x": 1}}, {"name": "c", "argu'
    message = parse('<call>{"name": "g"}</call>' + text, LIST | {"fields": {**LIST["fields"], "call": {
        **BASE["fields"]["tool_calls"], "open": "<call>", "close": "</call>"}}}, finish_reason=reason)
    assert message["call"] == [call("g")]
    assert "tool_calls" not in message
    assert message["malformed"] == [{"field": "tool_calls", "code": "truncated", "raw": text}]
    whole_items = parse('<calls>[{"name": "a"}, {"name": "b"}', LIST, finish_reason=reason)
    assert "tool_calls" not in whole_items and whole_items["malformed"][0]["code"] == "truncated"


def test_a_closed_list_the_token_limit_cut_before_its_region_closed_is_cut() -> None:
    """Under a token-limit finish reason the region's close never came: the list is cut as one unit. The
    text-only rule (no finish reason, or one that is not the limit) keeps a list whose bracket closed."""
    text = '<calls>[{"name": "a"}, {"name": "b", "arguments": {"x": 1}}]'
    for reason in ("length", "max_tokens", "Max_Output_Tokens"):
        message = parse(text, LIST, finish_reason=reason)
        assert message == {"role": "assistant", "malformed": [{"field": "tool_calls", "code": "truncated",
                                                               "raw": text}]}
    for reason in (None, "stop", "content_filter", "abort"):
        assert parse(text, LIST, finish_reason=reason)["tool_calls"] == [call("a"), call("b", x=1)]
    closed = parse(text + "</calls>", LIST, finish_reason="length")
    assert closed == {"role": "assistant", "tool_calls": [call("a"), call("b", x=1)]}


def test_a_json_call_whose_close_never_came_is_cut_by_the_token_limit() -> None:
    """The block before the cut is kept; the last one, its JSON whole but its close missing, is not a call."""
    cut = '<call>{"name": "f", "arguments": {"q": 1}}\n'
    message = parse('<call>{"name": "g"}</call>' + cut, finish_reason="length")
    assert message == {"role": "assistant", "tool_calls": [call("g")],
                       "malformed": [{"field": "tool_calls", "code": "truncated", "raw": cut}]}


def test_a_sequence_region_keeps_the_items_the_next_one_closed() -> None:
    """Calls one per line in one region are separate: under the token limit the last one (its close never
    came) is cut, the ones before it are kept."""
    seq = {**BASE, "fields": {**BASE["fields"], "tool_calls": {
        **BASE["fields"]["tool_calls"], "content_args": {"accept": ["sequence"]}}}}
    message = parse('<call>{"name": "a"}\n{"name": "b", "arguments": {"x": 1}}', seq, finish_reason="length")
    assert message == {"role": "assistant", "tool_calls": [call("a")],
                       "malformed": [{"field": "tool_calls", "code": "truncated",
                                      "raw": '{"name": "b", "arguments": {"x": 1}}'}]}


def test_an_unknown_finish_reason_is_named() -> None:
    with pytest.raises(chatparse.ChatparseError, match="'banana'") as caught:
        chatparse.parse_response("Hi.", BASE, prefix="", finish_reason="banana")
    assert caught.value.code == "unknown_finish_reason"
    assert "'length'" in str(caught.value) and "'stop'" in str(caught.value)


def test_recover_keeps_the_calls_beside_a_broken_one() -> None:
    text = '<calls>[{"name": "a"}, {"nam": "b"}, {"name": "c", "arguments": {"x": [1, 2]}}]</calls>'
    with pytest.raises(chatparse.ContentParseError):
        chatparse.parse_response(text, LIST, prefix="")
    message = parse(text, LIST, on_malformed="recover")
    assert message["tool_calls"] == [call("a"), call("c", x=[1, 2])]
    assert message["malformed"] == [{"field": "tool_calls", "code": "content_parse_failed", "raw": '{"nam": "b"}'}]
    keep = parse(text, LIST, on_malformed="keep")
    assert "tool_calls" not in keep and keep["malformed"][0]["raw"] == text


def test_two_call_blocks_extend_one_list() -> None:
    text = '<calls>[{"name": "a"}, {"name": "b"}]</calls> then <calls>[{"name": "c"}]</calls>'
    assert parse(text, LIST) == {"role": "assistant", "content": "then",
                                 "tool_calls": [call("a"), call("b"), call("c")]}


def test_a_bare_call_ends_with_its_value() -> None:
    text = 'Here: {"name": "f", "arguments": {"s": "}{"}} Anything else? {"name": "g"}'
    assert parse(text, BARE) == {"role": "assistant", "content": "Here:  Anything else?",
                                 "tool_calls": [call("f", s="}{"), call("g")]}
    cut = parse('Here: {"name": "f", "arguments": {"s": "}', BARE)
    assert cut["malformed"][0]["code"] == "truncated" and "tool_calls" not in cut


def test_required_parameters_tell_a_call_cut_between_parameters() -> None:
    spec = {**BASE, "fields": {**BASE["fields"], "tool_calls": {
        "open_pattern": r"<fn=(?P<name>[^>]+)>", "close": "</fn>", "repeats": True, "content": "xml-inline",
        "content_args": {"tag_pattern": r"<p=(?P<key>[^>]+)>(?P<value>.*?)</p>"},
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        "chatparse": {"structure": {"spans": [["<p=", "</p>"]]}, "guard": False, "truncation": True}}}}
    tools = [{"type": "function", "function": {"name": "w", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a", "b"]}}}]
    text = "<fn=w><p=a>1</p>"
    assert parse(text, spec) == {"role": "assistant", "tool_calls": [call("w", a="1")]}
    assert parse(text, spec, tools=tools)["malformed"][0]["code"] == "truncated"
    assert parse(text + "<p=b>x</p>", spec, tools=tools)["tool_calls"] == [call("w", a=1, b="x")]
    assert parse("<fn=w><p=a>1</p><p=b>rm -rf ~", spec)["malformed"][0]["code"] == "truncated"


def test_python_literals_type_reprs_before_json() -> None:
    spec = {**BASE, "fields": {**BASE["fields"], "tool_calls": {
        "open_pattern": r"<fn=(?P<name>[^>]+)>", "close": "</fn>", "repeats": True, "content": "xml-inline",
        "content_args": {"tag_pattern": r"<p=(?P<key>[^>]+)>(?P<value>.*?)</p>"},
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        "chatparse": {"python_literals": True}}}}
    tools = [{"type": "function", "function": {"name": "w", "parameters": {"type": "object", "properties": {
        "xs": {"type": "array"}, "o": {"type": "object"}, "b": {"type": "boolean"}, "s": {"type": "string"}}}}}]
    text = "<fn=w><p=xs>['a', 'b c']</p><p=o>{'k': [1], 'n': None}</p><p=b>False</p><p=s>['kept']</p></fn>"
    assert parse(text, spec, tools=tools)["tool_calls"] == [
        call("w", xs=["a", "b c"], o={"k": [1], "n": None}, b=False, s="['kept']")]


def test_a_next_turn_header_ends_the_turn_and_starts_the_trailing_text() -> None:
    spec = {**BASE, "chatparse": {**BASE["chatparse"], "next_turn": ["<|im_start|>"]}}
    assert parse("Hi.\n<|im_start|>user\nmore", spec) == {"role": "assistant", "content": "Hi.",
                                                          "trailing": "<|im_start|>user\nmore"}
    text = '<call>{"name": "f", "arguments": {"s": "<|im_start|>"}}</call><|im_start|>tool'
    assert parse(text, spec) == {"role": "assistant", "tool_calls": [call("f", s="<|im_start|>")],
                                 "trailing": "<|im_start|>tool"}
    assert chatparse.parse_response("Hi.", spec, prefix="<|assistant|><|im_start|>") == {
        "role": "assistant", "content": "Hi."}


def test_a_lookahead_close_inside_a_string_is_data_too() -> None:
    spec = {**BASE, "fields": {**BASE["fields"], "tool_calls": {
        **BASE["fields"]["tool_calls"], "close_pattern": "</call>|(?=<next>)"}}}
    del spec["fields"]["tool_calls"]["close"]
    assert parse('<call>{"name": "f", "arguments": {"s": "x <next> y"}}</call>', spec)["tool_calls"] == [
        call("f", s="x <next> y")]
    assert parse('<call>{"name": "f"}<next>Done.', spec) == {"role": "assistant", "content": "<next>Done.",
                                                            "tool_calls": [call("f")]}


def test_text_no_region_takes_is_kept_as_unparsed() -> None:
    """A template without an implicit field (gpt-oss) keeps what falls outside its regions, never drops it."""
    degraded = "analysisNeed the weather.assistantfinalIt is sunny."  # decoded with skip_special_tokens=True
    assert chatparse.parse_response(degraded, "gpt_oss", prefix="") == {"role": "assistant", "unparsed": degraded}
    text = "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant garbage <|channel|>final<|message|>Hi.<|return|>"
    message, events = stream("gpt_oss", "", [text[i : i + 2] for i in range(0, len(text), 2)])
    assert message == {"role": "assistant", "thinking": "Plan.", "content": "Hi.", "unparsed": "garbage"}
    check_event_stream(events, message, "gpt_oss")


@pytest.mark.parametrize("tools", [5, "get_weather", b"x"])
def test_tools_that_are_not_a_list_are_a_named_usage_error(tools: Any) -> None:
    from chatparse.openai import ChatCompletionStream

    for make in (lambda: chatparse.ResponseParser("qwen3", "", tools=tools),
                 lambda: ChatCompletionStream("qwen3", "", tools=tools)):
        with pytest.raises(chatparse.UsageError) as info:
            make()
        assert info.value.code == "bad_tools"
