"""Finding a regex delimiter: anchored searches (at the literal text every match contains), bounded and
windowed searches, and the partial matches that say a delimiter may still be forming at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chatparse.engine.scanner_literals import (
    _MAX_TRIES,
    _NO_GROUPS,
    _SPARSE,
    _TOO_MANY,
    GROWTH_WINDOW,
    Hit,
    _LiteralScanner,
)


class _RegexScanner(_LiteralScanner):
    """Regex search and partial matches (a base of ``DelimiterScanner``)."""

    __slots__ = ()

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
