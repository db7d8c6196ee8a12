"""Hold-back and the quiet fast path: text that may still be a forming delimiter is held; text that cannot
be goes straight to the open region's body (and is accounted for when the slow path resumes)."""

from __future__ import annotations

from chatparse.engine.scan import _Scan


class _HoldBack(_Scan):
    """Holding back a forming delimiter; the quiet fast path armed and disarmed."""

    def _start_feed(self, size: int) -> None:
        """The regex budget of a feed of ``size`` characters (and of those fed without a budget)."""
        if self._uncredited:
            self._budget.credit(self._uncredited)
            self._uncredited = 0
        self._budget.start_feed(size)

    def _arm(self, held: bool = False) -> None:
        """Arm the fast path when a region is open and nothing is held (``held``: what is held is a lead
        run ``_quiet_hold`` found); else disarm it."""
        size, pos = len(self._buf), self._pos
        if self._finalized or self._ended or (self._decoder is not None and self._decoder.getstate()[0]):
            self._quiet = None
            self._forming = False
            self._forming_table = None
            return
        name = self._current
        # Skipped text goes in at the buffer's end: a zero-width open that fired there stays blocked
        # only if the next text is appended there, so that case takes the full path.
        if self._opened and (held or pos == size) and size != self._zw_block and size != self._zw_data \
                and self._pending is None:
            self._quiet = self._quiet_table.get(None if name == self._implicit else name)
            self._forming = False
            self._skip_from = len(self._body)  # (every caller accounted for what the fast path took)
            return
        self._quiet = None
        # Text is held for a delimiter forming (or a lead run the full scan holds).
        self._forming = size > pos
        if size > pos and size - pos <= self._memo_text and pos > self._zw_block and pos > self._zw_data:
            state = None if name == self._implicit else name
            self._forming_table = self._memo_for(state, pos)
            self._forming_start = start = pos - min(pos, self._contexts[state])
            self._forming_limit = self._memo_text + pos - start  # the longest key remembered
        else:
            self._forming_table = None

    def _unskip(self) -> None:
        """Account for the text the fast path emitted (the region's pieces from ``_skip_from`` on): as if
        it had been appended and consumed. With no lookbehind in the template nothing reads it again, so
        the buffer need not hold it. Each piece is accounted for once: linear in the text."""
        body, mark = self._body, self._skip_from
        if len(body) <= mark:
            return
        joined = "".join(body[mark:])
        self._skip_from = len(body)
        new = len(joined) - self._skip_extra  # the text fed (the rest was held, and credited, before)
        self._skip_extra = 0
        self._budget.credit(new)
        if self._tracker is not None:  # the body syntax reads the fast path's text in one go
            self._tracker.feed(joined)
        context = self._template.context
        if context:  # nothing is held here (the fast path buffers before it holds a run)
            self._append(joined[-min(context, new) :] if new > 0 else "")  # lookbehinds read no further
            self._pos = len(self._buf)
            if self._tracker is not None:  # the tracker read this text already
                self._tracked_to = self._pos

    def _quiet_hold(self) -> int:
        r"""Fast path: when no watched delimiter's trigger character occurs in the unresolved text, no
        delimiter can match there; only a lead run (``\s*`` of ``\s*<tool_call>``) at the very end can
        be forming. Returns where held text starts, or -1 when the full scan is needed."""
        state = self._current if self._current is not None and self._current != self._implicit else None
        trigger = self._triggers[state]
        buf, pos = self._buf, self._pos
        if trigger is None or trigger.chars.search(buf, pos) is not None:
            return -1
        hold = len(buf)
        for delim in trigger.leads:
            test = delim.info.lead
            assert test is not None  # Trigger.leads holds only delimiters with a lead run
            start = len(buf)
            while start > pos and test(buf[start - 1]):
                start -= 1
                if len(buf) - start > self._hold_cap:
                    return -1  # the hold-back cap applies: let the full scan release it
            if start < len(buf):
                if not delim.info.lead_forming:  # check the pattern really is forming there
                    m = self._budget.run(delim.pattern.match, delim.field, delim.key, buf, start, partial=True)
                    if m is None or not m.partial:
                        return -1  # let the full scan decide
                hold = min(hold, start)
        return hold
