"""``ArgumentStream``: an incremental JSON scanner for streamed tool-call arguments.

A character state machine that keeps its state between chunks and never re-reads input:
linear time. It fires ``on_key_completed`` per top-level key (and, if asked,
``on_nested_key_completed`` per key of the object that is one top-level key's value), streams
one string key's decoded text through ``on_string_progress``, never raises from
``feed``/``finish`` and ends in an ``ArgumentStreamResult`` (``complete`` | ``truncated`` |
``invalid``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from chatparse.errors import ChatparseError
from chatparse.finish import (
    INTERRUPTED_REASONS,
    LIMIT_REASONS,
    STOP_REASONS,
    UnknownFinishReasonError,
    finish_kind,
)
from chatparse.tools.errors import ArgumentStreamError
from chatparse.tools.jsonvalue import read_json_number
from chatparse.tools.near_json import MAX_DEPTH

Status = Literal["complete", "truncated", "invalid"]
KeyCallback = Callable[[str, Any], object]
ProgressCallback = Callable[[str, str], object]

# The shared vocabulary (``chatparse.finish``): a stream the token limit cut, or that a filter, abort or
# error stopped, ends ``truncated``; one whose turn ended is ``complete`` only when its object closed.
END_REASONS = STOP_REASONS
CUT_REASONS = LIMIT_REASONS | INTERRUPTED_REASONS

_WS = re.compile(r"[ \t\n\r]*")
_ws_run: Callable[[str, int], Any] = _WS.match  # ``_ws_run(chunk, i).end()``: past the whitespace at ``i``
_STRING_STOP = re.compile(r'["\\]')
# A run of a string's characters and complete one-letter escapes, read in one step (the common case);
# ``scanstring`` (the standard library's C string reader, control characters allowed) decodes it.
_STRING_RUN = re.compile(r'(?:[^"\\]++|\\["\\/bfnrt])*+')
_decode_run: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_NUMBER_CHARS = re.compile(r"[0-9eE.+\-]*")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}\Z")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, tuple[str, Any]] = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}

# Scanner states. Each names what the next significant character may be.
(_START, _VALUE, _KEY_OR_END, _KEY, _COLON, _VALUE_OR_END, _AFTER_VALUE,
 _STRING, _ESCAPE, _NUMBER, _LITERAL, _DONE, _FAILED, _WHOLE) = range(14)

# A container value nobody watches inside (see ``ArgumentStream._whole``) is read a bracket at a time: this
# skips what lies between (other characters and whole strings) up to a bracket or a string left open.
_WHOLE_SKIP: Callable[[str, int], Any] = re.compile(r'(?:[^\[\]{}"]++|"(?:[^"\\]++|\\.)*+")*+', re.DOTALL).match
_STRING_REST = re.compile(r'(?:[^"\\]++|\\.)*+', re.DOTALL)


def _balanced(levels: int) -> str:
    """A whole container value nested at most ``levels`` deep, brackets counted as ``_whole`` counts them
    (outside strings, any closer for any opener)."""
    inner = r'[^\[\]{}"]++|"(?:[^"\\]++|\\.)*+"'
    pattern = rf"[\[{{](?:{inner})*+[\]}}]"
    for _ in range(levels - 1):
        pattern = rf"[\[{{](?:{inner}|{pattern})*+[\]}}]"
    return pattern


# A ``"key":`` read in one step (``ArgumentStream._member``), a key without escapes, with its value when it
# has arrived whole: a container nested at most ``_MEMBER_LEVELS`` deep, a string with one-letter escapes
# only, a number with the character after it, or a literal (``at``: where the value starts).
_MEMBER_LEVELS = 4
_MEMBER = re.compile(
    r'"(?P<key>[^"\\]*+)"[ \t\n\r]*+:[ \t\n\r]*+(?P<at>)(?:(?P<container>' + _balanced(_MEMBER_LEVELS) + r')'
    r'|"(?P<string>(?:[^"\\]++|\\["\\/bfnrt])*+)"'
    r'|(?P<number>-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+)(?=[^0-9eE.+\-])'
    r'|(?P<literal>true|false|null))?', re.DOTALL)
_NOT_READ = object()  # (``_member``: the value is left to the character-wise states)


class _Doubt(Exception):
    """The whole-value reader leaves this value to the character-wise scanner (its exact verdict)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Doubt  # a repeated key
    return value


