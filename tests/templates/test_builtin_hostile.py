"""Degenerate outputs (a model looping on whitespace or one character) inside every region of a part-A
built-in stay within the engine's regex budgets: the delimiter patterns scan in linear time."""

from __future__ import annotations

import pytest

import chatparse
from chatparse.errors import OutputError
from chatparse.templates import get_template
from tests.templates.test_registry import PART_A

# Text that leaves the parser inside (or at the edge of) each kind of region the part-A formats have.
OPENERS = [
    "", "<think>", "[THINK]", "Here is my thought process:", "<tool_call>", "<tool_call>x", "<tool_call>\n<function=",
    "<tool_call>\n<function=f>\n<parameter=a>\n", "<function=", "<tool_call>x<arg_key>k</arg_key><arg_value>",
    '<tool_call>{"name": "f", "arguments": {}}', "<｜tool▁call▁begin｜>",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}",
    "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}", '<｜DSML｜invoke name="f">', '<｜DSML｜invoke name="f"><｜DSML｜parameter name="',
    "<|python_tag|>", '{"name"', "[f(", "<|python_start|>[f(a=1)]", "[TOOL_CALLS]", "[TOOL_CALLS]f[ARGS]{}",
    "[TOOL_CALLS][]", "<|tool_call_begin|>", "<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}",
    "<|tool_call|>[]", "<function_call> {}", "<|action_start|><|plugin|>{}", "<tool_calls>[]",
]  # fmt: skip
FILLERS = [" ", "\n"]  # the realistic degenerate loops
LENGTH = 2500
CHUNK = 48


@pytest.mark.parametrize("name", PART_A)
def test_long_degenerate_runs_stay_within_the_regex_budget(name: str) -> None:
    template = get_template(name)
    for opener in OPENERS:
        for filler in FILLERS:
            text = opener + filler * LENGTH
            parser = chatparse.ResponseParser(template, "", on_malformed="keep")
            try:
                for i in range(0, len(text), CHUNK):
                    parser.feed(text[i : i + CHUNK])
                parser.finalize()
            except OutputError:
                pass  # e.g. a transform that finds no name: the output's fault, not the scan's
