"""Turns made of parts for recipients (Functionary v3.2): a text part opens with its recipient line, the
parts' separator starts every part after the first, calls are parts of their own."""

from __future__ import annotations

from typing import Any

from chatparse.grammar import tool_grammar
from tests.grammar.walk import accepts

TOOLS = [{"type": "function", "function": {"name": "echo", "parameters": {
    "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}]
CALL = 'echo\n{"text": "a >>> b"}'


def _admits(choice: Any, parallel: bool, text: str) -> bool:
    return accepts(tool_grammar("functionary_v3_2", TOOLS, tool_choice=choice,
                                parallel_tool_calls=parallel).lark, text)[0]


def test_parts() -> None:
    assert _admits("auto", True, "all\nLet me check.>>>" + CALL + ">>>" + CALL + "<|eot_id|>")
    assert _admits("auto", True, CALL + ">>>all\nDone.")
    assert not _admits("auto", True, "Let me check.>>>" + CALL)  # a text part names its recipient
    assert not _admits("auto", False, CALL + ">>>" + CALL)
    assert _admits("required", False, "all\nhi>>>" + CALL + "<|eom_id|>")
    assert not _admits("required", True, "all\nhi<|eot_id|>")
    assert _admits("echo", True, CALL)
    assert _admits("none", True, "all\nhi<|eot_id|>")
    assert not _admits("none", True, CALL)
    assert not _admits("auto", True, "all\na<|eot_id|>b>>>" + CALL)