def _float(text: str) -> float:
    """A number with a fraction or exponent. The C reader passes only JSON's number grammar here (and reads
    integers itself: one past Python's digit limit raises ``ValueError``, a doubt); what it leaves is the
    character-wise scanner's check that the number is finite (``read_json_number``)."""
    number = float(text)
    if number - number != 0:  # inf (nan cannot come from this grammar)
        raise _Doubt
    return number


def _constant(text: str) -> Any:
    raise _Doubt  # NaN, Infinity: not JSON


_WHOLE_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_float=_float,
                                  parse_constant=_constant, strict=False)


@dataclass(frozen=True)
class ArgumentStreamResult:
    """What a finished stream holds: for ``truncated``/``invalid``, only keys whose values closed.

    ``partial_key`` is the top-level key whose value was still arriving, ``partial_text`` the
    decoded text that arrived for it when that value is a string (provisional, never final).
    """

    status: Status
    arguments: dict[str, Any]
    completed_keys: tuple[str, ...]
    partial_key: str | None
    received_chars: int
    error: ChatparseError | None = None
    finish_reason: str | None = None
    partial_text: str | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "complete"


class KeyedStream:
    """What every per-key argument stream shares: callbacks, completion bookkeeping, ``finish``."""

    def __init__(
        self,
        on_key_completed: KeyCallback | None,
        on_string_progress: ProgressCallback | None,
        stream_key: str | None,
    ) -> None:
        self.on_key_completed = on_key_completed
        self.on_string_progress = on_string_progress
        self.stream_key = stream_key
        self._received = 0
        self._arguments: dict[str, Any] = {}  # top-level values, filled as they complete
        self._completed: list[str] = []
        self._partial_key: str | None = None
        self._error: ChatparseError | None = None
        self._callback_error: ArgumentStreamError | None = None
        self._result: ArgumentStreamResult | None = None

    @property
    def received_chars(self) -> int:
        return self._received

    @property
    def completed_keys(self) -> tuple[str, ...]:
        return tuple(self._completed)

    def finish(self, finish_reason: str | None = "stop") -> ArgumentStreamResult:
        """End the stream. A cut (``length``) gives ``truncated``; never raises; idempotent."""
        if self._result is None:
            try:
                self._result = self._final_result(finish_reason)
            except Exception as problem:
                self._set_error(ArgumentStreamError(f"Scanner failure: {problem!r}", code="internal_error"))
                self._result = self._make_result("invalid", self._error, finish_reason)
        return self._result

    # --- hooks for the concrete scanners ----------------------------------------------

    def _closed(self) -> bool:
        """Whether the argument text ended cleanly (nothing left open)."""
        raise NotImplementedError

    def _started(self) -> bool:
        """Whether any significant text arrived."""
        raise NotImplementedError

    def _close_at_end(self) -> None:
        """Commit whatever is whole at the end of input (called only when no error occurred)."""

    def _partial_text(self) -> str | None:
        return None

    # --- shared bookkeeping -----------------------------------------------------------

    def _complete_key(self, key: str, value: Any) -> None:
        self._arguments[key] = value
        self._completed.append(key)
        self._partial_key = None
        if self.on_key_completed is not None:
            self._call(self.on_key_completed, key, value)

    def _progress(self, piece: str) -> None:
        if piece and self.on_string_progress is not None and self.stream_key is not None:
            self._call(self.on_string_progress, self.stream_key, piece)

    def _call(self, callback: Callable[[str, Any], object], key: str, value: Any) -> None:
        if self._callback_error is not None:
            return  # the consumer is in an unknown state: tell it nothing more
        try:
            callback(key, value)
        except Exception as problem:
            error = ArgumentStreamError(
                f"The callback for key {key!r} raised {type(problem).__name__}: {problem}",
                code="callback_failed", key=key, offset=self._received, exception=problem,
            )
            error.__cause__ = problem
            self._callback_error = error

    def _set_error(self, error: ChatparseError) -> None:
        if self._error is None:
            self._error = error

    def _final_result(self, finish_reason: str | None) -> ArgumentStreamResult:
        if self._error is None:
            self._close_at_end()
        if self._error is not None:
            return self._make_result("invalid", self._error, finish_reason)
        if self._callback_error is not None:
            return self._make_result("invalid", self._callback_error, finish_reason)
        try:
            kind = finish_kind(finish_reason)
        except UnknownFinishReasonError as error:
            return self._make_result("invalid", error, finish_reason)
        if kind in ("limit", "interrupted"):
            return self._make_result("truncated", self._truncation_error(str(finish_reason)), finish_reason)
        if self._closed():
            return self._make_result("complete", None, finish_reason)
        return self._make_result("invalid", self._incomplete_error(), finish_reason)

    def _where(self) -> str:
        return f" inside the value of {self._partial_key!r}" if self._partial_key else ""

    def _truncation_error(self, finish_reason: str) -> ArgumentStreamError:
        return ArgumentStreamError(
            f"The output was cut (finish_reason={finish_reason!r}){self._where()} after {self._received} "
            f"characters; completed keys: {self._completed}.",
            code="truncated_arguments", key=self._partial_key, offset=self._received,
        )

    def _incomplete_error(self) -> ArgumentStreamError:
        if not self._started():
            return ArgumentStreamError(
                "Expected an arguments object; found no text.", code="empty_arguments", offset=self._received
            )
        return ArgumentStreamError(
            f"The arguments ended before they were closed{self._where()} (offset {self._received}).",
            code="incomplete_arguments", key=self._partial_key, offset=self._received,
        )

    def _make_result(self, status: Status, error: ChatparseError | None, reason: str | None) -> ArgumentStreamResult:
        return ArgumentStreamResult(
            status=status,
            arguments={key: self._arguments[key] for key in self._completed},
            completed_keys=tuple(self._completed),
            partial_key=None if status == "complete" else self._partial_key,
            received_chars=self._received,
            error=error,
            finish_reason=reason,
            partial_text=None if status == "complete" else self._partial_text(),
        )


