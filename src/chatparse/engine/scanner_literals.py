"""One delimiter's scanner, its ground floor: the fields it remembers between scans (where the delimiter
cannot occur), ``match`` under the regex budget, and finding a literal delimiter (``str.find`` per
literal)."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from chatparse.content.regex_search import searcher
from chatparse.limits import DEFAULT_LIMITS, RegexBudget
from chatparse.template.compile import Delimiter

# How far past a regex match the "could it still grow" check looks (see docs/compatibility.md).
GROWTH_WINDOW = 65536
_NO_GROUPS: dict[str, Any] = {}
_MAX_TRIES = 64  # anchored tries at anchor occurrences before a plain search takes over
# ... unless the tries were this sparse (characters per try): an anchored try costs about what a search
# spends on a few hundred characters, so sparse anchors keep being tried one by one.
_SPARSE = 512


@dataclass(slots=True)
class Hit:
    """One occurrence: ``start``/``end`` in buffer coordinates; ``pending`` if it may still change."""

    start: int
    end: int
    groups: dict[str, Any]
    pending: bool


_TOO_MANY = Hit(-1, -1, _NO_GROUPS, False)  # sentinel: too many anchor occurrences to check one by one


def _common_prefix(words: tuple[str, ...]) -> str:
    first, last = min(words), max(words)  # the common prefix of all is that of the extremes
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


class _Occurrences:
    """Where each of some literals occurs in a growing buffer, indexed as it is searched: a regex's
    anchors and closing literals, one of which never occurs (`to=python`), would otherwise be searched
    for to the end of the buffer on every call (quadratic over a one-shot text)."""

    __slots__ = ("_base", "_found", "_scanned", "literals")

    def __init__(self, literals: tuple[str, ...]) -> None:
        self.literals = literals
        n = len(literals)
        # Per literal: every occurrence starting in [_base, _scanned) is in _found (ascending).
        self._base = [-1] * n
        self._scanned = [0] * n
        self._found: list[list[int]] = [[] for _ in range(n)]

    def reset(self) -> None:
        """The buffer lost characters at its start: positions changed, forget them."""
        self._base = [-1] * len(self.literals)

    def next(self, buf: str, i: int, pos: int) -> int:
        """``buf.find(literals[i], pos)``."""
        lit = self.literals[i]
        base, scanned = self._base[i], self._scanned[i]
        if 0 <= base <= pos <= scanned:
            found = self._found[i]
            k = bisect_left(found, pos)
            if k < len(found):
                return found[k]
            pos = scanned  # none in [pos, scanned)
        else:
            self._base[i], self._found[i] = pos, []
        at = buf.find(lit, pos)
        if at < 0:
            self._scanned[i] = max(pos, len(buf) - len(lit) + 1)
        else:
            self._found[i].append(at)
            self._scanned[i] = at + 1
        return at

    def any_from(self, buf: str, pos: int) -> bool:
        """Whether any of the literals occurs at or after ``pos``."""
        return any(self.next(buf, i, pos) >= 0 for i in range(len(self.literals)))


class _LiteralScanner:
    """The scanner's fields and its literal search (a base of ``DelimiterScanner``)."""

    __slots__ = (
        "_after",
        "_anchor_len",
        "_anchor_occ",
        "_anchored",
        "_budget",
        "_cache",
        "_cache_from",
        "_cache_key",
        "_dead",
        "_dead_complete",
        "_dead_key",
        "_dead_search",
        "_dead_upto",
        "_first",
        "_first_char",
        "_frontier",
        "_lit_at",
        "_lit_common",
        "_lit_scan",
        "_literal",
        "_none_at",
        "_none_pos",
        "_none_zw",
        "_prefixes",
        "_single_pass",
        "_stable",
        "_start_char",
        "_starts",
        "_tail_occ",
        "delim",
        "longest",
        "window",
    )

    def __init__(self, delim: Delimiter, budget: RegexBudget | None = None, window: int = 1 << 62) -> None:
        self.delim = delim
        # How far back from the end of the text a partial match may start and still matter: the parser's
        # hold-back cap (a delimiter forming further back is given up anyway). It bounds the partial
        # search, which the regex module runs in quadratic time for some patterns (an unbounded
        # quantifier inside an optional leading group) over a long one-shot text.
        self.window = window
        self._budget = budget if budget is not None else RegexBudget(DEFAULT_LIMITS)
        self.longest = delim.longest_literal
        self._prefixes = delim.prefixes
        self._first = delim.first
        self._literal = delim.literals is not None
        firsts = {p[0] for p in delim.prefixes}
        self._first_char = firsts.pop() if len(firsts) == 1 else None
        # For `<run>* X...` patterns: a class of X's first characters. Every match contains one, right
        # after a run of lead characters, which bounds where a match can start.
        self._after = delim.after
        anchors = delim.info.anchors if delim.literals is None else None
        self._anchored = anchors is not None
        self._single_pass = delim.literals is None and searcher(delim.pattern.pattern).single_pass
        self._anchor_occ = _Occurrences(anchors or ())
        # For one buffer (version, length): anchored starts where no match (even partial) starts, and
        # where a search for a complete match found none (-1: not known). One-shot parsing scans one
        # buffer many times; without these, each scan would try the same failing anchors again.
        self._dead_key: tuple[int, int] = (-1, -1)
        self._dead: set[int] = set()
        self._dead_complete: set[int] = set()  # no complete match starts here (a partial one may)
        self._dead_search = -1
        # With starts at the anchors themselves (no lead run): no match, not even a partial one, starts at
        # an anchor before this position (0: not known), so those anchors are not enumerated again.
        self._dead_upto = 0
        self._tail_occ = _Occurrences(delim.info.tails or ())
        self._anchor_len = max(map(len, anchors)) if anchors else 0
        self._frontier = 0  # no complete occurrence starts in [scan start, frontier)
        self._stable: Hit | None = None  # a complete occurrence no further input can change
        self._cache: Hit | None = None  # the last answer, valid for the same buffer
        self._cache_key: tuple[int, int, bool, int] | None = None
        self._cache_from = 0
        # Per literal: where it next occurs (>= 0), or -1 (none before ``_lit_scan``), or -2 (unknown).
        # A literal that occurs rarely (`<|return|>` beside `<|end|>`) is not searched for again.
        count = len(delim.literals or ())
        self._lit_at = [-2] * count
        # What all the literals begin with (`<|start|>` of next-turn headers): when it does not occur,
        # none of them does, found with one search instead of one per literal.
        common = _common_prefix(delim.literals) if delim.literals and count > 1 else ""
        self._lit_common = common if len(common) >= 3 else ""
        self._lit_scan = [0] * count
        # Nothing (no match, no partial) from ``_none_pos`` up to ``_none_at`` (-1: unknown), with
        # ``_none_zw`` blocked: new matches then start after it, with one of ``info.first_chars``.
        self._none_at = -1
        self._none_pos = 0
        self._none_zw = -1
        first_chars = delim.info.first_chars
        self._starts = delim.starts
        self._start_char = next(iter(first_chars)) if first_chars is not None and len(first_chars) == 1 else None

    def match(self, text: str, pos: int, endpos: int | None = None, *, partial: bool = False) -> Any:
        """``pattern.match`` at ``pos``: under the regex budget, unless the pattern is single-pass (a match
        attempt then costs time linear in what it reads, and ``timeout=`` alone costs a clock system
        call or more per call)."""
        delim = self.delim
        end = len(text) if endpos is None else endpos
        if self._single_pass:
            return delim.pattern.match(text, pos, end, partial=partial)
        return self._budget.run(delim.pattern.match, delim.field, delim.key, text, pos, end, partial=partial)

    def shift(self, n: int) -> None:
        """The buffer lost its first ``n`` characters."""
        self._frontier = max(0, self._frontier - n)
        if self._stable is not None:
            self._stable = Hit(self._stable.start - n, self._stable.end - n, self._stable.groups, False)
        self._cache = None
        self._cache_key = None
        self._none_at = -1
        self._anchor_occ.reset()
        self._tail_occ.reset()
        at, scan = self._lit_at, self._lit_scan
        for i in range(len(at)):
            if at[i] >= 0:
                at[i] = at[i] - n if at[i] >= n else -2
            scan[i] = max(0, scan[i] - n)

    def _find_literal(self, buf: str, pos: int, eos: bool) -> Hit | None:
        size = len(buf)
        stable = self._stable
        if stable is not None and stable.start >= pos:
            return self._literal_hit(stable.start, stable.end, size, eos)
        start = max(pos, self._frontier)
        best_start, best_len = -1, 0
        at_list, scan_list = self._lit_at, self._lit_scan
        floor = start
        if self._lit_common and any(at < start for at in at_list):
            floor = buf.find(self._lit_common, start)
            if floor < 0:  # no literal occurs whole from ``start``; one may be forming at the end
                floor = max(start, size - self.longest + 1)
        for i, lit in enumerate(self.delim.literals or ()):  # longest first: the first found at a start wins
            n = len(lit)
            end = best_start + n if best_start >= 0 else size
            at = at_list[i]
            if at >= start:  # the first occurrence at or after an earlier (smaller) start
                found = at if at + n <= end else -1
            else:
                from_ = max(floor, scan_list[i]) if at == -1 else floor
                found = buf.find(lit, from_, end)
                if found == -1:
                    at_list[i], scan_list[i] = -1, max(from_, end - n + 1)
                else:
                    at_list[i] = found
            if found != -1 and (best_start < 0 or found < best_start):
                best_start, best_len = found, n
        if best_start >= 0:
            hit = self._literal_hit(best_start, best_start + best_len, size, eos)
            if best_start + self.longest <= size:  # no longer literal can still start here
                self._stable = hit
            else:
                # A longer literal may still complete at an earlier start, one that reaches the end.
                self._frontier = min(best_start, max(start, size - self.longest + 1))
            return hit
        self._frontier = max(start, size - self.longest + 1)
        return None if eos else self._literal_partial(buf, pos)

    def _literal_hit(self, start: int, end: int, size: int, eos: bool) -> Hit:
        return Hit(start, end, _NO_GROUPS, not eos and end == size and self.delim.can_extend)

    def _literal_partial(self, buf: str, pos: int) -> Hit | None:
        """The leftmost tail of ``buf`` that is a proper prefix of a literal (a delimiter forming)."""
        size = len(buf)
        p = self._forming_at(buf, max(pos, size - self.longest + 1))
        return None if p < 0 else Hit(p, size, _NO_GROUPS, True)

    def _forming_at(self, buf: str, lo: int) -> int:
        """The leftmost ``q >= lo`` where ``buf[q:]`` is a proper prefix of a literal (or anchor), or -1."""
        prefixes = self._prefixes
        char = self._first_char
        if char is not None:  # the usual case: one first character, `str.find` is cheaper than a regex
            q = buf.find(char, lo)
            while q != -1:
                if buf[q:] in prefixes:
                    return q
                q = buf.find(char, q + 1)
            return -1
        m = self._first.search(buf, lo)
        while m is not None:
            q = int(m.start())
            if buf[q:] in prefixes:
                return q
            m = self._first.search(buf, q + 1)
        return -1
