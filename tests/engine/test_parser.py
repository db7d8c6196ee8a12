"""Behaviour of ResponseParser / parse_response beyond what the differential tests cover."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatparse
from tests.streamcheck import assert_chunking_equivalent, check_event_stream, split, stream

QWEN = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close": "<|im_end|>"},
    },
}
HARMONY = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "thinking": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
        "tool_calls": {"open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
                       "close": "<|call|>", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
        "content": {"open": "<|channel|>final<|message|>", "close": ["<|return|>", "<|end|>"]},
    },
}
PROMPT = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nAgain?<|im_end|>\n<|im_start|>assistant\n"


def test_one_shot_message() -> None:
    out = '<think>I should greet</think>\nSure. <tool_call>{"name": "greet", "arguments": {"g": "Hi!"}}</tool_call><|im_end|>'
    assert chatparse.parse_response(out, QWEN, prefix=PROMPT) == {
        "role": "assistant", "thinking": "I should greet", "content": "Sure.",
        "tool_calls": [{"type": "function", "function": {"name": "greet", "arguments": {"g": "Hi!"}}}],
    }


def test_prefix_is_required_and_explains_the_opt_out() -> None:
    with pytest.raises(chatparse.PrefixRequiredError, match='prefix=""') as info:
        chatparse.parse_response("x", QWEN)  # type: ignore[call-overload]
    assert isinstance(info.value, ValueError) and info.value.code == "prefix_required"
    with pytest.raises(ValueError):
        chatparse.ResponseParser(QWEN)


def test_template_is_validated_before_the_prefix() -> None:
    with pytest.raises(chatparse.TemplateError) as info:
        chatparse.parse_response("x", {"fields": {}})  # type: ignore[call-overload]
    assert info.value.code == "bad_type"


def test_prefilled_think_lands_in_initial_events_and_message() -> None:
    parser = chatparse.ResponseParser(QWEN, PROMPT + "<think>\n")
    assert parser.initial_events == [{"type": "region_open", "field": "thinking"},
                                     {"type": "region_chunk", "field": "thinking", "text": "\n", "dirty": False}]
    events = parser.feed("step one</think>answer<|im_end|>")
    message, _ = parser.finalize()
    assert message == {"role": "assistant", "thinking": "step one", "content": "answer"}
    assert events[0] == {"type": "region_chunk", "field": "thinking", "text": "step one", "dirty": False}


def test_history_before_the_last_anchor_is_dropped() -> None:
    message = chatparse.parse_response("fine<|im_end|>", QWEN, prefix=PROMPT)
    assert message == {"role": "assistant", "content": "fine"}


def test_the_generation_is_never_cut_at_the_anchor() -> None:
    out = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>"
    message = chatparse.parse_response(out, HARMONY, prefix="<|start|>user<|message|>q<|end|><|start|>assistant")
    assert message["thinking"] == "think" and message["content"] == "Hi"


def test_harmony_tool_call_name_from_open_pattern() -> None:
    out = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
           '{"location": "San Francisco, CA"}<|call|>')
    message = assert_chunking_equivalent(HARMONY, "", out)
    assert message["tool_calls"] == [{"type": "function", "function": {
        "name": "get_weather", "arguments": {"location": "San Francisco, CA"}}}]


def test_using_a_finalized_parser_raises_runtime_error() -> None:
    parser = chatparse.ResponseParser(QWEN, "")
    parser.finalize()
    for call in (lambda: parser.feed("x"), parser.finalize):
        with pytest.raises(RuntimeError) as info:
            call()
        assert isinstance(info.value, chatparse.UsageError) and info.value.code == "parser_finalized"


def test_feed_rejects_bytes_with_a_named_error() -> None:
    parser = chatparse.ResponseParser(QWEN, "")
    with pytest.raises(chatparse.UsageError) as info:
        parser.feed(b"abc")  # type: ignore[arg-type]
    assert info.value.code == "bad_input_type" and isinstance(info.value, TypeError)


def test_content_parse_error_names_field_parser_and_short_excerpt() -> None:
    body = "{not json " + "x" * 5000
    with pytest.raises(chatparse.ContentParseError) as info:
        chatparse.parse_response(f"<tool_call>{body}</tool_call>", QWEN, prefix="")
    err = info.value
    assert err.code == "content_parse_failed" and err.field == "tool_calls" and err.details["parser"] == "json"
    assert "tool_calls" in str(err) and "json" in str(err) and len(str(err)) < 600


def test_on_malformed_keep_records_the_region_and_keeps_parsing() -> None:
    out = '<tool_call>{"name": "a", "arguments": {"x": </tool_call> after <tool_call>{"name": "b", "arguments": {}}</tool_call>'
    parser = chatparse.ResponseParser(QWEN, "", on_malformed="keep")
    events = parser.feed(out)
    message, final = parser.finalize()
    malformed = [e for e in events + final if e["type"] == "region_malformed"]
    assert malformed[0]["field"] == "tool_calls" and malformed[0]["code"] == "content_parse_failed"
    # The raw text is the whole region as the model wrote it, delimiters included.
    raw = '<tool_call>{"name": "a", "arguments": {"x": </tool_call>'
    assert malformed[0]["raw"] == raw
    assert message["malformed"] == [{"field": "tool_calls", "code": "content_parse_failed", "raw": raw}]
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "b", "arguments": {}}}]
    assert message["content"] == "after"


def test_truncated_tool_call_keeps_the_rest_of_the_message() -> None:
    out = '<think>plan</think>Calling. <tool_call>{"name": "a", "arguments": {"x": "unfinished'
    message = chatparse.parse_response(out, QWEN, prefix="", on_malformed="keep")
    assert message["thinking"] == "plan" and message["content"] == "Calling."
    assert message["malformed"][0]["raw"] == '<tool_call>{"name": "a", "arguments": {"x": "unfinished'


def test_required_field_missing_raises_named_error() -> None:
    template = {"start_anchor": "A", "fields": {"answer": {"open": "<a>", "close": "</a>", "optional": False}}}
    with pytest.raises(chatparse.MissingFieldError) as info:
        chatparse.parse_response("nothing", template, prefix="")
    assert info.value.field == "answer" and isinstance(info.value, ValueError)


def test_join_and_repeats() -> None:
    template = {"start_anchor": "A", "fields": {"thinking": {"open": " thinking", "close": " response",
                                                              "repeats": True, "join": "\n"}}}
    out = " thinkingfirst response... thinkingsecond response"
    message, events = stream(template, "", [out])
    assert message == {"thinking": "first\nsecond"}
    assert [e["value"] for e in events if e["type"] == "region_close"] == ["first", "second"]


def test_zero_width_open_and_close_cannot_loop_forever() -> None:
    template = {"start_anchor": "A", "fields": {"x": {"open_pattern": "(?=b)", "close_pattern": "(?=b)"},
                                                "content": {}}}
    message, events = stream(template, "", ["aaab"])
    # The zero-width open fires once at "b" (transformers re-fires it forever); the text moves on.
    assert [e["type"] for e in events if e["field"] == "x"] == ["region_open", "region_close"]
    assert message == {"content": "b"}  # the implicit field is not repeating: its last region wins


def test_batch_parse() -> None:
    outs = ["<think>a</think>b<|im_end|>", "c<|im_end|>"]
    assert chatparse.parse_response(outs, QWEN, prefix="") == [
        {"role": "assistant", "thinking": "a", "content": "b"}, {"role": "assistant", "content": "c"}]
    assert chatparse.parse_response(outs, QWEN, prefix=["", "<think>"]) == [
        {"role": "assistant", "thinking": "a", "content": "b"}, {"role": "assistant", "thinking": "c<|im_end|>"}]


def test_delimiter_split_across_chunks_is_held_back() -> None:
    parser = chatparse.ResponseParser(QWEN, "")
    assert parser.feed("hello <to") == [{"type": "region_open", "field": "content"},
                                        {"type": "region_chunk", "field": "content", "text": "hello ", "dirty": False}]
    assert parser.feed("ol_call>") == [{"type": "region_close", "field": "content", "value": "hello"},
                                       {"type": "region_open", "field": "tool_calls"}]
    assert parser.feed("</th")[0]["text"] == "</th"  # cannot start "</tool_call>": released at once


TEXT = st.text(alphabet=st.sampled_from(list("ab<>/{}\"thinkol_c|me\n é🙂")), max_size=120)


@given(text=TEXT, cuts=st.lists(st.integers(0, 120), max_size=8))
def test_only_chatparse_errors_escape(text: str, cuts: list[int]) -> None:
    points = sorted({c for c in cuts if c < len(text)})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    for template in (QWEN, HARMONY):
        try:
            message, events = stream(template, "", chunks)
        except chatparse.ChatparseError:
            continue
        check_event_stream(events, message, template)


@given(text=TEXT)
def test_chunking_equivalence_property(text: str) -> None:
    for template in (QWEN, HARMONY):
        try:
            chatparse.parse_response(text, template, prefix="")
        except chatparse.ChatparseError:
            continue
        assert_chunking_equivalent(template, "", text)


# --- the quiet fast path (chunks without a trigger character skip the scan) ---------------------------

LOOKBEHIND = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        # The close needs a `{` any distance back (the engine keeps 4,096 characters for it): the fast path
        # must give it that much of the text it emitted without buffering, at the next full feed.
        "block": {"open": "<x>", "close_pattern": r"(?<=\{[^<]*)</x>"},
        "content": {"close": "<|im_end|>"},
    },
}


def test_fast_path_keeps_the_context_a_lookbehind_reads() -> None:
    body = "{" + "a b c " * 400 + "}"  # 2,402 characters without a trigger character
    text = f"intro <x>{body}</x> outro<|im_end|>"
    message = assert_chunking_equivalent(LOOKBEHIND, "", text)
    assert message == {"block": body, "content": "outro"}  # content does not repeat: the last one wins
    parser = chatparse.ResponseParser(LOOKBEHIND, "")
    for i in range(0, len(text), 4):
        parser.feed(text[i : i + 4])
    assert parser.finalize()[0] == message


def test_fast_path_holds_a_trailing_lead_run() -> None:
    template = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "tool_calls": {"open_pattern": r"\s*<tool_call>", "close": "</tool_call>", "content": "json"},
            "content": {"close_pattern": r"\s*<\|im_end\|>"},
        },
    }
    parser = chatparse.ResponseParser(template, "")
    assert parser.feed("Hello") == [{"type": "region_open", "field": "content"},
                                    {"type": "region_chunk", "field": "content", "text": "Hello", "dirty": False}]
    assert parser.feed(" world \n ") == [{"type": "region_chunk", "field": "content", "text": " world",
                                         "dirty": False}]
    assert parser.held == 3  # " \n " may still be the start of `\s*<tool_call>`
    assert parser.feed("again") == [{"type": "region_chunk", "field": "content", "text": " \n again",
                                     "dirty": False}]
    assert parser.held == 0
    parser.feed('  <tool_call>{"a": 1}</tool_call>')
    message, _ = parser.finalize()
    assert message == {"content": "Hello world \n again", "tool_calls": {"a": 1}}


def test_fast_path_credits_the_regex_budget() -> None:
    limits = chatparse.Limits(message_budget=0.5, per_char=1e-3)
    parser = chatparse.ResponseParser(QWEN, "", limits=limits)
    parser.feed("<think>")
    before = parser._budget.message_left
    for _ in range(100):
        parser.feed("abcd")  # no `<`: the fast path takes all of these
    parser.feed("</think>")  # a full scan: the 400 characters are credited first
    assert parser._budget.message_left >= before + 400 * 1e-3 - 0.01


def test_fast_path_keeps_no_copy_of_skipped_text() -> None:
    parser = chatparse.ResponseParser(LOOKBEHIND, "")
    parser.feed("<x>")
    for _ in range(10_000):
        parser.feed("abcd")
    assert len(parser._buf) <= 64  # the skipped text is only in the region, which keeps everything
    assert len(parser._body) == 10_000
    parser.feed("a<")  # a full feed: the lookbehind context of the skipped text goes into the buffer
    assert parser._buf.endswith("abcda<")


# --- feed_text: the fast path for wrappers (text back instead of one region_chunk event) ---------------

LEAD_RUN = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {"open_pattern": r"\s*<tool_call>", "close": "</tool_call>", "content": "json"},
        "content": {"close_pattern": r"\s*<\|im_end\|>"},
    },
}


def feed_both(template: Any, chunks: list[str]) -> tuple[int, dict[str, Any]]:
    """Feed ``chunks`` to one parser with ``feed`` and to another with ``feed_text`` (naming the region
    open before each chunk): same events (text back standing for one region_chunk event of that region),
    same held text after every feed, same message. Returns how many chunks came back as text."""
    plain = chatparse.ResponseParser(template, "")
    wrapped = chatparse.ResponseParser(template, "")
    texts = 0
    for chunk in chunks:
        field = wrapped.current_region
        events = plain.feed(chunk)
        taken = wrapped.feed_text(chunk, field) if field is not None else wrapped.feed(chunk)
        if isinstance(taken, str):
            texts += 1
            dirty = not wrapped.template.fields[field].parser.streamable
            assert events == [{"type": "region_chunk", "field": field, "text": taken, "dirty": dirty}]
        else:
            assert taken == events
        assert (wrapped.held, wrapped.current_region) == (plain.held, plain.current_region)
    message, events = plain.finalize()
    assert wrapped.finalize() == (message, events)
    return texts, message


@pytest.mark.parametrize("template", [QWEN, HARMONY, LOOKBEHIND, LEAD_RUN, "qwen3", "gpt_oss"])
def test_feed_text_is_feed_without_the_event(template: Any) -> None:
    body = "a b c, d {e} f\n" * 50
    call = json.dumps({"path": "x", "text": body + "</tool_call> <|call|> " + body})  # its syntax is tracked
    texts = {"qwen3": f"<think>{body}</think>{body}<tool_call>\n{{\"name\": \"f\", \"arguments\": {call}}}\n"
                     "</tool_call><|im_end|>",
            "gpt_oss": f"<|channel|>analysis<|message|>{body}<|end|><|start|>assistant<|channel|>commentary "
                       f"to=functions.f <|constrain|>json<|message|>{call}<|call|>",
            id(QWEN): f"<think>{body}</think>{body}<tool_call>{{\"name\": \"f\", \"arguments\": {{}}}}</tool_call>",
            id(HARMONY): f"<|channel|>analysis<|message|>{body}<|end|><|channel|>final<|message|>{body}<|return|>",
            id(LOOKBEHIND): f"{body}<x>{{{body}}}</x>{body}<|im_end|>",
            id(LEAD_RUN): f"{body}  <tool_call>{{\"a\": 1}}</tool_call> {body} \n<|im_end|>"}
    text = texts[template if isinstance(template, str) else id(template)]
    for size in (1, 3, 4, 16):
        taken, message = feed_both(template, split(text, size))
        assert taken > len(text) // size // 4  # many feeds are plain text of the region open
        assert message == chatparse.parse_response(text, template, prefix="")


@given(text=TEXT, cuts=st.lists(st.integers(0, 120), max_size=8))
def test_feed_text_property(text: str, cuts: list[int]) -> None:
    points = sorted({c for c in cuts if c < len(text)})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    for template in (QWEN, HARMONY, LEAD_RUN):
        try:
            chatparse.parse_response(text, template, prefix="")
        except chatparse.ChatparseError:
            continue
        feed_both(template, chunks)


def test_feed_text_for_another_region_returns_the_events() -> None:
    parser = chatparse.ResponseParser(QWEN, "")
    parser.feed("<think>a")
    assert parser.feed_text("bcd", "content") == [{"type": "region_chunk", "field": "thinking", "text": "bcd",
                                                   "dirty": False}]
    assert parser.feed_text("efg", "thinking") == "efg"
    assert parser.feed_text("h</think>", "thinking") == [
        {"type": "region_chunk", "field": "thinking", "text": "h", "dirty": False},
        {"type": "region_close", "field": "thinking", "value": "abcdefgh"}]
