"""The JSON argument scanner's value states: strings (escapes, surrogates, progress), numbers and
literals, and container values nobody watches inside, read whole a bracket at a time."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from chatparse.tools.jsonvalue import read_json_number
from chatparse.tools.keyed_stream import KeyCallback, KeyedStream, ProgressCallback
from chatparse.tools.near_json import MAX_DEPTH

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


class _JsonValues(KeyedStream):
    """The value states of ``ArgumentStream`` (its fields are set here)."""

    # Defined by the classes above (json_structure, stream); declared for the value states that call them.
    _handlers: list[Callable[[str, int], int]]
    _complete_value: Callable[[Any], None]
    _commit_pending: Callable[[], None]
    _streamed: Callable[[str | None], bool]
    _fail: Callable[..., int]

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
