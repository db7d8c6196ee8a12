"""Rewrite docs/grammar.md's per-template table from the templates (tests/grammar/test_overview.py checks
that the page and the templates agree).

    python scripts/update_grammar_docs.py
"""

from __future__ import annotations

from pathlib import Path

from chatparse import get_template, list_templates
from chatparse.grammar.overview import markdown_table, update_section

PAGE = Path(__file__).resolve().parent.parent / "docs" / "grammar.md"


def families() -> list[str]:
    return [name for name in list_templates() if "tool_calls" in get_template(name)["fields"]]


def main() -> None:
    PAGE.write_text(update_section(PAGE.read_text(encoding="utf-8"), markdown_table(families())), encoding="utf-8")


if __name__ == "__main__":
    main()
