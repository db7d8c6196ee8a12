"""The end of a generation: ``finalize`` closes what is open (a cut region by ``finish_reason``), joins the
blocks, checks required fields and returns the message; and the prompt's tail read before the output."""

from __future__ import annotations

from typing import Any

from chatparse.engine.regions import _Regions
from chatparse.engine.state import Event, _short
from chatparse.errors import (
    ChatparseError,
    ContentNestingError,
    EngineFault,
    InputTypeError,
    MissingFieldError,
    TruncatedUtf8Error,
)
from chatparse.finish import finish_kind


class _Discard(list[Event]):
    """An event list that keeps nothing (one-shot parsing returns only the message)."""

    def append(self, item: Event) -> None:
        pass


def _last_match_end(pattern: Any, text: str, *, timeout: float) -> int | None:
    last_end = None
    for m in pattern.finditer(text, timeout=timeout):
        last_end = m.end()
    return last_end


def _fault(exc: Exception) -> ChatparseError:
    """An unexpected exception inside the engine, as a named error (the original is chained)."""
    if isinstance(exc, RecursionError):
        return ContentNestingError(f"Input nested too deeply for the engine: {_short(exc)}")
    return EngineFault(f"Unexpected {type(exc).__name__} inside the parser: {_short(exc)}",
                       exception=type(exc).__name__)


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, list | dict | str) and not value)


class _Finalize(_Regions):
    """``finalize`` and the prompt's tail."""

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
