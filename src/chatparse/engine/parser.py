"""The streaming response parser: text in, region events out, one message at the end.

Sans-I/O. State is one open region (``_current``, its captures and body) plus the unresolved tail of
the input (``_buf`` from ``_pos``). Consumed text is dropped between feeds, so a feed costs time in
proportion to its own chunk and the held-back tail, never to what came before.
"""

from __future__ import annotations

import codecs
import copy
from collections.abc import Callable, Iterable
from typing import Any, Literal

import regex

from chatparse.engine.limits import DEFAULT_LIMITS, Limits, RegexBudget
from chatparse.engine.scanner import DelimiterScanner, Hit
from chatparse.engine.tool_typing import coerce_tool_calls
from chatparse.errors import (
    ChatparseError,
    ContentNestingError,
    ContentParseError,
    EngineFault,
    InvalidUtf8Error,
    MissingFieldError,
    OutputError,
    PrefixRequiredError,
    TruncatedUtf8Error,
    UsageError,
    region_failure,
)
from chatparse.template.compile import CompiledField, CompiledTemplate, load_template
from chatparse.transform import apply_transform

Event = dict[str, Any]
OnMalformed = Literal["raise", "keep"]
_OPEN, _CLOSE = 0, 1
# Drop consumed text once this much of it (and at least half the buffer) is droppable: amortised O(1).
_COMPACT_MIN = 1024
# The fast path joins its skipped chunks after this many (keeping the template's context of them).
_SKIP_COLLAPSE = 64
_SCALARS = frozenset({str, int, float, bool, type(None)})  # default values shared, not copied
# (single trigger character or None, trigger pattern, lead-run test or None, the fast path may hold a
# trailing lead run itself, field, dirty)
_QuietEntry = tuple[str | None, Any, Callable[[str], bool] | None, bool, str, bool]


class InputTypeError(UsageError, TypeError):
    """``feed`` was given something other than ``str``."""

    code = "bad_input_type"


