"""The region state machine: act on the next delimiter found (open, close, end of turn, dropped marker,
next turn), guards that take a marker inside data as data, the span fallback, and emitting region text."""

from __future__ import annotations

import regex

from chatparse.content.args import regex_deadline
from chatparse.engine.closing import _Closing
from chatparse.engine.scanner import DelimiterScanner, Hit
from chatparse.engine.state import Event
from chatparse.engine.tables import _CLOSE, _DROP, _END, _NEXT, _OPEN
from chatparse.errors import (
    RegexBudgetError,
    excerpt,
)
from chatparse.template.compile import CompiledField

_CONTENT_FEEDS = 4  # a content parser's regexes may take this many feed budgets (plus the per-character part)
# ``chatparse.span_fallback``: how many times one parse may go back to a marker the guard took as data (each
# time re-reads the text after it once; a cap keeps a hostile text of many unclosed spans linear).
_MAX_FALLBACKS = 16
# How much text after a marker the body syntax may look at to decide a span close before it (a span's
# follow pattern reads whitespace and a tag: ``\s{0,256}<parameter=``).
_PEEK = 512
# Text that reads as words (letters, digits, spaces): at the end of a text region it is text, even when it
# begins a header written in words (GigaChat's 'user<|role_sep|>': a reply may end with "ask the user").
_WORDS = regex.compile(r"[\w\s]*")


def _words_cut(scanner: DelimiterScanner, buf: str, start: int) -> bool:
    """Whether the delimiter cut at ``start`` (by the end of the text) is only words, which are text
    (see ``ResponseParser._cut_markers``)."""
    delim = scanner.delim
    return _WORDS.fullmatch(buf, start) is not None and (delim.literals is not None or not delim.info.looks_ahead)


