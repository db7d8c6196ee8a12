"""chatparse.integrations.serving, the engine-neutral half of the serving plugins (runs without vLLM): which
template a server uses, one generation parsed whole and streamed (deltas add up to the whole parse, ids once
per call, cut calls never complete), and where reasoning ends in token ids."""

from __future__ import annotations

import importlib.util
import json
import logging
import zlib
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.integrations import serving
from chatparse.integrations.serving import (
    CALLS_ENV,
    TEMPLATE_ENV,
    Delta,
    GenerationStream,
    ReasoningCounter,
    ReasoningWatch,
    parse_generation,
    server_template,
)
from chatparse.integrations.tokenizer_config import MissingResponseTemplateError, install_response_template
from chatparse.templates import get_template
from tests import tokens
from tests.integrations.serving_cases import CASE_IDS, CASES, FAMILIES
from tests.integrations.tokenizers import encode, family_tokenizer
from tests.templates.corpus_loader import case_id, load_case

HEADER = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def numbered() -> Any:
    count = iter(range(10_000))
    return lambda name: f"{name}#{next(count)}"


def run_stream(template: Any, case: dict[str, Any], deltas: list[str], calls: str) -> tuple[Delta, GenerationStream]:
    stream = GenerationStream(template, case["prefix"], tools=case.get("tools"), calls=calls, new_call_id=numbered())
    total = Delta()
    for text in deltas:
        total = total.add(stream.feed(text))
    return total.add(stream.finish()), stream


def by_index(delta: Delta) -> list[dict[str, Any]]:
    calls: dict[int, dict[str, Any]] = {}
    for call in delta.calls:
        slot = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
        if call.id is not None:
            assert slot["id"] is None, "an id sent twice"
            slot["id"], slot["name"] = call.id, call.name
        slot["arguments"] += call.arguments
    return [calls[i] for i in sorted(calls)]


@pytest.mark.parametrize(("family", "path"), CASES, ids=CASE_IDS)
def test_streamed_deltas_add_up_to_the_whole_parse(family: str, path: Path) -> None:
    case = load_case(path)
    template = chatparse.load_template(get_template(FAMILIES[family]))
    whole = parse_generation(template, case["prefix"], case["output"], tools=case.get("tools"), new_call_id=numbered())
    assert whole.message == chatparse.parse_response(case["output"], template, prefix=case["prefix"],
                                                     tools=case.get("tools"), on_malformed="recover")
    special, tags = tokens.template_markers(template)
    seed = zlib.crc32(case_id(family, path).encode())
    pieces = tokens.pseudo_tokens(case["output"], special + tags, __import__("random").Random(seed))
    for grouping, groups in tokens.groupings(pieces, seed).items():
        deltas = ["".join(g) for g in groups]
        total, stream = run_stream(template, case, deltas, "buffered")
        assert stream.message == whole.message and stream.mismatches == [], grouping
        assert (total.reasoning or None, total.content or None) == (whole.reasoning, whole.content), grouping
        assert [(c["id"], c["name"], c["arguments"]) for c in by_index(total)] == whole.calls, grouping
        early, _ = run_stream(template, case, deltas, "early")
        complete = [(c["name"], c["arguments"]) for c in by_index(early) if tokens.parses_json(c["arguments"])]
        assert complete == [(name, arguments) for _, name, arguments in whole.calls], grouping


def test_a_cut_call_is_dropped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    output = ('<tool_call>{"name": "a", "arguments": {}}</tool_call>'
              '<tool_call>{"name": "b", "arguments": {"x": [1, 2')
    with caplog.at_level(logging.WARNING, logger="chatparse.serving"):
        whole = parse_generation("qwen3", HEADER, output, new_call_id=numbered())
    assert whole.calls == [("a#0", "a", "{}")]
    assert "dropped a tool_calls region (truncated)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="engine.log"):
        parse_generation("qwen3", HEADER, output, new_call_id=numbered(), log=logging.getLogger("engine.log"))
    assert [r.name for r in caplog.records] == ["engine.log"]
    total, _ = run_stream("qwen3", {"prefix": HEADER}, [output[:40], output[40:]], "early")
    calls = by_index(total)
    assert [c["name"] for c in calls] == ["a", "b"] and calls[0]["arguments"] == "{}"
    assert not tokens.parses_json(calls[1]["arguments"])  # the cut call's arguments never become valid JSON


def test_delta_add_joins_a_call_continued_across_deltas() -> None:
    first = Delta("r", "c", [serving.CallDelta(0, "id0", "f", '{"a"')])
    second = Delta("", "d", [serving.CallDelta(0, None, None, ": 1}"), serving.CallDelta(1, "id1", "g", "{}")])
    joined = first.add(second)
    assert (joined.reasoning, joined.content) == ("r", "cd")
    assert [(c.index, c.id, c.arguments) for c in joined.calls] == [(0, "id0", '{"a": 1}'), (1, "id1", "{}")]
    assert not Delta() and joined