class ResponseParser:
    """Parse one generation as it streams. See ``parse_response`` for the one-shot form.

    ``prefix`` (required) is the prompt sent to the model; it is cut after the template's last start
    anchor and run through the parser first, so regions the chat template pre-wrote (an opened
    ``<think>``) are known. Its events are in ``initial_events``.
    """

    def __init__(
        self,
        template: Any,
        prefix: str | None = None,
        *,
        tools: Iterable[Any] | None = None,
        on_malformed: OnMalformed = "raise",
        limits: Limits | None = None,
    ) -> None:
        self._template: CompiledTemplate = load_template(template)
        if limits is None:
            limits = DEFAULT_LIMITS
        elif not isinstance(limits, Limits):
            raise UsageError(f"limits must be a chatparse Limits, found {type(limits).__name__}", code="bad_option")
        self._limits = limits
        self._budget = RegexBudget(limits)
        # One-shot parsing turns this off: nobody reads the events, and chunk events would keep a second
        # reference to every region's text alive until the parse ends.
        self._keep_events = True
        self._hold_cap = limits.max_holdback + _longest_literal(self._template)
        self._decoder: codecs.IncrementalDecoder | None = None
        self._bytes_in = 0
        if prefix is None:
            raise PrefixRequiredError(
                "`ResponseParser`/`parse_response` requires `prefix` (the chat prompt sent to the model before "
                "generation), because chat templates often pre-write part of the assistant message (e.g. an "
                "opening `<think>` tag) that the parser must see to parse the output correctly. If the "
                'generation already contains the complete message, pass `prefix=""` to opt out explicitly.'
            )
        if on_malformed not in ("raise", "keep"):
            raise UsageError(f"on_malformed must be 'raise' or 'keep', found {on_malformed!r}", code="bad_option")
        self._on_malformed = on_malformed
        self._tool_params = _tool_properties(tools) if tools else {}
        self._buf = ""
        self._pos = 0
        self._version = 0
        self._zw_block = -1  # buffer position where a zero-width open already fired
        defaults = self._template.defaults
        self._output: dict[str, Any] = dict(defaults) if all(
            type(v) in _SCALARS for v in defaults.values()) else copy.deepcopy(dict(defaults))
        # Blocks of `join` fields, joined once at finalize (joining per block would be quadratic).
        self._join_parts: dict[str, tuple[str, list[str]]] = {}
        self._implicit = self._template.implicit
        self._current: str | None = self._implicit
        self._captures: dict[str, Any] = {}
        self._body: list[str] = []
        self._opened = False
        self._finalized = False
        self._watch = self._build_watchlists()
        self._triggers = self._template.triggers
        # The quiet fast path (see ``feed``): armed with the open region's entry when nothing is held.
        tables = self._template.engine_tables
        if "quiet" not in tables:
            tables["quiet"] = self._build_quiet_table()
        self._quiet_table: dict[str | None, _QuietEntry | None] = tables["quiet"]
        self._quiet: _QuietEntry | None = None
        self._skipped: list[str] = []  # text the fast path emitted without appending it to ``_buf``
        self._fast_chars = 0  # characters the fast path took (their regex budget is credited later)
        self._held_run = False  # what is held is a lead run the quiet check found (not a delimiter forming)
        self.initial_events: list[Event] = []
        if not isinstance(prefix, str):
            raise InputTypeError(f"prefix must be a str, found {type(prefix).__name__}")
        if prefix:
            try:
                self._consume_prefix(prefix)
            except ChatparseError:
                raise
            except Exception as exc:
                raise _fault(exc) from exc

    # --- public API -----------------------------------------------------------------------------

    @property
    def template(self) -> CompiledTemplate:
        return self._template

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def current_region(self) -> str | None:
        """The field of the region open now (None when none is open)."""
        return self._current if self._opened else None

    @property
    def current_captures(self) -> dict[str, Any]:
        """Named groups captured by the open delimiter of the region open now (e.g. a tool name)."""
        return dict(self._captures)

    @property
    def held(self) -> int:
        """Characters received but neither emitted nor consumed yet (a delimiter may still be forming).
        At most ``limits.max_holdback`` plus the template's longest literal delimiter after any feed."""
        return len(self._buf) - self._pos

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
                pos, buf = self._pos, self._buf
                size = len(buf)
                if lead is None or not lead(text[-1]):
                    out = text if pos == size else buf[pos:] + text
                    self._pos = size
                elif runs:  # hold the chunk's trailing lead run, as the full scan would
                    k = len(text) - 1
                    while k and lead(text[k - 1]):
                        k -= 1
                    if not k or len(text) - k > self._hold_cap:
                        return self._feed_checked(text)
                    out = text[:k] if pos == size else buf[pos:] + text[:k]
                    self._pos = size
                    if self._template.context:
                        return self._hold_run_buffered(text, k, out, name, dirty)
                    self._append(text[k:])
                    self._held_run = True
                    text = text[:k]
                else:
                    return self._feed_checked(text)
                self._fast_chars += len(text)
                self._body.append(out)
                skipped = self._skipped
                skipped.append(text)
                if len(skipped) >= _SKIP_COLLAPSE:
                    self._collapse_skipped()
                if self._keep_events:
                    return [{"type": "region_chunk", "field": name, "text": out, "dirty": dirty}]
                return []
        return self._feed_checked(text)

    def _hold_run_buffered(self, text: str, k: int, out: str, name: str, dirty: bool) -> list[Event]:
        """The fast path's trailing-run hold when lookbehinds may read the text before the run: that
        text goes into the buffer first (as consumed), then the run (as held)."""
        self._skipped.append(text[:k])
        self._fast_chars += k
        self._unskip()
        self._append(text[k:])
        self._held_run = True
        self._body.append(out)
        return [{"type": "region_chunk", "field": name, "text": out, "dirty": dirty}] if self._keep_events else []

    def _feed_checked(self, text: str) -> list[Event]:
        if self._finalized:
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
        except ChatparseError:
            raise
        except Exception as exc:
            raise _fault(exc) from exc

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
            raise InvalidUtf8Error(
                f"Expected UTF-8 bytes, found an invalid sequence at byte {offset} of the stream "
                f"({exc.reason}): {bytes(exc.object[exc.start : exc.start + 8])!r}", offset=offset,
            ) from None
        self._bytes_in += len(data)
        if self._decoder.getstate()[0]:
            self._quiet = None  # feed() must refuse text until the split character is complete
            return self._guarded_feed(text)
        return self.feed(text)  # complete characters: the same path (and fast path) as feed()

    def _feed(self, text: str) -> list[Event]:
        if self._fast_chars:
            self._unskip()
        self._budget.start_feed(len(text))
        events: list[Event] = [] if self._keep_events else _Discard()
        if text:
            # Text held back for a delimiter forming (not a mere lead run) makes the quiet check fail:
            # go straight to the full scan.
            quiet_possible = self._pos == len(self._buf) or self._held_run
            self._append(text)
            hold = self._quiet_hold() if quiet_possible else -1
            if hold >= 0:
                if hold > self._pos:
                    self._accumulate(events, self._buf[self._pos : hold])
                    self._pos = hold
                self._held_run = hold < len(self._buf)
                self._arm(held=True)
                return events
        self._process(events, eos=False)
        self._held_run = False
        self._arm()
        return events

    def _arm(self, held: bool = False) -> None:
        """Arm the fast path when a region is open and nothing is held (``held``: what is held is a lead
        run ``_quiet_hold`` found); else disarm it."""
        size = len(self._buf)
        # Skipped text goes in at the buffer's end: a zero-width open that fired there stays blocked
        # only if the next text is appended there, so that case takes the full path.
        if (self._opened and (held or self._pos == size) and self._zw_block != size and not self._finalized
                and (self._decoder is None or not self._decoder.getstate()[0])):
            name = self._current
            self._quiet = self._quiet_table.get(None if name == self._implicit else name)
        else:
            self._quiet = None

    def _collapse_skipped(self) -> None:
        """Keep only the template's context of the skipped text (lookbehinds read no further)."""
        context = self._template.context
        keep = "".join(self._skipped)[-context:] if context else ""
        self._skipped[:] = [keep] if keep else []

    def _unskip(self) -> None:
        """Account for the text the fast path emitted: as if it had been appended and consumed. With no
        lookbehind in the template nothing reads it again, so the buffer need not hold it."""
        self._budget.credit(self._fast_chars)
        self._fast_chars = 0
        text = "".join(self._skipped)
        self._skipped.clear()
        if self._template.context:  # nothing is held here (the fast path buffers before it holds a run)
            self._append(text)
            self._pos = len(self._buf)

    def _build_quiet_table(self) -> dict[str | None, _QuietEntry | None]:
        fields = self._template.fields
        table: dict[str | None, _QuietEntry | None] = {}
        for state, trigger in self._triggers.items():
            name = self._implicit if state is None else state
            if trigger is None or name is None:
                table[state] = None
                continue
            charset = trigger.charset
            single = next(iter(charset)) if len(charset) == 1 else None
            tests = [d.info.lead for d in trigger.leads if d.info.lead is not None]
            lead = _union_test(tests)
            # The fast path holds a chunk's trailing run itself only where that is exactly what the
            # full scan would hold: one lead class, always forming.
            runs = all(d.info.lead_forming for d in trigger.leads) and len({getattr(t, "__self__", t) for t in tests}) == 1
            table[state] = (single, trigger.chars, lead, runs, name, not fields[name].parser.streamable)
        return table

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

    def finalize(self) -> tuple[dict[str, Any], list[Event]]:
        """End the stream: flush held text, close open regions, return ``(message, events)``."""
        self._check_open()
        events: list[Event] = [] if self._keep_events else _Discard()
        if self._decoder is not None:
            pending = self._decoder.getstate()[0]
            if pending:
                self._finalized = True
                raise TruncatedUtf8Error(
                    f"Expected the byte stream to end on a complete UTF-8 character, found {len(pending)} "
                    f"trailing byte(s) of an incomplete one: {pending!r}", offset=self._bytes_in - len(pending),
                )
        self._quiet = None
        try:
            if self._fast_chars:
                self._unskip()
        except Exception as exc:
            raise _fault(exc) from exc
        self._budget.start_feed(len(self._buf) - self._pos)
        try:
            self._process(events, eos=True)
        except ChatparseError:
            raise
        except Exception as exc:
            raise _fault(exc) from exc
        self._finalized = True
        missing = [n for n, f in self._template.fields.items() if not f.optional and n not in self._output]
        if missing:
            raise MissingFieldError(
                f"Required response_template fields missing from parsed output: {missing}. The output has no "
                "region for them; mark them optional or check the delimiters.",
                field=missing[0],
            )
        for name, (separator, parts) in self._join_parts.items():
            self._output[name] = separator.join(parts)
        defaults = self._template.defaults
        self._output = {k: v for k, v in self._output.items() if k in defaults or not _is_empty(v)}
        return self._output, events

    # --- input buffer ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._finalized:
            raise UsageError("ResponseParser already finalized; create a new parser for the next generation",
                             code="parser_finalized")

    def _consume_prefix(self, prefix: str) -> None:
        anchor = self._template.start_anchor
        self._budget.start_feed(len(prefix))
        last_end = self._budget.run(_last_match_end, anchor.field, anchor.key, anchor.pattern, prefix)
        tail = prefix if last_end is None else prefix[last_end:]
        if tail:
            self._append(tail)
            self._process(self.initial_events, eos=False)
            self._arm()

    def _append(self, text: str) -> None:
        keep_from = self._pos - self._template.context
        if keep_from >= _COMPACT_MIN and keep_from * 2 >= len(self._buf):
            self._buf = self._buf[keep_from:] + text
            self._pos -= keep_from
            self._zw_block = self._zw_block - keep_from if self._zw_block >= keep_from else -1
            for scanner in self._scanners():
                scanner.shift(keep_from)
        else:
            self._buf += text
        self._version += 1

    def _scanners(self) -> Iterable[DelimiterScanner]:
        for watch in self._watch.values():
            for _, _, scanner in watch:
                yield scanner

    def _build_watchlists(self) -> dict[str | None, list[tuple[int, CompiledField, DelimiterScanner]]]:
        """What to look for in each state: in an explicit region its close; otherwise every open and
        the implicit field's close."""
        fields = self._template.fields
        scanners = {}
        for f in fields.values():
            for kind, delim in ((_OPEN, f.open), (_CLOSE, f.close)):
                if delim is not None:
                    scanners[(kind, f.name)] = DelimiterScanner(delim, self._budget)
        idle = [(_OPEN, f, scanners[(_OPEN, f.name)]) for f in fields.values() if f.open is not None]
        if self._implicit is not None and fields[self._implicit].close is not None:
            idle.append((_CLOSE, fields[self._implicit], scanners[(_CLOSE, self._implicit)]))
        watch: dict[str | None, list[tuple[int, CompiledField, DelimiterScanner]]] = {None: idle}
        for f in fields.values():
            if f.open is not None:
                watch[f.name] = [(_CLOSE, f, scanners[(_CLOSE, f.name)])] if f.close is not None else []
        return watch

    # --- the state machine -----------------------------------------------------------------------

    def _watchlist(self) -> list[tuple[int, CompiledField, DelimiterScanner]]:
        if self._current is not None and self._current != self._implicit:
            return self._watch[self._current]
        return self._watch[None]

    def _scan(self, eos: bool) -> tuple[tuple[int, CompiledField, Hit] | None, int]:
        """The earliest committable delimiter (longest on ties, opens first) and where held text starts."""
        buf, pos, version = self._buf, self._pos, self._version
        hold = len(buf)
        best: tuple[int, CompiledField, Hit] | None = None
        best_key: tuple[int, int, int, str] | None = None
        for kind, field, scanner in self._watchlist():
            hit = scanner.find(buf, pos, eos, version, self._zw_block if kind == _OPEN else -1)
            if hit is None:
                continue
            if hit.pending:
                hold = min(hold, hit.start)
                continue
            key = (hit.start, hit.start - hit.end, kind, field.name)
            if best_key is None or key < best_key:
                best_key, best = key, (kind, field, hit)
        if hold < len(buf) - self._hold_cap:
            # Bounded hold-back: a delimiter still "forming" this far back is given up (see
            # docs/compatibility.md); the text before the window goes to the current region.
            hold = max(pos, len(buf) - self._hold_cap)
        if best is not None and best[2].start >= hold:
            best = None
        return best, hold

    def _process(self, events: list[Event], eos: bool) -> None:
        while True:
            best, hold = self._scan(eos)
            if best is not None:
                kind, field, hit = best
                if hit.start > self._pos:
                    self._accumulate(events, self._buf[self._pos : hit.start])
                self._pos = hit.end
                if kind == _OPEN:
                    if hit.start == hit.end:
                        self._zw_block = hit.start
                    self._close_current(events)
                    self._open_explicit(events, field, hit)
                    continue
                had_content = self._opened
                # Close-pattern captures join (and override) the open pattern's in the transform scope.
                self._captures.update({k: v for k, v in hit.groups.items() if v is not None})
                self._close_current(events)
                if not had_content and hit.start == hit.end:
                    break  # a zero-width close of an empty region would fire forever
                continue
            if eos:
                if self._pos < len(self._buf):
                    self._accumulate(events, self._buf[self._pos :])
                    self._pos = len(self._buf)
                self._close_current(events)
                break
            if hold > self._pos:
                self._accumulate(events, self._buf[self._pos : hold])
                self._pos = hold
            break

    def _accumulate(self, events: list[Event], text: str) -> None:
        name = self._current
        if name is None:
            return  # no region open and no implicit field: the text belongs nowhere
        field = self._template.fields[name]
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
        events.append({"type": "region_open", "field": field.name})

    def _close_current(self, events: list[Event]) -> None:
        name = self._current
        if name is None or not self._opened:
            self._reset_to_implicit()
            return
        field = self._template.fields[name]
        body = "".join(self._body)
        try:
            value = self._region_value(field, body)
        except OutputError as exc:
            if self._on_malformed == "raise":
                raise
            self._keep_malformed(events, field, body, exc)
            return
        events.append({"type": "region_close", "field": name, "value": value})
        self._reset_to_implicit()

    def _region_value(self, field: CompiledField, body: str) -> Any:
        value = process_region(field, body, self._captures)
        if self._tool_params:
            value = coerce_tool_calls(value, self._tool_params)
        name = field.name
        if field.join is not None:
            if not isinstance(value, str):
                raise ContentParseError(
                    f"Field '{name}': 'join' requires each match to parse to a string, got "
                    f"{type(value).__name__}. Use a text parser or drop 'join'.",
                    code="join_not_string", field=name,
                )
            self._join(name, field.join, value)
        elif field.repeats:
            self._output.setdefault(name, []).append(value)
        else:
            self._output[name] = value
        return value

    def _join(self, name: str, separator: str, value: str) -> None:
        if name in self._join_parts:
            self._join_parts[name][1].append(value)
            return
        previous = self._output.get(name)
        if previous is not None and not isinstance(previous, str):
            self._output[name] = previous + separator + value  # fails as the reference does
        self._join_parts[name] = (separator, [value] if previous is None else [previous, value])
        self._output[name] = value if previous is None else previous

    def _keep_malformed(self, events: list[Event], field: CompiledField, body: str, exc: ChatparseError) -> None:
        entry = {"field": field.name, "code": exc.code, "raw": body}
        self._output.setdefault("malformed", []).append(entry)
        events.append({"type": "region_malformed", "field": field.name, "code": exc.code, "error": str(exc),
                       "raw": body})
        self._reset_to_implicit()

    def _reset_to_implicit(self) -> None:
        self._current = self._implicit
        self._captures = {}
        self._body = []
        self._opened = False


