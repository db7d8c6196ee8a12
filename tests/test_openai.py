"""chatparse.openai: final messages, chat.completion objects and streamed chunks agree with the parse."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from chatparse import parse_response
from chatparse.openai import ChatCompletionStream, finish_reason, to_chat_completion, to_chat_message

CORPUS = Path(__file__).parent / "templates" / "corpus"
FAMILIES = {"qwen3": "qwen3", "gpt_oss": "gpt_oss", "qwen3_5": "qwen3_5"}
CASES = [(family, path) for family in FAMILIES for path in sorted((CORPUS / family).glob("*.json"))]
CHUNKINGS = ["whole", "1", "3", "7", "random"]


def ids(index: int) -> str:
    return f"call_{index}"


def split(text: str, how: str, seed: int = 0) -> list[str]:
    if how == "whole":
        return [text]
    if how == "random":
        rng = random.Random(seed)
        out, i = [], 0
        while i < len(text):
            n = rng.randint(1, 12)
            out.append(text[i : i + n])
            i += n
        return out
    n = int(how)
    return [text[i : i + n] for i in range(0, len(text), n)]


def load(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text())
    return case


def stream_case(family: str, case: dict[str, Any], how: str, reason: str = "stop",
                seed: int = 0) -> tuple[ChatCompletionStream, list[dict[str, Any]]]:
    on_malformed = case.get("options", {}).get("on_malformed", "raise")
    stream = ChatCompletionStream(FAMILIES[family], case["prefix"], tools=case.get("tools"), model="m",
                                  id_factory=ids, on_malformed=on_malformed, created=1)
    chunks: list[dict[str, Any]] = []
    for piece in split(case["output"], how, seed):
        chunks.extend(stream.feed(piece))
    chunks.extend(stream.finish(reason))
    return stream, chunks


def accumulate(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What an OpenAI client builds from the deltas (grouping tool calls by index)."""
    content, reasoning = "", ""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        delta = chunk["choices"][0]["delta"]
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or ""
        for tc in delta.get("tool_calls") or []:
            slot = calls.setdefault(tc["index"], {"id": None, "name": "", "arguments": ""})
            if "id" in tc:
                assert slot["id"] is None, "id sent twice for one index"
                slot["id"] = tc["id"]
                assert tc["type"] == "function"
            fn = tc.get("function", {})
            slot["name"] += fn.get("name") or ""
            slot["arguments"] += fn.get("arguments") or ""
    return {"content": content, "reasoning": reasoning, "calls": [calls[i] for i in sorted(calls)]}


@pytest.mark.parametrize("how", CHUNKINGS)
@pytest.mark.parametrize(("family", "path"), CASES, ids=[f"{f}/{p.stem}" for f, p in CASES])
def test_stream_deltas_equal_final_message(family: str, path: Path, how: str) -> None:
    case = load(path)
    stream, chunks = stream_case(family, case, how, seed=hash(path.name) & 0xFFFF)
    assert stream.mismatches == []
    message = stream.message
    assert message is not None
    on_malformed = case.get("options", {}).get("on_malformed", "raise")
    assert message == parse_response(case["output"], FAMILIES[family], prefix=case["prefix"],
                                     tools=case.get("tools"), on_malformed=on_malformed)
    wire = to_chat_message(message, id_factory=ids)
    got = accumulate(chunks)
    assert got["content"] == (wire["content"] or "")
    assert got["reasoning"] == wire.get("reasoning_content", "")
    final_calls = wire.get("tool_calls", [])
    if not message.get("malformed"):
        assert len(got["calls"]) == len(final_calls)
    for streamed, final in zip(got["calls"], final_calls, strict=False):
        assert streamed["id"] == final["id"]
        assert streamed["name"] == final["function"]["name"]
        assert streamed["arguments"] == final["function"]["arguments"]
        assert json.loads(streamed["arguments"]) == json.loads(final["function"]["arguments"])
    # chunk shape
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all("role" not in c["choices"][0]["delta"] for c in chunks[1:])
    for chunk in chunks:
        assert chunk["id"] == stream.id and chunk["object"] == "chat.completion.chunk"
        assert chunk["created"] == 1 and chunk["model"] == "m"
        assert chunk["choices"][0]["index"] == 0
        ChatCompletionChunk.model_validate(chunk)
    reasons = [c["choices"][0]["finish_reason"] for c in chunks]
    assert reasons[:-1] == [None] * (len(chunks) - 1)
    assert reasons[-1] == ("tool_calls" if final_calls else "stop")
    assert chunks[-1]["choices"][0]["delta"] == {}


