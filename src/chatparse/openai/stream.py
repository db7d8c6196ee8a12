"""The OpenAI-compatible chunk stream: ``ChatCompletionStream`` turns a generation into
``chat.completion.chunk`` dicts as it streams (text and tool-call routing in its bases)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chatparse.engine.parser import Event, OnMalformed
from chatparse.errors import ChatparseError, UsageError
from chatparse.finish import finish_kind
from chatparse.openai.calls import _CallRoutes, _feed_scanner
from chatparse.openai.ids import IdFactory
from chatparse.openai.message import (
    CONTENT_FIELD,
    REASONING_FIELDS,
    TOOLS_FIELD,
    Chunk,
    _call_list,
    _call_name,
    _finish,
    arguments_json,
)
from chatparse.openai.state import _CHOICE, _HeadField

# Errors of a call the parser refused before its state changed: the stream can go on after them.
_REFUSED = frozenset({"bad_input_type", "mixed_feed", "parser_finalized"})


class ChatCompletionStream(_CallRoutes):
    """Turn a generation into ``chat.completion.chunk`` dicts as it streams.

    ``feed(text)`` returns the chunks that text completes; ``finish(finish_reason)`` flushes the
    parser and returns the rest, ending with the chunk that carries ``finish_reason``. Linear: the
    accumulated text is never re-parsed.
    """

    id: _HeadField[str] = _HeadField()
    created: _HeadField[int] = _HeadField()
    model: _HeadField[str] = _HeadField()

    def __init__(
        self,
        template: Any,
        prefix: str,
        *,
        tools: Iterable[Any] | None = None,
        model: str = "chatparse",
        reasoning_key: str = "reasoning_content",
        id_factory: IdFactory | None = None,
        on_malformed: OnMalformed = "recover",
        buffer_calls: bool = False,
        completion_id: str | None = None,
        created: int | None = None,
    ) -> None:
        super().__init__(template, prefix, tools=tools, model=model, reasoning_key=reasoning_key,
                         id_factory=id_factory, on_malformed=on_malformed, buffer_calls=buffer_calls,
                         completion_id=completion_id, created=created)
        self._run(self.parser.initial_events, last_feed=True)
        self._initial = self._take()
        self._fast = None  # the first feed returns the prefix's chunks too

    def feed(self, text: str) -> list[Chunk]:
        """Add generated text; returns the chunks it completes."""
        try:
            state = self._fast
            if state is None:
                if self._failed is not None:
                    self._check_failed()
                events = self.parser.feed(text)
                call = self._call
                if call is not None and len(events) == 1 and call.scanner is not None and not self._initial:
                    event = events[0]
                    if event["type"] == "region_chunk" and event["field"] == TOOLS_FIELD:
                        # The common feed inside a call (``_feed_events``'s): ``_scan``, inline.
                        piece = event["text"]
                        if not ((">" in piece) if call.xml else call.scanner.can_fire(piece)):
                            call.waiting.append(piece)  # (most feeds end here)
                            return []
                        _feed_scanner(call, piece)
                        return self._take() if self._pending_chunks else []
                return self._feed_events(events)
            # The common feed, inline (calls would be half its cost): plain text of the region streaming now,
            # which the parser hands back as text without building its event; then ``_text_chunk`` in a
            # started region and one chunk as ``_chunk`` builds it.
            taken = self._feed_text(text, state.name)
            if not isinstance(taken, str):  # events: the chunk was not plain text of that region alone
                if len(taken) != 1 or taken[0]["type"] != "region_chunk" or taken[0]["field"] != state.name:
                    return self._feed_events(taken)
                taken = taken[0]["text"]
                if not taken:
                    return []
            held = state.held
            combined = held + taken if held else taken
            kept = combined.rstrip()
            if kept is not combined:  # trailing whitespace: held until text follows it
                state.held = combined[len(kept):]
                if not kept:
                    return []
            elif held:
                state.held = ""
            state.sent.append(kept)
            choice = _CHOICE.copy()
            choice["delta"] = {state.key: kept}
            chunk = self._head.copy()
            chunk["choices"] = [choice]
            return [chunk]
        except Exception as exc:
            self._mark_failed(exc)
            raise

    def _feed_events(self, events: list[Event]) -> list[Chunk]:
        """The chunks of a feed's events, off the shortest path of ``feed``."""
        if len(events) == 1:
            event = events[0]
            if event["type"] == "region_chunk":
                call = self._call
                if call is not None and event["field"] == TOOLS_FIELD and not self._initial:
                    if call.scanner is None:  # buffered (or not streamable early): the close sends it
                        return []
                    self._scan(call, event["text"])  # the common feed inside a call
                    return self._take() if self._pending_chunks else []
                if not self._initial:
                    return self._one_chunk(event)
        elif not events and not self._initial:
            return []
        out = self._initial
        self._initial = []
        self._run(events, last_feed=True)
        return out + self._take()

    def finish(self, finish_reason: str | None = "stop") -> list[Chunk]:
        """End the stream: the remaining deltas, then a chunk with the final ``finish_reason`` (``length`` for
        any token-limit reason). When a call already streamed (header sent early) turned out cut, that chunk
        names its index in ``chatparse_truncated_calls`` (and a call dropped as malformed for another reason
        in ``chatparse_malformed_calls``); with ``buffer_calls`` nothing goes out before a call is whole, so
        neither ever appears."""
        if self._failed is not None:
            self._check_failed()
        finish_kind(finish_reason)  # an unknown reason raises before anything is flushed (not a failure)
        try:
            return self._finish(finish_reason)
        except Exception as exc:
            self._mark_failed(exc)
            raise

    def _mark_failed(self, exc: Exception) -> None:
        """A feed or finish raised: every later call raises ``parser_failed`` (``_check_failed``), never
        a silent ``[]`` that would lose the rest of the answer. A call refused before anything changed
        (a wrong argument type, a feed after ``finish``) is not a failure."""
        if self._failed is None and not (isinstance(exc, UsageError) and exc.code in _REFUSED):
            self._failed = exc
            self._fast = None  # the next feed takes the path that checks

    def _check_failed(self) -> None:
        failed = self._failed
        code = failed.code if isinstance(failed, ChatparseError) else "internal_error"
        raise UsageError(
            f"Expected a stream that can go on, found one whose earlier feed or finish raised "
            f"{type(failed).__name__} ({code}: {str(failed)[:200]}); it sends no more chunks, since the rest of "
            "the answer would be lost or misread. Start a new ChatCompletionStream for the next generation "
            "(on_malformed='recover', the default, parses past malformed regions).",
            code="parser_failed", first_code=code, first_error=type(failed).__name__,
        ) from failed

    def _finish(self, finish_reason: str | None) -> list[Chunk]:
        out = self._initial
        self._initial = []
        message, events = self.parser.finalize(finish_reason=finish_reason)
        self._run(events, last_feed=False)
        self.message = message
        for name, state in self._text.items():  # the final value after finalize's cleanup
            final = message.get(name)
            self._reconcile_text(name, state, final if isinstance(final, str) else "")
        # Self-check: the calls completed on the wire are the message's calls, in order. An arguments
        # object that is the one a call's close carried is not serialized a second time.
        sent = self._sent_calls
        functions = [fn for fn in (c.get("function") for c in _call_list(message.get(TOOLS_FIELD)))
                     if isinstance(fn, Mapping)]
        final_calls = [(_call_name(fn, "name"), sent[i][1] if i < len(sent) and fn.get("arguments") is sent[i][2]
                        else arguments_json(fn.get("arguments"))) for i, fn in enumerate(functions)]
        if [(name, text) for name, text, _ in sent] != final_calls and TOOLS_FIELD not in self.mismatches:
            self.mismatches.append(TOOLS_FIELD)
        self._done = True
        self._ensure_role()
        final = self._chunk({}, _finish(self._calls_made > 0, finish_reason))
        cut = [index for index, code in self._dropped.items() if code == "truncated"]
        if cut:
            final["choices"][0]["chatparse_truncated_calls"] = cut
        bad = [index for index, code in self._dropped.items() if code != "truncated"]
        if bad:
            final["choices"][0]["chatparse_malformed_calls"] = bad
        self._pending_chunks.append(final)
        return out + self._take()

    def _one_chunk(self, event: dict[str, Any]) -> list[Chunk]:
        """A feed that is one chunk of a region's body (not on a shortest path): a call's body only
        feeds its scanner; a region without streamed text sends nothing."""
        name = event["field"]
        state = self._text.get(name)
        if state is not None:
            if event["dirty"] or not state.streams:
                return []
            self._text_chunk(name, state, event["text"])
        elif name == TOOLS_FIELD:
            if self._call is not None and self._call.scanner is not None:
                self._scan(self._call, event["text"])
        elif name == CONTENT_FIELD or name in REASONING_FIELDS:  # the field's first event
            self._run([event], last_feed=True)
        return self._take() if self._pending_chunks else []

    def _run(self, events: list[dict[str, Any]], *, last_feed: bool) -> None:
        self._fast = None
        last_open = max((i for i, e in enumerate(events) if e["type"] == "region_open"), default=-1)
        for i, event in enumerate(events):
            name = event["field"]
            kind = event["type"]
            fld = self.parser.template.fields.get(name)
            if fld is None:
                continue
            if name == TOOLS_FIELD:
                self._route_call(kind, event, fld, live=last_feed and i == last_open)
            elif name == CONTENT_FIELD or name in REASONING_FIELDS:
                self._route_text(kind, event, fld)
            if kind != "region_chunk":
                self._fast = None
            if kind == "region_malformed":
                self.malformed.append({k: v for k, v in event.items() if k != "type"})
            elif kind == "region_close" and event.get("malformed"):
                self.malformed.extend(event["malformed"])
