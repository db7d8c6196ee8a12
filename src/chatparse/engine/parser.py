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

from chatparse.content.args import regex_deadline
from chatparse.content.registry import BadItem, Repaired
from chatparse.engine.scanner import DelimiterScanner, Hit
from chatparse.engine.tool_typing import coerce_tool_calls
from chatparse.errors import (
    ChatparseError,
    ContentNestingError,
    ContentParseError,
    EngineFault,
    InputTypeError,
    InvalidUtf8Error,
    MissingFieldError,
    OutputError,
    PrefixRequiredError,
    RegexBudgetError,
    TruncatedUtf8Error,
    UsageError,
    excerpt,
    region_failure,
)
from chatparse.finish import finish_kind
from chatparse.lazy import load
from chatparse.limits import DEFAULT_LIMITS, Limits, RegexBudget
from chatparse.structure import BodyTracker
from chatparse.template.compile import CompiledField, CompiledTemplate, load_template
from chatparse.template.extensions import NO_TEMPLATE_EXT
from chatparse.transform import check_copies

Event = dict[str, Any]
OnMalformed = Literal["raise", "keep", "recover"]
ON_MALFORMED = ("raise", "keep", "recover")
# Delimiter kinds: a region's open, a region's close, the end of the turn (``chatparse.end``), a stray
# marker dropped where no region is open (``chatparse.drop``), a next turn's header (``chatparse.next_turn``).
_OPEN, _CLOSE, _END, _DROP, _NEXT = 0, 1, 2, 3, 4
# Drop consumed text once this much of it (and at least half the buffer) is droppable: amortised O(1).
_COMPACT_MIN = 1024
# Scan answers remembered per template (``_scan_delimiters``): for unresolved texts up to this long, at
# most this many (the table starts again when full).
_MEMO_TEXT = 256
_MEMO_SIZE = 4096
# What a parser derives from its template (``_attach_template``): not pickled, derived again on load.
_DERIVED = frozenset({"_watch", "_scan_orders", "_triggers", "_shared", "_memo", "_heads", "_deep_tables",
                      "_quiet_table", "_floors", "_known"})
_STILL_FORMING = (None, 0)  # the remembered answer "nothing to commit, hold from the scan position"
_CONTENT_FEEDS = 4  # a content parser's regexes may take this many feed budgets (plus the per-character part)
_SCALARS = frozenset({str, int, float, bool, type(None)})  # default values shared, not copied
# ``chatparse.span_fallback``: how many times one parse may go back to a marker the guard took as data (each
# time re-reads the text after it once; a cap keeps a hostile text of many unclosed spans linear).
_MAX_FALLBACKS = 16
# How much text after a marker the body syntax may look at to decide a span close before it (a span's
# follow pattern reads whitespace and a tag: ``\s{0,256}<parameter=``).
_PEEK = 512
# Text that reads as words (letters, digits, spaces): at the end of a text region it is text, even when it
# begins a header written in words (GigaChat's 'user<|role_sep|>': a reply may end with "ask the user").
_WORDS = regex.compile(r"[\w\s]*")
# An opener that captures this group (even empty) opens a region that runs to its close or the end of the
# turn, although its field ends with its value (``chatparse.ends_with_value``): Llama's ``<|python_tag|>``
# before a built-in tool call or raw code, where a bracket closing is not the end of the call.
_TO_END = "to_end"


def _words_cut(scanner: DelimiterScanner, buf: str, start: int) -> bool:
    """Whether the delimiter cut at ``start`` (by the end of the text) is only words, which are text
    (see ``ResponseParser._cut_markers``)."""
    delim = scanner.delim
    return _WORDS.fullmatch(buf, start) is not None and (delim.literals is not None or not delim.info.looks_ahead)


