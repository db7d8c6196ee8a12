"""Delimiter scanning: where one delimiter next occurs in the parser's buffer, and whether that occurrence
can be committed now or must be held back because more input could still change it.

Semantics are those of a ``regex`` partial search from the scan position (a complete match anywhere
wins; otherwise the leftmost partial one), but each scanner remembers what it has learned, so text is
not searched again: literal delimiters use ``str.find`` plus a suffix check (and each literal's next
occurrence is remembered); regex delimiters with an anchor (the literal every match has after its lead
run) jump between anchor occurrences and try one anchored match there; other regex delimiters run the
(costly) partial search only over the tail where a partial match can start.
"""

from __future__ import annotations

from chatparse.engine.scanner_literals import Hit, _Occurrences
from chatparse.engine.scanner_regex import _RegexScanner


class DelimiterScanner(_RegexScanner):
    """Finds one delimiter in a growing buffer, remembering where it cannot occur."""

    __slots__ = ()

    def find(self, buf: str, pos: int, eos: bool, version: int, zw_block: int) -> Hit | None:
        key = (version, len(buf), eos, zw_block)
        if self._dead_key != (version, len(buf)):
            self._dead_key = (version, len(buf))
            self._dead.clear()
            self._dead_complete.clear()
            self._dead_search = -1
            self._dead_upto = 0
        if self._cache_key == key and pos >= self._cache_from and (self._cache is None or pos <= self._cache.start):
            return self._cache
        none_at = self._none_at
        if none_at >= 0 and not eos and pos >= self._none_pos and zw_block == self._none_zw:
            # Nothing was forming at the end of the text seen last time, so anything new starts in the
            # text added since, with one of the delimiter's first characters.
            char = self._start_char
            if (buf.find(char, none_at) < 0) if char is not None else (self._starts.search(buf, none_at) is None):
                self._none_at = len(buf)
                self._cache, self._cache_key, self._cache_from = None, key, pos
                return None
        hit = self._find_literal(buf, pos, eos) if self._literal else self._find_regex(buf, pos, eos, zw_block)
        self._cache, self._cache_key, self._cache_from = hit, key, pos
        if hit is None and not eos and self._starts is not None:
            self._none_at, self._none_pos, self._none_zw = len(buf), pos, zw_block
        else:
            self._none_at = -1
        return hit


__all__ = ["DelimiterScanner", "Hit", "_Occurrences"]
