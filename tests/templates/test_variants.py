"""Variants of covered families (issue "Every spelling real models emit", section 1, and the GLM-4.7 and
Phi-4-mini classes of "What users report"): each spelling is read one-shot and streamed in token-sized
deltas with ``on_malformed="recover"``, and gives the calls (or the content) its format means.

The cases are corpus data files (tests/templates/corpus/<family>/<case>.json, also run by the corpus and
token-level suites); these tests assert what each variant is about, independently of the stored message."""

from __future__ import annotations

import zlib
from typing import Any

import pytest

import chatparse
from chatparse.templates import get_template
from tests import tokens
from tests.templates.corpus_loader import CORPUS, load_case


def parsed(family: str, stem: str) -> dict[str, Any]:
    """The case's message, after checking that every token-level streaming path agrees with it."""
    case = load_case(CORPUS / family / f"{stem}.json")
    options = {"tools": case.get("tools"), "on_malformed": "recover"}
    template = get_template(family)
    message = chatparse.parse_response(case["output"], template, prefix=case["prefix"], **options)
    seed = zlib.crc32(f"{family}/{stem}".encode())
    assert tokens.disagreements(template, case["prefix"], case["output"], options, seed=seed) == []
    return message


def calls(message: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls", [])]


def malformed_codes(message: dict[str, Any]) -> list[str]:
    return [m["code"] for m in message.get("malformed", [])]


# --- DeepSeek-R1: the short section opener ---------------------------------------------------------------


def test_deepseek_r1_short_section_opener() -> None:
    message = parsed("deepseek_r1", "short_section_opener_two_calls")
    assert [name for name, _ in calls(message)] == ["get_weather", "write_file"]
    assert calls(message)[1][1]["content"] == "opener: <｜tool▁calls｜>function"  # marker text in a value is data
    assert "content" not in message and "malformed" not in message


def test_deepseek_r1_stop_after_short_opener_is_a_cut_call() -> None:
    message = parsed("deepseek_r1", "short_section_opener_stop_after_it")
    assert message["content"] == "Checking."
    assert message["malformed"] == [{"field": "tool_calls", "code": "truncated", "raw": "<｜tool▁calls｜>"}]


# --- DeepSeek V4 / V4.1: a self-closing zero-argument invoke -----------------------------------------------


@pytest.mark.parametrize("family", ["deepseek_v4", "deepseek_v4_1"])
def test_dsml_self_closing_invoke(family: str) -> None:
    message = parsed(family, "self_closing_zero_argument_invoke")
    (first, args), second = calls(message)
    assert first == "write_file" and "<br/>" in args["content"] and args["content"].endswith('"x.png"/>')
    assert second == ("get_time", {})
    assert message["content"] == "Saving the note, then the time."


@pytest.mark.parametrize("family", ["deepseek_v4", "deepseek_v4_1"])
def test_dsml_self_closing_invoke_before_a_cut_call(family: str) -> None:
    message = parsed(family, "self_closing_invoke_then_cut_call")
    assert calls(message) == [("get_time", {})]
    assert malformed_codes(message) == ["truncated"]
    assert "content" not in message


# --- Step-3: invokes without the type head ------------------------------------------------------------------


def test_step3_invoke_without_type_head() -> None:
    message = parsed("step3", "invoke_without_type_word")
    assert calls(message) == [("get_weather", {"city": "Zürich", "days": 3}), ("get_time", {"timezone": "Europe/Zurich"})]
    assert "content" not in message  # the <｜tool_sep｜> between the calls belongs to the second opener


def test_step3_invoke_without_type_head_cut() -> None:
    message = parsed("step3", "invoke_without_type_word_cut")
    assert calls(message) == [("get_time", {"timezone": "Asia/Seoul"})]
    assert malformed_codes(message) == ["truncated"]


# --- Phi-4-mini: <|tool_call|> blocks, and functools[ followed by prose -------------------------------------


def test_phi4_tool_call_token_blocks() -> None:
    message = parsed("phi4_mini", "tool_call_token_blocks")
    assert calls(message) == [("get_weather", {"city": "Seoul", "days": 2}), ("get_time", {})]
    assert message["content"] == "Checking both."


def test_phi4_tool_call_token_block_cut() -> None:
    message = parsed("phi4_mini", "tool_call_token_block_cut")
    assert calls(message) == [("get_time", {})]
    assert malformed_codes(message) == ["truncated"]
    assert "content" not in message


@pytest.mark.parametrize("on_malformed", ["raise", "recover", "keep"])
def test_phi4_functools_bracket_then_prose_is_content_whole(on_malformed: str) -> None:
    case = load_case(CORPUS / "phi4_mini" / "functools_bracket_then_prose_is_content.json")
    message = chatparse.parse_response(case["output"], get_template("phi4_mini"), prefix=case["prefix"],
                                       tools=case["tools"], on_malformed=on_malformed)
    assert message == {"role": "assistant", "content": case["output"].removesuffix("<|end|>")}
    parsed("phi4_mini", "functools_bracket_then_prose_is_content")


# --- GLM-4.5 / 4.7: dropped value tags are repaired and reported ---------------------------------------------


@pytest.mark.parametrize(("family", "stem", "code"), [
    ("glm47", "missing_last_value_close_is_recovered", "missing_value_close"),
    ("glm47", "missing_last_value_close_then_observation", "missing_value_close"),
    ("glm45", "missing_last_value_close_is_recovered", "missing_value_close"),
    ("glm47", "missing_value_open_is_recovered", "missing_value_open"),
    ("glm47", "stray_value_close_after_name", "stray_value_close"),
])
def test_glm_repaired_call_is_returned_and_reported(family: str, stem: str, code: str) -> None:
    message = parsed(family, stem)
    names = [name for name, _ in calls(message)]
    assert names and all("<" not in name for name in names)
    assert [r["code"] for r in message["repaired"]] == [code]
    assert message["repaired"][0]["raw"].startswith("<tool_call>")
    assert "malformed" not in message
    if code != "stray_value_close":
        assert calls(message)[0][1]["days"] in (2, 3)  # the repaired value, typed by the tools


@pytest.mark.parametrize("on_malformed", ["raise", "keep"])
def test_glm_repair_does_not_depend_on_the_malformed_policy(on_malformed: str) -> None:
    case = load_case(CORPUS / "glm47" / "missing_value_open_is_recovered.json")
    message = chatparse.parse_response(case["output"], get_template("glm47"), prefix=case["prefix"],
                                       tools=case["tools"], on_malformed=on_malformed)
    assert message == case["expected"]


def test_glm_missing_last_close_cut_by_the_token_limit_stays_truncated() -> None:
    case = load_case(CORPUS / "glm47" / "missing_last_value_close_is_recovered.json")
    message = chatparse.parse_response(case["output"], get_template("glm47"), prefix=case["prefix"],
                                       tools=case["tools"], finish_reason="length")
    assert "tool_calls" not in message and malformed_codes(message) == ["truncated"]


def test_glm_cut_inside_a_value_is_not_repaired() -> None:
    message = parsed("glm47", "cut_inside_value_stays_truncated")
    assert "tool_calls" not in message and "repaired" not in message
    assert malformed_codes(message) == ["truncated"]


# --- Hermes 2 Pro / Qwen2.5: other spellings, read only for the request's tools -----------------------------


@pytest.mark.parametrize(("stem", "names"), [
    ("function_equals_spelling", ["get_weather", "create_event"]),
    ("function_name_attribute_spelling", ["write_file"]),
    ("json_in_other_tags", ["get_weather", "get_time", "write_file", "get_time"]),
    ("json_in_code_fences", ["get_weather", "get_time", "write_file"]),
    ("bare_json_object_call", ["get_weather"]),
    ("bare_json_object_then_prose", ["get_weather"]),
    ("tagged_call_then_code_block", ["get_time", "get_weather"]),
])
def test_hermes_other_spellings_are_calls_for_the_request_tools(stem: str, names: list[str]) -> None:
    message = parsed("hermes", stem)
    assert [name for name, _ in calls(message)] == names
    assert "malformed" not in message
    for marker in ("<function", "</function>", "<tool", "<json>", "<response>", "<JSON>", '"name"'):
        assert marker not in message.get("content", "")


def test_hermes_prose_after_a_bare_object_is_content() -> None:
    assert parsed("hermes", "bare_json_object_then_prose")["content"] == (
        "Checking now.\n\nI will save the forecast once it arrives.")


def test_hermes_head_names_the_call_not_an_argument() -> None:
    (_, _), (name, arguments) = calls(parsed("hermes", "function_equals_spelling"))
    assert name == "create_event" and arguments["name"] == "ignored-by-nobody"


@pytest.mark.parametrize("stem", ["json_explained_in_prose_stays_content", "other_spellings_without_tools_stay_content",
                                  "nested_call_shaped_object_stays_content"])
def test_hermes_other_spellings_without_a_known_tool_are_content_as_written(stem: str) -> None:
    case = load_case(CORPUS / "hermes" / f"{stem}.json")
    message = parsed("hermes", stem)
    assert message == {"role": "assistant", "content": case["output"].removesuffix("<|im_end|>")}


def test_hermes_same_text_is_a_call_only_with_the_tool() -> None:
    case = load_case(CORPUS / "hermes" / "function_equals_spelling.json")
    template = get_template("hermes")
    with_tools = chatparse.parse_response(case["output"], template, prefix=case["prefix"], tools=case["tools"])
    others = [t for t in case["tools"] if t["function"]["name"] != "create_event"]
    fewer = chatparse.parse_response(case["output"], template, prefix=case["prefix"], tools=others)
    none = chatparse.parse_response(case["output"], template, prefix=case["prefix"])
    assert [name for name, _ in calls(with_tools)] == ["get_weather", "create_event"]
    assert [name for name, _ in calls(fewer)] == ["get_weather"] and "<function=create_event>" in fewer["content"]
    assert "tool_calls" not in none and none["content"] == case["output"]


def test_hermes_other_spelling_cut_inside_json_is_truncated() -> None:
    message = parsed("hermes", "other_spelling_cut_inside_json")
    assert calls(message) == [("get_time", {})]
    assert malformed_codes(message) == ["truncated"]


# --- LFM2 python literals, FunctionGemma keys without commas, llama3_json objects without a name ------------


def test_lfm2_unescaped_nested_quotes_and_set_literals() -> None:
    quotes = calls(parsed("lfm2", "unescaped_nested_quotes_in_command"))
    assert quotes == [("run_shell", {"command": "sed -n '360,450p' app.py"}), ("run_shell", {"command": "wc -l app.py"})]
    literals = calls(parsed("lfm2", "set_literal_and_escapes"))
    assert literals[0] == ("tag_items", {"ids": [3, 1], "labels": ["urgent", "red"]})
    assert literals[1] == ("split_text", {"text": "a\\,b,c\tend", "sep": "\\,"})


def test_functiongemma_keys_without_commas() -> None:
    weather, event = calls(parsed("functiongemma", "keys_without_commas"))
    assert weather == ("get_weather", {"city": "Seoul", "days": 2})
    assert event[1] == {"title": "Trip, day 1", "location": {"city": "Seoul"}, "attendees": ["Mina", "Joon"],
                        "all_day": True}
    message = parsed("functiongemma", "bare_scalar_without_comma_is_malformed")
    assert calls(message) == [("get_time", {})] and malformed_codes(message) == ["content_parse_failed"]


def test_llama3_json_object_without_name_is_content() -> None:
    case = load_case(CORPUS / "llama3_json" / "object_without_name_is_content.json")
    assert parsed("llama3_json", "object_without_name_is_content") == {
        "role": "assistant", "content": case["output"].removesuffix("<|eot_id|>")}
    assert calls(parsed("llama3_json", "python_tag_parameters_before_name")) == [
        ("get_weather", {"city": "Seoul", "days": 2})]


# --- Llama 3.1 built-in tools after <|python_tag|> -------------------------------------------------------------


def test_llama31_builtin_tool_calls() -> None:
    assert calls(parsed("llama3_json", "builtin_brave_search_call")) == [("brave_search", {"query": "weather Seoul"})]
    assert calls(parsed("llama3_json", "builtin_wolfram_alpha_call")) == [
        ("wolfram_alpha", {"query": "solve [x^2 - 4 = 0] for x (real) <|eot_id|>"})]
    cut = parsed("llama3_json", "builtin_call_cut_by_the_end")
    assert "tool_calls" not in cut and "content" not in cut and malformed_codes(cut) == ["truncated"]


# --- Cohere Command: citations out of the text, beside it -----------------------------------------------------


def test_cohere_citations_are_kept_out_of_the_text() -> None:
    message = parsed("cohere_command", "citations_after_tool_result")
    assert message["content"] == "It is 21 °C and sunny, with light wind in Seoul."
    assert message["citations"] == [
        {"sources": [{"tool_call": 0, "results": [0]}]},
        {"sources": [{"tool_call": 0, "results": [0]}, {"tool_call": 1, "results": [0, 2]}]},
    ]
    assert message["thinking"] == "Cite the <co> results."


# --- Raw code to the code interpreter: Llama 3.1 <|python_tag|>, Functionary v3.2 '>>>python' ------------------


@pytest.mark.parametrize(("family", "stem", "name"), [
    ("llama3_json", "raw_code_after_python_tag", "code_interpreter"),
    ("llama3_json", "text_then_raw_code_with_marker_in_string", "code_interpreter"),
    ("functionary_v3_2", "raw_python_call", "python"),
    ("functionary_v3_2", "raw_python_quotes_markers", "python"),
])
def test_raw_code_is_a_code_call(family: str, stem: str, name: str) -> None:
    case = load_case(CORPUS / family / f"{stem}.json")
    ((called, arguments),) = calls(parsed(family, stem))
    assert called == name and set(arguments) == {"code"}
    assert arguments["code"] in case["output"] and not arguments["code"].endswith(("|>", ">>>"))


def test_functionary_raw_code_ends_at_the_next_part() -> None:
    message = parsed("functionary_v3_2", "all_then_raw_python_then_call")
    (python, code), (name, arguments) = calls(message)
    assert python == "python" and code["code"].endswith("round twice") and ">>>" not in code["code"]
    assert (name, arguments) == ("write_file", {"path": "root.txt", "content": "1.41421"})
    assert calls(parsed("functionary_v3_2", "python_with_json_arguments")) == [("python", {"code": "print(2 ** 0.5)"})]


@pytest.mark.parametrize(("family", "stem"), [("llama3_json", "raw_code_cut_by_token_limit"),
                                              ("functionary_v3_2", "raw_python_cut_by_token_limit")])
def test_raw_code_cut_by_the_token_limit_is_truncated(family: str, stem: str) -> None:
    case = load_case(CORPUS / family / f"{stem}.json")
    assert case["options"] == {"finish_reason": "length"}
    message = chatparse.parse_response(case["output"], get_template(family), prefix=case["prefix"],
                                       tools=case.get("tools"), finish_reason="length")
    assert "tool_calls" not in message and malformed_codes(message) == ["truncated"]
    assert message["malformed"][0]["raw"].endswith(case["output"][-20:])
