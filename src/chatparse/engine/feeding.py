"""Feeding text: ``feed`` (with its fast paths for text that is quiet or still forming a delimiter),
``feed_text``, ``feed_bytes`` (incremental UTF-8), and the checks and failure marking around each feed."""

from __future__ import annotations

import codecs

from chatparse.engine.finalize import _Discard, _fault, _Finalize
from chatparse.engine.scan import _STILL_FORMING
from chatparse.engine.state import Event
from chatparse.errors import (
    ChatparseError,
    InputTypeError,
    InvalidUtf8Error,
    UsageError,
)


class _Feeding(_Finalize):
    """``feed``, ``feed_text`` and ``feed_bytes``."""

    def feed(self, text: str) -> list[Event]:
        """Add generated text; returns the events it completes (held-back text emits later)."""
        quiet = self._quiet
        if quiet is not None and type(text) is str and text:
            # The fast path. Armed only while the open region's watched delimiters are known to need one
            # of a few trigger characters, and what is held is at most a run of lead characters (the
            # `\s*` of `\s*<tool_call>`). A chunk without a trigger character then cannot complete or
            # start a delimiter: it (and the held run) goes to the region, except a lead run at its end.
            single, pattern, lead, runs, name, dirty = quiet
            if not ((single in text) if single is not None else (pattern.search(text) is not None)):
                if not self._held_run and (lead is None or not lead(text[-1])):
                    # Nothing is held (armed so: ``_pos`` is the buffer's end), and the chunk goes whole.
                    out = text
                    self._body.append(out)  # (``_unskip`` accounts for it)
                    if self._keep_events:
                        return [{"type": "region_chunk", "field": name, "text": out, "dirty": dirty}]
                    return []
                pos, buf = self._pos, self._buf
                size = len(buf)
                if lead is None or not lead(text[-1]):
                    if pos == size:
                        out = text
                    else:
                        out = buf[pos:] + text
                        self._pos = size
                        self._skip_extra += size - pos
                    if self._tracker is not None:
                        self._tracked_to = size  # (``_unskip`` feeds it the pieces)
                    self._held_run = False
                elif runs:  # hold the chunk's trailing lead run, as the full scan would
                    k = len(text) - 1
                    while k and lead(text[k - 1]):
                        k -= 1
                    if not k or len(text) - k > self._hold_cap:
                        return self._feed_checked(text)
                    if pos == size:
                        out = text[:k]
                    else:
                        out = buf[pos:] + text[:k]
                        self._pos = size
                        self._skip_extra += size - pos
                    if self._tracker is not None:
                        self._tracked_to = size
                    if self._template.context:
                        return self._hold_run_buffered(text, k, out, name, dirty)
                    self._append(text[k:])
                    self._held_run = True
                else:
                    return self._feed_checked(text)
                self._body.append(out)  # (``_unskip`` accounts for it)
                if self._keep_events:
                    return [{"type": "region_chunk", "field": name, "text": out, "dirty": dirty}]
                return []
        elif self._forming and type(text) is str and text:
            # A delimiter is forming at ``_pos``. When the scan answer for the unresolved text is
            # remembered as "still forming there", nothing else can happen (see ``_scan_delimiters``):
            # a third of the feeds of a delimiter-dense stream end here.
            table = self._forming_table
            if table is not None:
                key = self._buf[self._forming_start :] + text
                if len(key) <= self._forming_limit and table.get(key) is _STILL_FORMING:
                    # Appended without ``_append``'s compaction: the text held stays short (at most
                    # ``_memo_text``), and the next ``_append`` compacts what this one did not.
                    self._buf += text
                    self._version += 1
                    self._uncredited += len(text)
                    return []
            try:  # ``_guarded_feed``, inline
                return self._feed_forming(text)
            except ChatparseError as exc:
                self._mark_failed(exc)
                raise
            except Exception as exc:
                raise self._mark_failed(_fault(exc)) from exc
        return self._feed_checked(text)

    def feed_text(self, text: str, field: str) -> str | list[Event]:
        """``feed`` for a wrapper that streams the text of region ``field``: when the chunk is plain text
        of that region (the quiet fast path takes it whole: no trigger character, no lead run at its end,
        no body syntax to track), returns the text the ``region_chunk`` event would carry, without
        building the event; otherwise returns what ``feed(text)`` returns. Either way the parser's state
        changes exactly as ``feed(text)`` changes it, and the text is fed once. The returned text's
        ``dirty`` is ``not template.fields[field].parser.streamable``, as in that event."""
        quiet = self._quiet
        if quiet is None or type(text) is not str or not text:
            return self.feed(text)
        single, pattern, lead, _, name, _ = quiet
        if name != field or self._tracker is not None \
                or ((single in text) if single is not None else (pattern.search(text) is not None)) \
                or (lead is not None and lead(text[-1])):
            return self.feed(text)  # a trigger character or a trailing lead run: the same checks again
        if self._held_run:  # the bookkeeping of ``feed``'s fast path (inline there: the parser's hot path)
            pos, size = self._pos, len(self._buf)
            out = self._buf[pos:] + text
            self._pos = size
            self._skip_extra += size - pos
            self._held_run = False
        else:  # nothing held: ``_pos`` is the buffer's end
            out = text
        self._body.append(out)
        return out

    def _feed_forming(self, text: str) -> list[Event]:
        """A feed while a delimiter is forming at ``_pos`` whose scan answer is not remembered as "still
        forming" (``feed`` took that case)."""
        table = self._forming_table
        known = None
        if table is not None:
            key = self._buf[self._forming_start :] + text
            if len(key) <= self._forming_limit:
                known = table.get(key)
        self._append(text)
        if known is not None:
            # The scan's answer is remembered (a delimiter completed): ``_scan_delimiters`` takes it as
            # is. The forming text starts at a scan floor, so the scan would look it up the same way.
            self._known = (self._version, known)
        if self._uncredited:  # ``_start_feed``, inline
            self._budget.credit(self._uncredited)
            self._uncredited = 0
        self._budget.start_feed(len(text))
        events: list[Event] = [] if self._keep_events else _Discard()
        self._process(events, eos=False)
        self._held_run = False
        self._arm()
        return events

    def _hold_run_buffered(self, text: str, k: int, out: str, name: str, dirty: bool) -> list[Event]:
        """The fast path's trailing-run hold when lookbehinds may read the text before the run: that
        text goes into the buffer first (as consumed), then the run (as held)."""
        self._body.append(out)
        self._unskip()
        self._append(text[k:])
        self._held_run = True
        return [{"type": "region_chunk", "field": name, "text": out, "dirty": dirty}] if self._keep_events else []

    def _feed_checked(self, text: str) -> list[Event]:
        if self._finalized or self._failed is not None:
            self._check_open()
        if type(text) is not str and not isinstance(text, str):
            raise InputTypeError(f"feed() takes str, found {type(text).__name__}; use feed_bytes() for bytes")
        if self._decoder is not None and self._decoder.getstate()[0]:
            raise UsageError("feed() called while feed_bytes() holds an incomplete UTF-8 sequence; feed the rest "
                             "of its bytes first", code="mixed_feed")
        return self._guarded_feed(text)

    def _guarded_feed(self, text: str) -> list[Event]:
        try:
            return self._feed(text)
        except ChatparseError as exc:
            self._mark_failed(exc)
            raise
        except Exception as exc:
            raise self._mark_failed(_fault(exc)) from exc

    def feed_bytes(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """Add generated UTF-8 bytes. A character split across calls is decoded once it is complete;
        invalid UTF-8 raises ``InvalidUtf8Error`` (``finalize`` raises ``TruncatedUtf8Error`` for an
        incomplete trailing sequence)."""
        self._check_open()
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InputTypeError(f"feed_bytes() takes bytes, found {type(data).__name__}; use feed() for str")
        if self._decoder is None:
            self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        pending = len(self._decoder.getstate()[0])
        try:
            text = self._decoder.decode(data, final=False)
        except UnicodeDecodeError as exc:
            offset = self._bytes_in - pending + exc.start
            raise self._mark_failed(InvalidUtf8Error(  # the valid bytes before it in ``data`` are lost too
                f"Expected UTF-8 bytes, found an invalid sequence at byte {offset} of the stream "
                f"({exc.reason}): {bytes(exc.object[exc.start : exc.start + 8])!r}", offset=offset,
            )) from None
        self._bytes_in += len(data)
        if self._decoder.getstate()[0]:
            self._quiet = None  # feed() must refuse text until the split character is complete
            self._forming = False
            return self._guarded_feed(text)
        return self.feed(text)  # complete characters: the same path (and fast path) as feed()

    def _feed(self, text: str) -> list[Event]:
        if self._ended:
            if text:
                self._trailing.append(text)
            return []
        if self._skip_from >= 0:
            self._unskip()
            self._skip_from = -1
            self._quiet = None  # re-armed by ``_arm`` (not if this feed raises: then no text skips again)
        self._start_feed(len(text))
        events: list[Event] = [] if self._keep_events else _Discard()
        if text:
            # Text held back for a delimiter forming (not a mere lead run) makes the quiet check fail:
            # go straight to the full scan.
            quiet_possible = self._pos == len(self._buf) or self._held_run
            self._append(text)
            hold = self._quiet_hold() if quiet_possible else -1
            if hold >= 0:
                self._emit_to(events, hold)
                self._held_run = hold < len(self._buf)
                self._arm(held=True)
                return events
        self._process(events, eos=False)
        self._held_run = False
        self._arm()
        return events
