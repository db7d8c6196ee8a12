"""citation-sources: Cohere's '</co: N:[i, j], ...>' sources, strictly."""

from __future__ import annotations

from typing import Any

import pytest

from chatparse.content.registry import get_content_parser

SPEC = get_content_parser("citation-sources")


@pytest.mark.parametrize(("body", "sources"), [
    ("0:[1,2]", [{"tool_call": 0, "results": [1, 2]}]),
    (" 0:[0], 1:[ 3 , 4 ] ", [{"tool_call": 0, "results": [0]}, {"tool_call": 1, "results": [3, 4]}]),
    ("2:[]", [{"tool_call": 2, "results": []}]),
])
def test_sources(body: str, sources: list[dict[str, Any]]) -> None:
    assert SPEC.parse(body, {}) == {"sources": sources}


@pytest.mark.parametrize("body", ["", "0", "0:[a]", "0:[1] trailing", "x:[1]"])
def test_anything_else_raises(body: str) -> None:
    with pytest.raises(ValueError, match="citation-sources"):
        SPEC.parse(body, {})
