"""Reasoning the model opened without its opener (``chatparse.lone_close``, issue 28 §4): with a prompt
that opened no reasoning, the text before a lone reasoning close is reasoning, never glued to the answer;
without such a close it is content. Every built-in family with a reasoning close, one-shot, in every
chunking and in token-sized deltas through every streaming path."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.errors import TemplateError
from chatparse.templates import get_template, list_templates
from tests import tokens
from tests.streamcheck import assert_chunking_equivalent, check_event_stream, chunk_text, stream

RENDERED = Path(__file__).parent / "rendered"
# Families without a rendering: a prompt in the family's published layout.
PROMPTS = {
    "ernie45": "<|begin_of_sentence|>User: What's the weather in Seoul for 2 days?\nAssistant: ",
    "step3": "<|BOT|>system\nYou are a helpful assistant.<|EOT|><|BOT|>user\nWhat's the weather in Seoul for 2 days?"
             "<|EOT|><|BOT|>assistant\n",
}
REASONING = ("The user wants a two-day forecast for Seoul. I have no tool result yet, so I will answer from "
             "the seasonal pattern and say so.")
ANSWER = "Seoul should be mostly sunny for the next two days, around 24 °C in the afternoon."


def lone_families() -> list[str]:
    return [name for name in list_templates()
            if any(f.ext.lone_close for f in chatparse.load_template(get_template(name)).fields.values())]


FAMILIES = lone_families()


def anchor_only_prompt(family: str) -> str:
    """The family's real rendered prompt cut right after its last assistant header: whatever the chat
    template pre-writes after the header (an opened or an empty reasoning block) is left out."""
    if family in PROMPTS:
        return PROMPTS[family]
    path = RENDERED / f"{family.replace('.', '_')}.json"
    text = json.loads(path.read_text(encoding="utf-8"))["renderings"]["prompt"]["text"]
    anchor = chatparse.load_template(get_template(family)).start_anchor
    ends = [m.end() for m in anchor.pattern.finditer(text)]
    assert ends, f"{family}: no assistant header in its rendered prompt"
    return str(text[: ends[-1]])


def parts(family: str) -> tuple[str, str, str]:
    """(the reasoning field's lone close, the end-of-turn marker, the reasoning field's name)."""
    compiled = chatparse.load_template(get_template(family))
    field = next(f for f in compiled.fields.values() if f.ext.lone_close)
    return field.ext.lone_close[0], compiled.ext.end[0], field.name


def test_every_family_with_a_reasoning_close_has_a_lone_close() -> None:
    """Every built-in whose reasoning close is a stray marker outside regions takes the lone-close rule
    (gpt-oss, Inkling and Muse have no content sink: their channels are all headed)."""
    assert len(FAMILIES) >= 40
    for name in list_templates():
        compiled = chatparse.load_template(get_template(name))
        thinking = compiled.fields.get("thinking")
        if thinking is not None and compiled.implicit is not None:
            assert thinking.ext.lone_close, name


@pytest.mark.parametrize("family", FAMILIES)
def test_text_before_a_lone_close_is_reasoning(family: str) -> None:
    close, end, name = parts(family)
    prefix = anchor_only_prompt(family)
    output = f"{REASONING}{close}\n\n{ANSWER}{end}"
    expected = {"role": "assistant", name: REASONING, "content": ANSWER}
    assert chatparse.parse_response(output, get_template(family), prefix=prefix) == expected
    assert assert_chunking_equivalent(get_template(family), prefix, output) == expected
    # Held until the close: the stream shows the reasoning as reasoning, never as content.
    _, events = stream(get_template(family), prefix, list(output))
    assert {k: v.strip() for k, v in chunk_text(events).items()} == {name: REASONING, "content": ANSWER}
    assert tokens.disagreements(get_template(family), prefix, output, {}, seed=zlib.crc32(family.encode())) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_without_a_lone_close_the_text_is_content(family: str) -> None:
    _, end, _ = parts(family)
    prefix = anchor_only_prompt(family)
    output = f"{ANSWER}{end}"
    expected = {"role": "assistant", "content": ANSWER}
    assert chatparse.parse_response(output, get_template(family), prefix=prefix) == expected
    assert assert_chunking_equivalent(get_template(family), prefix, output) == expected


def test_the_hold_is_bounded_and_a_later_close_still_moves_the_text() -> None:
    """Past ``Limits.lone_hold`` the text streams as content (the hold is bounded); a lone close after it
    still makes it reasoning in the message, and the content region's close says where it went."""
    limits = chatparse.Limits(lone_hold=32)
    prefix = anchor_only_prompt("qwen3")
    output = f"{REASONING}</think>\n\n{ANSWER}<|im_end|>"
    parser = chatparse.ResponseParser("qwen3", prefix, limits=limits)
    events: list[dict[str, Any]] = []
    for piece in tokens.pseudo_tokens(output, ["</think>", "<|im_end|>"], random.Random(5)):
        events += parser.feed(piece)
        assert parser.held <= limits.max_holdback + len("<|im_end|>") + limits.lone_hold
    message, final = parser.finalize()
    events += final
    assert message == {"role": "assistant", "thinking": REASONING, "content": ANSWER}
    moved = [e for e in events if e.get("moved_to")]
    assert moved == [{"type": "region_close", "field": "content", "value": REASONING, "moved_to": "thinking"}]
    assert chunk_text(events)["content"].startswith(REASONING[:32])
    check_event_stream(events, message, "qwen3")
    assert chatparse.parse_response(output, "qwen3", prefix=prefix, limits=limits) == message


