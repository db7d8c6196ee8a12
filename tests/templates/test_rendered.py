"""Each built-in against its model's published chat template: the assistant turns that template renders
(tests/templates/rendered/<family>.json, rendered with transformers' renderer; see its ``source``) parse
back into the message they were rendered from, with the full rendered prompt (system prompt, tool
instructions, thinking switched on or off, earlier turns) as ``prefix``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.templates import get_template
from chatparse.templates.registry import normalize_name
from tests.streamcheck import check_event_stream, stream

RENDERED = Path(__file__).parent / "rendered"


def _load(family: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RENDERED / f"{family}.json").read_text(encoding="utf-8"))
    return data


def _families() -> list[str]:
    """The rendered families whose built-in declares the real-output policies (``chatparse.end``)."""
    return sorted(p.stem for p in RENDERED.glob("*.json") if get_template(p.stem).get("chatparse", {}).get("end"))


def _turns(family: str) -> list[tuple[str, str, str]]:
    """(family, assistant rendering, prompt rendering) for every assistant turn whose prompt is a prefix of
    it, paired with its own prompt and with the multi-turn prompt of the same switches."""
    renderings = _load(family)["renderings"]
    pairs = []
    for name, rendering in renderings.items():
        if not name.startswith("assistant_") or not rendering.get("prompt_is_prefix"):
            continue
        prompt = rendering["prompt_rendering"]
        pairs.append((family, name, prompt))
        multi = prompt.replace("prompt", "prompt_multiturn", 1)
        if multi in renderings and "text" in renderings[multi]:
            pairs.append((family, name, multi))
    return pairs


TURNS = [turn for family in _families() for turn in _turns(family)]


def _generated(family: str, assistant_text: str) -> str:
    """What the model generates: the rendered turn up to and including its first end-of-turn marker (a
    template may write more after it, e.g. a newline, which the model never generates)."""
    ends = get_template(family)["chatparse"]["end"]
    found = [(assistant_text.find(e), e) for e in ends if e in assistant_text]
    if not found:
        return assistant_text
    at, marker = min(found)
    return assistant_text[: at + len(marker)]


def _expected(message: dict[str, Any], text: str) -> dict[str, Any]:
    """The parsed message a rendered assistant turn must give back: what the template wrote of it."""
    expected: dict[str, Any] = {"role": "assistant"}
    reasoning = (message.get("reasoning_content") or "").strip()
    content = message.get("content") or ""
    if isinstance(content, list):  # content blocks (Ministral 3): thinking blocks are reasoning, text is content
        reasoning = reasoning or "\n".join(b.get("thinking", "") for b in content if b.get("type") == "thinking").strip()
        content = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    content = content.strip()
    if reasoning and reasoning in text:
        expected["thinking"] = reasoning
    if content and content in text:
        expected["content"] = content
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call["function"]
        if fn["name"] not in text:
            continue  # the template renders only some calls (gpt-oss: the first)
        arguments = fn["arguments"]
        calls.append({"type": "function", "function": {
            "name": fn["name"], "arguments": json.loads(arguments) if isinstance(arguments, str) else arguments}})
    if calls:
        expected["tool_calls"] = calls
    return expected


@pytest.mark.parametrize(("family", "name", "prompt"), TURNS, ids=[f"{f}/{n}@{p}" for f, n, p in TURNS])
def test_a_rendered_turn_parses_back(family: str, name: str, prompt: str) -> None:
    data = _load(family)
    rendering = data["renderings"][name]
    prefix = data["renderings"][prompt]["text"]
    output = _generated(family, rendering["assistant_text"])
    expected = _expected(rendering["messages"][-1], output)
    template = get_template(family)
    tools = data["tools_schema"]
    message = chatparse.parse_response(output, template, prefix=prefix, tools=tools)
    assert message == expected
    streamed, events = stream(template, prefix, [output[i : i + 3] for i in range(0, len(output), 3)], tools=tools)
    assert streamed == expected
    check_event_stream(events, streamed, template)


@pytest.mark.parametrize("family", _families())
def test_the_prompt_alone_opens_nothing(family: str) -> None:
    """Every rendered generation prompt (format instructions, earlier turns and all) is a valid prefix: an
    empty generation gives an empty message, whatever the prompt's tail pre-opened."""
    for name, rendering in _load(family)["renderings"].items():
        if name.startswith("prompt") and "text" in rendering:
            message = chatparse.parse_response("", get_template(family), prefix=rendering["text"])
            assert set(message) <= {"role", "thinking"}, f"{name}: {message}"
            assert not message.get("thinking"), f"{name}: {message}"


def test_rendered_files_name_their_family() -> None:
    for path in RENDERED.glob("*.json"):
        data = _load(path.stem)
        assert normalize_name(data["family"]) == path.stem
        assert data["source"]["repo"] and data["source"]["path"]


def _evidence(data: dict[str, Any]) -> str:
    """What the published chat template is made of, as far as the rendered file records it: its string
    literals, its plain-text segments and the names its Jinja tags use."""
    parts = data["literals"] + data.get("template_data_segments", []) + data.get("identifiers", [])
    return "\n".join(parts)


@pytest.mark.parametrize("family", _families())
def test_the_published_template_is_detected(family: str) -> None:
    """The template is detected from its text; a family whose template is a neighbour's (reconstructed,
    no telltale marker of its own, detection by model id only) is never taken for another family by
    its model ids either."""
    from chatparse.templates import detect_template, template_info

    data = _load(family)
    info = template_info(family)
    if data["source"].get("kind") == "reconstructed" and not info.get("detect", {}).get("chat_template"):
        patterns = info["detect"]["model_id"]
        assert patterns, f"{family}: no chat-template markers and no model ids to detect it by"
        for pattern in patterns:
            detected = detect_template(model_id=pattern.replace("*", "x"))
            assert detected is not None and normalize_name(detected) == family, pattern
        return
    detected = detect_template(chat_template=_evidence(data))
    assert detected is not None and normalize_name(detected) == family
