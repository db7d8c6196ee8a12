"""docs/grammar.md's per-template table agrees with the templates, and describes what the grammar writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatparse import get_template, list_templates, tool_grammar
from chatparse.grammar.overview import END, START, describe, markdown_table, update_section

PAGE = Path(__file__).resolve().parents[2] / "docs" / "grammar.md"


def _families() -> list[str]:
    return [name for name in list_templates() if "tool_calls" in get_template(name)["fields"]]


def test_the_docs_table_is_the_templates_table() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert update_section(page, markdown_table(_families())) == page, \
        "docs/grammar.md's table is stale: run python scripts/update_grammar_docs.py"


def test_a_described_call_is_what_the_grammar_writes() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    overview = describe("qwen3_coder")
    assert overview.call == "`<tool_call>\\n<function=‹name›>\\n<parameter=‹key›>\\n‹value›\\n</parameter>\\n…" \
                            "</function>\\n</tool_call>`"
    lark = tool_grammar("qwen3_coder", tools, tool_choice="required").lark
    assert '"<tool_call>\\n<function=get_weather>\\n"' in lark and '"<parameter="' in lark


def test_a_template_without_a_grammar_says_why() -> None:
    overview = describe("muse_spark")
    assert overview.missing == "no_write_form" and "'thinking'" in overview.why


def test_a_page_without_the_section_is_an_error() -> None:
    with pytest.raises(ValueError, match=START):
        update_section("# no table here\n", "| a |\n")
    assert update_section(f"a\n{START}\nold\n{END}\nb", "new\n") == f"a\n{START}\nnew\n{END}\nb"
