"""The synthesized templates parse each family's built-in corpus (tests/templates/corpus/<family>) to the
same messages as the hand-written built-in: the whole message (content, thinking, calls, malformed reports
with their raw text, trailing), one shot, with the case's tools and options.

Compared: every case except those below. They exercise what the chat template never writes, so no
synthesis from it can know them: the built-ins encode it from server parsers and model reports.
- implicit reasoning end: the model starts a call without closing its reasoning (the template always
  writes the close before calls), and the reasoning that goes on after such a call;
- spelling not rendered: a marker or key the template never writes (Llama 3's <|python_tag|>, an
  'arguments' key where the template writes 'parameters', a call object without its arguments key,
  harmony's recipient in the channel part, built-in tools, stray headers, constrained final messages,
  messages missing their end and quoted markers, Gemma 4's doubled channel opener, Mistral's call without [ARGS], Magistral's
  plain <think>, SGLang's prefix-less DSML and JSON invoke bodies, Kimi ids without 'functions.');
- several calls: Llama 3's ';'-separated calls (its template refuses two calls), a second gpt-oss call
  message (its template renders one call per message);
- missing close: Kimi's call written without <|tool_call_end|>; GLM's dropped '<arg_value>' / '</arg_value>'
  (repaired by the built-in and listed under 'repaired');
- wrapper at a cut: DeepSeek's built-ins report a truncated call for a cut right after the call-section
  opener, the synthesized template drops a stray wrapper (as the Kimi built-in does); Kimi's built-in
  leaves the section opener out of a truncated call's raw text, the synthesized template includes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import chatparse
from chatparse.errors import ChatparseError
from chatparse.synthesize import SynthesizedTemplate
from tests.synthesize.families import FAMILIES
from tests.templates.corpus_loader import CORPUS, load_case

IMPLICIT = "implicit reasoning end"
SPELLING = "spelling not rendered"
SEVERAL = "several calls"
WRAPPER = "wrapper at a cut"
UNWRAPPED = "bare call without the template's wrapper"

EXCLUDED: dict[str, dict[str, str]] = {
    "qwen3_5": {"cut_call_inside_reasoning_without_close": IMPLICIT, "implicit_reasoning_end_at_call": IMPLICIT,
                "compact_bare_function_block": UNWRAPPED},
    "deepseek_v3_1": {"stop_right_after_section_begin": WRAPPER, "thinking_forced_open_call_before_close": IMPLICIT,
                      "thinking_forced_open_call_then_reasoning_then_answer": IMPLICIT},
    "gemma4": {"doubled_channel_opener_empty_thought": SPELLING, "doubled_channel_opener_with_thought": SPELLING},
    "deepseek_v3_2": {"implicit_reasoning_end_at_section": IMPLICIT, "json_object_invoke_body": SPELLING,
                      "prefixless_spelling_pairs_with_its_own_close": SPELLING, "stop_after_section_open": WRAPPER},
    "gpt_oss": {name: SPELLING for name in (
        "analysis_then_call", "bare_function_recipient_is_a_call", "builtin_browser_search_on_commentary_is_a_call",
        "builtin_container_exec_role_part_is_a_call", "analysis_mentions_call_and_final_markers",
        "analysis_without_end_before_final", "final_with_constrain_json", "stray_commentary_to_assistant_header", "builtin_python_raw_code_is_a_call",
        "rendered_python_tool_call", "rendered_python_tool_call_cut_by_token_limit",
        "call_cut_inside_value", "call_marker_inside_json_string", "call_on_analysis_channel", "call_truncated_keep",
        "preamble_then_role_part_call", "recover_bad_call_keeps_reasoning", "stop_inside_call_header",
        "stray_to_assistant_is_not_a_call")} | {"two_call_messages_in_one_output": SEVERAL},
    "llama3_json": {"call_without_parameters": SPELLING, "content_before_arguments_alias": SPELLING,
                    "markers_in_value_korean_emoji": SPELLING, "python_tag_call": SPELLING,
                    "repeated_python_tag": SPELLING, "stop_after_python_tag": SPELLING, "truncated_call_keep": SPELLING,
                    "parallel_semicolon_and_newline": SEVERAL, "recover_bad_call_beside_good": SEVERAL,
                    "rendered_prompt_cut_inside_value": SEVERAL, "builtin_brave_search_call": SPELLING,
                    "builtin_call_cut_by_the_end": SPELLING, "builtin_wolfram_alpha_call": SPELLING,
                    "python_tag_parameters_before_name": SPELLING, "builtin_code_interpreter_call": SPELLING,
                    "raw_code_after_python_tag": SPELLING, "raw_code_cut_by_token_limit": SPELLING,
                    "text_then_raw_code_with_marker_in_string": SPELLING},
    "mistral": {"degraded_without_args_token": SPELLING, "magistral_plain_think": SPELLING},
    "glm": {"implicit_reasoning_end_at_call": IMPLICIT} | {name: "missing close" for name in (
        "missing_last_value_close_is_recovered", "missing_last_value_close_then_observation",
        "missing_value_open_is_recovered", "stray_value_close_after_name")},
    "kimi_k2": {"close_token_text_in_string": SPELLING, "implicit_reasoning_end": IMPLICIT,
                "calls_inside_think_then_more_reasoning": IMPLICIT, "calls_inside_think_without_section_markers": IMPLICIT,
                "missing_call_end_before_section_end": "missing close", "truncated_call_keep": WRAPPER},
}


def _cases() -> list[tuple[str, str]]:
    out = []
    for name, family in sorted(FAMILIES.items()):
        directory = CORPUS / family["builtin"].replace(".", "_")
        out += [(name, path.stem) for path in sorted(directory.glob("*.json"))
                if path.stem not in EXCLUDED.get(name, {})]
    return out


CASES = _cases()


def _parse(template: Any, case: dict[str, Any]) -> dict[str, Any]:
    options = {"tools": case.get("tools"), **case.get("options", {})}
    try:
        return chatparse.parse_response(case["output"], template, prefix=case["prefix"], **options)
    except ChatparseError as exc:
        return {"error": exc.code}


@pytest.mark.parametrize(("name", "case_name"), CASES, ids=[f"{n}/{c}" for n, c in CASES])
def test_same_message_as_the_builtin(synthesized: Callable[[str], SynthesizedTemplate], name: str,
                                     case_name: str) -> None:
    family = FAMILIES[name]["builtin"]
    case = load_case(CORPUS / family.replace(".", "_") / f"{case_name}.json")
    assert _parse(dict(synthesized(name)), case) == _parse(family, case)


def test_most_of_each_corpus_is_compared() -> None:
    for name, family in FAMILIES.items():
        total = len(list((CORPUS / family["builtin"].replace(".", "_")).glob("*.json")))
        compared = sum(1 for n, _ in CASES if n == name)
        assert compared * 3 >= total, (name, compared, total)
    assert len(CASES) >= 150
