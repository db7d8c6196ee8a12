"""A parser (or chat-completion stream) whose feed or finalize raised says so on every later call.

With ``on_malformed="raise"`` (the parser's default) a malformed region raises. The parser's state is then
mid-region: parsing on would read the rest of the output inside the broken region (the answer, or raw
Harmony markup, as tool-call text) and lose it without a word. So every later ``feed``, ``feed_bytes`` and
``finalize`` raises ``parser_failed`` naming the first error, and no event comes out.
"""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.errors import ChatparseError, UsageError

GPT_OSS_PREFIX = ("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nReasoning: "
                  "medium\n# Valid channels: analysis, commentary, final.<|end|><|start|>developer<|message|># Tools"
                  "\n\nnamespace functions {\ntype get_weather = (_: {location: string}) => any;\n}<|end|><|start|>"
                  "user<|message|>What is the weather in Tokyo?<|end|><|start|>assistant")
# A call whose arguments are not JSON, then the final answer.
GPT_OSS_OUTPUT = ("<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
                  "to=functions.get_weather <|constrain|>json<|message|>{location: Tokyo}<|call|>"
                  "<|start|>assistant<|channel|>final<|message|>It is 21 °C in Tokyo.<|return|>")
HERMES_OUTPUT = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>\n'
                 "The weather in Paris is sunny today, 21 °C with a light breeze from the west.")


def tokens(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def feed_until_error(parser: Any, text: str) -> tuple[ChatparseError, list[str]]:
    """Feed token-sized chunks until one raises; the error and the chunks not fed yet."""
    chunks = tokens(text)
    for i, chunk in enumerate(chunks):
        try:
            parser.feed(chunk)
        except ChatparseError as exc:
            return exc, chunks[i + 1 :]
    raise AssertionError("no chunk raised")


def assert_failed(call: Any, first: ChatparseError) -> None:
    with pytest.raises(UsageError) as info:
        call()
    assert info.value.code == "parser_failed"
    assert info.value.details["first_code"] == first.code
    assert first.code in str(info.value)
    assert info.value.__cause__ is first


@pytest.mark.parametrize(("template", "prefix", "output"), [
    ("gpt_oss", GPT_OSS_PREFIX, GPT_OSS_OUTPUT),
    ("hermes", "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n", HERMES_OUTPUT),
])
def test_every_call_after_a_raise_names_the_first_error(template: str, prefix: str, output: str) -> None:
    parser = chatparse.ResponseParser(template, prefix)
    first, rest = feed_until_error(parser, output)
    assert first.code == "content_parse_failed"
    assert rest, "the answer follows the broken call"
    for chunk in rest:  # the answer: never swallowed as tool-call text
        assert_failed(lambda chunk=chunk: parser.feed(chunk), first)
    assert_failed(lambda: parser.feed_bytes(b"more"), first)
    assert_failed(parser.finalize, first)
    assert_failed(parser.finalize, first)


def test_keep_and_recover_parse_past_the_same_region() -> None:
    """The way on that the error names: the answer is kept, the broken call reported."""
    for mode in ("keep", "recover"):
        message = chatparse.parse_response(HERMES_OUTPUT, "hermes", prefix="", on_malformed=mode)
        assert message["content"].startswith("The weather in Paris is sunny")
        assert message["malformed"][0]["field"] == "tool_calls"


def test_invalid_utf8_fails_the_parser() -> None:
    """The valid bytes before the invalid sequence in that chunk are lost with it: parsing on would drop them."""
    parser = chatparse.ResponseParser("qwen3", "")
    parser.feed_bytes(b"The answer ")
    with pytest.raises(chatparse.ChatparseError) as info:
        parser.feed_bytes(b"is \xff42")
    assert info.value.code == "invalid_utf8"
    assert_failed(lambda: parser.feed("42."), info.value)
    assert_failed(parser.finalize, info.value)


def test_a_finalize_that_raised_raises_parser_failed_next() -> None:
    template = {"start_anchor": "<s>", "fields": {"x": {"open": "<x>", "close": "</x>", "content": "json"},
                                                  "content": {}}}
    parser = chatparse.ResponseParser(template, "")
    parser.feed('<x>{"city": Paris')  # the end of the text closes the region; its JSON does not parse
    with pytest.raises(ChatparseError) as info:
        parser.finalize()
    assert_failed(parser.finalize, info.value)


def test_a_refused_call_does_not_fail_the_parser() -> None:
    """A call refused before anything changed (a wrong type) leaves the parser as it was."""
    text = "<think>Easy.</think>The answer is 42."
    parser = chatparse.ResponseParser("qwen3", "")
    parser.feed(text[:10])
    with pytest.raises(chatparse.ChatparseError):
        parser.feed(None)  # type: ignore[arg-type]
    parser.feed(text[10:])
    assert parser.finalize()[0] == chatparse.parse_response(text, "qwen3", prefix="")


def test_a_chat_completion_stream_does_not_lose_the_answer_silently() -> None:
    stream = chatparse.ChatCompletionStream("hermes", "", on_malformed="raise")
    first, rest = feed_until_error(stream, HERMES_OUTPUT)
    for chunk in rest:
        assert_failed(lambda chunk=chunk: stream.feed(chunk), first)
    assert_failed(stream.finish, first)
    assert stream.message is None


def test_a_stream_whose_regex_budget_ran_out_fails_on() -> None:
    """Errors that raise whatever on_malformed says (a catastrophic template pattern) fail the stream too."""
    template = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": r"(a|aa)+$", "close": "</x>"},
                                                  "content": {}}}
    stream = chatparse.ChatCompletionStream(template, "")
    with pytest.raises(ChatparseError) as info:
        stream.feed("a" * 40 + "!")
    assert info.value.code == "regex_budget_exceeded"
    assert_failed(lambda: stream.feed("The answer."), info.value)
    assert_failed(stream.finish, info.value)


def test_a_stream_refusing_a_wrong_type_goes_on() -> None:
    stream = chatparse.ChatCompletionStream("qwen3", "")
    with pytest.raises(ChatparseError):
        stream.feed(None)  # type: ignore[arg-type]
    stream.feed("The answer is 42.")
    stream.finish()
    assert stream.message == {"role": "assistant", "content": "The answer is 42."}
