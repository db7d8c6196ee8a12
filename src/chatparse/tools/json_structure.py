"""The JSON argument scanner's structural states: objects, arrays, keys, separators, and completing a
value (the top-level and nested key callbacks)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chatparse.tools.json_values import (
    _AFTER_VALUE,
    _DONE,
    _KEY,
    _KEY_OR_END,
    _LITERAL,
    _LITERALS,
    _NOT_READ,
    _NUMBER,
    _VALUE,
    _VALUE_OR_END,
    _WHOLE,
    _decode_run,
    _JsonValues,
)
from chatparse.tools.jsonvalue import read_json_number

_WS = re.compile(r"[ \t\n\r]*")
_ws_run: Callable[[str, int], Any] = _WS.match  # ``_ws_run(chunk, i).end()``: past the whitespace at ``i``


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


class _JsonStructure(_JsonValues):
    """The structural states of ``ArgumentStream``."""

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
