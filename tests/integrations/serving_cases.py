"""Corpus cases as a serving engine answers them, for the serving-plugin tests (vLLM, SGLang): the families
they serve, what the client must end up with (chatparse's parse with ``on_malformed="recover"`` as OpenAI
fields, the finish reason the engine reports), and the client-side accumulation of streamed calls."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chatparse
from chatparse.openai import to_chat_message
from chatparse.templates import get_template
from tests.templates.corpus_loader import case_id, corpus_cases, load_case

# corpus directory -> template name
FAMILIES = {"qwen3": "qwen3", "qwen3_5": "qwen3.5", "gpt_oss": "gpt_oss", "deepseek_v3_1": "deepseek_v3.1",
            "kimi_k2": "kimi_k2", "glm47": "glm47", "llama3_json": "llama3_json"}
CASES = [(family, path) for family, path in corpus_cases() if family in FAMILIES]
CASE_IDS = [case_id(family, path) for family, path in CASES]
CHUNKINGS = ["one delta", "one token per delta", "random 1-8 #0", "random 1-8 #1"]  # tests.tokens.groupings


@dataclass(frozen=True)
class ServedCase:
    family: str
    template_name: str
    case: dict[str, Any]
    message: dict[str, Any]  # chatparse's parse, on_malformed="recover"
    reason: str  # the engine's finish reason: "length" for an output the token limit cut inside a call
    want: dict[str, Any]  # what the client must end up with
    seed: int


def served_case(family: str, path: Path) -> ServedCase:
    name = FAMILIES[family]
    case = load_case(path)
    template = chatparse.load_template(get_template(name))
    message = chatparse.parse_response(case["output"], template, prefix=case["prefix"], tools=case.get("tools"),
                                       on_malformed="recover")
    reason = "length" if any(m.get("code") == "truncated" for m in message.get("malformed") or ()) else "stop"
    wire = to_chat_message(message, id_factory=str)
    keeps = bool(case.get("tools"))  # a server returns calls only to a request that offered tools
    calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
             for c in wire.get("tool_calls", [])] if keeps else []
    finish = "length" if reason == "length" else ("tool_calls" if calls else "stop")
    want = {"reasoning": wire.get("reasoning_content") or "", "content": wire["content"] or "", "calls": calls,
            "finish_reason": finish}
    return ServedCase(family, name, case, message, reason, want, zlib.crc32(case_id(family, path).encode()))


def add_call(calls: dict[int, dict[str, Any]], index: int, call_id: str | None, name: str | None,
             arguments: str | None) -> None:
    """One streamed tool-call delta as an OpenAI client accumulates it: by index, the id sent once."""
    slot = calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
    if call_id is not None:
        assert slot["id"] is None, "a tool call id sent twice"
        slot["id"] = call_id
    slot["name"] += name or ""
    slot["arguments"] += arguments or ""


def without_ids(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with its calls' ids checked (present, distinct) and removed (engines make random ids)."""
    calls = result["calls"]
    assert all(isinstance(c["id"], str) and c["id"] for c in calls), f"a call without an id: {calls}"
    assert len({c["id"] for c in calls}) == len(calls), f"repeated call ids: {calls}"
    return {**result, "calls": [{"name": c["name"], "arguments": c["arguments"]} for c in calls]}


def complete_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The streamed calls whose accumulated arguments are JSON (early streaming also sends cut ones)."""
    from tests.tokens import parses_json

    return [{"name": c["name"], "arguments": c["arguments"]} for c in calls if parses_json(c["arguments"])]
