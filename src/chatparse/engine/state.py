"""The streaming parser's named state: every field ``ResponseParser`` keeps (set here, each with what it
holds), the event and option types, and the guard against use after a failure."""

from __future__ import annotations

import codecs
import copy
from collections.abc import Callable, Iterable
from typing import Any, Literal

from chatparse.errors import (
    ChatparseError,
    PrefixRequiredError,
    UsageError,
)
from chatparse.lazy import load
from chatparse.limits import DEFAULT_LIMITS, Limits, RegexBudget
from chatparse.structure import BodyTracker
from chatparse.template.compile import CompiledField, CompiledTemplate, load_template
from chatparse.template.extensions import NO_TEMPLATE_EXT
from chatparse.transform import check_copies

Event = dict[str, Any]
OnMalformed = Literal["raise", "keep", "recover"]
ON_MALFORMED = ("raise", "keep", "recover")
# Scan answers are remembered (``_scan_delimiters``) for unresolved texts up to this long.
_MEMO_TEXT = 256
_SCALARS = frozenset({str, int, float, bool, type(None)})  # default values shared, not copied
# (single trigger character or None, trigger pattern, lead-run test or None, the fast path may hold a
# trailing lead run itself, field, dirty)
_QuietEntry = tuple[str | None, Any, Callable[[str], bool] | None, bool, str, bool]


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "…"


def _longest_literal(template: CompiledTemplate) -> int:
    """The longest literal delimiter the template gives as literals (scanned-as-literal regexes excluded,
    so the hold-back cap is the documented one)."""
    delims = [d for f in template.fields.values() for d in (f.open, f.close)
              if d is not None and not d.key.endswith("pattern")]
    return max((d.longest_literal for d in delims), default=0)


def _tool_properties(tools: Iterable[Any]) -> dict[str, dict[str, Any]]:
    schema = load("chatparse.tools.schema")  # pydantic-backed; loaded only when used
    properties: dict[str, dict[str, Any]] = schema.tool_parameter_properties(tools)
    return properties


def _tool_required(tools: Iterable[Any]) -> dict[str, tuple[str, ...]]:
    required: dict[str, tuple[str, ...]] = load("chatparse.tools.schema").tool_required_parameters(tools)
    return required


class _State:
    """The parser's fields, set once by ``ResponseParser.__init__``; the base of every part below."""

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

    def _mark_failed(self, exc: ChatparseError) -> ChatparseError:
        """A feed or finalize raised while the parser's state was changing: the state is no longer one
        the rest of the output can be read from, so every later call raises ``parser_failed`` (see
        ``_check_open``) instead of parsing on. The fast paths are disarmed so that the next feed gets there."""
        if self._failed is None:
            self._failed = exc
        self._quiet = None
        self._forming = False
        return exc

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
