"""``python-call-list``: ``[f(a=1), g(b="x")]`` into ``[{"name", "arguments"}]``, by the strict grammar
transformers 5.24 documents (keyword arguments only, Python and JSON literals, depth 100, integers
within ±(2^53−1)). A recursive-descent reader over an index; never evaluates code."""

from __future__ import annotations

import math
from typing import Any, NoReturn

import regex

from chatparse.content.recovery import PYTHON, Good, call_paren, read_items
from chatparse.content.registry import BadItem
from chatparse.errors import excerpt

_SPACE = regex.compile(r"[ \t\n\r]*")
_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
_NUMBER = regex.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_STRING = regex.compile(r"""'((?:[^'\\\n\r]|\\.)*)'|"((?:[^"\\\n\r]|\\.)*)\"""", regex.DOTALL)
_HEX4 = regex.compile(r"[0-9a-fA-F]{4}")
_SURROGATE = regex.compile(r"[\ud800-\udfff]")
_SIMPLE_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_CONSTANTS: dict[str, Any] = {"True": True, "true": True, "False": False, "false": False, "None": None, "null": None}
MAX_INTEGER = 2**53 - 1
MAX_DEPTH = 100


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> NoReturn:
        # transformers' wording; the region as an excerpt, then what stands at the fault
        snippet = self.text[self.pos : self.pos + 20]
        raise ValueError(f"python-call-list: {what} at position {self.pos}.\nContent: {excerpt(self.text)}\n"
                         f"Found: {snippet!r}")

    def peek(self, char: str) -> bool:
        self.pos = _SPACE.match(self.text, self.pos).end()
        return self.text.startswith(char, self.pos)

    def expect(self, char: str) -> None:
        if not self.peek(char):
            self.fail(f"expected {char!r}")
        self.pos += 1

    def sequence(self, close: str, read_item: Any) -> list[Any]:
        items: list[Any] = []
        if self.peek(close):
            self.pos += 1
            return items
        while True:
            items.append(read_item())
            if self.peek(close):
                self.pos += 1
                return items
            self.expect(",")

    def unique(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                self.fail(f"repeated name {key!r}")
            out[key] = value
        return out

    def name(self, what: str) -> str:
        self.pos = _SPACE.match(self.text, self.pos).end()
        m = _NAME.match(self.text, self.pos)
        if m is None:
            self.fail(f"expected {what}")
        self.pos = m.end()
        return str(m.group(0))

    def string(self) -> str:
        m = _STRING.match(self.text, self.pos)
        if m is None:
            self.fail("invalid string")
        body = m.group(1) if m.group(1) is not None else m.group(2)
        if _SURROGATE.search(body):
            self.fail("lone surrogate in the string starting")
        decoded = self._unescape(body)
        self.pos = m.end()
        return decoded

    def _unescape(self, body: str) -> str:
        parts: list[str] = []
        start = 0
        while (slash := body.find("\\", start)) != -1:
            parts.append(body[start:slash])
            marker = body[slash + 1]
            if marker in _SIMPLE_ESCAPES:
                parts.append(_SIMPLE_ESCAPES[marker])
                start = slash + 2
                continue
            code, start = self._unicode_escape(body, slash)
            parts.append(chr(code))
        parts.append(body[start:])
        return "".join(parts)

    def _unicode_escape(self, body: str, slash: int) -> tuple[int, int]:
        hex_digits = _HEX4.match(body, slash + 2) if body[slash + 1] == "u" else None
        if hex_digits is None:
            self.fail(f"unsupported escape {body[slash : slash + 2]!r} in the string starting")
        code, end = int(hex_digits.group(0), 16), hex_digits.end()
        if 0xD800 <= code <= 0xDBFF and body.startswith("\\u", end):
            low = _HEX4.match(body, end + 2)
            if low is not None and 0xDC00 <= int(low.group(0), 16) <= 0xDFFF:
                return 0x10000 + ((code - 0xD800) << 10) + (int(low.group(0), 16) - 0xDC00), low.end()
        if 0xD800 <= code <= 0xDFFF:
            self.fail("lone surrogate escape in the string starting")
        return code, end

    def value(self, depth: int) -> Any:
        if self.peek("'") or self.peek('"'):
            return self.string()
        if self.peek("[") or self.peek("{"):
            if depth >= MAX_DEPTH:
                self.fail(f"lists and dicts nested more than {MAX_DEPTH} levels deep")
            opener = self.text[self.pos]
            self.pos += 1
            if opener == "[":
                return self.sequence("]", lambda: self.value(depth + 1))
            return self.unique(self.sequence("}", lambda: self.pair(depth + 1)))
        number = _NUMBER.match(self.text, self.pos)
        if number is not None:
            return self.number(number)
        constant = _NAME.match(self.text, self.pos)
        if constant is not None and constant.group(0) in _CONSTANTS:
            self.pos = constant.end()
            return _CONSTANTS[constant.group(0)]
        self.fail("expected a string, number, list, dict, True, False or None")

    def number(self, m: Any) -> int | float:
        literal = m.group(0)
        if m.group(1) is None and m.group(2) is None:
            # Count digits first so a huge literal never reaches int().
            if len(literal) > 17 or abs(int(literal)) > MAX_INTEGER:
                self.fail("integer outside the range of -(2^53 - 1) to 2^53 - 1")
            self.pos = m.end()
            return int(literal)
        value = float(literal)
        if math.isinf(value):
            self.fail("number too large")
        self.pos = m.end()
        return value

    def pair(self, depth: int) -> tuple[str, Any]:
        if not (self.peek("'") or self.peek('"')):
            self.fail("dict keys must be strings")
        key = self.string()
        self.expect(":")
        return key, self.value(depth)

    def argument(self) -> tuple[str, Any]:
        key = self.name("a keyword argument (positional arguments and trailing commas are not supported)")
        if not self.peek("="):
            self.fail("expected '=' (positional arguments are not supported)")
        self.pos += 1
        return key, self.value(0)

    def call(self) -> dict[str, Any]:
        name = self.name("a function name")
        self.expect("(")
        return {"name": name, "arguments": self.unique(self.sequence(")", self.argument))}


def parse_python_call_list(text: str, args: Any) -> list[dict[str, Any]]:
    """A Python-style list of keyword-argument calls, e.g. ``[get_weather(city="Paris")]``."""
    reader = _Reader(text)
    reader.expect("[")
    calls = reader.sequence("]", reader.call)
    reader.pos = _SPACE.match(text, reader.pos).end()
    if reader.pos != len(text):
        reader.fail("unexpected content after the closing ']'")
    return calls


def recover_python_call_list(body: str, args: Any) -> tuple[Good, list[BadItem]]:
    """``python-call-list`` call by call: the calls that parse are kept, each other one is a ``BadItem``."""
    del args

    def read_one(raw: str) -> dict[str, Any]:
        reader = _Reader(raw)
        call = reader.call()
        reader.pos = _SPACE.match(raw, reader.pos).end()
        if reader.pos != len(raw):
            reader.fail("unexpected text after the call")
        return call

    return read_items(body, read_one, structure=PYTHON, starts_value=call_paren, separators=",", opener="[",
                      closer="]")