_Watch = tuple[int, CompiledField | None, DelimiterScanner]
# (single trigger character or None, trigger pattern, lead-run test or None, the fast path may hold a
# trailing lead run itself, field, dirty)
_QuietEntry = tuple[str | None, Any, Callable[[str], bool] | None, bool, str, bool]
# (trigger pattern, its one or two characters or None, lead-run test or None)
_Floor = tuple[Any, tuple[str, ...] | None, Callable[[str], bool] | None]


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
        for compiled_field in self._template.fields.values():  # load checked the default; a lower limit here
            check_copies(compiled_field.copies, field=compiled_field.name, limit=limits.transform_copies)
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
        if on_malformed not in ON_MALFORMED:
            raise UsageError(f"on_malformed must be one of {list(ON_MALFORMED)}, found {on_malformed!r}",
                             code="bad_option")
        self._on_malformed = on_malformed
        if tools is not None and (isinstance(tools, str | bytes) or not isinstance(tools, Iterable)):
            raise UsageError(f"tools must be a list of tool definitions (dicts, functions or pydantic models), "
                             f"found {type(tools).__name__}", code="bad_tools")
        tools = list(tools) if tools is not None else None
        self._tool_params = _tool_properties(tools) if tools else {}
        self._tool_required = _tool_required(tools) if tools else {}
        self._buf = ""
        self._pos = 0
        self._version = 0
        self._zw_block = -1  # buffer position where a zero-width open already fired
        self._zw_data = -1  # buffer position where a zero-width close fell inside a guarded string
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
        self._open_text = ""  # the open delimiter's text of the explicit region open now
        # The open region's body syntax (``chatparse.structure``) and the buffer position it has read to.
        self._tracker: BodyTracker | None = None
        self._tracked_to = 0
        # ``chatparse.span_fallback``: the first marker the guard took as data inside the span open now
        # (span number, body pieces before it, kind, captures, marker text), and how often one was used.
        self._fallback: tuple[int, int, int, dict[str, Any], str] | None = None
        self._fallbacks_used = 0
        self._ended = False  # the end of the turn was found: the rest of the text is trailing
        self._trailing: list[str] = []
        # Templates with chatparse's extensions never drop text silently: what no region takes (in a
        # template without an implicit field) is kept as message["unparsed"].
        self._unparsed: list[str] | None = [] if self._template.ext is not NO_TEMPLATE_EXT else None
        self._in_prefix = False
        self._finalized = False
        self._failed: ChatparseError | None = None  # the first error a feed or finalize raised (see ``_mark_failed``)
        self._limit_cut = False  # finalize(finish_reason="length"): the token limit cut the text
        self._stopped = False  # finalize(finish_reason="stop", ...): the model ended the turn itself
        self._memo_text = min(_MEMO_TEXT, self._hold_cap)  # longer: the hold-back cap may apply
        self._attach_template()
        # Per state: the context its watched delimiters may look back at.
        self._contexts = {state: max((s.delim.info.context for _, _, s in watch), default=0)
                          for state, watch in self._watch.items()}
        self._quiet: _QuietEntry | None = None
        self._forming = False  # text is held at the end and nothing else is pending (see ``feed``)
        # While forming: the remembered scan answers for the state, and where the text they key starts.
        self._forming_table: dict[str, Any] | None = None
        self._forming_start = 0
        self._forming_limit = 0
        self._known: tuple[int, Any] | None = None  # (version, remembered scan answer at ``_pos``)
        self._uncredited = 0  # characters fed without a regex budget of their own (credited later)
        # The fast path emits text to the region's ``_body`` without appending it to ``_buf``: the pieces
        # from ``_skip_from`` on (-1: the fast path is not armed) are its, and ``_unskip`` accounts for them
        # (regex budget, body syntax, lookbehind context). ``_skip_extra``: characters of those pieces
        # that were held in ``_buf`` before (a lead run), so neither new nor to be credited again.
        self._skip_from = -1
        self._skip_extra = 0
        self._held_run = False  # what is held is a lead run the quiet check found (not a delimiter forming)
        # ``chatparse.lone_close``: the field a lone close may close from the output's start, while the
        # output's text so far is undecided (``_lone``), the content events held meanwhile (``_pending``),
        # and whether the prompt's tail held such a close (thinking switched off: nothing is undecided).
        lone = [f for f in self._template.fields.values() if f.ext.lone_close]
        self._lone_field: CompiledField | None = lone[0] if lone else None
        self._lone: CompiledField | None = None
        self._pending: list[Event] | None = None
        self._pending_size = 0
        self._lone_words = False  # the undecided text holds more than whitespace
        self._prefix_lone = False
        self._resume = False  # the lone-close field's last block was closed implicitly (see ``_close_current``)
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
        self._start_lone()

    def _attach_template(self) -> None:
        """What the parser derives from its template: the watch lists (fresh scanners: they only remember
        where a delimiter cannot occur) and the tables shared by every parser of the template."""
        self._watch = self._build_watchlists()
        # Per watch list: the order scanners are asked in when a forming delimiter can end the scan: those
        # that most recently found one first, then literal ones (they answer cheaply).
        self._scan_orders = {id(watch): _literal_first(watch) for watch in self._watch.values()}
        self._triggers = self._template.triggers
        # Remembered scan answers (see ``_scan_delimiters``), shared by every parser of the template: an
        # answer depends only on the template's delimiters, the state and the text (never on the limits,
        # the tools or the stream), so a server's later streams find the headers its first one saw.
        # Parsers in other threads may attach at once: each table is stored once (``setdefault``), and
        # every parser uses the one stored first.
        tables = self._template.engine_tables
        shared = tables.get("memo")
        if shared is None:
            shared = tables.setdefault("memo", _ScanMemo())
        self._shared: _ScanMemo = shared
        self._memo: dict[tuple[str | None, int, bool], dict[str, Any]] = shared.tables
        self._heads: dict[tuple[str | None, int, bool], tuple[dict[str, Any], list[int]]] = shared.heads
        self._deep_tables: dict[str | None, dict[str, Any]] = {}  # per state, the table ``_memo_for`` gives most
        # The quiet fast path (see ``feed``) and the scan floors, built once per template.
        fast = tables.get("fast")
        if fast is None:
            fast = tables.setdefault("fast", (self._build_quiet_table(), self._build_floor_table()))
        self._quiet_table: dict[str | None, _QuietEntry | None] = fast[0]
        self._floors: dict[str | None, _Floor | None] = fast[1]

    def __getstate__(self) -> dict[str, Any]:
        """A parser pickles (``copy.deepcopy``, ``multiprocessing``) with its stream state; what it derives
        from the template is derived again on load (``_attach_template``), and the template's shared
        tables are not pickled."""
        state = {k: v for k, v in self.__dict__.items() if k not in _DERIVED}
        state["_quiet"] = self._quiet is not None  # armed: the entry is looked up again on load
        state["_forming_table"] = self._forming_table is not None
        for key in ("_lone_field", "_lone"):  # compiled fields: by name (the template is pickled as its source)
            fld = state.get(key)
            state[key] = fld.name if fld is not None else None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        armed, forming = state.pop("_quiet"), state.pop("_forming_table")
        self.__dict__.update(state)
        for key in ("_lone_field", "_lone"):
            name = getattr(self, key, None)
            setattr(self, key, self._template.fields[name] if name is not None else None)
        self._known = None  # a scan answer handed within one feed (see ``_feed_forming``)
        self._attach_template()
        region = None if self._current == self._implicit else self._current
        self._quiet = self._quiet_table.get(region) if armed else None
        self._forming_table = self._memo_for(region, self._pos) if forming else None

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
        At most ``limits.max_holdback`` plus the template's longest literal delimiter after any feed, plus
        ``limits.lone_hold`` at the start of an output that may open reasoning implicitly."""
        return len(self._buf) - self._pos + (self._pending_size if self._pending is not None else 0)

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

    def _mark_failed(self, exc: ChatparseError) -> ChatparseError:
        """A feed or finalize raised while the parser's state was changing: the state is no longer one
        the rest of the output can be read from, so every later call raises ``parser_failed`` (see
        ``_check_open``) instead of parsing on. The fast paths are disarmed so that the next feed gets there."""
        if self._failed is None:
            self._failed = exc
        self._quiet = None
        self._forming = False
        return exc

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

    def finalize(self, *, finish_reason: str | None = None) -> tuple[dict[str, Any], list[Event]]:
        """End the stream: flush held text, close open regions, return ``(message, events)``.

        ``finish_reason``: why generation stopped, as the engine reports it, when known (the vocabulary of
        ``chatparse.finish``, any letter case). A token-limit reason (``"length"``, ``"max_tokens"``,
        ``"max_output_tokens"``, ...) makes a region that the end of the text closes instead of its own
        close a cut one in every template with ``truncation``: a tool call whose close never came is
        reported ``truncated`` with its raw text, not returned, even when its JSON or parameters were all
        closed (the model may have been writing one more parameter); a list of calls in one region whose
        close never came is cut as one unit. Any other known value (``"stop"``, ``"content_filter"``), or
        None, keeps the text-only rule; an unknown one raises ``UnknownFinishReasonError``."""
        self._check_open()
        if finish_reason is not None and not isinstance(finish_reason, str):
            raise InputTypeError(f"finalize(finish_reason=...) takes a str such as 'stop' or 'length', found "
                                 f"{type(finish_reason).__name__}")
        kind = finish_kind(finish_reason)
        self._limit_cut = kind == "limit"
        self._stopped = kind == "stop"  # the model ended the turn itself
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
        self._forming = False
        try:
            if self._skip_from >= 0:
                self._unskip()
                self._skip_from = -1
            self._start_feed(len(self._buf) - self._pos)
            self._process(events, eos=True)
        except ChatparseError as exc:
            self._mark_failed(exc)
            raise
        except Exception as exc:
            raise self._mark_failed(_fault(exc)) from exc
        self._finalized = True
        missing = [n for n, f in self._template.fields.items() if not f.optional and n not in self._output]
        if missing:
            raise MissingFieldError(
                f"Required response_template fields missing from parsed output: {missing}. The output has no "
                "region for them; mark them optional or check the delimiters.",
                field=missing[0],
            )
        fields = self._template.fields
        real_output = bool(self._template.ext.end)
        for name, (separator, parts) in self._join_parts.items():
            if real_output:  # an empty block (a prompt's pre-written '<think></think>') adds no separator
                parts = [part for part in parts if part] or parts[:1]
            joined = separator.join(parts)
            self._output[name] = joined.strip() if fields[name].ext.strip_joined else joined
        trailing = self._trailing_text()
        if trailing:
            self._output["trailing"] = trailing
        unparsed = "".join(self._unparsed or ()).strip()
        if unparsed:
            self._output["unparsed"] = unparsed
        defaults = self._template.defaults
        self._output = {k: v for k, v in self._output.items() if k in defaults or not _is_empty(v)}
        return self._output, events

    # --- input buffer ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        failed = self._failed
        if failed is not None:
            raise UsageError(
                f"Expected a parser that can go on, found one whose earlier feed or finalize raised "
                f"{type(failed).__name__} ({failed.code}: {_short(failed)}); it gives no more events or message, "
                "since what it read after that would be lost or misread. Create a new parser for the next "
                "generation; to parse past a malformed region instead of raising, pass on_malformed='keep' "
                "or 'recover'.", code="parser_failed", first_code=failed.code, first_error=type(failed).__name__,
            ) from failed
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
            self._in_prefix = True
            self._process(self.initial_events, eos=False)
            self._in_prefix = False
            self._arm()

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

    def _build_watchlists(self) -> dict[str | None, list[_Watch]]:
        """What to look for in each state: in an explicit region its close; otherwise every open and
        the implicit field's close. The end of the turn is watched everywhere, stray markers where no
        explicit region is open."""
        template = self._template
        fields = template.fields
        scanners = {}
        for f in fields.values():
            for kind, delim in ((_OPEN, f.open), (_CLOSE, f.close)):
                if delim is not None:
                    scanners[(kind, f.name)] = DelimiterScanner(delim, self._budget, self._hold_cap)
        always: list[_Watch] = []
        if template.end is not None:
            always.append((_END, None, DelimiterScanner(template.end, self._budget, self._hold_cap)))
        if template.next_turn is not None:
            always.append((_NEXT, None, DelimiterScanner(template.next_turn, self._budget, self._hold_cap)))
        idle: list[_Watch] = [(_OPEN, f, scanners[(_OPEN, f.name)]) for f in fields.values() if f.open is not None]
        if self._implicit is not None and fields[self._implicit].close is not None:
            idle.append((_CLOSE, fields[self._implicit], scanners[(_CLOSE, self._implicit)]))
        if template.drop is not None:
            idle.append((_DROP, None, DelimiterScanner(template.drop, self._budget, self._hold_cap)))
        watch: dict[str | None, list[_Watch]] = {None: idle + always}
        for f in fields.values():
            if f.open is not None:
                watch[f.name] = ([(_CLOSE, f, scanners[(_CLOSE, f.name)])] if f.close is not None else []) + always
        return watch

    # --- the state machine -----------------------------------------------------------------------

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

    def _build_floor_table(self) -> dict[str | None, _Floor | None]:
        """Per state: the trigger pattern and the union of the lead-run tests (the scan floor: see ``_scan_delimiters``)."""
        table: dict[str | None, _Floor | None] = {}
        for state, trigger in self._triggers.items():
            tests = [] if trigger is None else [d.info.lead for d in trigger.leads if d.info.lead is not None]
            few = tuple(trigger.charset) if trigger is not None and 0 < len(trigger.charset) <= 2 else None
            table[state] = None if trigger is None else (trigger.chars, few, _union_test(tests))
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

    def _close_region(self, events: list[Event], name: str, field: CompiledField, body: str, cut: bool,
                      close_text: str, limit: bool = False) -> None:
        if cut and not limit:
            closed = self._closed_at_end(field, body)
            if closed is not None:
                body, close_text, cut = closed[0], closed[1], False
        if cut and field.ext.truncation and not self._complete(field, body, limit):
            raw = self._open_text + body
            cause = "the token limit cut the text" if limit else "the text ends"
            self._report(events, name, "truncated", raw, f"{cause} inside a '{name}' region ({excerpt(raw)})")
            return
        checked = cut and field.ext.truncation
        recover = field.parser.recover is not None and (self._on_malformed == "recover" or checked)
        try:
            if recover:
                value, problems = self._recovered_value(field, body, cut=checked, close_text=close_text,
                                                        limit=checked and limit)
            else:
                value, problems = process_region(field, body, self._captures), []
            repairs: list[dict[str, Any]] = []
            if isinstance(value, Repaired):
                raw = self._open_text + body + close_text
                repairs = [{"field": name, "code": code, "raw": raw, "note": note} for code, note in value.repairs]
                value = value.value
            # With or without tools: arguments a reader structured become plain dicts (tool_typing).
            value = coerce_tool_calls(value, self._tool_params, field.ext.python_literals)
            if recover and not value and len(problems) == 1 and problems[0]["whole"]:
                # The region's one item failed: the region failed (one event, as without recovery).
                problem = problems[0]
                self._report(events, name, problem["code"], problem["raw"], problem["error"])
                return
            if checked and not recover and self._lacks_required(value):
                # A call cut between two parameters parses, but a parameter the tool requires is missing.
                raw = self._open_text + body
                self._report(events, name, "truncated", raw, f"the text ends inside a '{name}' region before "
                             f"every required parameter was written ({excerpt(raw)})")
                return
            self._store(field, value)
        except OutputError as exc:
            if self._on_malformed == "raise":
                raise
            self._report(events, name, exc.code, self._open_text + body + close_text, str(exc))
            return
        event: Event = {"type": "region_close", "field": name, "value": value}
        if repairs:
            event["repaired"] = repairs
            self._output.setdefault("repaired", []).extend(
                {"field": r["field"], "code": r["code"], "raw": r["raw"]} for r in repairs)
        if problems:
            event["malformed"] = [{k: v for k, v in p.items() if k != "whole"} for p in problems]
            self._output.setdefault("malformed", []).extend(
                {"field": p["field"], "code": p["code"], "raw": p["raw"]} for p in problems)
        events.append(event)
        self._reset_to_implicit()

    def _closed_at_end(self, field: CompiledField, body: str) -> tuple[str, str] | None:
        """A guarded region the end of the text cut inside a span, whose body holds the region's own
        literal close followed by nothing, or by an end marker or a next-turn header, and parses up to that
        close: ``(body, close)``, and what follows the end marker is the turn's trailing text. The end of
        the turn after the close is the structure going on (a value that lost its closing tag before the
        call's close, GLM's last ``</arg_value>``), so the region closed there; None otherwise."""
        close, structure = field.close, field.ext.structure
        if not field.ext.guard or close is None or close.literals is None or structure is None or structure.syntax:
            return None  # JSON or Python strings: a cut string is a cut call
        ext = self._template.ext
        for literal in close.literals:
            at = body.find(literal)
            while at > 0:
                after = body[at + len(literal) :].lstrip()
                marker = next((m for m in ext.end if after.startswith(m)), None)
                if not after or marker is not None or any(after.startswith(h) for h in ext.next_turn):
                    try:
                        run_content_parser(field, body[:at])
                    except OutputError:
                        return None  # not a whole body before it either: the cut stays a cut
                    if after:
                        self._trailing.append(after[len(marker) :] if marker is not None else after)
                    return body[:at], literal
                at = body.find(literal, at + len(literal))
        return None

    def _complete(self, field: CompiledField, body: str, limit: bool = False) -> bool:
        """Whether a region cut by the end of the text holds a whole body: its syntax is closed (or,
        without one, its content parses). ``limit``: the token limit cut it, so a region that is one value
        (one call) is not whole, whatever its syntax says: its close never came.

        A region of several items (a list parser's) keeps its whole items, the cut one reported
        (``_recovered_value``), unless its body is one bracketed list (``[a(...), b(...)``, a JSON array):
        a call list is one unit, cut as a whole when its close bracket never came (whatever the finish
        reason: nothing but the end of the text can have stopped it) or, under ``limit``, when the
        region's close never came."""
        if not body.strip():
            return False  # cut right after the opener
        if field.parser.recover is not None:
            if not body.lstrip().startswith("["):
                return True
            return not limit and self._syntax_closed(field, body)
        if limit:
            return False
        return self._syntax_closed(field, body)

    def _syntax_closed(self, field: CompiledField, body: str) -> bool:
        """Whether the body's syntax (or, without a tracked one, its content parser) says it is whole."""
        if self._tracker is not None:  # every character of the body went through _emit_to
            if self._tracker.complete():
                return True
            # A value written without the layout the span's close expects (``v</parameter>`` on one line)
            # leaves the span open; with ``span_fallback`` a body that ends with the call's own close (the
            # ``trailer`` its content parser reads) is still a whole call when its content parses.
            args = field.content_args if field.ext.span_fallback else {}
            trailer, value_close = args.get("trailer"), args.get("value_close")
            if not trailer or not isinstance(value_close, str) or not body.rstrip().endswith(trailer) \
                    or not body.rstrip()[: -len(trailer)].rstrip().endswith(value_close):
                return False
        try:
            run_content_parser(field, body)
        except OutputError:
            return False
        return True

    def _lacks_required(self, value: Any) -> bool:
        """A tool call (``{"function": {"name", "arguments"}}``) without a parameter its tool requires."""
        fn = value.get("function") if isinstance(value, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("arguments"), dict):
            return False
        required = self._tool_required.get(fn.get("name"), ())  # type: ignore[arg-type]
        return any(key not in fn["arguments"] for key in required)

    def _recovered_value(self, field: CompiledField, body: str, *, cut: bool, close_text: str,
                         limit: bool = False) -> tuple[Any, list[dict[str, Any]]]:
        """A list region parsed item by item: the items that parse (and transform) are kept; each other
        item is reported with its raw text (``truncated`` for one the end of the text cut off) and the
        error (the region's whole text when the item is all the region holds). ``limit``: the token limit
        cut the region, so when its items are JSON or Python values (a value's closing bracket is not a
        call's close) the last one, which ends the body, is cut too; an item with a close marker of its own
        (an XML ``<invoke>…</invoke>``) is whole once that marker came."""
        structure = field.ext.structure
        syntax = structure.syntax if structure is not None else None
        items, bad = recover_region(field, body, self._captures, cut_last=limit and syntax is not None)
        problems = []
        for item in bad:
            whole = item.raw.strip() == body.strip()
            raw = self._open_text + body + close_text if whole else item.raw
            code = "truncated" if cut and item.at_end else item.code
            if self._on_malformed == "raise" and code != "truncated":
                raise ContentParseError(
                    f"Field '{field.name}': {item.error} (item {excerpt(item.raw)})", field=field.name,
                    parser=field.parser.name,
                )
            problems.append({"field": field.name, "code": code, "raw": raw, "error": item.error, "whole": whole})
        return items, problems

    def _store(self, field: CompiledField, value: Any) -> None:
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
            if field.ext.extend and isinstance(value, list):
                self._output.setdefault(name, []).extend(value)
            else:
                self._output.setdefault(name, []).append(value)
        else:
            self._output[name] = value

    def _join(self, name: str, separator: str, value: str) -> None:
        if name in self._join_parts:
            self._join_parts[name][1].append(value)
            return
        previous = self._output.get(name)
        if previous is not None and not isinstance(previous, str):
            self._output[name] = previous + separator + value  # fails as the reference does
        self._join_parts[name] = (separator, [value] if previous is None else [previous, value])
        self._output[name] = value if previous is None else previous

    def _report(self, events: list[Event], name: str, code: str, raw: str, error: str) -> None:
        """A region (or an opener) that gives no value: kept under ``malformed`` with its raw text."""
        self._output.setdefault("malformed", []).append({"field": name, "code": code, "raw": raw})
        events.append({"type": "region_malformed", "field": name, "code": code, "error": error, "raw": raw})
        self._reset_to_implicit()

    # --- a reasoning block the model opened implicitly (``chatparse.lone_close``) -----------------

    def _start_lone(self) -> None:
        """After the prompt: when it wrote nothing of the lone-close field (no block opened or closed)
        and no region is open, the output's first text is undecided. Streaming holds its events (up to
        ``limits.lone_hold`` characters) until a lone close makes it that field's, or anything else
        (another marker, an open, the end) makes it content."""
        field = self._lone_field
        if field is None or self._current != self._implicit or self._prefix_lone \
                or any(event["field"] != self._implicit for event in self.initial_events):
            return
        if self._opened and "".join(self._body).strip():
            return  # the prompt wrote part of the answer
        # Layout after the header ('<｜Assistant｜>\n') opened the content region: its events wait too.
        self._pending, self.initial_events = self.initial_events, []
        self._lone = field
        self._arm()  # no fast path while undecided

    def _settle(self, events: list[Event]) -> None:
        """The undecided text is content: the events held for it go out."""
        pending = self._pending
        if self._lone_words or pending is None:  # (past the hold: a long text, not layout)
            self._resume = False  # text after the calls that no lone close followed: the answer
        self._lone = self._pending = None
        self._pending_size = 0
        self._lone_words = False
        if pending and self._keep_events:
            events.extend(pending)

    def _dropped(self, events: list[Event], hit: Hit) -> None:
        """A stray marker was dropped. A lone close of the lone-close field while the text is undecided
        moves that text to the field; any other marker settles it as content."""
        lone = self._lone
        if lone is None:
            field = self._lone_field
            if self._in_prefix and field is not None and self._buf[hit.start : hit.end] in field.ext.lone_close:
                self._prefix_lone = True
            return
        if self._buf[hit.start : hit.end] not in lone.ext.lone_close:
            if self._lone_words or self._pending is None:  # a marker alone (a section's end) decides nothing
                self._settle(events)
            return
        pending = self._pending
        self._lone = self._pending = None
        self._pending_size = 0
        self._resume = self._lone_words = False
        if not self._opened:
            return  # nothing before the close
        body = "".join(self._body)
        name = lone.name
        self._current = name
        if pending is not None:  # held: the stream shows the block as the field's
            events.append({"type": "region_open", "field": name})
            if self._keep_events:
                events.append({"type": "region_chunk", "field": name, "text": body, "dirty": not lone.parser.streamable})
            self._close_region(events, name, lone, body, False, self._buf[hit.start : hit.end])
            return
        # Past the hold the text went out as content chunks: the content region's close says where it went.
        moved: list[Event] = []
        self._close_region(moved, name, lone, body, False, self._buf[hit.start : hit.end])
        for event in moved:
            if event["type"] in ("region_close", "region_malformed"):
                event["moved_to"] = name
                event["field"] = self._implicit
            events.append(event)

    def _reset_to_implicit(self) -> None:
        self._zw_data = -1
        self._fallback = None
        self._current = self._implicit
        self._captures = {}
        self._body = []
        self._opened = False
        self._open_text = ""
        self._tracker = None


def _remembered(start: int, known: Any) -> tuple[tuple[int, CompiledField | None, Hit] | None, int]:
    """A remembered scan answer (positions relative to where its text starts) placed at ``start``."""
    rel, held = known
    if rel is None:
        return None, start + held
    kind, field, first, end, groups = rel
    return (kind, field, Hit(start + first, start + end, groups, False)), start + held


class _ScanMemo:
    """The remembered scan answers of one template (see ``_scan_delimiters``), shared by its parsers.
    Per (state, context length, whether the context reaches the buffer start): text from the context on
    -> answer. ``heads``: literal delimiters at the first position a delimiter can start, whatever follows
    them (see ``_head_decides``): per the same key, head text -> (kind, field, groups), and the head
    lengths. ``size`` counts the answers stored since the last ``clear`` (bounded by ``_MEMO_SIZE``).

    Parsers in other threads may read and add at the same time: every answer stored is a correct one,
    so all a race can do is lose an answer (it is computed again). ``clear`` empties every table in place
    (parsers keep the tables they hold, and these stay bounded)."""

    __slots__ = ("heads", "size", "tables")

    def __init__(self) -> None:
        self.tables: dict[tuple[str | None, int, bool], dict[str, Any]] = {}
        self.heads: dict[tuple[str | None, int, bool], tuple[dict[str, Any], list[int]]] = {}
        self.size = 0

    def clear(self) -> None:
        for table in list(self.tables.values()):
            table.clear()
        self.heads.clear()
        self.size = 0


class _Discard(list[Event]):
    """An event list that keeps nothing (one-shot parsing returns only the message)."""

    def append(self, item: Event) -> None:
        pass


def process_region(field: CompiledField, body: str, captures: dict[str, Any]) -> Any:
    """A region's value: its content parser over ``body``, then the field's transform (a ``Repaired``
    value stays wrapped around its transformed value)."""
    value = run_content_parser(field, body)
    if isinstance(value, Repaired):
        return Repaired(_transformed(field, value.value, captures), value.repairs)
    return _transformed(field, value, captures)


def _transformed(field: CompiledField, value: Any, captures: dict[str, Any]) -> Any:
    fill = field.fill
    if fill is None:
        return value
    if not field.transform_each:
        return fill({**captures, "content": value})
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
        out.append(fill({**captures, **item}))
    return out


def recover_region(field: CompiledField, body: str, captures: dict[str, Any], *,
                   cut_last: bool = False) -> tuple[list[Any], list[BadItem]]:
    """A list region item by item (the parser's ``recover``), each kept item transformed on its own; an
    item whose transform fails joins the bad ones with its raw text. ``cut_last``: the token limit cut the
    region, so a last item that runs to the end of the body is a cut one (its close never came)."""
    recover = field.parser.recover
    assert recover is not None
    try:
        good, bad = recover(body, field.content_args)
    except RecursionError:
        raise ContentNestingError(f"Field '{field.name}': the region nests too deeply to parse (region "
                                  f"{excerpt(body)})", field=field.name) from None
    good, bad = list(good), list(bad)
    if cut_last and good and not any(item.at_end for item in bad) \
            and body.rstrip().endswith(good[-1][1].rstrip()):
        bad.append(BadItem(good.pop()[1], "the token limit cut the text before this call's close came",
                           at_end=True))
    fill = field.fill
    if fill is None:
        return [value for value, _ in good], bad
    if not field.transform_each:
        return [fill({**captures, "content": value}) for value, _ in good], bad
    items = []
    for value, raw in good:
        try:
            if not isinstance(value, dict):
                raise ContentParseError(f"Field '{field.name}': transform_each requires each item to be a dict, "
                                        f"found {type(value).__name__}", field=field.name)
            items.append(fill({**captures, **value}))
        except OutputError as exc:
            bad.append(BadItem(raw, str(exc), code=exc.code))
    return items, bad


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
    schema = load("chatparse.tools.schema")  # pydantic-backed; loaded only when used
    properties: dict[str, dict[str, Any]] = schema.tool_parameter_properties(tools)
    return properties


def _tool_required(tools: Iterable[Any]) -> dict[str, tuple[str, ...]]:
    required: dict[str, tuple[str, ...]] = load("chatparse.tools.schema").tool_required_parameters(tools)
    return required


def _literal_first(watch: list[_Watch]) -> list[int]:
    """The positions of a watch list, literal delimiters first (they answer without a regex)."""
    return [i for i, (_, _, scanner) in enumerate(watch) if scanner.delim.literals is not None] + \
        [i for i, (_, _, scanner) in enumerate(watch) if scanner.delim.literals is None]


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
