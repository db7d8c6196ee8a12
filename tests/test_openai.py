"""chatparse.openai: final messages, chat.completion objects and streamed chunks agree with the parse."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionChunk

import chatparse
from chatparse import parse_response
from chatparse.errors import InputTypeError
from chatparse.openai import ChatCompletionStream, finish_reason, to_chat_completion, to_chat_message

CORPUS = Path(__file__).parent / "templates" / "corpus"
FAMILIES = {name: name for name in (
    "qwen3", "gpt_oss", "qwen3_5", "hermes", "qwen3_thinking_2507", "internlm2", "smollm3", "ernie45", "longcat",
    "granite_20b_fc",
)}
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
                seed: int = 0, buffer_calls: bool = False) -> tuple[ChatCompletionStream, list[dict[str, Any]]]:
    on_malformed = case.get("options", {}).get("on_malformed", "raise")
    stream = ChatCompletionStream(FAMILIES[family], case["prefix"], tools=case.get("tools"), model="m",
                                  id_factory=ids, on_malformed=on_malformed, created=1, buffer_calls=buffer_calls)
    chunks: list[dict[str, Any]] = []
    for piece in split(case["output"], how, seed):
        chunks.extend(stream.feed(piece))
    chunks.extend(stream.finish(reason))
    return stream, chunks


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


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
    finish = case.get("options", {}).get("finish_reason")
    stream, chunks = stream_case(family, case, how, seed=hash(path.name) & 0xFFFF, reason=finish or "stop")
    assert stream.mismatches == []
    message = stream.message
    assert message is not None
    on_malformed = case.get("options", {}).get("on_malformed", "raise")
    assert message == parse_response(case["output"], FAMILIES[family], prefix=case["prefix"],
                                     tools=case.get("tools"), on_malformed=on_malformed, finish_reason=finish)
    wire = to_chat_message(message, id_factory=ids)
    got = accumulate(chunks)
    assert got["content"] == (wire["content"] or "")
    assert got["reasoning"] == wire.get("reasoning_content", "")
    final_calls = wire.get("tool_calls", [])
    expect = [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
              for c in final_calls]
    if not message.get("malformed"):
        assert got["calls"] == expect
    else:
        # A call announced early that then failed keeps its wire index (its arguments never parse):
        # the calls whose arguments do parse are the final ones, and buffer_calls gives them exactly.
        whole = [c for c in got["calls"] if _parses(c["arguments"])]
        assert [(c["name"], c["arguments"]) for c in whole] == [(c["name"], c["arguments"]) for c in expect]
        _, held = stream_case(family, case, how, seed=hash(path.name) & 0xFFFF, buffer_calls=True,
                              reason=finish or "stop")
        assert accumulate(held)["calls"] == expect
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
    assert reasons[-1] == ("length" if finish == "length" else "tool_calls" if final_calls else "stop")
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
    chunks = stream.feed('"Paris"}')
    assert arg_fragments(chunks) == ['{"city": "Paris"']  # the nested object closed: its last key is whole
    chunks = stream.feed('}\n</tool_call>') + stream.finish()
    assert arg_fragments(chunks) == ["}"]


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
    expect = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in wire.get("tool_calls", [])]
    if stream.message.get("malformed"):  # a call announced early that then failed keeps its wire index
        whole = [(c["name"], c["arguments"]) for c in got["calls"] if _parses(c["arguments"])]
        assert whole == [(name, arguments) for _, name, arguments in expect]
    else:
        assert [(c["id"], c["name"], c["arguments"]) for c in got["calls"]] == expect


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


# --- arguments nested in a JSON body: {"name": ..., "arguments": {...}} --------------------------

NESTED_FAMILIES = ["qwen3", "hermes", "qwen3_thinking_2507"]  # <tool_call>{"name": …, "arguments": {…}}</tool_call>


def arg_fragments(chunks: list[dict[str, Any]]) -> list[str]:
    return [tc["function"]["arguments"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls") or []
            if tc.get("function", {}).get("arguments")]


def written_bodies(text: str) -> list[dict[str, Any]]:
    """The JSON objects written after each ``<tool_call>`` in the raw output, in their key order."""
    decoder, out = json.JSONDecoder(), []
    for match in re.finditer(r"<tool_call>\s*", text):
        try:
            body, _ = decoder.raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(body, dict):
            out.append(body)
    return out


def name_first(bodies: list[dict[str, Any]], name: str, keys: list[str]) -> bool:
    """Whether the call ``name`` with these argument keys was written with "name" before "arguments"."""
    for body in bodies:
        args = body.get("arguments")
        if body.get("name") == name and isinstance(args, dict) and list(args) == keys:
            order = list(body)
            return order.index("name") < order.index("arguments")
    return False


@pytest.mark.parametrize("how", ["1", "3", "7", "random"])
@pytest.mark.parametrize("family", NESTED_FAMILIES)
def test_nested_arguments_stream_before_the_call_closes(family: str, how: str) -> None:
    checked = multi_key = 0
    for path in sorted((CORPUS / family).glob("*.json")):
        case = load(path)
        on_malformed = case.get("options", {}).get("on_malformed", "raise")
        stream = ChatCompletionStream(family, case["prefix"], tools=case.get("tools"), model="m", id_factory=ids,
                                      on_malformed=on_malformed, created=1)
        pieces = split(case["output"], how, seed=hash(path.name) & 0xFFFF)
        sent: list[tuple[int, dict[str, Any]]] = []  # (feed number, chunk); finish() is the last number
        for number, piece in enumerate(pieces):
            sent.extend((number, chunk) for chunk in stream.feed(piece))
        sent.extend((len(pieces), chunk) for chunk in stream.finish())
        assert stream.mismatches == []
        for _, chunk in sent:
            ChatCompletionChunk.model_validate(chunk)
        assert stream.message is not None
        if stream.message.get("malformed"):
            continue  # a call announced early that then failed shifts the wire indices (compared elsewhere)
        wire = to_chat_message(stream.message, id_factory=ids)
        bodies = written_bodies(case["output"])
        for final in wire.get("tool_calls", []):
            index = int(final["id"].removeprefix("call_"))
            mine = [(number, position, tc) for position, (number, chunk) in enumerate(sent)
                    for tc in chunk["choices"][0]["delta"].get("tool_calls") or [] if tc["index"] == index]
            fragments = [(number, position, tc["function"]["arguments"]) for number, position, tc in mine
                         if tc["function"].get("arguments")]
            assert "".join(f for _, _, f in fragments) == final["function"]["arguments"]
            assert "id" in mine[0][2] and mine[0][2]["function"]["name"] == final["function"]["name"]
            assert all("id" not in tc for _, _, tc in mine[1:])  # the header precedes every fragment
            arguments = json.loads(final["function"]["arguments"])
            if not name_first(bodies, final["function"]["name"], list(arguments)) or not arguments:
                continue
            checked += 1
            multi_key += len(arguments) > 1
            first_key = json.dumps(next(iter(arguments)), ensure_ascii=False)
            close_feed, close_position, close_fragment = fragments[-1]
            assert close_fragment == "}"  # every key was sent early: only the brace waits for the close
            first_feed, first_position, first_fragment = fragments[0]
            assert first_fragment.startswith("{" + first_key + ": ")
            assert first_position < close_position
            assert first_feed < close_feed  # sent by an earlier feed than the one that closed the call
    assert checked >= 2 and multi_key >= 1, (checked, multi_key)


def test_nested_typed_arguments_stream_early() -> None:
    tools = [{"type": "function", "function": {"name": "alarm", "parameters": {
        "type": "object", "properties": {"hour": {"type": "integer"}, "pin": {"type": "string"}}}}}]
    stream = ChatCompletionStream("qwen3", "", tools=tools, id_factory=ids)
    early = arg_fragments(stream.feed('<tool_call>\n{"name": "alarm", "arguments": {"hour": "7", "pin": "007", '))
    assert early == ['{"hour": 7', ', "pin": "007"']
    rest = arg_fragments(stream.feed('"x": [1, {"y": null}]}}\n</tool_call>') + stream.finish())
    assert rest == [', "x": [1, {"y": null}]', "}"]
    assert stream.message is not None
    assert "".join(early + rest) == to_chat_message(stream.message)["tool_calls"][0]["function"]["arguments"]
    assert json.loads("".join(early + rest)) == {"hour": 7, "pin": "007", "x": [1, {"y": None}]}


def test_nested_arguments_before_the_name_are_sent_at_the_close() -> None:
    text = '<tool_call>\n{"arguments": {"a": 1, "b": "x"}, "name": "f"}\n</tool_call>'
    stream = ChatCompletionStream("hermes", "", id_factory=ids)
    before_close = [c for ch in text[:-len("</tool_call>")] for c in stream.feed(ch)]
    calls = [tc for c in before_close for tc in c["choices"][0]["delta"].get("tool_calls") or []]
    assert calls == [{"index": 0, "id": "call_0", "type": "function", "function": {"name": "f", "arguments": ""}}]
    rest = [c for ch in text[-len("</tool_call>"):] for c in stream.feed(ch)] + stream.finish()
    assert arg_fragments(rest) == ['{"a": 1, "b": "x"}']
    assert stream.mismatches == []


def test_nested_escapes_and_surrogate_pairs_split_across_chunks() -> None:
    body = '{"name": "f", "arguments": {"s": "\\ud83d\\ude00 \\"q\\" \\\\ \\n caf\\u00e9 東京", "n": -1.5e2}}'
    text = "<tool_call>\n" + body + "\n</tool_call>"
    stream = ChatCompletionStream("qwen3", "", id_factory=ids)
    chunks = [c for ch in text for c in stream.feed(ch)]
    early = arg_fragments(chunks)
    assert early[0] == '{"s": "😀 \\"q\\" \\\\ \\n café 東京"'
    fragments = early + arg_fragments(stream.finish())
    assert "".join(fragments) == json.dumps(json.loads(body)["arguments"], ensure_ascii=False)
    assert fragments[-1] == "}" and stream.mismatches == []


def test_nested_parameters_key_streams_early() -> None:
    prefix = "<|im_start|>user\nWhat is (3+5)*2?<|im_end|>\n<|im_start|>assistant\n"
    stream = ChatCompletionStream("internlm2", prefix, id_factory=ids)
    early = arg_fragments(stream.feed('<|action_start|><|plugin|>\n{"name": "calc", "parameters": {"expr": "8*2", '))
    assert early == ['{"expr": "8*2"']
    rest = arg_fragments(stream.feed('"exact": true}}<|action_end|><|im_end|>') + stream.finish())
    assert "".join(early + rest) == '{"expr": "8*2", "exact": true}'
    assert stream.mismatches == []


def test_body_that_is_the_function_object_streams_early() -> None:
    # smollm3: {"type": "function", "function": "{content}"}
    stream = ChatCompletionStream("smollm3", "", id_factory=ids)
    head = stream.feed('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", ')
    assert [tc["function"]["name"] for c in head for tc in c["choices"][0]["delta"].get("tool_calls") or []
            if "id" in tc] == ["get_weather"]
    assert arg_fragments(head) == ['{"city": "Paris"']
    rest = arg_fragments(stream.feed('"days": 2}}</tool_call><|im_end|>') + stream.finish())
    assert "".join(arg_fragments(head) + rest) == '{"city": "Paris", "days": 2}'
    assert stream.mismatches == []


nested_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
    | st.sampled_from(['"', "\\", "\n", "\t", "\u0000", "😀", "é", "東京", "</tool_call>", "a}b"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=6), nested_values, max_size=5),
       family=st.sampled_from(["qwen3", "hermes"]), ensure_ascii=st.booleans(),
       indent=st.sampled_from([None, 0, 2]), data=st.data())
def test_any_nested_arguments_in_any_chunks(arguments: dict[str, Any], family: str, ensure_ascii: bool,
                                            indent: int | None, data: st.DataObject) -> None:
    body = json.dumps({"name": "f", "arguments": arguments}, ensure_ascii=ensure_ascii, indent=indent)
    assume(not re.search(r"\}\s*</tool_call>", body))  # would end the call early (docs: the templates' note)
    text = "<tool_call>\n" + body + "\n</tool_call>"
    cuts = sorted(data.draw(st.sets(st.integers(1, len(text) - 1), max_size=16)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    stream = ChatCompletionStream(family, "", id_factory=ids)
    chunks = [c for p in pieces for c in stream.feed(p)] + stream.finish()
    assert stream.mismatches == []
    assert stream.message is not None
    parsed = stream.message["tool_calls"][0]["function"]["arguments"]
    assert parsed == json.loads(body)["arguments"]
    fragments = arg_fragments(chunks)
    assert "".join(fragments) == json.dumps(parsed, ensure_ascii=False)
    assert "".join(fragments) == to_chat_message(stream.message)["tool_calls"][0]["function"]["arguments"]
    assert fragments[-1] == ("}" if arguments else "{}")  # name first: every key went early


# --- real outputs: cut and broken calls on the wire ----------------------------------------------------

CUT_JSON = '<tool_call>\n{"name": "write_file", "arguments": {"path": "scripts/clean.sh", "content": "rm -rf ~'


def _feed_all(stream: ChatCompletionStream, text: str, size: int = 3, reason: str = "length") -> list[dict[str, Any]]:
    chunks = [c for i in range(0, len(text), size) for c in stream.feed(text[i : i + size])]
    return chunks + stream.finish(reason)


def test_a_cut_call_never_accumulates_valid_json_arguments() -> None:
    stream = ChatCompletionStream("qwen3", "<|im_start|>assistant\n<think>\n\n</think>\n\n", created=1)
    got = accumulate(_feed_all(stream, CUT_JSON))
    assert [c["name"] for c in got["calls"]] == ["write_file"]  # the header went out early
    with pytest.raises(ValueError):
        json.loads(got["calls"][0]["arguments"])
    assert stream.message is not None and "tool_calls" not in stream.message
    assert stream.malformed == [{"field": "tool_calls", "code": "truncated", "error": stream.malformed[0]["error"],
                                 "raw": CUT_JSON}]


# A Qwen 3.5 call cut by the token limit between two parameters: every parameter written so far is closed,
# but '</function>' never came (the model was writing 'cwd' next).
CUT_BETWEEN = ("Running it.\n\n<tool_call>\n<function=run>\n<parameter=command>\nrm -rf build\n</parameter>\n")
RUN_TOOL = [{"type": "function", "function": {"name": "run", "parameters": {"type": "object", "properties": {
    "command": {"type": "string"}, "cwd": {"type": "string"}}, "required": ["command"]}}}]


@pytest.mark.parametrize("buffer_calls", [True, False])
def test_finish_length_never_sends_a_call_cut_between_parameters(buffer_calls: bool) -> None:
    prefix = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    stream = ChatCompletionStream("qwen3.5", prefix, tools=RUN_TOOL, buffer_calls=buffer_calls, created=1)
    got = accumulate(_feed_all(stream, CUT_BETWEEN, reason="length"))
    assert all(not _parses(c["arguments"]) for c in got["calls"])  # nothing a client could run
    if buffer_calls:
        assert got["calls"] == []
    assert stream.message is not None and "tool_calls" not in stream.message
    assert [m["code"] for m in stream.malformed] == ["truncated"]
    assert "token limit" in stream.malformed[0]["error"]
    assert stream.message == parse_response(CUT_BETWEEN, "qwen3.5", prefix=prefix, tools=RUN_TOOL,
                                            on_malformed="recover", finish_reason="length")


def test_finish_stop_keeps_the_text_rule_for_a_call_without_its_close() -> None:
    # The model stopped (finish_reason "stop", its end token stripped) after closing every parameter but
    # before '</function>': with no required parameter missing, the call is whole.
    prefix = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    stream = ChatCompletionStream("qwen3.5", prefix, tools=RUN_TOOL, buffer_calls=True, created=1)
    got = accumulate(_feed_all(stream, CUT_BETWEEN, reason="stop"))
    assert [(c["name"], json.loads(c["arguments"])) for c in got["calls"]] == [("run", {"command": "rm -rf build"})]


def test_finish_reason_must_be_text() -> None:
    parser = chatparse.ResponseParser("qwen3.5", "")
    with pytest.raises(InputTypeError, match="finish_reason"):
        parser.finalize(finish_reason=1)  # type: ignore[arg-type]


def test_parse_response_takes_one_finish_reason_per_generation() -> None:
    texts = [CUT_BETWEEN, CUT_BETWEEN]
    got = parse_response(texts, "qwen3.5", prefix="", tools=RUN_TOOL, on_malformed="keep",
                         finish_reason=["stop", "length"])
    assert [len(m.get("tool_calls", [])) for m in got] == [1, 0]
    assert got[1]["malformed"][0]["code"] == "truncated"
    with pytest.raises(InputTypeError, match="2 generations but 1 finish reasons"):
        parse_response(texts, "qwen3.5", prefix="", finish_reason=["length"])
    with pytest.raises(InputTypeError, match="a list of finish reasons needs a list of generations"):
        parse_response(CUT_BETWEEN, "qwen3.5", prefix="", finish_reason=["length"])  # type: ignore[call-overload]


def test_buffer_calls_makes_the_wire_equal_the_one_shot_message() -> None:
    prefix = "<|im_start|>assistant\n"
    text = ('Checking.<tool_call>\n{"name": "get_weather", "arguments": {"city": "서울 🌧"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "f", "arguments": {"a": "cut')
    stream = ChatCompletionStream("qwen3", prefix, buffer_calls=True, id_factory=ids, created=1)
    chunks = _feed_all(stream, text, size=1)
    got = accumulate(chunks)
    one_shot = parse_response(text, "qwen3", prefix=prefix, on_malformed="recover")
    wire = to_chat_message(one_shot, id_factory=ids)
    assert got["calls"] == [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                            for c in wire["tool_calls"]]
    assert got["content"] == wire["content"] == "Checking."
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_recover_is_the_wire_default_and_keeps_sibling_calls() -> None:
    text = ('<tool_call>{"name": "bad", "arguments": {"x": }</tool_call>'
            '<tool_call>{"name": "get_weather", "arguments": {"city": "LA"}}</tool_call>')
    stream = ChatCompletionStream("qwen3", "", created=1, id_factory=ids)
    got = accumulate(_feed_all(stream, text, reason="stop"))
    complete = [c for c in got["calls"] if c["arguments"].endswith("}") and c["name"] == "get_weather"]
    assert complete and json.loads(complete[0]["arguments"]) == {"city": "LA"}
    assert stream.message is not None
    assert [c["function"]["name"] for c in stream.message["tool_calls"]] == ["get_weather"]
    assert stream.malformed[0]["code"] == "content_parse_failed"


def test_content_streams_as_written_around_calls() -> None:
    text = 'Sure: <tool_call>{"name": "f"}</tool_call> and\n\nthen<|im_end|><|endoftext|>'
    stream = ChatCompletionStream("qwen3", "", created=1)
    got = accumulate(_feed_all(stream, text, size=2, reason="stop"))
    assert got["content"] == "Sure:  and\n\nthen"
    assert stream.message is not None and stream.message["content"] == "Sure:  and\n\nthen"


def test_a_call_list_value_never_crashes_the_wire() -> None:
    message = {"role": "assistant", "tool_calls": {"type": "function", "function": [{"name": "f"}]}}
    assert to_chat_message(message, id_factory=ids)["tool_calls"][0]["function"] == {"name": "", "arguments": "{}"}


def test_the_stream_flags_calls_the_final_message_does_not_hold() -> None:
    """A template whose call field repeats without extending (each block replaces the last): the wire
    sent a, b and c, the message holds only c — the self-check names the field instead of passing."""
    template = {"start_anchor": "<s>", "fields": {
        "tool_calls": {"open": "<calls>", "close": "</calls>", "content": "json",
                       "transform_each": True, "transform": {"type": "function", "function": "{function}"}},
        "content": {}}}
    text = ('<calls>[{"function": {"name": "a", "arguments": {}}}, {"function": {"name": "b", "arguments": {}}}]'
            '</calls>then<calls>[{"function": {"name": "c", "arguments": {}}}]</calls>')
    stream = ChatCompletionStream(template, "", id_factory=ids)
    stream.feed(text)
    stream.finish()
    assert stream.message is not None
    assert [c["function"]["name"] for c in stream.message["tool_calls"]] == ["c"]
    assert "tool_calls" in stream.mismatches
    lfm2 = ChatCompletionStream("lfm2", "", id_factory=ids)
    lfm2.feed("<|tool_call_start|>[a(x=1), b(y=2)]<|tool_call_end|>then<|tool_call_start|>[c(z=3)]<|tool_call_end|>")
    lfm2.finish()
    assert lfm2.mismatches == []
    assert [c["function"]["name"] for c in lfm2.message["tool_calls"]] == ["a", "b", "c"]  # type: ignore[index]


# --- found by the hostile-input fuzzing (issue 13) ---------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "reason"), [
    ({1, 2}, "set"), (b"x", "bytes"), (10**5000, "Exceeds the limit"), (object(), "object"),
], ids=["set", "bytes", "huge integer", "object"])
def test_arguments_json_cannot_hold_are_named(value: Any, reason: str) -> None:
    """They used to escape from json.dumps as TypeError/ValueError/RecursionError."""
    message = {"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": value}}}]}
    with pytest.raises(InputTypeError) as caught:
        to_chat_message(message)
    assert caught.value.code == "not_json" and caught.value.path == "tool_calls[0].function.arguments"
    assert reason in str(caught.value) and isinstance(caught.value, TypeError)


def test_arguments_text_is_json_dumps_text_and_errors() -> None:
    """The wire encoder (built once) writes what ``json.dumps(..., ensure_ascii=False)`` writes, and fails
    where it fails with the same error: a cycle, a set, a key JSON cannot hold, an integer past the limit."""
    from chatparse.openai import _encode

    cycle: list[Any] = []
    cycle.append(cycle)
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    values = ["é\u2028\"x\ud800", 1, -0.0, 1e300, float("inf"), float("nan"), True, None, 10**50,
              [1, {"a": [True, None, 1.5, "\n"]}], {1: 2, None: 3, 1.5: "x", False: 1},
              cycle, {"a": cycle}, {1, 2}, b"x", {(1,): 2}, 10**5000, deep]
    for value in values:
        try:
            expected: Any = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as error:
            expected = (type(error), str(error))
        try:
            found: Any = _encode(value)
        except (TypeError, ValueError, RecursionError) as error:
            found = (type(error), str(error))
        assert found == expected


@pytest.mark.parametrize("how", ["whole", "1", "7"])
def test_non_finite_numbers_a_parse_holds_go_out_as_python_writes_them(how: str) -> None:
    """Found by the hostile-input fuzzing: typing an object parameter reads it with json.loads, which takes
    'Infinity' and 'NaN' (as transformers' typing does), so the stream must not refuse what parse_response
    returns."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"loc": {"type": "object"}}}}}]
    text = '<tool_call>\n<function=f>\n<parameter=loc>\n{"room": Infinity, "x": NaN}\n</parameter>\n</function>\n</tool_call>'
    loc = parse_response(text, "qwen3.5", prefix="", tools=tools)["tool_calls"][0]["function"]["arguments"]["loc"]
    assert loc["room"] == float("inf")
    stream = ChatCompletionStream("qwen3.5", "", tools=tools, model="m", created=1, id_factory=ids)
    chunks = [chunk for piece in split(text, how) for chunk in stream.feed(piece)] + stream.finish()
    sent = "".join(tc["function"].get("arguments", "") for c in chunks
                   for tc in c["choices"][0]["delta"].get("tool_calls") or [])
    assert sent == '{"loc": {"room": Infinity, "x": NaN}}' and stream.mismatches == []


def test_content_reasoning_and_names_of_another_type_are_json_text() -> None:
    message = {"content": {"a": 1}, "thinking": ["step"], "tool_calls": [{"function": {"name": 5}}]}
    wire = to_chat_message(message, id_factory=lambda i: f"call_{i}")
    assert (wire["content"], wire["reasoning_content"]) == ('{"a": 1}', '["step"]')
    assert wire["tool_calls"][0]["function"] == {"name": "5", "arguments": "{}"}
    with pytest.raises(InputTypeError) as caught:
        to_chat_message({"thinking": {1, 2}})
    assert caught.value.path == "thinking"


@pytest.mark.parametrize("message", [None, "text", ["content"]])
def test_a_message_that_is_not_a_dict_is_named(message: Any) -> None:
    with pytest.raises(InputTypeError):
        to_chat_message(message)
    with pytest.raises(InputTypeError):
        to_chat_completion(message, model="m")


def test_the_wire_stays_json_for_every_built_in_corpus_call() -> None:
    """Arguments the parsers produce are always JSON: the stream's own calls pass the stricter dump."""
    stream = ChatCompletionStream("qwen3", "", created=1)
    chunks = stream.feed('<tool_call>{"name": "f", "arguments": {"a": [1.5, null, "é"]}}</tool_call>')
    chunks += stream.finish()
    for chunk in chunks:
        json.dumps(chunk, allow_nan=False)
    assert stream.message is not None and stream.mismatches == []


@pytest.mark.parametrize("how", ["whole", "1", "7"])
def test_xml_arguments_that_run_into_the_next_parameter_stream_consistently(how: str) -> None:
    """Found by the hostile-input fuzzing: a value running into a repeated '<parameter=city>' was sent
    early with the tag inside it while the final message had 'Seoul' ('tool_calls[0].arguments' mismatch)."""
    text = ("<tool_call>\n<function=get_weather>\n<parameter=city>ction=get_weather>\n<parameter=city>\nSeoul\n"
            "</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>")
    stream = ChatCompletionStream("qwen3.5", "", model="m", created=1, id_factory=ids)
    chunks = [chunk for piece in split(text, how) for chunk in stream.feed(piece)] + stream.finish()
    assert stream.mismatches == []
    assert stream.message is not None and stream.message["tool_calls"][0]["function"]["arguments"] == {
        "city": "Seoul", "days": "2"}
    sent = "".join(tc["function"].get("arguments", "") for c in chunks
                   for tc in c["choices"][0]["delta"].get("tool_calls") or [])
    assert json.loads(sent) == {"city": "Seoul", "days": "2"}


@pytest.mark.parametrize("text", [
    "<tool_call>\n<function=write_file>\n<parameter=path>\nREADME.md\n\n<parameter=content>\n# App\n</parameter>\n"
    "<parameter=mode>\nw\n</parameter>\n</function>\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n<parameter=label>\n"
    "wake up\n</parameter>\n<parameter=pin>\n0042\n</parameter>\n</function>\n</tool_call>",
    "<tool_call>\n<function=write_file>\n<parameter=path>\nnotes/a.txt\n</parameter>\n<parameter=con\n\ntent>\n"
    "line 1\n</parameter>\n</function>\n</tool_call>",
], ids=["value cut by the next tag", "parameters after </function>", "a tag name with newlines"])
def test_qwen3_coder_xml_arguments_sent_early_are_the_final_ones(text: str) -> None:
    """Found by the hostile-input fuzzing: the early XML scanner kept a newline the engine drops, and read
    a value the engine extends over '</function>' (mismatches 'tool_calls[0].arguments'). Parameters
    after the call's '</function>' make the call malformed: then no argument text goes out at all."""
    for how in ("whole", "1", "7"):
        stream = ChatCompletionStream("qwen3_coder", "", model="m", created=1, id_factory=ids)
        chunks = [chunk for piece in split(text, how) for chunk in stream.feed(piece)] + stream.finish()
        assert stream.mismatches == [], how
        assert stream.message is not None
        sent = "".join(tc["function"].get("arguments", "") for c in chunks
                       for tc in c["choices"][0]["delta"].get("tool_calls") or [])
        if "tool_calls" not in stream.message:
            assert stream.message["malformed"][0]["code"] == "content_parse_failed"
            assert sent == ""
            continue
        assert json.loads(sent) == stream.message["tool_calls"][0]["function"]["arguments"]


# --- when things go out: the feed that completes them -------------------------------------------


def sent_by_feed(template: str, text: str) -> list[tuple[int, str]]:
    """(index of the character fed, argument fragment) for every non-empty fragment, feeding one character
    at a time (``len(text)``: sent by ``finish``)."""
    stream = ChatCompletionStream(template, "", id_factory=ids, created=1)
    out = [(i, fragment) for i, char in enumerate(text) for fragment in arg_fragments(stream.feed(char))]
    out += [(len(text), fragment) for fragment in arg_fragments(stream.finish())]
    assert stream.mismatches == []
    return out


def test_json_arguments_go_out_with_the_character_that_completes_them() -> None:
    """A key's fragment goes out in the feed holding the ',' or '}' after its value, never later (the call
    scanner is handed text only when it holds such a character: ',' and '}' inside strings do not count)."""
    body = '{"name": "f", "arguments": {"a": 1, "b": "x,y}", "c": [1, {"d": 2}], "e": "z"}}'
    text = f"<tool_call>\n{body}\n</tool_call>"
    at = [text.index(', "b"'), text.index(', "c"'), text.index(', "e"'), text.index('"z"}') + 3, len(text) - 1]
    fragments = ['{"a": 1', ', "b": "x,y}"', ', "c": [1, {"d": 2}]', ', "e": "z"', "}"]  # "}": at the call's close
    assert sent_by_feed("qwen3", text) == list(zip(at, fragments, strict=True))


def test_xml_arguments_go_out_with_the_tag_that_completes_the_next_one() -> None:
    """XML: a key's fragment goes out one key behind, in the feed holding the '>' that ends the next
    parameter ('>' inside a value completes nothing)."""
    text = ("<tool_call>\n<function=f>\n<parameter=a>\n1 > 0\n</parameter>\n<parameter=b>\nx\n</parameter>\n"
            "<parameter=c>\ny\n</parameter>\n</function>\n</tool_call>")

    # A value closes where the call's structure after its '</parameter>' is seen: 'b' with the next tag's
    # '>' (the feed the layer hands the scanner), so 'a' goes out there; 'c' only with the call's close.
    sent = sent_by_feed("qwen3_5", text)
    assert sent[0] == (text.index(">", text.index("<parameter=c")), '{"a": "1 > 0"')
    assert "".join(fragment for _, fragment in sent) == '{"a": "1 > 0", "b": "x", "c": "y"}'


def test_chunk_fields_set_after_construction_go_out() -> None:
    stream = ChatCompletionStream("qwen3", "", model="m", created=1, completion_id="chatcmpl-1")
    assert (stream.id, stream.model, stream.created) == ("chatcmpl-1", "m", 1)
    stream.model, stream.created, stream.id = "other", 2, "chatcmpl-2"
    chunks = stream.feed("<think>why</think>Hi") + stream.finish()
    assert {(c["id"], c["model"], c["created"]) for c in chunks} == {("chatcmpl-2", "other", 2)}
    assert all(ChatCompletionChunk.model_validate(c) for c in chunks)


def test_reasoning_key_set_mid_stream_applies_to_the_next_delta() -> None:
    stream = ChatCompletionStream("qwen3", "", created=1)
    first = stream.feed("<think>one ") + stream.feed("two ")
    stream.reasoning_key = "reasoning"
    later = stream.feed("three") + stream.feed("</think>done") + stream.finish()
    assert "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in first) == "one two"
    assert "".join(c["choices"][0]["delta"].get("reasoning", "") for c in later) == " three"


@pytest.mark.parametrize("first", ["x", " 2", "}"])
def test_the_first_feed_returns_what_the_prefix_completed(first: str) -> None:
    """A prefix that ends inside a call (its header already certain): the first feed returns the role and
    the header, whatever that feed holds."""
    prefix = '<|im_start|>assistant\n<tool_call>\n{"name": "f", "arguments": {"a": 1'
    stream = ChatCompletionStream("qwen3", prefix, id_factory=ids, created=1)
    head = [c["choices"][0]["delta"] for c in stream.feed(first)]
    assert head[:2] == [{"role": "assistant", "content": ""}, {"tool_calls": [
        {"index": 0, "id": "call_0", "type": "function", "function": {"name": "f", "arguments": ""}}]}]


@pytest.mark.parametrize(("final", "same"), [
    ({"a": "x" * 5000, "b": 1, "c": None}, True),
    ({"b": 1, "a": "x" * 5000, "c": None}, False),  # another key order
    ({"a": "x" * 5000, "b": True, "c": None}, False),  # equal in Python, not in JSON
    ({"a": "x" * 5000, "b": 1.0, "c": None}, False),
    ({"a": "x" * 5000, "b": 1}, False),  # a key less
    ({"a": "y" * 5000, "b": 1, "c": None}, False),
])
def test_a_call_whose_keys_all_went_out_is_not_serialized_again_unless_it_differs(final: dict[str, Any],
                                                                               same: bool) -> None:
    """At a call's close, the arguments' JSON is the fragments already sent and '}' only when the final
    arguments are those keys in that order with the same plain values; anything else is serialized."""
    from chatparse.openai import _CallState, _streamed_json

    sent = {"a": "x" * 5000, "b": 1, "c": None}
    call = _CallState(values=dict(sent), emitted=[
        ("{" if i == 0 else ", ") + json.dumps(k) + ": " + json.dumps(v) for i, (k, v) in enumerate(sent.items())])
    result = _streamed_json(call, final)
    assert (result == json.dumps(final, ensure_ascii=False)) if same else result is None
    call.early = False  # a key was repeated: nothing is assumed
    assert _streamed_json(call, final) is None


# --- the cut turn on the wire ------------------------------------------------------------------------------
QWEN3_RENDERED = load(CORPUS / "qwen3" / "rendered_multiturn_after_tool_result.json")
# Reasoning, one whole call, then a second call the token limit cut after its JSON closed and before
# '</tool_call>': the call cannot be returned, but early streaming already sent its header and arguments.
CUT_TURN = ('<think>\nWrite the report, then check the time.\n</think>\n\n'
            '<tool_call>\n{"name": "write_file", "arguments": {"path": "report.md", "content": "# Seoul\\n21 °C"}}\n'
            '</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"zone": "Asia/Seoul"}}\n')


def _cut_turn_stream(reason: str, buffer_calls: bool) -> tuple[ChatCompletionStream, list[dict[str, Any]]]:
    from tests.tokens import pseudo_tokens, template_markers

    special, tags = template_markers("qwen3")
    stream = ChatCompletionStream("qwen3", QWEN3_RENDERED["prefix"], tools=QWEN3_RENDERED["tools"], id_factory=ids,
                                  created=1, buffer_calls=buffer_calls)
    chunks = [c for token in pseudo_tokens(CUT_TURN, special + tags, random.Random(5)) for c in stream.feed(token)]
    return stream, chunks + stream.finish(reason)


@pytest.mark.parametrize("reason", ["length", "max_tokens", "MAX_TOKENS", "max_output_tokens"])
def test_a_streamed_call_the_limit_cut_is_named_in_the_final_chunk(reason: str) -> None:
    stream, chunks = _cut_turn_stream(reason, buffer_calls=False)
    wire = accumulate(chunks)
    assert [c["name"] for c in wire["calls"]] == ["write_file", "get_time"]  # the cut call's header went out
    assert json.loads(wire["calls"][0]["arguments"]) == {"path": "report.md", "content": "# Seoul\n21 °C"}
    with pytest.raises(ValueError):
        json.loads(wire["calls"][1]["arguments"])  # its arguments never closed on the wire
    last = chunks[-1]["choices"][0]
    assert last["finish_reason"] == "length" and last["chatparse_truncated_calls"] == [1]
    assert "chatparse_malformed_calls" not in last
    assert stream.message is not None and [c["function"]["name"] for c in stream.message["tool_calls"]] == ["write_file"]
    assert [m["code"] for m in stream.message["malformed"]] == ["truncated"]
    assert stream.message == parse_response(CUT_TURN, "qwen3", prefix=QWEN3_RENDERED["prefix"],
                                            tools=QWEN3_RENDERED["tools"], on_malformed="recover", finish_reason=reason)
    assert ChatCompletionChunk.model_validate(chunks[-1]).choices[0].model_extra == {"chatparse_truncated_calls": [1]}


def test_buffered_calls_stay_exact_under_the_limit() -> None:
    stream, chunks = _cut_turn_stream("length", buffer_calls=True)
    wire = accumulate(chunks)
    assert stream.message is not None
    assert [(c["name"], json.loads(c["arguments"])) for c in wire["calls"]] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in stream.message["tool_calls"]]
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "length", "logprobs": None}


