"""Render a conversation with a real chat template (transformers' renderer) and parse the assistant turn it
wrote back with a built-in: the check behind "detect_template picks a built-in that round-trips what the
template renders"."""

from __future__ import annotations

import json
import re
from typing import Any

from chatparse import parse_response
from chatparse.templates import get_template

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the weather forecast for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "description": "Number of days to forecast"}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Get the current time.",
        "parameters": {"type": "object", "properties": {}}}},
]
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "What's the weather in Seoul for 2 days?"}


def _call(name: str, arguments: dict[str, Any], index: int) -> dict[str, Any]:
    return {"id": f"call{index:05d}", "type": "function", "function": {"name": name, "arguments": arguments}}


# The assistant turns each template is asked to render (content, reasoning, one call, two calls).
TURNS: dict[str, dict[str, Any]] = {
    "content": {"role": "assistant", "content": "It is sunny in Seoul, 24°C — 맑음."},
    "reasoning": {"role": "assistant", "reasoning_content": "The user wants the weather.", "content": "It is sunny."},
    "one_call": {"role": "assistant", "content": "", "tool_calls": [_call("get_weather", {"city": "Seoul", "days": 2}, 0)]},
    "two_calls": {"role": "assistant", "content": "", "tool_calls": [
        _call("get_weather", {"city": "서울"}, 0), _call("get_time", {}, 1)]},
}


def render(source: str, messages: list[dict[str, Any]], generation_prompt: bool, kwargs: dict[str, Any],
           string_arguments: bool = False) -> str:
    """The text ``source`` renders for ``messages`` (tool-call arguments as JSON strings when the template
    concatenates them)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    if string_arguments:
        messages = [{**m, "tool_calls": [{**c, "function": {**c["function"], "arguments": json.dumps(
            c["function"]["arguments"], ensure_ascii=False)}} for c in m["tool_calls"]]} if m.get("tool_calls") else m
                    for m in messages]
    rendered, _ = render_jinja_template(conversations=[messages], tools=TOOLS, chat_template=source,
                                        add_generation_prompt=generation_prompt, **kwargs)
    return str(rendered[0])


def _anchor_ends(template: dict[str, Any], text: str) -> list[int]:
    """Where each assistant header of ``template`` ends in ``text``."""
    if "start_anchor_pattern" in template:
        return [m.end() for m in re.finditer(template["start_anchor_pattern"], text)]
    anchor = template["start_anchor"]
    ends = []
    for literal in [anchor] if isinstance(anchor, str) else anchor:
        ends += [m.end() for m in re.finditer(re.escape(literal), text)]
    return sorted(ends)


def _continues_as_content(family: str, prompt: str) -> bool:
    """The prompt's pre-written tail is closed (an empty reasoning block): what follows is the answer."""
    return parse_response("x", get_template(family), prefix=prompt).get("content") == "x"


def generated(family: str, prompt: str, full: str) -> str | None:
    """What the model generated in ``full`` (a conversation ending with the assistant turn) after ``prompt``
    (the same conversation without it, with the generation prompt), up to the first end marker (kept) or
    next-turn header. The turn starts after the prompt when the prompt is a prefix of ``full``, else after
    the assistant header that ends the shared history (a template may write a system turn after the last
    reply, or leave out of the history what its generation prompt pre-writes: an empty reasoning block, or
    Apriel 1.6's reasoning opener before a turn that holds its final-response marker). None when the
    rendering is no generation from this prompt (the prompt opens a reasoning block the turn does not
    continue)."""
    template = get_template(family)
    if full.startswith(prompt):
        text = full[len(prompt):]
    else:
        ends = _anchor_ends(template, prompt)
        if not ends:
            return None
        at = ends[-1]
        if full[:at] != prompt[:at]:
            full_ends = _anchor_ends(template, full)
            if not full_ends:
                return None
            at_full = full_ends[-1]
        else:
            at_full = at
        tail, turn = prompt[at:], full[at_full:]
        if turn.startswith(tail):
            text = turn[len(tail):]
        elif _continues_as_content(family, prompt) or (
                tail.strip() == "Here are my reasoning steps:" and "[BEGIN FINAL RESPONSE]" in turn):
            text = turn
        else:
            return None
    policies = template.get("chatparse", {})
    stops = [(text.find(m), len(m)) for m in policies.get("end", []) if m in text]
    stops += [(text.find(m), 0) for m in policies.get("next_turn", []) if m in text]
    if stops:
        at, keep = min(stops)
        text = text[: at + keep]
    return text


def expected_message(turn: dict[str, Any], output: str) -> dict[str, Any]:
    """The message an assistant turn must parse back into: what the template wrote of it."""
    expected: dict[str, Any] = {"role": "assistant"}
    if turn.get("reasoning_content") and turn["reasoning_content"] in output:
        expected["thinking"] = turn["reasoning_content"]
    if turn.get("content") and turn["content"] in output:
        expected["content"] = turn["content"]
    calls = [{"type": "function", "function": c["function"]} for c in turn.get("tool_calls", [])
             if c["function"]["name"] in output]
    if calls:
        expected["tool_calls"] = calls
    return expected


def round_trip(family: str, source: str, turn: str, kwargs: dict[str, Any], system: bool = True,
               string_arguments: bool = False, reasoning_prefix: str = "", system_suffix: str = "",
               ) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """(parsed, expected, generated text) for one assistant turn rendered by ``source``; None when the
    rendering is no generation from the prompt (see ``generated``). ``reasoning_prefix``: words the prompt
    pre-writes that are part of the reasoning (Apriel 1.6's 'Here are my reasoning steps:');
    ``system_suffix``: a switch the template reads from the system message (Nemotron's ' /no_think')."""
    system_message = {**SYSTEM, "content": SYSTEM["content"] + system_suffix}
    history = [system_message, USER] if system else [USER]
    prompt = render(source, history, True, kwargs, string_arguments)
    full = render(source, [*history, TURNS[turn]], False, kwargs, string_arguments)
    output = generated(family, prompt, full)
    if output is None:
        return None
    parsed = parse_response(output, get_template(family), prefix=prompt, tools=TOOLS)
    expected = expected_message(TURNS[turn], output)
    if reasoning_prefix and "thinking" in expected:
        expected["thinking"] = reasoning_prefix + expected["thinking"]
    return parsed, expected, output
