"""OpenAI Chat Completions output from a parse: final messages, ``chat.completion`` objects, and
streamed ``chat.completion.chunk`` deltas driven by a ``ResponseParser`` (see docs/openai.md).
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from chatparse.engine import ResponseParser
from chatparse.engine.parser import Event, OnMalformed
from chatparse.engine.tool_typing import coerce_string, schema_types
from chatparse.errors import ChatparseError, InputTypeError, UsageError
from chatparse.finish import finish_kind
from chatparse.lazy import load
from chatparse.template.compile import CompiledField

IdFactory = Callable[[int], str]
# Errors of a call the parser refused before its state changed: the stream can go on after them.
_REFUSED = frozenset({"bad_input_type", "mixed_feed", "parser_finalized"})
Chunk = dict[str, Any]

# A chunk's one choice, copied per chunk (a copy costs less than a dict display).
_CHOICE: dict[str, Any] = {"index": 0, "delta": None, "finish_reason": None, "logprobs": None}
# ``json.dumps(value, ensure_ascii=False)`` builds this encoder on every call; one is enough.
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_encode_string: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]
# ``_ENCODER.encode`` builds the C encoder on every call; this one is built once (no cycle check: a cycle
# overflows the stack, and ``_encode`` asks the standard path which error it is). None without the C module.
_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_encode_c = None if _make_encoder is None else _make_encoder(
    None, _ENCODER.default, _encode_string, None, ": ", ", ", False, False, True)


def _encode(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``: the same text, the same errors."""
    if type(value) is str:
        return _encode_string(value)
    if _encode_c is not None:
        try:
            return "".join(_encode_c(value, 0))
        except RecursionError:
            pass  # a cycle, or nesting too deep: the standard encoder raises the error that says which
    return _ENCODER.encode(value)

REASONING_FIELDS = ("thinking", "reasoning_content", "reasoning")
CONTENT_FIELD = "content"
TOOLS_FIELD = "tool_calls"


def default_call_id(index: int) -> str:
    """A random OpenAI-style call id (``call_`` + 24 hex characters); ``index`` is unused."""
    del index
    return "call_" + uuid.uuid4().hex[:24]


def arguments_json(arguments: Any, where: str = "arguments") -> str:
    """The wire form of typed arguments: ``json.dumps`` with ``ensure_ascii=False`` (as vLLM)."""
    if isinstance(arguments, str):
        return arguments  # already a string (e.g. an untyped template): passed through unchanged
    return _json_text({} if arguments is None else arguments, where)


def _json_text(value: Any, where: str) -> str:
    """``value`` as JSON text; a value JSON cannot hold (a set, bytes, a cycle, an integer past the
    4,300-digit limit) is an ``InputTypeError`` naming ``where``. ``NaN``/``Infinity`` are written as
    Python's ``json`` (and vLLM) write them: the JSON readers of the content parsers accept them from the
    model, as transformers' do, so a parse can hold them."""
    try:
        return _encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        raise InputTypeError(
            f"Expected a JSON value at {where}, found a {type(value).__name__} JSON cannot hold ({reason}). Convert "
            "the message's values to str, int, float, bool, None, list and dict first.",
            code="not_json", path=where,
        ) from None


def finish_reason(message: Mapping[str, Any], reason: str | None = "stop") -> str:
    """The wire's finish reason for a message that ended for ``reason`` (the engine's, in the vocabulary of
    ``chatparse.finish``, any case): ``length`` for a token-limit reason (``max_tokens``, ...); else
    ``tool_calls`` when the message made calls; else ``stop`` for an ended turn (``end_turn``, ``eos``, ...)
    or the reason itself for another stop (``content_filter``, ``abort``). An unknown reason raises
    ``UnknownFinishReasonError``."""
    return _finish(bool(message.get("tool_calls")), reason)


