"""Discovery and loading of the template corpora: tests/templates/corpus/<family>/<case>.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "corpus"
CASE_KEYS = {"description", "prefix", "output", "expected", "tools", "options"}


def corpus_cases() -> list[tuple[str, Path]]:
    """(family directory name, case file) for every case of every family directory."""
    return [
        (family.name, case)
        for family in sorted(p for p in CORPUS.iterdir() if p.is_dir())
        for case in sorted(family.glob("*.json"))
    ]


def case_id(family: str, path: Path) -> str:
    return f"{family}/{path.stem}"


def load_case(path: Path) -> dict[str, Any]:
    """A case file, checked for the corpus schema."""
    case = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(case, dict)
    assert set(case) <= CASE_KEYS, f"unknown keys {sorted(set(case) - CASE_KEYS)}"
    assert {"description", "prefix", "output", "expected"} <= set(case)
    assert case["description"].strip()
    return case
