"""The real-output policies, checked on every corpus case of every built-in family that declares them:
text after the end of the turn (or from a next turn's header on) never joins the message, a cut-off call is
never a call, and the OpenAI wire never shows a cut call as one whose arguments are valid JSON."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.openai import ChatCompletionStream
from chatparse.templates import get_template
from tests.streamcheck import check_event_stream, stream
from tests.templates.corpus_loader import case_id, corpus_cases, load_case

NEXT_TURN = "\nUser: and tomorrow?\nAssistant: "


def _policies(family: str) -> dict[str, Any]:
    return dict(get_template(family).get("chatparse", {}))


def _clean(case: dict[str, Any]) -> bool:
    """A case whose output is a whole turn: nothing malformed or cut, nothing after its end."""
    expected = case["expected"]
    return "malformed" not in expected and "trailing" not in expected


REAL = [(family, path) for family, path in corpus_cases() if _policies(family).get("end")]
# Whole turns, and whole turns with tool calls: the cases each property applies to.
WHOLE = [(family, path) for family, path in REAL if _clean(load_case(path))]
CALLS = [(family, path) for family, path in WHOLE if load_case(path)["expected"].get("tool_calls")]


def _ids(cases: list[tuple[str, Path]]) -> list[str]:
    return [case_id(family, path) for family, path in cases]


def _options(case: dict[str, Any]) -> dict[str, Any]:
    return {"tools": case.get("tools"), **case.get("options", {})}


@pytest.mark.parametrize(("family", "path"), WHOLE, ids=_ids(WHOLE))
def test_eos_and_padding_tokens_after_the_turn_are_dropped(family: str, path: Path) -> None:
    case = load_case(path)
    policies = _policies(family)
    end = policies["end"][0]
    padding = (policies.get("discard_after_end") or [end])[-1]
    for tail in (end, end + padding * 3, end + "\n" + padding + padding, padding * 2 if padding != end else end):
        message = chatparse.parse_response(case["output"] + tail, get_template(family), prefix=case["prefix"],
                                           **_options(case))
        assert message == case["expected"], f"tail {tail!r}"


def _split_final_tokens(case: dict[str, Any], policies: dict[str, Any]) -> tuple[str, list[str]]:
    """A whole turn's output without its final run of end/EOS/padding tokens (and whitespace), and that run.
    End-marker text earlier in the output, inside a value, is data and stays."""
    tails = sorted({*policies.get("discard_after_end", []), *policies["end"]}, key=len, reverse=True)
    core, run = case["output"].rstrip(), []
    while (token := next((t for t in tails if core.endswith(t)), None)) is not None:
        core, run = core[: -len(token)].rstrip(), [token, *run]
    return core, run


@pytest.mark.parametrize(("family", "path"), WHOLE, ids=_ids(WHOLE))
def test_a_next_turn_after_the_end_is_trailing_text(family: str, path: Path) -> None:
    case = load_case(path)
    policies = _policies(family)
    ends = policies["end"]
    # Drop what may follow the turn's end (whitespace, padding), then write a next turn right after the end.
    core, run = _split_final_tokens(case, policies)
    end = next((t for t in run if t in ends), ends[0])  # the turn ends at the first end marker of the run
    text = core + "".join(run[: run.index(end) + 1] if end in run else [end]) + NEXT_TURN
    template = get_template(family)
    expected = {**case["expected"], "trailing": NEXT_TURN}
    message, events = stream(template, case["prefix"], [text[i : i + 3] for i in range(0, len(text), 3)],
                             **_options(case))
    assert message == expected
    assert chatparse.parse_response(text, template, prefix=case["prefix"], **_options(case)) == expected
    check_event_stream(events, message, template)


NEXT = [(family, path) for family, path in WHOLE if _policies(family).get("next_turn")]


@pytest.mark.parametrize(("family", "path"), NEXT, ids=_ids(NEXT))
def test_a_next_turn_header_without_the_end_marker_ends_the_turn(family: str, path: Path) -> None:
    """A missed stop: the model writes no end-of-turn marker and goes on with a next turn's header. The turn
    ends right before the header, which starts ``trailing``; the message is the whole turn's."""
    case = load_case(path)
    policies = _policies(family)
    core, _ = _split_final_tokens(case, policies)
    after = policies["next_turn"][0] + "user\nmore"
    text = core + after
    template = get_template(family)
    expected = {**case["expected"], "trailing": after}
    message, events = stream(template, case["prefix"], [text[i : i + 3] for i in range(0, len(text), 3)],
                             **_options(case))
    assert message == expected
    assert chatparse.parse_response(text, template, prefix=case["prefix"], **_options(case)) == expected
    check_event_stream(events, message, template)


