"""DelimiterScanner: what it remembers between feeds never hides an occurrence a longer input completes."""

from __future__ import annotations

from chatparse import load_template
from chatparse.engine.scanner import DelimiterScanner


def _open_scanner(literals: list[str]) -> DelimiterScanner:
    template = load_template({"start_anchor": "<|a|>", "fields": {"x": {"open": literals}}})
    delim = template.fields["x"].open
    assert delim is not None
    return DelimiterScanner(delim)


def test_a_longer_literal_completing_before_a_shorter_match_is_found() -> None:
    """`["<x>", "x"]` on "<x": the complete "x" at 1 wins for now, but "<x>" may still complete at 0 (it did
    not: the scanner once remembered "nothing complete starts before 1" and then missed it)."""
    scanner = _open_scanner(["<x>", "x"])
    hit = scanner.find("<x", 0, False, 1, -1)
    assert hit is not None and (hit.start, hit.end, hit.pending) == (1, 2, False)
    hit = scanner.find("<x><a", 0, False, 2, -1)
    assert hit is not None and (hit.start, hit.end) == (0, 3)


def test_a_match_far_from_the_end_is_remembered_as_final() -> None:
    scanner = _open_scanner(["<x>", "x"])
    hit = scanner.find("ab x cdef", 0, False, 1, -1)
    assert hit is not None and (hit.start, hit.end, hit.pending) == (3, 4, False)
    hit = scanner.find("ab x cdef<x>", 0, False, 2, -1)
    assert hit is not None and (hit.start, hit.end) == (3, 4)
