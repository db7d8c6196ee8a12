"""``citation-sources``: the sources of one grounded span, as Cohere's Command models close it
(``<co>cited text</co: 0:[1,2]>``): the body ``0:[1,2]`` is a tool call's index and the indices of its
results, several such groups separated by commas."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chatparse.content.args import check_allowed, excerpt
from chatparse.content.registry import register_extensions

_GROUP = re.compile(r"\s*(\d+)\s*:\s*\[\s*(\d+(?:\s*,\s*\d+)*)?\s*\]\s*(?:,|$)")


def parse_citation_sources(text: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """``{"sources": [{"tool_call": 0, "results": [1, 2]}, ...]}`` from ``0:[1,2]`` (groups separated by
    commas, whitespace allowed). No ``content_args``. Anything else raises ``ValueError``."""
    sources: list[dict[str, Any]] = []
    pos = 0
    while pos < len(text):
        m = _GROUP.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"citation-sources: expected 'N:[i, j]' at offset {pos}, found {excerpt(text[pos:])}")
        results = [int(i) for i in m.group(2).split(",")] if m.group(2) else []
        sources.append({"tool_call": int(m.group(1)), "results": results})
        pos = m.end()
    if not sources:
        raise ValueError(f"citation-sources: no sources in {excerpt(text)}")
    return {"sources": sources}


def _check(args: Mapping[str, Any]) -> None:
    check_allowed("citation-sources", args, {})


EXTENSIONS = {"citation-sources": (parse_citation_sources, _check, None)}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