def _tools_requiring_what_was_written(case: dict[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The case's tools (or bare ones), each requiring the parameters its full call wrote, so a call cut
    between two parameters is known to be incomplete."""
    declared = {t["function"]["name"]: t["function"] for t in case.get("tools") or [] if "function" in t}
    written: dict[str, set[str]] = {}
    for call in calls:
        fn = call["function"]
        written.setdefault(fn["name"], set()).update(fn["arguments"])
    tools = []
    for name, keys in written.items():
        params = dict(declared.get(name, {}).get("parameters", {"type": "object", "properties": {}}))
        params["required"] = sorted(keys)
        tools.append({"type": "function", "function": {"name": name, "parameters": params}})
    return tools


# GLM models drop a call's last '</arg_value>': a text that ends with '</tool_call>' inside a value (nothing
# after it but end markers) is a call closed there, from the text alone; with finish_reason="length" it is cut.
CLOSED_AT_END = {"glm45": "</tool_call>", "glm47": "</tool_call>"}


def _cut_points(text: str, rng: random.Random, limit: int = 160) -> list[int]:
    points = list(range(len(text) + 1))
    return points if len(points) <= limit else sorted(rng.sample(points, limit))


@pytest.mark.parametrize(("family", "path"), CALLS, ids=_ids(CALLS))
def test_a_cut_call_is_never_returned_as_a_call(family: str, path: Path) -> None:
    """Every prefix of an output gives a prefix of the whole output's calls: a call is either whole
    or absent (reported under ``malformed``), one-shot and streamed alike, and nothing raises."""
    case = load_case(path)
    calls = case["expected"]["tool_calls"]
    template = get_template(family)
    options = {**_options(case), "tools": _tools_requiring_what_was_written(case, calls)}
    full = chatparse.parse_response(case["output"], template, prefix=case["prefix"], **options)["tool_calls"]
    rng = random.Random(zlib.crc32(case_id(family, path).encode()))
    for k in _cut_points(case["output"], rng):
        text = case["output"][:k]
        if family in CLOSED_AT_END and text.rstrip().endswith(CLOSED_AT_END[family]):
            continue  # read as a call whose last value lost its close; the finish_reason test below covers it
        message = chatparse.parse_response(text, template, prefix=case["prefix"], **options)
        got = message.get("tool_calls", [])
        assert got == full[: len(got)], f"cut at {k}: {text[-40:]!r} gave {got[len(got) - 1:]}"
        if rng.random() < 0.15:
            streamed, events = stream(template, case["prefix"], list(text), **options)
            assert streamed == message, f"cut at {k}, one character per feed"
            check_event_stream(events, streamed, template)


@pytest.mark.parametrize(("family", "path"), CALLS, ids=_ids(CALLS))
def test_a_call_the_token_limit_cut_is_never_returned(family: str, path: Path) -> None:
    """With ``finish_reason="length"`` the rule holds without tools that require every parameter: a call
    cut between two parameters (all closed, its close never came) is reported, never returned."""
    case = load_case(path)
    template = get_template(family)
    options = {**_options(case), "tools": case.get("tools")}
    full = chatparse.parse_response(case["output"], template, prefix=case["prefix"], **options)["tool_calls"]
    assert chatparse.parse_response(case["output"], template, prefix=case["prefix"], finish_reason="stop",
                                    **options)["tool_calls"] == full
    rng = random.Random(zlib.crc32(case_id(family, path).encode()) + 1)
    for k in _cut_points(case["output"], rng, limit=96):
        text = case["output"][:k]
        message = chatparse.parse_response(text, template, prefix=case["prefix"], finish_reason="length", **options)
        got = message.get("tool_calls", [])
        assert got == full[: len(got)], f"cut at {k}: {text[-40:]!r} gave {got[len(got) - 1:]}"
        if rng.random() < 0.15:
            streamed, events = stream(template, case["prefix"], list(text), finish_reason="length", **options)
            assert streamed == message, f"cut at {k}, one character per feed"
            check_event_stream(events, streamed, template)


def _wire(family: str, case: dict[str, Any], text: str, **options: Any) -> tuple[dict[int, dict[str, str]], str]:
    """The calls an OpenAI client accumulates from the stream, and the finish reason."""
    stream_ = ChatCompletionStream(get_template(family), case["prefix"], tools=case.get("tools"), **options)
    chunks = [c for i in range(0, len(text), 4) for c in stream_.feed(text[i : i + 4])]
    chunks += stream_.finish("length")
    calls: dict[int, dict[str, str]] = {}
    reason = ""
    for chunk in chunks:
        choice = chunk["choices"][0]
        reason = choice["finish_reason"] or reason
        for delta in choice["delta"].get("tool_calls", []):
            call = calls.setdefault(delta["index"], {"name": "", "arguments": ""})
            call["name"] += delta.get("function", {}).get("name") or ""
            call["arguments"] += delta.get("function", {}).get("arguments") or ""
    return calls, reason


def _valid_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("family", "path"), CALLS, ids=_ids(CALLS))
def test_the_wire_never_shows_a_cut_call_as_complete(family: str, path: Path) -> None:
    case = load_case(path)
    rng = random.Random(zlib.crc32(case_id(family, path).encode()) + 7)
    for k in _cut_points(case["output"], rng, limit=24):
        text = case["output"][:k]
        message = chatparse.parse_response(text, get_template(family), prefix=case["prefix"], tools=case.get("tools"),
                                           on_malformed="recover", finish_reason="length")
        whole = [json.dumps(c["function"]["arguments"], ensure_ascii=False) for c in message.get("tool_calls", [])]
        early, reason = _wire(family, case, text)
        assert reason == "length"
        complete = [c for c in early.values() if _valid_json(c["arguments"])]
        assert [c["arguments"] for c in complete] == whole, f"cut at {k}: {text[-40:]!r}"
        held, _ = _wire(family, case, text, buffer_calls=True)
        assert [c["arguments"] for c in held.values()] == whole
        assert [c["name"] for c in held.values()] == [c["function"]["name"] for c in message.get("tool_calls", [])]


def test_every_family_with_policies_has_cases() -> None:
    assert {family for family, _ in REAL} >= {"qwen3"}
    assert {family for family, _ in NEXT} >= {"qwen3", "gpt_oss"}