class _Discard(list[Event]):
    """An event list that keeps nothing (one-shot parsing returns only the message)."""

    def append(self, item: Event) -> None:
        pass


def process_region(field: CompiledField, body: str, captures: dict[str, Any]) -> Any:
    """A region's value: its content parser over ``body``, then the field's transform."""
    value = run_content_parser(field, body)
    if field.transform is None:
        return value
    if not field.transform_each:
        return apply_transform(field.transform, {**captures, "content": value}, field=field.name)
    if not isinstance(value, list):
        raise ContentParseError(
            f"Field '{field.name}': transform_each requires the parsed content to be a list, got "
            f"{type(value).__name__}. Use a parser that yields a list (json, python-call-list) or drop "
            "transform_each.", code="transform_each_not_list", field=field.name,
        )
    out = []
    for item in value:
        if not isinstance(item, dict):
            raise ContentParseError(
                f"Field '{field.name}': transform_each requires each list element to be a dict, got "
                f"{type(item).__name__}.", code="transform_each_not_dict", field=field.name,
            )
        out.append(apply_transform(field.transform, {**captures, **item}, field=field.name))
    return out


def run_content_parser(field: CompiledField, body: str) -> Any:
    """Run the field's parser; any failure becomes a ``ContentParseError`` naming field, parser, excerpt."""
    parser = field.parser
    try:
        return parser.parse(body, field.content_args)
    except ChatparseError:
        raise
    except RecursionError as exc:
        raise ContentNestingError(region_failure(field.name, parser.name, exc, body), field=field.name,
                                  parser=parser.name) from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, OverflowError, regex.error,
            TimeoutError) as exc:
        raise ContentParseError(region_failure(field.name, parser.name, exc, body), field=field.name,
                                parser=parser.name) from None


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "…"