def test_an_ended_turn_names_no_cut_call() -> None:
    """The same turn closed and ended (EOS and padding after it): every streamed call is whole."""
    stream = ChatCompletionStream("qwen3", QWEN3_RENDERED["prefix"], tools=QWEN3_RENDERED["tools"], id_factory=ids)
    text = CUT_TURN + "</tool_call><|im_end|><|endoftext|><|endoftext|>"
    chunks = [c for piece in split(text, "3") for c in stream.feed(piece)] + stream.finish("stop")
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "tool_calls", "logprobs": None}
    assert [c["name"] for c in accumulate(chunks)["calls"]] == ["write_file", "get_time"]


def test_the_wire_speaks_one_finish_reason_vocabulary() -> None:
    call = {"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]}
    for reason in ("length", "max_tokens", "MAX_TOKENS", "max_output_tokens", "model_length"):
        assert finish_reason(call, reason) == finish_reason({"content": "x"}, reason) == "length"
    for reason in ("stop", "end_turn", "eos", "STOP", "stop_sequence", None):
        assert finish_reason({"content": "x"}, reason) == "stop"
        assert finish_reason(call, reason) == "tool_calls"
    assert finish_reason({"content": "x"}, "content_filter") == "content_filter"
    assert finish_reason({"content": "x"}, "ABORT") == "abort"
    from chatparse.finish import UnknownFinishReasonError

    with pytest.raises(UnknownFinishReasonError, match="'lenght'") as caught:
        finish_reason(call, "lenght")
    assert caught.value.code == "unknown_finish_reason" and "'max_tokens'" in str(caught.value)
    stream = ChatCompletionStream("qwen3", "", id_factory=ids, created=1)
    head = stream.feed("Hi")
    with pytest.raises(UnknownFinishReasonError):
        stream.finish("lenght")
    rest = stream.finish("end_turn")  # nothing was lost to the bad call
    assert accumulate(head + rest)["content"] == "Hi" and rest[-1]["choices"][0]["finish_reason"] == "stop"


def test_a_streamed_call_dropped_as_malformed_is_named_in_the_final_chunk() -> None:
    stream = ChatCompletionStream("qwen3", QWEN3_RENDERED["prefix"], tools=QWEN3_RENDERED["tools"], id_factory=ids)
    text = ('<tool_call>\n{"name": "get_time", "arguments": {"zone": "Asia/Seoul"}, "zone": ]}\n</tool_call>'
            '<|im_end|><|endoftext|>')
    chunks = [c for piece in split(text, "7") for c in stream.feed(piece)] + stream.finish("stop")
    assert [c["name"] for c in accumulate(chunks)["calls"]] == ["get_time"]
    last = chunks[-1]["choices"][0]
    assert last["chatparse_malformed_calls"] == [0] and "chatparse_truncated_calls" not in last
    assert last["finish_reason"] == "stop"
    assert stream.message is not None and "tool_calls" not in stream.message
    assert {m["code"] for m in stream.message["malformed"]} == {"content_parse_failed"}


def _whole_call_turns() -> list[tuple[str, Path]]:
    from tests.templates.corpus_loader import corpus_cases

    return [(family, path) for family, path in corpus_cases()
            if (expected := load(path)["expected"]).get("tool_calls")
            and "malformed" not in expected and "trailing" not in expected]


WHOLE_CALL_TURNS = _whole_call_turns()


@pytest.mark.parametrize("family", sorted({family for family, _ in WHOLE_CALL_TURNS}))
def test_the_wire_minus_the_named_calls_is_the_message_in_every_family(family: str) -> None:
    """Every whole turn with calls (full rendered prompt as prefix), cut by the token limit at seeded points
    and streamed early in 4-character deltas: the calls an OpenAI client accumulated, without those the final
    chunk names, are exactly the message's calls, with valid JSON arguments."""
    from chatparse.templates import get_template

    template = get_template(family)
    for _, path in [(f, p) for f, p in WHOLE_CALL_TURNS if f == family]:
        case = load(path)
        output = case["output"]
        rng = random.Random(f"{family}/{path.stem}")
        for k in sorted(rng.sample(range(len(output) + 1), min(4, len(output) + 1))):
            stream = ChatCompletionStream(template, case["prefix"], tools=case.get("tools"), id_factory=ids)
            chunks = [c for piece in split(output[:k], "4") for c in stream.feed(piece)] + stream.finish("length")
            last = chunks[-1]["choices"][0]
            named = set(last.get("chatparse_truncated_calls", [])) | set(last.get("chatparse_malformed_calls", []))
            kept = [c for i, c in enumerate(accumulate(chunks)["calls"]) if i not in named]
            assert stream.message is not None and stream.mismatches == []
            assert [(c["name"], json.loads(c["arguments"])) for c in kept] == [
                (c["function"]["name"], c["function"]["arguments"]) for c in stream.message.get("tool_calls", [])
            ], f"{path.stem}, cut at {k}: {output[:k][-40:]!r}"
