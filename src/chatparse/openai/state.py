"""A chunk stream's state: the fields ``ChatCompletionStream`` keeps (set here), per-field text and per-call
state, and building chunks from deltas."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from chatparse.engine import ResponseParser
from chatparse.engine.parser import OnMalformed
from chatparse.lazy import load
from chatparse.openai.ids import IdFactory, default_call_id
from chatparse.openai.message import CONTENT_FIELD, Chunk
from chatparse.template.compile import CompiledField

# A chunk's one choice, copied per chunk (a copy costs less than a dict display).
_CHOICE: dict[str, Any] = {"index": 0, "delta": None, "finish_reason": None, "logprobs": None}


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


def _update_streams(state: _TextState) -> None:
    """Whether the field's chunks go out as they arrive: a stripped plain-text field whose regions join
    (or its first region), or a ``strip_joined`` one; the others wait for the region's value."""
    state.streams = state.whole or (state.strips and (state.join is not None or not state.closed_once))


def _strips(fld: CompiledField) -> bool:
    return fld.content == "text" and fld.transform is None and bool(fld.content_args.get("strip", True))


_V = TypeVar("_V")


class _HeadField(Generic[_V]):
    """A stream attribute every chunk carries (``id``, ``created``, ``model``): it lives in the head dict
    each chunk is copied from, so building a chunk reads no attribute."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    @overload
    def __get__(self, stream: None, owner: type | None = None) -> _HeadField[_V]: ...
    @overload
    def __get__(self, stream: _StreamState, owner: type | None = None) -> _V: ...
    def __get__(self, stream: _StreamState | None, owner: type | None = None) -> _HeadField[_V] | _V:
        return self if stream is None else stream._head[self.key]  # type: ignore[no-any-return]

    def __set__(self, stream: _StreamState, value: _V) -> None:
        stream._head[self.key] = value


class _StreamState:
    """The stream's fields, set once by ``ChatCompletionStream.__init__``, and chunk building."""

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

    @property
    def reasoning_key(self) -> str:
        """The delta key reasoning text goes out under."""
        return self._reasoning_key

    @reasoning_key.setter
    def reasoning_key(self, value: str) -> None:
        self._reasoning_key = value
        self._fast = None  # its key was resolved for the shortest path

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