def to_chat_message(
    message: Mapping[str, Any],
    *,
    reasoning_key: str = "reasoning_content",
    id_factory: IdFactory | None = None,
) -> dict[str, Any]:
    """A parsed message as a Chat Completions assistant message.

    ``content`` is None when absent; ``thinking`` goes under ``reasoning_key``; each tool call gets
    ``id_factory(index)`` (a random ``call_…`` id by default) and its arguments as a JSON string.
    """
    if not isinstance(message, Mapping):
        raise InputTypeError(f"Expected a parsed message (a dict), found {type(message).__name__}. Pass the dict "
                             "parse_response or ResponseParser.finalize returns.")
    make_id = id_factory or default_call_id
    out: dict[str, Any] = {"role": "assistant", "content": _text_or_none(message.get(CONTENT_FIELD), CONTENT_FIELD)}
    reasoning_field = next((k for k in REASONING_FIELDS if message.get(k) is not None), None)
    if reasoning_field is not None:
        out[reasoning_key] = _text_or_none(message[reasoning_field], reasoning_field)
    calls = [_wire_call(call, i, make_id) for i, call in enumerate(_call_list(message.get(TOOLS_FIELD)))]
    if calls:
        out["tool_calls"] = calls
    return out


def to_chat_completion(
    message: Mapping[str, Any],
    *,
    model: str,
    finish_reason: str | None = "stop",
    created: int | None = None,
    id: str | None = None,
    reasoning_key: str = "reasoning_content",
    id_factory: IdFactory | None = None,
) -> dict[str, Any]:
    """The full ``chat.completion`` object for one parsed message (one choice)."""
    wire = to_chat_message(message, reasoning_key=reasoning_key, id_factory=id_factory)
    return {
        "id": id or "chatcmpl-" + uuid.uuid4().hex,
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": wire,
            "finish_reason": _finish(bool(wire.get("tool_calls")), finish_reason),
            "logprobs": None,
        }],
    }


def _call_list(value: Any) -> list[Any]:
    """The message's tool calls as a list of call objects (a lone call object is one call)."""
    if isinstance(value, Mapping):
        return [value]
    return [call for call in value if isinstance(call, Mapping)] if isinstance(value, list) else []


def _finish(made_calls: bool, reason: str | None) -> str:
    kind = finish_kind(reason)
    if kind == "limit":
        return "length"
    if made_calls:
        return "tool_calls"
    return str(reason).strip().lower() if kind == "interrupted" else "stop"


def _text_or_none(value: Any, where: str) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else _json_text(value, where)


def _call_name(fn: Mapping[str, Any], where: str) -> str:
    """A call's name on the wire: the string, or the JSON text of another value ("" for none)."""
    name = fn.get("name")
    return "" if name is None else name if isinstance(name, str) else _json_text(name, where)


def _wire_call(call: Any, index: int, make_id: IdFactory) -> dict[str, Any]:
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping):
        fn = {}  # not a call object (a template whose transform builds something else): an empty call
    where = f"tool_calls[{index}].function"
    return {
        "id": make_id(index),
        "type": "function",
        "function": {"name": _call_name(fn, f"{where}.name"),
                     "arguments": arguments_json(fn.get("arguments"), f"{where}.arguments")},
    }


# --- streaming ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _TextState:
    """One text field: what was sent (as pieces: re-joining on every send would be quadratic), the
    regions' values so far, and the open region's held trailing whitespace."""

    name: str
    join: str | None  # the field's ``join``
    streamable: bool  # the field's content parser streams (its chunks are never dirty)
    strips: bool  # a plain-text field whose regions are stripped (see ``_strips``)
    whole: bool  # a ``strip_joined`` field: one text stream, stripped at its ends only
    key: str = CONTENT_FIELD  # the delta key its text goes out under
    streams: bool = False  # the open region's chunks go out as they arrive (see ``_update_streams``)
    sent: list[str] = field(default_factory=list)  # every delta sent for the field
    region_start: int = 0  # where the open region's deltas begin in ``sent``
    values: list[str] = field(default_factory=list)  # closed regions' values (the last one without join)
    synced: bool = True  # what was sent equals the field's value as of the last close
    started: bool = False  # the open region produced non-space text
    held: str = ""
    closed_once: bool = False