def _last_match_end(pattern: Any, text: str, *, timeout: float) -> int | None:
    last_end = None
    for m in pattern.finditer(text, timeout=timeout):
        last_end = m.end()
    return last_end


def _longest_literal(template: CompiledTemplate) -> int:
    """The longest literal delimiter the template gives as literals (scanned-as-literal regexes excluded,
    so the hold-back cap is the documented one)."""
    delims = [d for f in template.fields.values() for d in (f.open, f.close)
              if d is not None and not d.key.endswith("pattern")]
    return max((d.longest_literal for d in delims), default=0)


def _fault(exc: Exception) -> ChatparseError:
    """An unexpected exception inside the engine, as a named error (the original is chained)."""
    if isinstance(exc, RecursionError):
        return ContentNestingError(f"Input nested too deeply for the engine: {_short(exc)}")
    return EngineFault(f"Unexpected {type(exc).__name__} inside the parser: {_short(exc)}",
                       exception=type(exc).__name__)


def _tool_properties(tools: Iterable[Any]) -> dict[str, dict[str, Any]]:
    from chatparse.tools.schema import tool_parameter_properties  # pydantic-backed; loaded only when used

    return tool_parameter_properties(tools)


def _union_test(tests: list[Callable[[str], bool]]) -> Callable[[str], bool] | None:
    """One membership test for several character classes (one set lookup when they are sets)."""
    if len(tests) <= 1:
        return tests[0] if tests else None
    sets = [getattr(test, "__self__", None) for test in tests]
    if all(isinstance(x, frozenset) for x in sets):
        return frozenset().union(*sets).__contains__  # type: ignore[arg-type]
    return lambda c: any(test(c) for test in tests)


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, list | dict | str) and not value)
