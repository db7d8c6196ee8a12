"""Which delimiter comes next: the input buffer, and its scan over the delimiters the state watches,
with remembered answers (per state and unresolved text, and literal heads that decide alone)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chatparse.engine.scanner import DelimiterScanner, Hit
from chatparse.engine.tables import _CLOSE, _OPEN, _Tables, _Watch
from chatparse.template.compile import CompiledField

# Drop consumed text once this much of it (and at least half the buffer) is droppable: amortised O(1).
_COMPACT_MIN = 1024
# Scan answers remembered per template, at most (the table starts again when full).
_MEMO_SIZE = 4096
_STILL_FORMING = (None, 0)  # the remembered answer "nothing to commit, hold from the scan position"
# An opener that captures this group (even empty) opens a region that runs to its close or the end of the
# turn, although its field ends with its value (``chatparse.ends_with_value``): Llama's ``<|python_tag|>``
# before a built-in tool call or raw code, where a bracket closing is not the end of the call.
_TO_END = "to_end"


def _remembered(start: int, known: Any) -> tuple[tuple[int, CompiledField | None, Hit] | None, int]:
    """A remembered scan answer (positions relative to where its text starts) placed at ``start``."""
    rel, held = known
    if rel is None:
        return None, start + held
    kind, field, first, end, groups = rel
    return (kind, field, Hit(start + first, start + end, groups, False)), start + held


class _Scan(_Tables):
    """The input buffer and the scan for the next delimiter."""

    def _append(self, text: str) -> None:
        keep_from = self._pos - self._template.context
        if keep_from >= _COMPACT_MIN and keep_from * 2 >= len(self._buf):
            self._buf = self._buf[keep_from:] + text
            self._pos -= keep_from
            self._zw_block = self._zw_block - keep_from if self._zw_block >= keep_from else -1
            self._zw_data = self._zw_data - keep_from if self._zw_data >= keep_from else -1
            self._tracked_to = max(0, self._tracked_to - keep_from)
            for scanner in self._scanners():
                scanner.shift(keep_from)
        else:
            self._buf += text
        self._version += 1

    def _scanners(self) -> Iterable[DelimiterScanner]:
        seen: set[int] = set()
        for watch in self._watch.values():
            for _, _, scanner in watch:
                if id(scanner) not in seen:  # the end-of-turn scanner is watched in every state
                    seen.add(id(scanner))
                    yield scanner

    def _watchlist(self) -> list[_Watch]:
        if self._current is not None and self._current != self._implicit:
            return self._watch[self._current]
        return self._watch[None]

    def _scan(self, eos: bool) -> tuple[tuple[int, CompiledField | None, Hit] | None, int]:
        """The earliest committable delimiter (longest on ties, opens first) and where held text starts."""
        best, hold = self._scan_delimiters(eos)
        if self._tracker is not None and self._opened and self._current != self._implicit:
            field = self._template.fields[self._current]  # type: ignore[index]
            if field.ext.ends_with_value and _TO_END not in self._captures:
                end = self._value_end(best[2].start if best is not None else hold)
                if end >= 0:
                    best = (_CLOSE, field, Hit(end, end, {}, False))
        return best, hold

    def _scan_delimiters(self, eos: bool) -> tuple[tuple[int, CompiledField | None, Hit] | None, int]:
        """``_scan`` without the body syntax. Streaming, its answer depends only on the state, the
        unresolved text and the context before it, so for a short unresolved text it is remembered: in a
        delimiter-dense stream the same headers form again and again (each feed inside one would run
        the delimiter regexes over it again)."""
        buf, pos = self._buf, self._pos
        size = len(buf)
        handed = self._known
        if handed is not None:
            self._known = None
            if handed[0] == self._version and not eos:  # see ``_feed_forming``
                return _remembered(pos, handed[1])
        if eos or size - pos > self._memo_text or self._zw_block >= pos or self._zw_data >= pos:
            return self._scan_scanners(eos)
        state = self._current if self._current != self._implicit else None
        # The floor: where the first delimiter match (or one forming) can start, at the first trigger
        # character or the lead run before it (``size`` when none can). Nothing before it matters to the
        # scan but the template's context.
        floor = self._floors.get(state)
        if floor is None:
            start = pos
        else:
            chars, few, lead = floor
            if few is not None:  # one or two trigger characters: str.find is cheaper than a regex search
                start = size
                for char in few:
                    at = buf.find(char, pos, start)
                    if at >= 0:
                        start = at
            else:
                m = chars.search(buf, pos)
                start = size if m is None else m.start()
            if lead is not None:
                while start > pos and lead(buf[start - 1]):
                    start -= 1
        if start == size:
            return None, size  # no delimiter can match or be forming in the text
        table = self._memo_for(state, start)
        context = min(start, self._contexts[state])
        text = buf[start - context :]
        known = table.get(text)
        if known is None:
            heads = self._heads.get((state, context, context == start))
            if heads is not None:
                found = self._head_answer(heads, buf, start, context)
                if found is not None:
                    return found, size
            best, hold = self._scan_scanners(eos, start)
            if hold >= start and (best is None or best[2].start >= start):  # (always: see the floor above)
                shared = self._shared
                if shared.size >= _MEMO_SIZE:
                    shared.clear()
                shared.size += 1
                if best is None:
                    table[text] = _STILL_FORMING if hold == start else (None, hold - start)
                else:
                    kind, field, hit = best
                    table[text] = ((kind, field, hit.start - start, hit.end - start, hit.groups), hold - start)
                    if hit.start == start < hit.end < size and self._head_decides(best):
                        key = (state, context, context == start)
                        answers, lengths = self._heads.setdefault(key, ({}, []))
                        answers[buf[start - context : hit.end]] = (kind, field, hit.groups)
                        if hit.end - start not in lengths:
                            lengths.append(hit.end - start)
            return best, hold
        return _remembered(start, known)

    @staticmethod
    def _head_answer(heads: tuple[dict[str, Any], list[int]], buf: str, start: int,
                     context: int) -> tuple[int, CompiledField | None, Hit] | None:
        """A remembered literal delimiter at ``start`` that no following text can change."""
        answers, lengths = heads
        size = len(buf)
        for length in lengths:
            if start + length < size:
                found = answers.get(buf[start - context : start + length])
                if found is not None:
                    kind, field, groups = found
                    return kind, field, Hit(start, start + length, groups, False)
        return None

    def _head_decides(self, best: tuple[int, CompiledField | None, Hit]) -> bool:
        """Whether the committed delimiter ``best`` (a literal, at the first place a delimiter can start,
        with text after it) is the answer whatever text follows it. Every longer literal that begins
        with it, and every regex delimiter that could still match at its start with some following text
        (a partial match), could change it; a regex that tests where the text ends gives no answer."""
        kind, field, hit = best
        buf, start, end = self._buf, hit.start, hit.end
        head = buf[start:end]
        for watch_kind, watch_field, scanner in self._watchlist():
            delim = scanner.delim
            if delim.literals is not None:
                if any(len(lit) > len(head) and lit.startswith(head) for lit in delim.literals):
                    return False
            elif watch_kind == kind and watch_field is field:
                return False  # a regex delimiter's own match could differ with other text after it
            elif not delim.info.end_blind or scanner.match(buf, start, end, partial=True) is not None:
                return False
        return True

    def _memo_for(self, state: str | None, start: int) -> dict[str, Any]:
        """The remembered scan answers for texts starting at ``start`` in ``state`` (keyed by the text
        from the template's context before ``start``)."""
        context = self._contexts[state]
        if start > context:  # the whole context fits before ``start`` (the common case): one table a state
            table = self._deep_tables.get(state)
            if table is None:
                table = self._deep_tables[state] = self._memo.setdefault((state, context, False), {})
            return table
        key = (state, start, True)
        table = self._memo.get(key)
        if table is None:
            table = self._memo.setdefault(key, {})
        return table

    def _scan_scanners(self, eos: bool, floor: int = -1) -> tuple[tuple[int, CompiledField | None, Hit] | None, int]:
        """Every watched scanner's answer, combined. ``floor``: no delimiter starts before it and the
        hold-back cap cannot apply, so one delimiter forming there decides (nothing can be committed
        before it); the scanner that last did so is asked first."""
        buf, pos, version = self._buf, self._pos, self._version
        hold = len(buf)
        best: tuple[int, CompiledField | None, Hit] | None = None
        best_key: tuple[int, int, int, str] | None = None
        watch = self._watchlist()
        order = self._scan_orders[id(watch)]
        for index in order if floor >= 0 else range(len(watch)):
            kind, field, scanner = watch[index]
            hit = scanner.find(buf, pos, eos, version, self._zw_block if kind == _OPEN else self._zw_data)
            if hit is None:
                continue
            if hit.pending:
                if hit.start == floor:
                    if order[0] != index:  # ask it first next time (most recently forming first)
                        order.remove(index)
                        order.insert(0, index)
                    return None, floor
                hold = min(hold, hit.start)
                continue
            key = (hit.start, hit.start - hit.end, kind, field.name if field is not None else "")
            if best_key is None or key < best_key:
                best_key, best = key, (kind, field, hit)
        if hold < len(buf) - self._hold_cap:
            # Bounded hold-back: a delimiter still "forming" this far back is given up (see
            # docs/compatibility.md); the text before the window goes to the current region.
            hold = max(pos, len(buf) - self._hold_cap)
        if best is not None and best[2].start >= hold:
            best = None
        return best, hold

    def _value_end(self, limit: int) -> int:
        """Read the open region's body up to ``limit``; where its top-level value ends (-1: not yet)."""
        tracker = self._tracker
        assert tracker is not None
        start = max(self._tracked_to, self._pos)
        if limit <= start or tracker.ended:
            return -1
        consumed = tracker.feed(self._buf[start:limit], stop_at_value_end=True)
        if consumed < 0:
            self._tracked_to = limit
            return -1
        self._tracked_to = start + consumed
        return self._tracked_to