# --- which template --------------------------------------------------------------------------------


def test_template_from_the_environment_first(tmp_path: Path) -> None:
    tok = family_tokenizer("qwen3")
    template, source = server_template(tok, env={TEMPLATE_ENV: "llama3_json"})
    assert template.source == chatparse.load_template("llama3_json").source and TEMPLATE_ENV in source
    install_dir = tmp_path / "model"
    tok.save_pretrained(install_dir)
    install_response_template(install_dir, "qwen3")
    from_dir, _ = server_template(None, env={TEMPLATE_ENV: str(install_dir)})
    assert from_dir.source == chatparse.load_template("qwen3").source
    file = tmp_path / "t.json"
    file.write_text(json.dumps(get_template("glm47")))
    from_file, _ = server_template(None, env={TEMPLATE_ENV: str(file)})
    assert from_file.source == chatparse.load_template("glm47").source


def test_template_from_the_tokenizer_then_detection() -> None:
    class Tok:
        response_template = get_template("kimi_k2")
        name_or_path = "Qwen/Qwen3-8B"

    assert server_template(Tok(), env={})[0].source == chatparse.load_template("kimi_k2").source

    class Named:
        name_or_path = "Qwen/Qwen3-8B"

    template, source = server_template(Named(), env={})
    assert template.source == chatparse.load_template("qwen3").source and "detected" in source
    assert server_template(None, model="openai/gpt-oss-20b", env={})[0].source == \
        chatparse.load_template("gpt_oss").source


def test_no_template_names_the_environment_variable() -> None:
    class Anonymous:
        name_or_path = "my-org/private-model"

    with pytest.raises(MissingResponseTemplateError, match=TEMPLATE_ENV):
        server_template(Anonymous(), env={})


def test_call_mode_is_checked() -> None:
    assert serving.call_mode({}) == "buffered"
    assert serving.call_mode({CALLS_ENV: "early"}) == "early"
    with pytest.raises(ValueError, match=CALLS_ENV):
        serving.call_mode({CALLS_ENV: "eager"})


def test_request_tools_in_both_api_shapes() -> None:
    chat = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    responses = {"type": "function", "name": "g", "parameters": {"type": "object"}, "strict": None}
    assert serving.tool_dicts([chat, responses, {"type": "web_search"}]) == [
        chat, {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}]
    assert serving.tool_dicts(None) is None


# --- where reasoning ends ----------------------------------------------------------------------------


def test_reasoning_end_in_token_ids() -> None:
    tok = family_tokenizer("qwen3")
    template = chatparse.load_template("qwen3")
    assert not ReasoningWatch(template, tok).ended(encode(tok, HEADER))
    assert ReasoningWatch(template, tok, thinking_disabled=True).ended(encode(tok, HEADER))
    assert ReasoningWatch(template, tok).ended(encode(tok, HEADER + "<think>\n\n</think>\n\n"))
    assert not ReasoningWatch(template, tok).ended(encode(tok, HEADER + "<think>\n"))
    assert ReasoningWatch(chatparse.load_template("llama3_json"), tok).ended([])
    watch = ReasoningWatch(template, tok)
    ids = encode(tok, HEADER)
    states = []
    for token in encode(tok, "<think>Hmm.</think>Sunny."):
        ids = [*ids, token]
        states.append(watch.ended(ids))
    assert states == sorted(states) and states[-1] and not states[0]
    assert watch.ended(ids[:-3]) == ReasoningWatch(template, tok).ended(ids[:-3])  # a shorter sequence re-reads
    # Content written without a reasoning block ends reasoning as well.
    assert ReasoningWatch(template, tok).ended(encode(tok, HEADER + "Sunny."))


def test_reasoning_token_count() -> None:
    tok = family_tokenizer("qwen3")
    counter = ReasoningCounter(chatparse.load_template("qwen3"), HEADER, tok)
    reasoning = encode(tok, "<think>Let me see.</think>")
    output = reasoning + encode(tok, "Sunny.")
    assert counter.count(output[:3]) == 3
    assert counter.count(output) == len(reasoning)
    assert ReasoningCounter(chatparse.load_template("llama3_json"), "", tok).count(output) == 0


def test_content_ids_after_the_closer() -> None:
    tok = family_tokenizer("qwen3")
    closers = serving.closer_ids(chatparse.load_template("qwen3"), tok)
    ids = encode(tok, "<think>a</think>b")
    assert tok.decode(serving.content_ids(ids, closers)) == "b"
    assert serving.content_ids(encode(tok, "b"), closers) == encode(tok, "b")


# --- the vLLM package without vLLM ---------------------------------------------------------------------


def test_the_vllm_module_imports_without_vllm() -> None:
    import chatparse.integrations.vllm as plugin

    assert Path(plugin.PLUGIN_FILE).is_file() and plugin.PLUGIN_MODULE.endswith(".plugin")
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(ImportError, match="needs vLLM"):
            plugin.ChatparseParser  # noqa: B018