@dataclass(slots=True)
class _CallState:
    """One tool call in flight: header/early-argument bookkeeping."""

    index: int | None = None
    id: str | None = None
    name: str | None = None
    emitted: list[str] = field(default_factory=list)  # argument fragments sent so far (joined at the close)
    values: dict[str, Any] = field(default_factory=dict)  # the typed value of each key sent early, in order
    pending: str | None = None  # XML: the last completed key's fragment, sent when the next completes
    scanner: Any = None
    xml: bool = False  # the scanner reads XML parameters (else JSON)
    waiting: list[str] = field(default_factory=list)  # body text the scanner has not seen yet (see ``_scan``)
    early: bool = True  # still streaming arguments early


_V = TypeVar("_V")


class _HeadField(Generic[_V]):
    """A stream attribute every chunk carries (``id``, ``created``, ``model``): it lives in the head dict
    each chunk is copied from, so building a chunk reads no attribute."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    @overload
    def __get__(self, stream: None, owner: type | None = None) -> _HeadField[_V]: ...
    @overload
    def __get__(self, stream: ChatCompletionStream, owner: type | None = None) -> _V: ...
    def __get__(self, stream: ChatCompletionStream | None, owner: type | None = None) -> _HeadField[_V] | _V:
        return self if stream is None else stream._head[self.key]  # type: ignore[no-any-return]

    def __set__(self, stream: ChatCompletionStream, value: _V) -> None:
        stream._head[self.key] = value


class ChatCompletionStream:
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
        # A one-pass iterable is read once; anything else goes to the parser as is (it names bad input).
        tool_list = list(tools) if isinstance(tools, Iterable) and not isinstance(tools, str | bytes) else tools
        self.parser = ResponseParser(template, prefix, tools=tool_list, on_malformed=on_malformed)
        self._feed_text = self.parser.feed_text  # (bound once: ``feed``'s shortest path calls it per feed)
        self.buffer_calls = buffer_calls
        # What every chunk starts with, copied per chunk (``id``, ``created`` and ``model`` read and write it).
        self._head: Chunk = {"id": completion_id or "chatcmpl-" + uuid.uuid4().hex, "object": "chat.completion.chunk",
                             "created": int(time.time()) if created is None else created, "model": model}
        self._reasoning_key = reasoning_key
        self._make_id = id_factory or default_call_id
        self._params: dict[str, dict[str, Any]] = {}
        if tool_list:
            self._params = load("chatparse.tools.schema").tool_parameter_properties(tool_list)
        self._text: dict[str, _TextState] = {}
        self._call: _CallState | None = None
        self._calls_sent = 0  # tool-call indices handed out
        self._calls_made = 0  # calls that closed with a value
        # (name, final arguments' JSON, arguments object) of every call completed on the wire
        self._sent_calls: list[tuple[str, str, Any]] = []
        # The calls whose header went out but which the message does not hold (the code of the event that
        # dropped them): the final chunk names them, since what was sent cannot be taken back.
        self._dropped: dict[int, str] = {}
        self._role_sent = False
        self._done = False
        self._failed: Exception | None = None  # the first error a feed or finish raised (``_mark_failed``)
        self.message: dict[str, Any] | None = None
        self.malformed: list[dict[str, Any]] = []
        self.mismatches: list[str] = []  # fields whose early deltas could not be reconciled (a bug if any)
        self._pending_chunks: list[Chunk] = []
        # The text field whose chunks take ``feed``'s shortest path: its region produced text (so the role
        # went out) and streams as it comes, and no other event came since (set by ``_text_chunk``).
        self._fast: _TextState | None = None
        self._run(self.parser.initial_events, last_feed=True)
        self._initial = self._take()
        self._fast = None  # the first feed returns the prefix's chunks too

    @property
    def reasoning_key(self) -> str:
        """The delta key reasoning text goes out under."""
        return self._reasoning_key

    @reasoning_key.setter
    def reasoning_key(self, value: str) -> None:
        self._reasoning_key = value
        self._fast = None  # its key was resolved for the shortest path

    # --- public -----------------------------------------------------------------------------------

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

    # --- event routing ----------------------------------------------------------------------------

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

    def _route_text(self, kind: str, event: dict[str, Any], fld: CompiledField) -> None:
        name = event["field"]
        state = self._text.get(name)
        if state is None:
            state = self._text[name] = _TextState(name, fld.join, fld.parser.streamable, _strips(fld),
                                                  whole=fld.ext.strip_joined)
            _update_streams(state)
        if state.whole:
            self._route_whole_text(kind, event, state)
            return
        if kind == "region_open":
            state.started, state.held, state.region_start = False, "", len(state.sent)
        elif kind == "region_chunk":
            if not event["dirty"] and state.streams:
                self._text_chunk(name, state, event["text"])
        elif kind == "region_close":
            value = event["value"]
            text = value if isinstance(value, str) else ""
            join = fld.join if isinstance(value, str) else None
            joined = join is not None
            if joined and not text and self.parser.template.ext.end:
                # an empty block (a prompt's pre-written '<think></think>') adds nothing, as in the parser
                state.started, state.held, state.region_start = False, "", len(state.sent)
                return
            # What this region adds to the field's value: the join string and its text, or (a field
            # without join) its text replacing the value.
            expected = (join + text if join is not None and state.values else text) \
                if joined or not state.closed_once else None
            if joined:
                state.values.append(value)
            else:
                state.values = [text]
            state.closed_once = True
            _update_streams(state)
            state.started, state.held = False, ""
            if expected is not None and state.synced:
                self._reconcile_region(name, state, expected)
            else:  # a repeated field without join: the whole value against everything sent
                target = join.join(state.values) if join is not None else text
                self._reconcile_text(name, state, target)
            state.region_start = len(state.sent)

    def _route_whole_text(self, kind: str, event: dict[str, Any], state: _TextState) -> None:
        """A ``strip_joined`` field streams as one text: its pieces and joins as written, the leading
        whitespace of the whole dropped and trailing whitespace held until text follows it."""
        name, join = event["field"], state.join
        if kind == "region_open" and state.closed_once and join:
            self._text_chunk(name, state, join)
        elif kind == "region_chunk" and not event["dirty"]:
            self._text_chunk(name, state, event["text"])
        elif kind == "region_close":
            state.closed_once = True

    def _text_chunk(self, name: str, state: _TextState, text: str) -> None:
        if not state.started:
            text = text.lstrip()
            if not text:
                return
            state.started = True
            if not state.whole and state.join is not None and state.values:
                text = state.join + text
        combined = state.held + text
        kept = combined.rstrip()
        state.held = combined[len(kept):]
        self._emit_text(name, state, kept)
        if state.streams and state.streamable:  # its chunks are never dirty (the registry's contract)
            state.key = CONTENT_FIELD if name == CONTENT_FIELD else self._reasoning_key
            self._fast = state

    def _reconcile_region(self, name: str, state: _TextState, expected: str) -> None:
        """At a region's close, everything before it already matched: only its own text is compared."""
        sent = "".join(state.sent[state.region_start:])
        if expected.startswith(sent):
            self._emit_text(name, state, expected[len(sent):])
        else:
            state.synced = False
            if name not in self.mismatches:
                self.mismatches.append(name)

    def _reconcile_text(self, name: str, state: _TextState, target: str) -> None:
        sent = "".join(state.sent)
        state.sent = [sent] if sent else []
        state.region_start = len(state.sent)
        if target.startswith(sent):
            self._emit_text(name, state, target[len(sent):])
            state.synced = True
        else:
            state.synced = False
            if name not in self.mismatches:
                self.mismatches.append(name)

    def _emit_text(self, name: str, state: _TextState, text: str) -> None:
        if not text:
            return
        state.sent.append(text)
        self._delta({CONTENT_FIELD if name == CONTENT_FIELD else self.reasoning_key: text})

    # --- tool calls -------------------------------------------------------------------------------

    def _route_call(self, kind: str, event: dict[str, Any], fld: CompiledField, *, live: bool) -> None:
        if kind == "region_open":
            call = self._call = _CallState()
            if self.buffer_calls:
                return  # nothing of a call goes out before it is complete
            shape = _call_shape(fld)
            if shape.name_capture is not None and live and self.parser.current_region == TOOLS_FIELD:
                name = self.parser.current_captures.get(shape.name_capture)
                if isinstance(name, str):
                    self._header(call, name)
            call.scanner = self._scanner(call, shape)
            call.xml = shape.body == "xml"
        elif kind == "region_chunk":
            current = self._call
            if current is not None and current.scanner is not None:
                self._scan(current, event["text"])
        elif kind == "region_close":
            values = _call_list(event["value"])
            first = self._call or _CallState()
            self._call = None
            for position, value in enumerate(values):
                self._close_call(first if position == 0 else _CallState(), value)
            if not values and first.index is not None:  # read item by item, the streamed call failed
                codes = [problem["code"] for problem in event.get("malformed") or ()]
                self._dropped[first.index] = "truncated" if "truncated" in codes else codes[0] if codes else "empty"
        elif kind == "region_malformed":
            if self._call is not None and self._call.index is not None:
                self._dropped[self._call.index] = event["code"]  # its header stays: the final chunk names it
            self._call = None

    def _scan(self, call: _CallState, text: str) -> None:
        """Feed the call's scanner. Its callbacks fire only at a character that ends a key: the ``,`` or
        ``}`` after a JSON value (at most one level down; ``ArgumentStream.can_fire``), the ``>`` of the tag
        after an XML value. Text without one waits and goes in with the next text that has one: the same
        callbacks in the same feed, with one scanner call per key instead of one per feed."""
        if (">" in text) if call.xml else call.scanner.can_fire(text):
            _feed_scanner(call, text)
        else:
            call.waiting.append(text)

    def _close_call(self, call: _CallState, value: Mapping[str, Any]) -> None:
        fn = value.get("function")
        if not isinstance(fn, Mapping):
            fn = {}
        where = f"tool_calls[{self._calls_made}].function"
        name = _call_name(fn, f"{where}.name")
        arguments = fn.get("arguments")
        final = _streamed_json(call, arguments) or arguments_json(arguments, f"{where}.arguments")
        if call.index is None or call.name != name:
            if call.index is not None:
                self.mismatches.append(f"tool_calls[{call.index}].name")
            call = _CallState()
            self._header(call, name)
        self._calls_made += 1
        self._sent_calls.append((name, final, arguments))
        sent = "".join(call.emitted)
        if final.startswith(sent):
            self._args(call, final[len(sent):])
        else:
            self.mismatches.append(f"tool_calls[{call.index}].arguments")

    def _header(self, call: _CallState, name: str) -> None:
        call.index = self._calls_sent
        self._calls_sent += 1
        call.id = self._make_id(call.index)
        call.name = name
        self._delta({"tool_calls": [{"index": call.index, "id": call.id, "type": "function",
                                     "function": {"name": name, "arguments": ""}}]})

    def _args(self, call: _CallState, fragment: str) -> None:
        if not fragment or call.index is None:
            return
        call.emitted.append(fragment)
        self._delta({"tool_calls": [{"index": call.index, "function": {"arguments": fragment}}]})

    def _scanner(self, call: _CallState, shape: _Shape) -> Any:
        """An incremental scanner over the call body, or None when nothing can stream early."""
        # The callbacks are partials of methods, not closures, so that a stream pickles mid-call.
        if shape.body == "json":
            stream = load("chatparse.tools.stream")
            on_key = functools.partial(self._on_json_key, call, shape)
            if not shape.args_keys:
                return stream.ArgumentStream(on_key_completed=on_key)
            # No header yet (arguments before "name"): all wait for the close.
            return stream.ArgumentStream(on_key_completed=on_key, nested_key=shape.args_keys,
                                         on_nested_key_completed=functools.partial(self._early_key, call))
        if shape.body == "xml" and shape.args_whole:
            xml_stream = load("chatparse.tools.xml_stream")
            return xml_stream.XMLArgumentStream(on_key_completed=functools.partial(self._early_key, call, hold_one=True))
        return None

    def _on_json_key(self, call: _CallState, shape: _Shape, key: str, value: Any) -> None:
        if shape.args_whole:
            self._early_key(call, key, value)
        elif key in shape.name_keys and call.index is None:
            if isinstance(value, str):
                self._header(call, value)

    def _early_key(self, call: _CallState, key: str, value: Any, *, hold_one: bool = False) -> None:
        """Send ``key``'s fragment when its final serialization is certain (XML: one key later)."""
        if not call.early or call.index is None or call.name is None:
            call.early = False  # name unknown yet: arguments wait for the close
            return
        if key in call.values:
            call.early = False  # a repeated key: the engine keeps the last value
            return
        typed = call.values[key] = self._typed(call.name, key, value) if self._params else value
        lead = "{" if not call.emitted and call.pending is None else ", "
        fragment = lead + _encode_string(key) + ": " + _encode(typed)
        if not hold_one:  # ``_args``, inline
            call.emitted.append(fragment)
            self._delta({"tool_calls": [{"index": call.index, "function": {"arguments": fragment}}]})
            return
        if call.pending is not None:
            self._args(call, call.pending)
        call.pending = fragment

    def _typed(self, name: str, key: str, value: Any) -> Any:
        """``value`` typed by the request's tools exactly as the engine types it at the close."""
        properties = self._params.get(name)
        if not properties or key not in properties:
            return value
        types = schema_types(properties[key])
        if not types:
            return value
        literals = self.parser.template.fields[TOOLS_FIELD].ext.python_literals
        if isinstance(value, str):
            return coerce_string(value, types, literals)
        if isinstance(value, list) and "array" not in types:
            return [coerce_string(v, types, literals) if isinstance(v, str) else v for v in value]
        return value

    # --- chunk plumbing ---------------------------------------------------------------------------

    def _ensure_role(self) -> None:
        if not self._role_sent:
            self._role_sent = True
            self._pending_chunks.append(self._chunk({"role": "assistant", "content": ""}, None))

    def _delta(self, delta: dict[str, Any]) -> None:
        self._ensure_role()
        self._pending_chunks.append(self._chunk(delta, None))

    def _chunk(self, delta: dict[str, Any], reason: str | None) -> Chunk:
        choice = _CHOICE.copy()
        choice["delta"], choice["finish_reason"] = delta, reason
        chunk = self._head.copy()
        chunk["choices"] = [choice]
        return chunk

    def _take(self) -> list[Chunk]:
        out, self._pending_chunks = self._pending_chunks, []
        return out