def test_a_prompt_that_wrote_reasoning_leaves_nothing_undecided() -> None:
    """Thinking switched off (the prompt wrote an empty block, or DeepSeek-V3.1's lone '</think>'): the
    output is the answer and streams as content from its first token."""
    for family, prefix in (("qwen3", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"),
                           ("deepseek_v3.1", "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜></think>")):
        parser = chatparse.ResponseParser(family, prefix)
        assert chunk_text(parser.feed("Hello"))["content"].endswith("Hello")


def test_another_marker_first_makes_the_text_content() -> None:
    """A call (or any other marker) before the lone close: the text before it was the answer."""
    prefix = anchor_only_prompt("qwen3")
    output = ('Checking the forecast now.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Seoul"}}\n'
              "</tool_call><|im_end|>")
    message = assert_chunking_equivalent("qwen3", prefix, output)
    assert message["content"] == "Checking the forecast now."
    assert "thinking" not in message


def test_ernie_plain_answer_after_the_anchor_is_content() -> None:
    """ERNIE 4.5 with the anchor-only prompt: a plain answer is content (it was thinking before)."""
    prefix = PROMPTS["ernie45"]
    assert assert_chunking_equivalent("ernie45", prefix, "Hello! How can I help you today?</s>") == {
        "role": "assistant", "content": "Hello! How can I help you today?"}


def test_lone_close_is_checked_at_load() -> None:
    template = get_template("qwen3")
    template["fields"]["thinking"]["chatparse"]["lone_close"] = ["</reasoning>"]
    with pytest.raises(TemplateError) as info:
        chatparse.load_template(template)
    assert info.value.code == "lone_close_not_dropped"
    template = get_template("qwen3")
    template["fields"]["content"]["chatparse"]["lone_close"] = ["</think>"]
    with pytest.raises(TemplateError) as info:
        chatparse.load_template(template)
    assert info.value.code == "multiple_lone_close"


QWEN35_CALL = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nSeoul\n</parameter>\n</function>\n"
               "</tool_call>")


def test_reasoning_goes_on_after_a_call_written_inside_it() -> None:
    """Qwen3.5 (the prompt pre-opens '<think>'): a call inside the reasoning ends the block implicitly; the
    text after it up to a lone '</think>' is reasoning again, joined by a newline, never content."""
    rendered = json.loads((RENDERED / "qwen3_5.json").read_text(encoding="utf-8"))
    prefix, tools = rendered["renderings"]["prompt"]["text"], rendered["tools_schema"]
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Seoul"}}}
    output = (f"I need the forecast.\n{QWEN35_CALL}\nRequested; answer when it returns.\n</think>\n\n"
              "Checking the forecast now.<|im_end|>")
    assert assert_chunking_equivalent("qwen3.5", prefix, output, tools=tools) == {
        "role": "assistant", "thinking": "I need the forecast.\nRequested; answer when it returns.",
        "tool_calls": [call], "content": "Checking the forecast now."}
    assert tokens.disagreements("qwen3.5", prefix, output, {"tools": tools}, seed=3) == []
    # Without a lone close after the call, the text after it is the answer.
    output = f"I need the forecast.\n{QWEN35_CALL}\nChecking the forecast now.<|im_end|>"
    assert assert_chunking_equivalent("qwen3.5", prefix, output, tools=tools) == {
        "role": "assistant", "thinking": "I need the forecast.", "tool_calls": [call],
        "content": "Checking the forecast now."}
