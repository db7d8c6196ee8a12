"""Synthesis from the chat templates written in the style of ten families: what is inferred, and that every
generated message the template renders round-trips exactly after every generation prompt."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import chatparse
from chatparse.synthesize import SynthesizedTemplate
from chatparse.template.compile import load_template
from tests.synthesize.families import FAMILIES

NAMES = sorted(FAMILIES)
Get = Callable[[str], SynthesizedTemplate]


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_is_exact(synthesized: Get, name: str) -> None:
    result = synthesized(name)
    report = result.report
    assert report is not None
    failures = [check.describe() for check in report.failures[:5]]
    assert result.exact, failures
    assert report.checks >= 80  # every message after every prompt it continues
    assert report.fields["content"].checked and report.fields["tool_calls"].checked
    if FAMILIES[name]["reasoning"] is not None:
        assert report.fields["thinking"].checked
    for value_type in ("string", "integer", "number", "boolean", "array", "object"):
        tally = report.value_types[value_type]
        assert tally.checked and tally.exact == tally.checked, value_type


@pytest.mark.parametrize("name", NAMES)
def test_inferred_markers(synthesized: Get, name: str) -> None:
    expected = FAMILIES[name]
    fmt = synthesized(name).format
    assert fmt.anchors == expected["anchors"]
    reasoning = (fmt.reasoning.open, fmt.reasoning.close) if fmt.reasoning else None
    assert reasoning == expected["reasoning"]
    assert fmt.calls is not None and fmt.calls.syntax == expected["syntax"]
    assert fmt.end[: len(expected["end"])] == expected["end"]
    assert fmt.next_turn == expected["next_turn"]
    prefills = {p.label: p.prefill for p in fmt.prompts if not p.after_tool}
    for label, text in expected["prefill"].items():
        assert prefills[label] == text, label


@pytest.mark.parametrize("name", NAMES)
def test_template_is_usable_as_is(synthesized: Get, name: str) -> None:
    """The result is the template: it loads, follows the real-output rules (chatparse extension keys) and
    parses a rendered answer given the full prompt as prefix."""
    result = synthesized(name)
    compiled = load_template(result)
    assert compiled.chatparse_only
    assert result.template == dict(result)
    extensions = result["chatparse"]
    assert (extensions["end"] and "drop" in extensions) or name == "llama3_json"
    calls = result["fields"]["tool_calls"]["chatparse"]
    assert calls["truncation"] is True
    content = dict(result["fields"]["content"]["chatparse"])
    content.pop("write", None)  # harmony's messages layout (tests/synthesize/test_write.py)
    assert content == {"strip_joined": True}
    prompt = next(p for p in result.prompts if p.label == "default")
    message = chatparse.parse_response("Sunny.", result, prefix=prompt.text + ("</think>" if name in (
        "qwen3_5", "glm") else "<channel|>" if name == "gemma4" else ""))
    assert message["content"] == "Sunny."


def test_explain_names_markers_prompts_and_evidence(synthesized: Get) -> None:
    text = synthesized("qwen3").explain()
    assert "assistant header (start anchor): '<|im_start|>assistant\\n'" in text
    assert "reasoning: '<think>' ... '</think>'" in text
    assert "'enable_thinking=False': '<think>\\n\\n</think>\\n\\n'" in text
    assert "[calls] one call: a JSON call object" in text
    assert "Round trip:" in text and "argument values by type" in text


def test_template_limits_are_reported(synthesized: Get) -> None:
    """What a template does not render is reported, not guessed: gpt-oss-style templates render one call
    per message and write content beside a call on the analysis channel; Llama 3's drops content beside a
    call and refuses two calls."""
    gpt = synthesized("gpt_oss")
    assert gpt.format.calls is not None and not gpt.format.calls.multiple
    assert any("written as reasoning" in line for line in gpt.report.rendered_as)  # type: ignore[union-attr]
    llama = synthesized("llama3_json")
    assert any("content + tool calls" in line for line in llama.report.not_rendered)  # type: ignore[union-attr]


def test_lazy_export() -> None:
    from chatparse.synthesize import synthesize_template

    assert chatparse.synthesize_template is synthesize_template


@pytest.mark.parametrize("name", NAMES)
def test_streams_as_it_parses(synthesized: Get, name: str) -> None:
    """A rendered reasoning + content + call turn, fed in chunks of every size and in random splits, gives
    the one-shot message and well-formed events (``ResponseParser`` takes the result as is)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    from chatparse.synthesize import probes as P
    from tests.streamcheck import assert_chunking_equivalent
    from tests.synthesize.families import source

    result = synthesized(name)
    thinking_on = [p for p in result.prompts if p.label in ("thinking=True", "enable_thinking=True")]
    prompt = thinking_on[0] if thinking_on else next(p for p in result.prompts if p.label == "default")
    call = P.Call("write_file", {"path": "메모.txt", "content": 'say "hi"\nand </tool_call> 🎉'})
    message = P.assistant(result.format.form, reasoning="Plan it.", calls=[call])
    tokens = {k: v for k, v in FAMILIES[name]["tokens"].items() if k != "end_tokens"}
    base = P.base(result.format.with_system)
    rendered = render_jinja_template(conversations=[[*base, message]], tools=P.TOOLS, chat_template=source(name),
                                     **tokens, **prompt.switches)[0][0]  # type: ignore[index]
    output = rendered[len(prompt.text):] if rendered.startswith(prompt.text) else None
    if output is None:
        pytest.skip("this message's render does not continue the prompt")
    parsed = assert_chunking_equivalent(dict(result), prompt.text, output, seed=7, tools=P.TOOLS)
    assert parsed["tool_calls"] == [{"type": "function", "function": {"name": call.name,
                                                                       "arguments": dict(call.arguments)}}]