@dataclass(frozen=True)
class _Shape:
    """Where a tool-call field's name and arguments come from, read off its transform."""

    name_capture: str | None = None  # "{name}": a named group of the open delimiter
    name_keys: tuple[str, ...] = ()  # "{content.name}": a top-level key of a JSON body (or its spellings)
    args_whole: bool = False  # "{content}": the whole body is the arguments object
    args_keys: tuple[str, ...] = ()  # "{content.arguments}": the arguments are one top-level key's value
    body: str = ""  # "json" | "xml" | "" (no early streaming)


def _call_shape(fld: CompiledField) -> _Shape:
    if fld.content == "json-calls":
        return _json_calls_shape(fld, fld.content_args)
    if fld.content in ("json-calls-or-function", "json-calls-or-code"):  # other spellings are not read early
        return _json_calls_shape(fld, fld.content_args.get("json_calls", {}))
    transform = fld.transform
    fn = transform.get("function") if isinstance(transform, Mapping) and not fld.transform_each else None
    if fn == "{content}":  # the body is the function object itself: {"name": …, "arguments": {…}}
        fn = {"name": "{content.name}", "arguments": "{content.arguments}"}
    if not isinstance(fn, Mapping):
        return _Shape()
    name, args = fn.get("name"), fn.get("arguments")
    body = {"json": "json", "xml-inline": "xml", "xml-params": "xml"}.get(fld.content, "")
    if body == "json" and set(fld.content_args) - {"raw_control_chars"}:
        body = ""  # dialect knobs (unquoted keys, lifted strings): the scanner reads JSON only
    if body == "xml" and _xml_args_unusual(fld):
        body = ""
    name_capture = name_key = None
    if isinstance(name, str) and name.startswith("{") and name.endswith("}") and name.count("{") == 1:
        ref = name[1:-1]
        if ref.startswith("content."):
            name_key = ref[len("content."):] if ref.count(".") == 1 else None
        elif ref != "content" and "." not in ref:
            name_capture = ref
    args_key = _content_key(args) if body == "json" else None
    return _Shape(name_capture=name_capture, name_keys=(name_key,) if name_key else (),
                  args_whole=args == "{content}", args_keys=(args_key,) if args_key else (), body=body)