class _Regions(_Closing):
    """The region state machine over the delimiters the scan finds."""

    def _process(self, events: list[Event], eos: bool) -> None:
        while True:
            if self._ended:
                self._emit_trailing()
                break
            pos = self._pos
            if pos == len(self._buf) and not eos and self._zw_block < pos and self._zw_data < pos:
                break  # no text left: ``_scan`` would answer "nothing, nothing held" (after a delimiter)
            # (``_scan`` adds what the body syntax says: only a region with a tracker has one)
            best, hold = self._scan(eos) if self._tracker is not None else self._scan_delimiters(eos)
            if best is not None:
                kind, field, hit = best
                if kind != _OPEN:
                    guarded = self._guards_data(events, hit, kind, eos)
                    if guarded is None:
                        break  # a span close before the marker waits for the text after it: hold
                    if guarded:
                        continue
                if kind == _OPEN and field is not None and field.ext.known_tools and not self._names_a_tool(hit):
                    self._emit_to(events, max(hit.end, hit.start + 1))  # not a call: the opener is text
                    continue
                if hit.start > self._pos:
                    self._emit_to(events, hit.start)
                self._pos = hit.end
                if kind == _DROP:
                    self._dropped(events, hit)
                    continue
                if kind in (_END, _NEXT):
                    if not self._in_prefix:  # an end marker in the prompt's tail is the prompt's
                        self._close_current(events, cut=True)
                        self._ended = True
                        if kind == _NEXT:
                            self._pos = hit.start  # the next turn's header starts the trailing text
                    continue
                assert field is not None
                if kind == _OPEN:
                    if hit.start == hit.end:
                        self._zw_block = hit.start
                    self._close_current(events)
                    self._open_explicit(events, field, hit)
                    continue
                had_content = self._opened
                # Close-pattern captures join (and override) the open pattern's in the transform scope.
                self._captures.update({k: v for k, v in hit.groups.items() if v is not None})
                self._close_current(events, close_text=self._buf[hit.start : hit.end])
                if not had_content and hit.start == hit.end:
                    break  # a zero-width close of an empty region would fire forever
                continue
            if eos:
                if self._fallback is not None and self._take_fallback(events):
                    continue
                self._cut_markers(events)
                if self._pos < len(self._buf):
                    self._emit_to(events, len(self._buf))
                self._close_current(events, cut=True, limit=self._limit_cut)
                break
            if hold > self._pos:
                self._emit_to(events, hold)
            break

    def _names_a_tool(self, hit: Hit) -> bool:
        """For a ``known_tools`` field: whether the opener ``hit`` may open, i.e. it captured no ``name`` or
        the request's tools have a tool of that name."""
        name = hit.groups.get("name")
        return name is None or name.strip() in self._tool_params

    def _guards_data(self, events: list[Event], hit: Hit, kind: int, eos: bool) -> bool | None:
        """For a guarded region: True (and the marker taken as body text) when ``hit`` starts inside a
        string or span of the body, where a marker is data; None when a span close right before it waits
        for more text after the marker to tell (the caller holds the marker)."""
        tracker = self._tracker
        if tracker is None or not self._opened or self._current == self._implicit:
            return False
        ext = self._template.fields[self._current].ext  # type: ignore[index]
        if not ext.guard:
            return False
        self._emit_to(events, hit.start)
        # The marker and the text after it decide a span close that waits for what follows it.
        peek = self._buf[hit.start : hit.start + _PEEK]
        inside = tracker.in_data_before(peek, eos or len(peek) == _PEEK)
        if not inside:
            return inside
        if ext.span_fallback:
            span = tracker.open_span
            if span >= 0 and (self._fallback is None or self._fallback[0] != span):
                marker = self._buf[hit.start : hit.end]
                self._fallback = (span, len(self._body), kind, dict(hit.groups), marker)
        if hit.end == hit.start:
            self._zw_data = hit.start  # a lookahead close inside a string: not here (the scan moves on)
        self._emit_to(events, hit.end)
        return True

    def _take_fallback(self, events: list[Event]) -> bool:
        """At the end of the text, with ``chatparse.span_fallback``: when the span in which the guard took
        a marker as data never closed (the model dropped the value's close), the marker counts after all:
        the region ends there as the marker says, and the text after it is read again from that point.
        True when it did (the caller scans the new buffer); False when the span closed after all."""
        fallback, self._fallback = self._fallback, None
        tracker = self._tracker
        if fallback is None or tracker is None or self._fallbacks_used >= _MAX_FALLBACKS:
            return False
        buf = self._buf
        if self._tracked_to < len(buf):  # the unresolved tail: does the span close in it?
            tracker.feed(buf[max(self._tracked_to, self._pos) :])
            self._tracked_to = len(buf)
        span, index, kind, groups, marker = fallback
        if tracker.open_span != span:
            return False
        if self._limit_cut:
            return False  # the token limit cut the value: it was still being written, the markers are data
        rest = "".join(self._body[index:]) + buf[self._pos :]
        if kind == _CLOSE and not self._stopped:
            # A call's close inside a value that never closed: a dropped value close, or a value quoting a
            # call that the end of the text cut. Only the end of the turn written after it tells them apart
            # (or the engine's finish reason saying the model stopped).
            after = rest[len(marker) :]
            ext = self._template.ext
            if not any(literal in after for literal in (*ext.end, *ext.next_turn)):
                return False
        del self._body[index:]
        self._fallbacks_used += 1
        if kind == _CLOSE:
            self._captures.update({k: v for k, v in groups.items() if v is not None})
            self._close_current(events, close_text=marker)
            rest = rest[len(marker) :]
        else:  # the end of the turn (a next turn's header starts the trailing text)
            self._close_current(events, cut=True)
            self._ended = True
            if kind == _END:
                rest = rest[len(marker) :]
        # A new buffer: the scanners' positions and the remembered answers of the old one no longer apply.
        self._buf, self._pos, self._tracked_to = rest, 0, 0
        self._zw_block = self._zw_data = -1
        self._version += 1
        self._known = None
        self._attach_template()  # fresh scanners for the new buffer
        return True

    def _emit_to(self, events: list[Event], end: int) -> None:
        """Send the buffer's text up to ``end`` to the open region (the body syntax follows it)."""
        if end <= self._pos:
            return
        tracker = self._tracker
        if tracker is not None and end > self._tracked_to:
            tracker.feed(self._buf[max(self._tracked_to, self._pos) : end])
            self._tracked_to = end
        self._accumulate(events, self._buf[self._pos : end])
        self._pos = end

    def _emit_trailing(self) -> None:
        if self._pos < len(self._buf):
            self._trailing.append(self._buf[self._pos :])
            self._pos = len(self._buf)

    def _cut_markers(self, events: list[Event]) -> None:
        """At the end of the text, for templates with chatparse's extensions: a delimiter cut in half by
        the token limit is not text. A cut tool-call opener (``<tool_ca``) is reported as a truncated
        call; any other cut marker (``</thi``, ``<|im_e``) is dropped. A lone first character is text, and
        so is, in a text region, a cut that is only words (``user`` of ``user<|role_sep|>``): the marker has
        not reached its special token, and the words are more likely the model's own. A regex delimiter
        that looks ahead may be a whole word waiting only for what follows it (Phi-4's ``functools``, a
        call only when ``[`` follows): its cut stays a cut. An opener of a ``known_tools`` field that is not
        tag-shaped (a code fence, a brace: prose ends with them) is text."""
        buf, pos = self._buf, self._pos
        if pos >= len(buf) or not self._template.chatparse_only:
            return
        cut: tuple[int, int, CompiledField | None] | None = None
        # In text (content, reasoning) one character ('<') says too little: text may end with it. In a
        # structured region (a call's body) it is a marker cut off.
        current = self._template.fields.get(self._current) if self._current is not None else None
        least = 2 if current is None or current.parser.streamable else 1
        for kind, field, scanner in self._watchlist():
            hit = scanner.find(buf, pos, False, self._version, -1)
            if hit is not None and hit.pending and hit.start >= pos and len(buf[hit.start :].strip()) >= least \
                    and (least == 1 or not _words_cut(scanner, buf, hit.start)) \
                    and not (kind == _OPEN and field is not None and field.ext.known_tools and buf[hit.start] != "<"):
                if cut is None or hit.start < cut[0]:
                    cut = (hit.start, kind, field)
        if cut is None:
            return
        start, kind, field = cut
        self._emit_to(events, start)
        raw = buf[start:]
        self._pos = len(buf)
        if kind == _OPEN and field is not None and field.ext.truncation:
            self._close_current(events)
            events.append({"type": "region_open", "field": field.name})
            self._report(events, field.name, "truncated", raw, f"the text ends inside the opener of a "
                         f"'{field.name}' region ({excerpt(raw)})")

    def _trailing_text(self) -> str:
        """The text after the end of the turn, or "" when it is only whitespace and tokens that may follow
        the end (``chatparse.discard_after_end`` and the end markers themselves)."""
        text = "".join(self._trailing)
        if not text:
            return ""
        rest = text
        for token in (*self._template.ext.discard_after_end, *self._template.ext.end):
            rest = rest.replace(token, "")
        return "" if not rest.strip() else text

    def _accumulate(self, events: list[Event], text: str) -> None:
        name = self._current
        if name is None:  # no region open and no implicit field: the text belongs nowhere
            if self._unparsed is not None and not self._in_prefix:
                self._unparsed.append(text)
            return
        field = self._template.fields[name]
        pending = self._pending
        if pending is not None:  # the output's first text, undecided (see ``_start_lone``): held
            self._pending_size += len(text)
            if not self._lone_words and not text.isspace():
                self._lone_words = True
            if self._pending_size > self._limits.lone_hold:
                self._pending = None  # held long enough: it goes out as content (a lone close still moves it)
                if self._keep_events:
                    events.extend(pending)
            else:
                events = pending
        if not self._opened:
            events.append({"type": "region_open", "field": name})
            self._opened = True
        self._body.append(text)
        if self._keep_events:
            events.append({"type": "region_chunk", "field": name, "text": text, "dirty": not field.parser.streamable})

    def _open_explicit(self, events: list[Event], field: CompiledField, hit: Hit) -> None:
        self._current = field.name
        self._captures = {k: v for k, v in hit.groups.items() if v is not None}
        self._body = []
        self._opened = True
        self._open_text = self._buf[hit.start : hit.end]
        structure = field.ext.structure
        self._tracker = structure.tracker() if structure is not None else None
        self._tracked_to = hit.end
        events.append({"type": "region_open", "field": field.name})

    def _close_current(self, events: list[Event], *, cut: bool = False, close_text: str = "",
                       limit: bool = False) -> None:
        """Close the open region. ``cut``: the text (or the turn) ended instead of the region's close;
        ``limit``: the text ended there because the token limit cut it."""
        if self._lone is not None:
            self._settle(events)
        name = self._current
        lone = self._lone_field
        if lone is not None and name is not None and name != self._implicit and not cut:
            # A reasoning block closed implicitly (zero-width: a call opens inside it) may go on after the
            # call: the text after the call's region is undecided again, up to a lone close.
            if name == lone.name:
                self._resume = not close_text
            elif self._resume:
                self._lone, self._pending, self._pending_size, self._lone_words = lone, [], 0, False
        if name is None or not self._opened:
            self._reset_to_implicit()
            return
        field = self._template.fields[name]
        body = "".join(self._body)
        if not field.content_args:  # no regex the template gave the parser: nothing to budget
            self._close_region(events, name, field, body, cut, close_text, limit)
            return
        # The content parser's regexes from content_args run under a budget of their own.
        limits = self._limits
        try:
            with regex_deadline(limits.feed_budget * _CONTENT_FEEDS + len(body) * limits.per_char):
                self._close_region(events, name, field, body, cut, close_text, limit)
        except RegexBudgetError as exc:
            if exc.field is None:
                exc.field = name
            raise
