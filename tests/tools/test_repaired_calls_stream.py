"""Calls whose arguments chatparse repairs or types (a raw control character in a JSON string, arguments
written as a string holding the object, MiniMax M3 and K2 Horizon values typed by the schema) stream through the OpenAI
layer as they parse: the argument fragments a client joins are the final arguments, however the output is
split, and nothing had to be taken back (``mismatches``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from chatparse.openai import ChatCompletionStream, to_chat_message
from tests.streamcheck import random_split, split
from tests.tokens import parses_json

CORPUS = Path(__file__).parents[1] / "templates" / "corpus"
CASES = [
    "qwen3/arguments_written_as_a_json_string", "qwen3/raw_newline_and_tab_inside_a_json_string",
    "qwen3/arguments_string_without_an_object_is_malformed",
    "hermes/arguments_written_as_a_json_string", "hermes/raw_newline_inside_a_json_string",
    "llama3_json/raw_newline_and_tab_inside_a_json_string", "llama3_json/parameters_written_as_a_json_string",
    "mistral_v3/string_arguments_and_raw_newline_in_a_call_list", "xlam/arguments_written_as_a_json_string",
    "deepseek_v3_1/raw_newline_inside_a_json_string", "kimi_k2/raw_newline_inside_a_json_string",
    "minimax_m3/string_parameter_written_as_nested_tags", "minimax_m3/nested_leaves_typed_by_the_schema",
    "k2_horizon/declared_type_differs_from_the_schema", "muse_glimmer/string_parameters_that_read_as_json",
    "gpt_oss/raw_newline_inside_a_json_string", "internlm2/arguments_written_as_a_json_string",
    "minimax_m1/raw_newline_and_string_arguments", "hunyuan_a13b/arguments_written_as_a_json_string",
]


def ids(index: int) -> str:
    return f"call_{index}"


def joined_calls(chunks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(name, arguments) per call index, as a client joins the deltas."""
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for call in chunk["choices"][0]["delta"].get("tool_calls") or []:
            slot = calls.setdefault(call["index"], ["", ""])
            slot[0] += call.get("function", {}).get("name") or ""
            slot[1] += call.get("function", {}).get("arguments") or ""
    return [(calls[i][0], calls[i][1]) for i in sorted(calls)]


@pytest.mark.parametrize("case_id", CASES)
def test_streamed_fragments_join_to_the_final_arguments(case_id: str) -> None:
    family = case_id.split("/")[0]
    case = json.loads((CORPUS / f"{case_id}.json").read_text(encoding="utf-8"))
    options = case.get("options", {})
    final = to_chat_message(case["expected"], id_factory=ids).get("tool_calls", [])
    expected = [(c["function"]["name"], c["function"]["arguments"]) for c in final]
    assert expected and all(isinstance(json.loads(args), dict) for _, args in expected)
    rng = random.Random(case_id)
    text = case["output"]
    for chunks in [[text], split(text, 1), split(text, 3), split(text, 7), random_split(text, rng)]:
        stream = ChatCompletionStream(family, case["prefix"], tools=case.get("tools"), model="m", id_factory=ids,
                                      created=1, on_malformed=options.get("on_malformed", "recover"))
        out = [chunk for piece in chunks for chunk in stream.feed(piece)] + stream.finish("stop")
        assert stream.mismatches == []
        assert stream.message == case["expected"]
        joined = joined_calls(out)
        if case["expected"].get("malformed"):
            # A call announced early that then failed keeps its wire index, with no arguments that parse.
            joined = [(name, args) for name, args in joined if parses_json(args)]
        assert joined == expected, f"chunk sizes {[len(c) for c in chunks][:12]}"