def _json_calls_shape(fld: CompiledField, args: Mapping[str, Any]) -> _Shape:
    """One ``json-calls`` call object per region (``accept: ["object"]``, ``transform_each`` with
    ``{name}``/``{arguments}``): the name and the arguments are top-level keys, in their spellings."""
    transform = fld.transform if isinstance(fld.transform, Mapping) else {}
    if (list(args.get("accept", ["array"])) != ["object"] or args.get("name_as_key")
            or args.get("decode_string_arguments") or not fld.transform_each
            or transform.get("function") != {"name": "{name}", "arguments": "{arguments}"}):
        return _Shape()
    return _Shape(name_keys=tuple(args.get("name_keys", ["name"])),
                  args_keys=tuple(args.get("arguments_keys", ["arguments", "parameters"])), body="json")


def _content_key(ref: Any) -> str | None:
    """``key`` for a ``"{content.key}"`` placeholder (one level deep), else None."""
    if not isinstance(ref, str) or not (ref.startswith("{content.") and ref.endswith("}")):
        return None
    key = ref[len("{content.") : -1]
    return key if key and "." not in key and "{" not in key and "}" not in key else None


# The parameter layout ``XMLArgumentStream`` reads (Qwen3-Coder / Qwen 3.5).
_QWEN_PARAMETERS = {"param_open": "<parameter=(?P<key>[^>\\n]+)>", "value_close": "</parameter>",
                    "strip_newlines": True}