@pytest.mark.parametrize(("family", "path"), CASES, ids=[f"{f}/{p.stem}" for f, p in CASES])
def test_chat_completion_validates(family: str, path: Path) -> None:
    case = load(path)
    on_malformed = case.get("options", {}).get("on_malformed", "raise")
    message = parse_response(case["output"], FAMILIES[family], prefix=case["prefix"], tools=case.get("tools"),
                             on_malformed=on_malformed)
    completion = to_chat_completion(message, model="m", created=7, id="chatcmpl-1", id_factory=ids)
    parsed = ChatCompletion.model_validate(completion)
    assert parsed.object == "chat.completion" and parsed.id == "chatcmpl-1" and parsed.created == 7
    choice = completion["choices"][0]
    assert choice["finish_reason"] == ("tool_calls" if message.get("tool_calls") else "stop")
    for i, call in enumerate(choice["message"].get("tool_calls", [])):
        assert call["id"] == f"call_{i}" and call["type"] == "function"
        assert json.loads(call["function"]["arguments"]) == message["tool_calls"][i]["function"]["arguments"]
    if "thinking" in message:
        assert choice["message"]["reasoning_content"] == message["thinking"]


def test_to_chat_message_fields() -> None:
    msg = {"role": "assistant", "thinking": "hmm", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": {"a": "é", "b": [1, 2.5]}}}]}
    wire = to_chat_message(msg, reasoning_key="reasoning", id_factory=lambda i: f"x{i}")
    assert wire == {"role": "assistant", "content": None, "reasoning": "hmm", "tool_calls": [
        {"id": "x0", "type": "function", "function": {"name": "f", "arguments": '{"a": "é", "b": [1, 2.5]}'}}]}
    plain = to_chat_message({"role": "assistant", "content": "hi"})
    assert plain == {"role": "assistant", "content": "hi"}
    random_ids = to_chat_message(msg)["tool_calls"][0]["id"]
    assert random_ids.startswith("call_") and len(random_ids) == 29


def test_finish_reason_rules() -> None:
    call = {"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]}
    assert finish_reason(call) == "tool_calls"
    assert finish_reason(call, "length") == "length"
    assert finish_reason({"content": "x"}) == "stop"
    assert finish_reason({"content": "x"}, "length") == "length"
    done = to_chat_completion(call, model="m", finish_reason="length")
    assert done["choices"][0]["finish_reason"] == "length"


def test_length_passes_through_in_stream() -> None:
    case = load(CORPUS / "qwen3" / "truncated_reasoning.json")
    _, chunks = stream_case("qwen3", case, "3", reason="length")
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_gpt_oss_arguments_stream_before_the_call_closes() -> None:
    prefix = "<|start|>user<|message|>hi<|end|><|start|>assistant"
    stream = ChatCompletionStream("gpt_oss", prefix, id_factory=ids, created=1)
    head = stream.feed("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{")
    calls = [tc for c in head for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert calls == [{"index": 0, "id": "call_0", "type": "function",
                      "function": {"name": "get_weather", "arguments": ""}}]
    early = stream.feed('"city": "Paris", "days": 3, ')
    fragments = [tc["function"]["arguments"] for c in early for tc in c["choices"][0]["delta"]["tool_calls"]]
    assert "".join(fragments) == '{"city": "Paris", "days": 3'
    rest = stream.feed('"unit": "C"}<|call|>') + stream.finish()
    tail = [tc["function"]["arguments"] for c in rest for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert "".join(fragments + tail) == '{"city": "Paris", "days": 3, "unit": "C"}'
    assert rest[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_qwen3_name_streams_before_the_call_closes() -> None:
    stream = ChatCompletionStream("qwen3", "", id_factory=ids)
    chunks = stream.feed('<tool_call>\n{"name": "get_weather", "arguments": {"city": ')
    names = [tc["function"]["name"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert names == ["get_weather"]
    chunks = stream.feed('"Paris"}}\n</tool_call>') + stream.finish()
    args = [tc["function"]["arguments"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert "".join(args) == '{"city": "Paris"}'


def test_qwen3_5_typed_xml_arguments_stream_one_key_behind() -> None:
    tools = [{"type": "function", "function": {"name": "alarm", "parameters": {
        "type": "object", "properties": {"hour": {"type": "integer"}, "label": {"type": "string"}}}}}]
    stream = ChatCompletionStream("qwen3_5", "", tools=tools, id_factory=ids)
    chunks = stream.feed("<tool_call>\n<function=alarm>\n<parameter=hour>\n7\n</parameter>\n"
                         "<parameter=label>\n007\n</parameter>\n<parameter=x>")
    args = [tc["function"].get("arguments", "") for c in chunks
            for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert "".join(args) == '{"hour": 7'
    chunks = stream.feed("\n1\n</parameter>\n</function>\n</tool_call>") + stream.finish()
    args += [tc["function"]["arguments"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert "".join(args) == '{"hour": 7, "label": "007", "x": "1"}'


def test_content_whitespace_is_stripped_across_deltas() -> None:
    stream = ChatCompletionStream("qwen3", "", created=1)
    chunks = []
    for piece in ["  \n", "Hello", "  ", " world ", "\n\n", "<|im_end|>"]:
        chunks.extend(stream.feed(piece))
    chunks.extend(stream.finish())
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks[1:]]
    assert [p for p in pieces if p] == ["Hello", "   world"]
    assert stream.message == {"role": "assistant", "content": "Hello   world"}


def test_malformed_call_keep_leaves_sent_header_and_reports() -> None:
    case = load(CORPUS / "gpt_oss" / "call_truncated_keep.json")
    stream, chunks = stream_case("gpt_oss", case, "1", reason="length")
    assert stream.malformed and stream.malformed[0]["field"] == "tool_calls"
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert stream.message is not None and "tool_calls" not in stream.message


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_split_reconciles(data: st.DataObject) -> None:
    family, path = data.draw(st.sampled_from(CASES))
    case = load(path)
    text = case["output"]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    on_malformed = case.get("options", {}).get("on_malformed", "raise")
    stream = ChatCompletionStream(FAMILIES[family], case["prefix"], tools=case.get("tools"), id_factory=ids,
                                  on_malformed=on_malformed)
    chunks = [c for p in pieces for c in stream.feed(p)] + stream.finish()
    assert stream.mismatches == []
    assert stream.message is not None
    wire = to_chat_message(stream.message, id_factory=ids)
    got = accumulate(chunks)
    assert got["content"] == (wire["content"] or "")
    assert got["reasoning"] == wire.get("reasoning_content", "")
    for streamed, final in zip(got["calls"], wire.get("tool_calls", []), strict=False):
        assert (streamed["id"], streamed["name"], streamed["arguments"]) == (
            final["id"], final["function"]["name"], final["function"]["arguments"])


def test_gpt_oss_typed_arguments_stream_early() -> None:
    tools = [{"type": "function", "function": {"name": "alarm", "parameters": {
        "type": "object", "properties": {"hour": {"type": "integer"}, "pin": {"type": "string"}}}}}]
    stream = ChatCompletionStream("gpt_oss", "", tools=tools, id_factory=ids)
    chunks = stream.feed('<|channel|>commentary to=functions.alarm<|message|>{"hour": "7", "pin": "007", ')
    early = "".join(tc["function"]["arguments"] for c in chunks
                    for tc in c["choices"][0]["delta"].get("tool_calls", []))
    assert early == '{"hour": 7, "pin": "007"'
    chunks = stream.feed('"x": [1, {"y": null}]}<|call|>') + stream.finish()
    rest = "".join(tc["function"]["arguments"] for c in chunks
                   for tc in c["choices"][0]["delta"].get("tool_calls", []))
    assert stream.message is not None
    assert early + rest == to_chat_message(stream.message)["tool_calls"][0]["function"]["arguments"]
    assert json.loads(early + rest) == {"hour": 7, "pin": "007", "x": [1, {"y": None}]}


def _stream_seconds(size: int) -> float:
    text = "<think>" + "why " * (size // 8) + "</think>" + "word " * (size // 10) + "<|im_end|>"
    stream = ChatCompletionStream("qwen3", "", created=1)
    start = time.perf_counter()
    for i in range(0, len(text), 4):
        stream.feed(text[i : i + 4])
    stream.finish()
    return time.perf_counter() - start


def test_streaming_cost_is_linear() -> None:
    small = min(_stream_seconds(16_000) for _ in range(3))
    large = min(_stream_seconds(128_000) for _ in range(3))
    assert large / small < 8 * 2.5  # 8x the text: linear is ~8x, quadratic would be ~64x