class ArgumentStream(KeyedStream):
    """Feed JSON argument text in any chunks; ``finish(finish_reason)`` returns the result.

    ``on_key_completed(key, value)`` fires once per top-level key, when its value and the
    following ``,`` or ``}`` arrived (or at ``finish`` for a value that visibly closed).
    ``on_string_progress(stream_key, text)`` receives the decoded pieces of that key's
    string value while it arrives; their concatenation is the final value. With
    ``nested_key`` (a key, or a tuple of alternative spellings), ``on_nested_key_completed(key, value)``
    fires likewise for each key of the object that is that top-level key's value (``{"name": …,
    "arguments": {…}}``), when that key's value and the following ``,`` or ``}`` arrived; these keys are not
    top-level keys (the result still lists ``nested_key`` once, as one argument). A callback that
    raises is not called again (nor is any other) and the result becomes ``invalid``
    (``callback_failed``).
    Raw control characters inside strings are kept, as ``json.loads(strict=False)`` does.
    """

    def __init__(
        self,
        on_key_completed: KeyCallback | None = None,
        on_string_progress: ProgressCallback | None = None,
        stream_key: str | None = None,
        *,
        max_depth: int = MAX_DEPTH,
        nested_key: str | tuple[str, ...] | None = None,
        on_nested_key_completed: KeyCallback | None = None,
    ) -> None:
        super().__init__(on_key_completed, on_string_progress, stream_key)
        self.max_depth = max_depth
        self.nested_key = nested_key
        self._nested_keys = (nested_key,) if isinstance(nested_key, str) else tuple(nested_key or ())
        self.on_nested_key_completed = on_nested_key_completed
        self._watch_nested = nested_key is not None and on_nested_key_completed is not None
        self._state = _START
        self._containers: list[Any] = []  # open objects/arrays, outermost (the arguments) first
        self._keys: list[str | None] = []  # the pending key of each open object
        self._chunk_start = 0  # offset of the current chunk, for error positions
        self._pending: tuple[str, Any] | None = None  # a top-level value closed, separator not yet seen
        self._nested_pending: tuple[str, Any] | None = None  # likewise, a key of the watched nested object
        self._init_string_state()
        self._token: list[str] = []
        self._literal = ""
        self._token_start = 0  # the offset where the number or literal being read starts
        self._handlers: list[Callable[[str, int], int]] = [
            self._start, self._value, self._key_or_end, self._key, self._colon, self._value_or_end,
            self._after_value, self._string, self._escape, self._number, self._literal_char,
            self._done, self._failed, self._whole,
        ]
        # The container value read whole (``_whole``): its text so far, bracket depth, deepest depth,
        # whether a string is open (and ends with a backslash), and the offset where it starts;
        # ``_replaying``: the character-wise scanner is re-reading one.
        self._whole_parts: list[str] = []
        self._whole_depth = self._whole_max = 0
        self._whole_string = self._whole_escape = False
        self._whole_offset = 0
        self._replaying = False

    def _init_string_state(self) -> None:
        self._parts: list[str] = []
        self._emitted = 0  # parts already sent to on_string_progress
        self._is_key = False
        self._streaming = False
        self._escape_buf = ""  # after a backslash: "" (expect the escape letter) or "u" + hex digits
        self._high_surrogate = 0

    def can_fire(self, text: str) -> bool:
        """Whether feeding ``text`` now could fire a callback. ``False`` only when it surely cannot: no
        string progress is watched, and ``text`` has no ``,`` or ``}`` (a key completes at the one after
        its value; a ``]`` fires nothing, as only ``,`` or ``}`` may follow a completed value), or, inside
        a value read whole, no ``]`` or ``}`` (its commas end nothing; a closer goes in at once, so the
        state is known when the separator after the value comes), or, inside a string, no ``"`` (nothing
        fires before it ends; a quote goes in at once, for the same reason). Such text may wait and go in
        with later text (the caller joins it): the same callbacks fire, in the same later feed, with fewer
        calls; a long string goes in once, when it ends."""
        if self.on_string_progress is not None:
            return True
        state = self._state
        if state == _WHOLE:
            return "]" in text or "}" in text
        if state == _STRING or state == _ESCAPE:
            return '"' in text
        return "," in text or "}" in text

    def feed(self, chunk: str) -> None:
        """Scan one chunk. Never raises; bad input makes the final result ``invalid``."""
        if self._result is not None:
            return  # finished: later text cannot change the result
        if not isinstance(chunk, str):
            self._fail("not_text", f"expected text chunks; found {type(chunk).__name__}", 0)
            return
        self._chunk_start = self._received
        self._received += len(chunk)
        try:
            position, end, handlers = 0, len(chunk), self._handlers
            while position < end:
                position = handlers[self._state](chunk, position)
            self._flush_progress()
        except Exception as problem:  # a scanner bug must still not escape feed
            self._fail("internal_error", f"scanner failure: {problem!r}", 0)

    # --- structural states ----------------------------------------------------------

    def _start(self, chunk: str, i: int) -> int:
        i = _ws_run(chunk, i).end()
        if i == len(chunk):
            return i
        if chunk[i] != "{":
            return self._fail("not_an_object", f"expected '{{' to open the arguments object; found {chunk[i]!r}", i)
        return self._open(i, self._arguments, _KEY_OR_END)

    def _value(self, chunk: str, i: int) -> int:
        i = _ws_run(chunk, i).end()
        if i == len(chunk):
            return i
        char = chunk[i]
        if char == '"':
            self._begin_string(is_key=False)
            return i + 1
        if char == "{" or char == "[":
            containers = self._containers
            if not self._replaying and (len(containers) > 1 or not (
                    self._watch_nested and self._keys[0] in self._nested_keys)):
                # Nobody watches inside this value: read it whole (a token per regex step, then the C
                # decoder) instead of a handler per character.
                self._whole_parts.clear()
                self._whole_depth = self._whole_max = 0
                self._whole_string = self._whole_escape = False
                self._whole_offset = self._chunk_start + i
                self._state = _WHOLE
                return i
            if char == "{":
                return self._open(i, {}, _KEY_OR_END)
            return self._open(i, [], _VALUE_OR_END)
        if char == "-" or "0" <= char <= "9":
            self._token = []
            self._token_start = self._chunk_start + i  # errors point at the token's start, in any chunking
            self._state = _NUMBER
            return i
        if char in _LITERALS:
            self._literal = ""
            self._token_start = self._chunk_start + i
            self._state = _LITERAL
            return i
        return self._fail("unexpected_character", f"expected a JSON value; found {char!r}", i)

    def _key_or_end(self, chunk: str, i: int) -> int:
        i = _ws_run(chunk, i).end()
        if i < len(chunk) and chunk[i] == "}":
            return self._close(i)
        return self._key(chunk, i)

    def _key(self, chunk: str, i: int) -> int:
        i = _ws_run(chunk, i).end()
        if i == len(chunk):
            return i
        if chunk[i] != '"':
            return self._fail("unexpected_character", f"expected a quoted key; found {chunk[i]!r}", i)
        if not self._replaying:
            member = _MEMBER.match(chunk, i)
            if member is not None:
                end = self._member(member)
                if end >= 0:
                    return end
        self._begin_string(is_key=True)
        return i + 1

    def _watched(self, key: str) -> bool:
        """Whether ``key``, a key of the object open now, is the nested key watched inside."""
        return len(self._containers) == 1 and self._watch_nested and key in self._nested_keys

    def _streamed(self, key: str | None) -> bool:
        """Whether a string value of ``key``, a key of the object open now, streams as it arrives."""
        return (len(self._containers) == 1 and self.stream_key is not None and key == self.stream_key
                and self.on_string_progress is not None)

    def _member(self, member: re.Match[str]) -> int:
        """A ``"key":`` and, when it arrived whole, its value, in one step, with exactly the effects of the
        character-wise states: the key's bookkeeping, then the value completed (``_AFTER_VALUE``) or left
        to them (``_VALUE`` at its start): one not here yet, the watched nested object, the streamed string,
        a doubtful container, a number that is not finite. -1, nothing done, for a repeated key (they
        report it)."""
        key, kind = member.group("key"), member.lastgroup
        parent = self._containers[-1]
        pending_key = self._pending[0] if self._pending and parent is self._arguments else None
        if key in parent or key == pending_key:
            return -1
        self._keys[-1] = key
        if parent is self._arguments:
            self._partial_key = key
        value: Any = _NOT_READ
        if kind == "container":
            if not self._watched(key):
                value = self._decoded(member.group(kind), _MEMBER_LEVELS)
        elif kind == "string":
            if not self._streamed(key):  # (the streamed string's text goes out as it arrives)
                text = member.group(kind)
                value = _decode_run(text + '"', 0, False)[0] if "\\" in text else text
        elif kind == "number":
            number = read_json_number(member.group(kind))
            if number is not None:
                value = number
        elif kind == "literal":
            value = _LITERALS[member.group(kind)[0]][1]
        if value is _NOT_READ:
            self._state = _VALUE
            return member.end("at")
        self._complete_value(value)
        return member.end()

    def _colon(self, chunk: str, i: int) -> int:
        i = _ws_run(chunk, i).end()
        if i == len(chunk):
            return i
        if chunk[i] != ":":
            return self._fail("unexpected_character", f"expected ':' after the key; found {chunk[i]!r}", i)
        self._state = _VALUE
        return i + 1

    def _value_or_end(self, chunk: str, i: int) -> int:
        i = _ws_run(chunk, i).end()
        if i == len(chunk):
            return i
        if chunk[i] == "]":
            return self._close(i)
        self._state = _VALUE
        return i

    def _after_value(self, chunk: str, i: int) -> int:
        i = _ws_run(chunk, i).end()
        if i == len(chunk):
            return i
        char, in_object = chunk[i], isinstance(self._containers[-1], dict)
        if char == ",":
            self._commit_pending()
            self._state = _KEY if in_object else _VALUE
            return i + 1
        if char == ("}" if in_object else "]"):
            return self._close(i)
        closer = "'}'" if in_object else "']'"
        return self._fail("unexpected_character", f"expected ',' or {closer}; found {char!r}", i)

    def _whole(self, chunk: str, i: int) -> int:
        """A container value read whole: brackets counted outside strings until the value closes, then
        decoded by the standard library's C reader with this scanner's rules (no repeated keys, its number
        reading). Anything it doubts, a ``\\u`` escape, nesting past ``max_depth`` or the end of the
        arguments inside the value, is re-read character-wise from the value's start: the same result,
        callbacks and errors as without this path."""
        begin, end = i, len(chunk)
        if self._whole_string:  # inside a string the previous text left open
            if self._whole_escape:  # its first character is escaped
                self._whole_escape = False
                i += 1
            i = _STRING_REST.match(chunk, i).end()  # type: ignore[union-attr]  # (it matches the empty text)
            if i == end:
                self._whole_parts.append(chunk[begin:])
                return end
            if chunk[i] == "\\":  # a backslash ending the text: its character comes next
                self._whole_escape = True
                self._whole_parts.append(chunk[begin:])
                return end
            self._whole_string = False
            i += 1
        depth = self._whole_depth
        while True:
            i = _WHOLE_SKIP(chunk, i).end()  # to the next bracket, or a string the text leaves open
            if i == end:
                break
            char = chunk[i]
            if char == '"':  # open at the end of the text, maybe after a backslash that ends it
                self._whole_string = True
                self._whole_escape = _STRING_REST.match(chunk, i + 1).end() < end  # type: ignore[union-attr]
                break
            if char == "{" or char == "[":
                depth += 1
                if depth > self._whole_max:
                    self._whole_max = depth
            else:
                depth -= 1
                if depth == 0:  # the value closed
                    self._whole_parts.append(chunk[begin : i + 1])
                    return self._whole_done(i + 1)
            i += 1
        self._whole_depth = depth
        self._whole_parts.append(chunk[begin:])
        return end

    def _whole_done(self, stop: int) -> int:
        text = "".join(self._whole_parts)
        self._whole_parts.clear()
        value = self._decoded(text, self._whole_max)
        if value is not _NOT_READ:
            self._complete_value(value)
            return stop
        self._replay_whole(text)
        return stop

    def _decoded(self, text: str, levels: int) -> Any:
        """A whole container value's text (nested ``levels`` deep at most) read by the C decoder with this
        scanner's rules, or ``_NOT_READ`` when it doubts: a ``\\u`` escape (one split across chunks is
        whole in ``text``; an escaped backslash before a 'u' is taken for one too, which only costs the
        character-wise read), nesting past ``max_depth``, any decode error."""
        if "\\u" in text or len(self._containers) + levels > self.max_depth:
            return _NOT_READ
        try:
            value = _WHOLE_DECODER.decode(text)
        except (_Doubt, ValueError, RecursionError):
            return _NOT_READ
        if len(self._containers) <= 1:
            self._commit_pending()  # as ``_close`` does for a value of the arguments object
        return value

    def _replay_whole(self, text: str) -> None:
        """Read ``text`` (a container value's text from its first bracket) character-wise, as if the
        whole-value path had never taken it: errors keep their offsets."""
        chunk_start = self._chunk_start
        self._chunk_start = self._whole_offset
        self._state = _VALUE
        self._replaying = True
        try:
            position, end, handlers = 0, len(text), self._handlers
            while position < end:
                position = handlers[self._state](text, position)
        finally:
            self._replaying = False
            self._chunk_start = chunk_start

    def finish(self, finish_reason: str | None = "stop") -> ArgumentStreamResult:
        """End the stream (see ``KeyedStream.finish``). A container value still being read whole is
        re-read character-wise first, so what arrived of it counts as it would without that path."""
        if self._result is None and self._state == _WHOLE:
            text = "".join(self._whole_parts)
            self._whole_parts.clear()
            try:
                self._replay_whole(text)
            except Exception as problem:  # a scanner bug must still not escape finish
                self._fail("internal_error", f"scanner failure: {problem!r}", 0)
        return super().finish(finish_reason)

    def _done(self, chunk: str, i: int) -> int:
        i = _ws_run(chunk, i).end()
        if i < len(chunk):
            return self._fail("trailing_text", f"expected nothing after the arguments object; found {chunk[i]!r}", i)
        return i

    def _failed(self, chunk: str, i: int) -> int:
        return len(chunk)

    def _open(self, i: int, container: Any, state: int) -> int:
        if len(self._containers) >= self.max_depth:
            return self._fail("too_deep", f"expected nesting of at most {self.max_depth} levels", i)
        self._containers.append(container)
        self._keys.append(None)
        self._state = state
        return i + 1

    def _close(self, i: int) -> int:
        if len(self._containers) <= 2:
            self._commit_pending()  # the last key of the arguments object or of the watched nested one
        container = self._containers.pop()
        self._keys.pop()
        if self._containers:
            self._complete_value(container)
        else:
            self._state = _DONE
        return i + 1

    def _complete_value(self, value: Any) -> None:
        parent = self._containers[-1]
        if parent is self._arguments:
            self._pending = (self._keys[-1] or "", value)  # committed at the separator
        elif isinstance(parent, dict):
            key = self._keys[-1] or ""
            parent[key] = value
            if self._watch_nested and len(self._containers) == 2 and self._keys[0] in self._nested_keys:
                self._nested_pending = (key, value)  # committed at the separator
        else:
            parent.append(value)
        self._state = _AFTER_VALUE

    def _commit_pending(self) -> None:
        if self._nested_pending is not None:
            key, value = self._nested_pending
            self._nested_pending = None
            if self.on_nested_key_completed is not None:
                self._call(self.on_nested_key_completed, key, value)
        if self._pending is not None:
            key, value = self._pending
            self._pending = None
            self._complete_key(key, value)

    # --- strings --------------------------------------------------------------------

    def _begin_string(self, *, is_key: bool) -> None:
        self._init_string_state()
        self._is_key = is_key
        self._streaming = not is_key and self._streamed(self._keys[-1])
        self._state = _STRING

    def _string(self, chunk: str, i: int) -> int:
        if self._high_surrogate:  # only a low surrogate's escape may follow
            return self._string_after_surrogate(chunk, i)
        end = _STRING_RUN.match(chunk, i).end()  # type: ignore[union-attr]  # (it matches the empty text)
        if end > i:
            piece = chunk[i:end]
            self._parts.append(_decode_run(piece + '"', 0, False)[0] if "\\" in piece else piece)
        if end == len(chunk):
            return end
        if chunk[end] == '"':
            self._end_string(end)
            return end + 1
        self._escape_buf = ""  # a backslash: ``\u``, an invalid escape, or one the chunk cuts off
        self._state = _ESCAPE
        return end + 1

    def _string_after_surrogate(self, chunk: str, i: int) -> int:
        stop = _STRING_STOP.search(chunk, i)
        end = stop.start() if stop is not None else len(chunk)
        if self._high_surrogate and (end != i or chunk[i] != "\\"):
            return self._fail("invalid_unicode", "expected a low surrogate escape after a high surrogate", i)
        if end > i:
            self._parts.append(chunk[i:end])
        if stop is None:
            return end
        if chunk[end] == '"':
            self._end_string(end)
            return end + 1
        self._escape_buf = ""
        self._state = _ESCAPE
        return end + 1

    def _escape(self, chunk: str, i: int) -> int:
        if not self._escape_buf:
            char = chunk[i]
            if char == "u":
                self._escape_buf = "u"
                self._token_start = self._chunk_start + i  # errors point at the 'u', in any chunking
                return i + 1
            if char not in _SIMPLE_ESCAPES:
                return self._fail("invalid_escape", f"expected a JSON escape; found '\\{char}'", i)
            if self._high_surrogate:
                return self._fail("invalid_unicode", "expected a low surrogate escape after a high surrogate", i)
            self._parts.append(_SIMPLE_ESCAPES[char])
            self._state = _STRING
            return i + 1
        taken = chunk[i : i + 5 - len(self._escape_buf)]
        self._escape_buf += taken
        if len(self._escape_buf) == 5:
            self._state = _STRING
            self._decode_unicode_escape(self._escape_buf[1:], i)
        return i + len(taken)

    def _decode_unicode_escape(self, digits: str, i: int) -> None:
        if not _HEX4.match(digits):
            self._fail("invalid_escape", f"expected four hex digits after '\\u'; found {digits!r}", i,
                       at=self._token_start)
            return
        code = int(digits, 16)
        if self._high_surrogate:
            if not 0xDC00 <= code <= 0xDFFF:
                self._fail("invalid_unicode", "expected a low surrogate escape after a high surrogate", i,
                           at=self._token_start)
                return
            code = 0x10000 + ((self._high_surrogate - 0xD800) << 10) + (code - 0xDC00)
            self._high_surrogate = 0
        elif 0xD800 <= code <= 0xDBFF:
            self._high_surrogate = code  # held back until its low half arrives
            return
        elif 0xDC00 <= code <= 0xDFFF:
            self._fail("invalid_unicode", f"found a lone low surrogate '\\u{digits}'", i, at=self._token_start)
            return
        self._parts.append(chr(code))

    def _end_string(self, i: int) -> None:
        self._flush_progress()
        text = "".join(self._parts)
        if not self._is_key:
            self._complete_value(text)
            return
        parent = self._containers[-1]
        pending_key = self._pending[0] if self._pending and parent is self._arguments else None
        if text in parent or text == pending_key:
            self._fail("duplicate_key", f"found the key {text!r} twice in one object", i)
            return
        self._keys[-1] = text
        if parent is self._arguments:
            self._partial_key = text
        self._state = _COLON

    def _flush_progress(self) -> None:
        if self._streaming and self._emitted < len(self._parts):
            piece = "".join(self._parts[self._emitted :])
            self._emitted = len(self._parts)
            self._progress(piece)

    # --- numbers and literals -------------------------------------------------------

    def _number(self, chunk: str, i: int) -> int:
        end = _NUMBER_CHARS.match(chunk, i).end()  # type: ignore[union-attr]
        self._token.append(chunk[i:end])
        if end == len(chunk):
            return end  # the number may continue in the next chunk
        text = "".join(self._token)
        number = read_json_number(text)
        if number is None:
            return self._fail("invalid_number", f"expected a finite JSON number; found {text!r}", i,
                              at=self._token_start)
        self._complete_value(number)
        return end

    def _literal_char(self, chunk: str, i: int) -> int:
        word, value = _LITERALS[(self._literal or chunk[i])[0]]
        taken = chunk[i : i + len(word) - len(self._literal)]
        self._literal += taken
        if not word.startswith(self._literal):
            return self._fail("unexpected_character", f"expected {word!r}; found {self._literal!r}", i,
                              at=self._token_start)
        if self._literal == word:
            self._complete_value(value)
        return i + len(taken)

    # --- failure and the end ----------------------------------------------------------

    def _fail(self, code: str, message: str, i: int, *, at: int | None = None) -> int:
        """Fail at ``i`` of the chunk (``at``: at that offset of the whole text instead)."""
        offset = self._chunk_start + i if at is None else at
        self._set_error(ArgumentStreamError(
            f"Invalid arguments JSON at offset {offset}: {message}.", code=code, key=self._partial_key, offset=offset
        ))
        self._state = _FAILED  # its handler swallows the rest of every chunk
        self._streaming = False
        return i

    def _closed(self) -> bool:
        return self._state == _DONE

    def _started(self) -> bool:
        return self._state != _START

    def _close_at_end(self) -> None:
        """A value whose closing quote or bracket arrived is whole even without a separator."""
        if self._state in (_AFTER_VALUE, _DONE):
            self._commit_pending()

    def _partial_text(self) -> str | None:
        in_value_string = self._state in (_STRING, _ESCAPE) and not self._is_key
        return "".join(self._parts) if in_value_string and len(self._containers) == 1 else None


__all__ = ["CUT_REASONS", "END_REASONS", "ArgumentStream", "ArgumentStreamResult", "KeyedStream"]