def _xml_args_unusual(fld: CompiledField) -> bool:
    """Parameters the early XML scanner cannot follow: values typed by the parser itself, merged
    duplicates, or an ``xml-params`` layout other than Qwen's ``<parameter=KEY>``."""
    args = fld.content_args
    if fld.content == "xml-params":
        return any(args.get(key) != value for key, value in _QWEN_PARAMETERS.items())
    return bool(args.get("value_parser") or args.get("merge_duplicates"))


_PLAIN = (str, int, bool, type(None))  # values whose JSON text equal values of the same type share


def _feed_scanner(call: _CallState, text: str) -> None:
    """Feed the call's scanner ``text``, after the text that waited for it (see ``_scan``)."""
    waiting = call.waiting
    if waiting:
        waiting.append(text)
        text = "".join(waiting)
        waiting.clear()
    call.scanner.feed(text)


def _streamed_json(call: _CallState, arguments: Any) -> str | None:
    """The arguments' JSON without serializing them again, when every key already went out early, in
    order, with a plain value (string, integer, boolean, null) equal to the final one: the fragments
    and ``}``. None otherwise (the caller serializes)."""
    sent = call.values
    if not call.early or not sent or type(arguments) is not dict or len(arguments) != len(sent):
        return None
    for (key, value), (final_key, final_value) in zip(sent.items(), arguments.items(), strict=True):
        if key != final_key or type(value) is not type(final_value) or type(value) not in _PLAIN \
                or value != final_value:
            return None
    return "".join(call.emitted) + (call.pending or "") + "}"


def _update_streams(state: _TextState) -> None:
    """Whether the field's chunks go out as they arrive: a stripped plain-text field whose regions join
    (or its first region), or a ``strip_joined`` one; the others wait for the region's value."""
    state.streams = state.whole or (state.strips and (state.join is not None or not state.closed_once))


def _strips(fld: CompiledField) -> bool:
    return fld.content == "text" and fld.transform is None and bool(fld.content_args.get("strip", True))
