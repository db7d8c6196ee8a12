"""The escaped-newline-text extension (MiniCPM-V reasoning and content: backslash-n decoded as a newline)."""

from __future__ import annotations

import time
from typing import Any

import pytest

import chatparse
from chatparse.content.escaped_newlines import parse_escaped_newline_text, repair_escaped_newlines
from chatparse.content.registry import get_content_parser
from chatparse.errors import TemplateError

BS = "\\"


def test_registered_as_a_chatparse_only_parser() -> None:
    spec = get_content_parser("escaped-newline-text")
    assert not spec.compatible and spec.recover is None and spec.description


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("First\\nSecond", "First\nSecond"),
        ("a\\rb\\r\\nc", "a\nb\nc"),
        ("keep \\\\n and \\\\\\n", "keep \\\\n and \\\\\\n"),
        ("\\t and \\x stay", "\\t and \\x stay"),
        ("`a\\nb` then\\nend", "`a\\nb` then\nend"),
        ("```py\nprint('\\n')\n```\\nafter", "```py\nprint('\\n')\n```\nafter"),
        ("```\nunclosed \\n fence", "```\nunclosed \\n fence"),
        ("$x\\ny$ and $$\\n$$ and \\(\\n\\) and \\[\\n\\] then\\n", "$x\\ny$ and $$\\n$$ and \\(\\n\\) and \\[\\n\\] then\n"),
        ("costs $5\\nonly", "costs $5\nonly"),
        ("trailing \\", "trailing \\"),
    ],
)
def test_repairs_lone_escaped_newlines_outside_code_and_math(text: str, expected: str) -> None:
    assert repair_escaped_newlines(text) == expected


def test_remove_and_strip() -> None:
    args = {"remove": ["<reserved_12>", "<|reserved_13|>"]}
    assert parse_escaped_newline_text(" a<reserved_12>\\nb<|reserved_13|> ", args) == "a\nb"
    assert parse_escaped_newline_text(" a\\n ", {"strip": False}) == " a\n "


def test_long_inputs_read_in_linear_time() -> None:
    start = time.perf_counter()
    for text in (BS + "(" * 50_000, "$ " * 50_000 + "\\n", "`" * 50_001, "\\n" * 50_000, "\\\\" * 25_000):
        repair_escaped_newlines(text)
    assert time.perf_counter() - start < 10


def test_as_the_content_of_a_template() -> None:
    template = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<a>",
        "fields": {"thinking": {"open": "<think>", "close": "</think>", "content": "escaped-newline-text"},
                   "content": {"content": "escaped-newline-text"}},
    }
    out = chatparse.parse_response("<think>a\\nb</think>c\\nd", template, prefix="")
    assert out == {"role": "assistant", "thinking": "a\nb", "content": "c\nd"}


@pytest.mark.parametrize("args", [{"other": 1}, {"remove": [""]}, {"remove": "x"}, {"strip": 1}])
def test_content_args_are_checked_at_load(args: dict[str, Any]) -> None:
    template = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<a>",
        "fields": {"content": {"content": "escaped-newline-text", "content_args": args}},
    }
    with pytest.raises(TemplateError):
        chatparse.load_template(template)
