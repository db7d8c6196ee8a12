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

from bisect import bisect_left
from collections.abc import Iterator
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


class DelimiterScanner:
    """Finds one delimiter in a growing buffer, remembering where it cannot occur."""

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

    # --- literal delimiters ------------------------------------------------------------------------

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

    # --- regex delimiters --------------------------------------------------------------------------

    def _find_regex(self, buf: str, pos: int, eos: bool, zw_block: int) -> Hit | None:
        width = self._bounded_width()
        stable = self._stable
        if stable is not None and stable.start >= pos and stable.start != zw_block:
            return stable
        start = max(pos, self._frontier) if width is not None else pos
        if self._anchored and not eos:
            hit = self._anchored_find(buf, pos, width)
            if hit is not _TOO_MANY:
                return hit
        if self._anchored:
            m = self._anchor_search(buf, start)  # a match starts at an anchor (or the lead run before it)
        elif self._after is None:
            m = self._search(buf, start, zw_block)
        else:
            # Searching a long lead run position by position is quadratic; start at the run before
            # the first character that can follow it (none: no complete match is possible).
            after = self._after.search(buf, start)
            m = None if after is None else self._search(buf, self._lead_start(buf, start, after.start()), zw_block)
        size = len(buf)
        if m is None:
            if width is not None:
                self._frontier = max(start, size - width - 2)
            return None if eos else self._regex_partial(buf, pos, zw_block)
        hit = Hit(m.start(), m.end(), m.groupdict(), False)
        if not eos:
            hit.pending = hit.end == size or self._can_grow(buf, m)
        if width is not None and not hit.pending and hit.start + width + 2 <= size:
            self._stable = hit  # the match cannot read as far as the buffer end: final
        elif width is not None:
            self._frontier = hit.start
        return hit

    def _anchored_find(self, buf: str, pos: int, width: int | None) -> Hit | None:
        """Streaming, for a pattern with anchors: a match (complete or partial) can only start at an
        anchor occurrence (or the lead run before it), or be an anchor forming at the end. One anchored
        partial match per occurrence answers both questions a complete and a partial search would."""
        info = self.delim.info
        if info.tails is not None and not self._tail_occ.any_from(buf, pos):
            complete = False  # without one of the closing literals no complete match exists
        else:
            complete = True
        size = len(buf)
        first_partial = -1
        anchor_seen = False
        dead = self._dead
        runs, since = 0, pos
        # Starts are the anchors themselves: skip those known dead, while they are all dead.
        frontier = not info.anchors_exact
        for start in self._anchor_starts(buf, max(pos, self._dead_upto) if frontier else pos):
            anchor_seen = True
            if start in dead:
                if frontier:
                    self._dead_upto = start + 1
                continue
            if runs == _MAX_TRIES:
                if start - since < _MAX_TRIES * _SPARSE:
                    return _TOO_MANY
                runs, since = 0, start
            runs += 1
            m = self.match(buf, start, partial=True)
            if m is None:
                dead.add(start)
                if frontier:
                    self._dead_upto = start + 1
            elif not m.partial:
                hit = Hit(m.start(), m.end(), m.groupdict(), m.end() == size or self._can_grow(buf, m))
                if width is not None and not hit.pending and hit.start + width + 2 <= size:
                    self._stable = hit
                return hit
            if m is not None:
                frontier = False
            if m is not None and first_partial < 0:
                first_partial = start
                if not complete:
                    break  # later occurrences could only start later partial matches
        if not anchor_seen:
            return self._prefix_partial(buf, pos)  # no anchor: no complete match is possible
        if first_partial >= 0 and first_partial <= size - self._anchor_len:
            return Hit(first_partial, size, _NO_GROUPS, True)  # an anchor forming at the end starts later
        forming = self._prefix_partial(buf, pos, first_partial if first_partial >= 0 else size)
        if first_partial >= 0 and (forming is None or first_partial < forming.start):
            return Hit(first_partial, size, _NO_GROUPS, True)
        return forming

    def _anchor_search(self, buf: str, start: int) -> Any:
        """The leftmost complete match from ``start`` of a pattern with anchors: jump from one anchor
        occurrence to the next with ``str.find`` and try an anchored match there (a regex search would
        walk every position, slowly for a `\\s*`-led pattern). After many failed tries, a search."""
        dead, dead_complete = self._dead, self._dead_complete
        tried, since = 0, start
        if not self.delim.info.anchors_exact:
            start = max(start, self._dead_upto)  # no match at all starts at an anchor before it
        for at in self._anchor_starts(buf, start):
            if 0 <= self._dead_search <= at:
                return None  # a search from no later than here found no complete match
            if at in dead or at in dead_complete:
                continue
            if tried == _MAX_TRIES:
                if at - since >= _MAX_TRIES * _SPARSE:
                    tried, since = 0, at
                else:
                    m = self._search(buf, at, -1)  # no match starts before this untried candidate
                    if m is None:
                        self._dead_search = at
                    return m
            tried += 1
            m = self.match(buf, at)
            if m is not None:
                return m
            dead_complete.add(at)
        return None

    def _anchor_starts(self, buf: str, pos: int) -> Iterator[int]:
        """Where a match can start, in order: at each anchor occurrence from ``pos`` (or the lead run
        before an exact anchor), each start once."""
        info = self.delim.info
        occ = self._anchor_occ
        count = len(occ.literals)
        nexts = [occ.next(buf, i, pos) for i in range(count)]
        last = -1
        while True:
            q = min((n for n in nexts if n >= 0), default=-1)
            if q < 0:
                return
            start = self._lead_start(buf, pos, q) if info.anchors_exact else q
            if start != last:
                last = start
                yield start
            nexts = [occ.next(buf, i, q + 1) if nexts[i] == q else nexts[i] for i in range(count)]

    def _bounded_width(self) -> int | None:
        """The maximum width, when it also bounds how far past its start the pattern reads."""
        info = self.delim.info
        return None if info.looks_ahead else info.max_width

    def _search(self, buf: str, start: int, zw_block: int, partial: bool = False) -> Any:
        delim = self.delim
        run = self._budget.run
        m = run(delim.pattern.search, delim.field, delim.key, buf, start, partial=partial)
        # A zero-width open may fire once per position; past that it would loop forever.
        while m is not None and not m.partial and m.start() == m.end() == zw_block:
            m = run(delim.pattern.search, delim.field, delim.key, buf, zw_block + 1, partial=partial) \
                if zw_block < len(buf) else None
        return m

    def _regex_partial(self, buf: str, pos: int, zw_block: int) -> Hit | None:
        if self._anchored and self._no_anchor(buf, pos):
            return self._prefix_partial(buf, pos)
        floor = self._partial_floor(buf, pos)
        anchor = self.delim.info.anchor
        if floor <= pos and anchor is not None:
            return self._anchored_partial(buf, pos, zw_block, anchor)
        if floor <= pos and self._after is not None:
            # A partial match is a lead run reaching the end, or contains a character that follows it.
            trailing = self._lead_start(buf, pos, len(buf))
            after = self._after.search(buf, pos, trailing)
            if after is None:
                if trailing == len(buf):
                    return None
                # Only the trailing run can be forming. An anchored match checks it without the
                # quadratic complete-match search a partial `search` would first run over the run.
                m = self.match(buf, trailing, partial=True)
                if m is not None and m.partial:
                    return Hit(m.start(), m.end(), m.groupdict(), True)
                floor = trailing
            else:
                floor = self._lead_start(buf, pos, after.start())
        return self._window_partial(buf, max(pos, floor), zw_block)

    def _no_anchor(self, buf: str, start: int) -> bool:
        return not self._anchor_occ.any_from(buf, start)

    def _prefix_partial(self, buf: str, pos: int, limit: int | None = None) -> Hit | None:
        """The leftmost partial match when no anchor occurs from ``pos``: it can only be a lead run and a
        proper prefix of an anchor reaching the end, or a trailing lead run (no regex call needed).
        Candidates from ``limit`` on are not checked (a partial match already starts before them)."""
        size = len(buf)
        info = self.delim.info
        q = self._forming_at(buf, max(pos, size - self._anchor_len + 1))
        if not info.anchors_exact:  # a lookbehind before the anchor decides (no lead run here)
            while 0 <= q < (size if limit is None else limit):
                m = self.match(buf, q, partial=True)
                if m is not None and m.partial:
                    return Hit(q, size, _NO_GROUPS, True)
                q = self._forming_at(buf, q + 1)
            return None
        if q >= 0:
            return Hit(self._lead_start(buf, pos, q), size, _NO_GROUPS, True)
        if info.lead is None:
            return None
        run = self._lead_start(buf, pos, size)
        if run == size:
            return None
        if not info.lead_forming:
            m = self.match(buf, run, partial=True)
            if m is None or not m.partial:
                return None
        return Hit(run, size, _NO_GROUPS, True)

    def _window_partial(self, buf: str, start: int, zw_block: int) -> Hit | None:
        m = self._search(buf, max(start, len(buf) - self.window), zw_block, partial=True)
        if m is None or m.start() == len(buf):
            return None
        return Hit(m.start(), m.end(), m.groupdict(), True)

    def _anchored_partial(self, buf: str, pos: int, zw_block: int, anchor: str) -> Hit | None:
        """Leftmost partial match of a pattern shaped ``<lead run>* ANCHOR ...`` with no bounded width.
        A partial match either ends inside the lead run and anchor (so it starts in a short window at
        the end) or contains the whole anchor, so only occurrences of the anchor need a closer look."""
        window = self._lead_start(buf, pos, len(buf) - len(anchor) - 1)
        pattern = self.delim.pattern
        q = buf.find(anchor, pos)
        while q != -1 and q < window:
            p = self._lead_start(buf, pos, q)
            m = pattern.match(buf, p, partial=True)
            if m is not None and m.partial:
                return Hit(m.start(), m.end(), m.groupdict(), True)
            q = buf.find(anchor, q + 1)
        return self._window_partial(buf, max(pos, window), zw_block)

    def _lead_start(self, buf: str, pos: int, at: int) -> int:
        """Where the run of lead-class characters ending at ``at`` begins (not before ``pos``)."""
        test = self.delim.info.lead
        at = max(pos, at)
        if test is not None:
            while at > pos and test(buf[at - 1]):
                at -= 1
        return at

    def _partial_floor(self, buf: str, pos: int) -> int:
        """The leftmost position where a partial match could start (anything before is safe)."""
        info = self.delim.info
        size = len(buf)
        width = self._bounded_width()
        if width is not None:
            return size - width - 2
        if info.lead is not None and info.rest_width is not None and not info.looks_ahead:
            floor = size - info.rest_width - 2
            test = info.lead
            while floor > pos and test(buf[floor - 1]):
                floor -= 1
            return floor
        return pos

    def _can_grow(self, buf: str, m: Any) -> bool:
        """Whether one more (non-newline) character could change a complete match ending before the edge."""
        info = self.delim.info
        start = m.start()
        width = self._bounded_width()
        if width is not None and start + width + 2 <= len(buf):
            return False  # the match cannot read as far as the buffer end
        if m.end() + GROWTH_WINDOW < len(buf):
            return False  # it would have to explore more than the window past its own match
        lo = max(0, start - max(info.context, 1))
        hi = min(len(buf), m.end() + GROWTH_WINDOW)
        extended = self.match(buf[lo:hi] + "\x00", start - lo)
        if extended is None:
            return True
        return bool(extended.start() + lo != start or extended.end() + lo != m.end()
                    or extended.groupdict() != m.groupdict())
