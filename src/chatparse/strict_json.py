"""A strict RFC 8259 JSON reader: ``loads(raw)`` returns the value or raises ``StrictJSONError``.

Duplicate keys, ``NaN``/``Infinity``, numbers outside the double range, lone surrogates, a BOM,
invalid UTF-8 and text around the value are rejected; nesting depth is bounded without recursion.
Valid input is read by the standard library's C scanner with checks around it; input that it or the
checks doubt is read again by the exact reader below, which names the fault and its offset.
"""

from __future__ import annotations

import gc
import json
import re
import sys
from typing import Any, Final

from chatparse.errors import ChatparseError, InputTypeError

DEFAULT_MAX_DEPTH: Final = 64
_UTF8_BOM: Final = b"\xef\xbb\xbf"
_WHITESPACE: Final = " \t\n\r"
_WS_RE: Final = re.compile(r"[ \t\n\r]*")
_NUMBER_RE: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?P<frac>\.[0-9]+)?(?P<exp>[eE][+-]?[0-9]+)?")
# A proper prefix of a number ("-", "1.", "1e", "1.5e+"): at the end of the input, the number was cut.
_NUMBER_PREFIX_RE: Final = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+-]?[0-9]*)?)?")
_PLAIN_RE: Final = re.compile(r'[^"\\\x00-\x1f\ud800-\udfff]*')
_HEX4_RE: Final = re.compile(r"[0-9a-fA-F]{4}")
JSON_ESCAPES: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_LITERALS: Final = {"true": True, "false": False, "null": None}
_NON_FINITE: Final = ("NaN", "Infinity", "-Infinity")
# An integer with more digits than this cannot be a finite double, so it is rejected before int().
_MAX_INT_DIGITS: Final = 309
_MAX_DOUBLE_INT: Final = int(sys.float_info.max)  # exact: the largest double is an integer
_NUMBER_TAIL: Final = frozenset("0123456789.eE+-")


class StrictJSONError(ChatparseError, ValueError):
    """The text is not one RFC 8259 JSON value under the strict rules; ``offset`` is a char offset."""

    code = "invalid_json"


def loads(
    raw: str | bytes | bytearray | memoryview, *, max_bytes: int | None = None,
    max_depth: int | None = DEFAULT_MAX_DEPTH,
) -> Any:
    """Parse exactly one JSON value surrounded by optional JSON whitespace.

    Objects become ``dict``, arrays ``list``, integers ``int``, other numbers ``float``. ``bytearray`` and
    ``memoryview`` are read as ``bytes``; any other non-text type is an ``InputTypeError`` (a ``TypeError``).
    ``max_bytes`` bounds the UTF-8 size before parsing; ``max_depth`` bounds container nesting.
    """
    raw = as_text_or_bytes(raw, "strict_json.loads()")
    value = _fast_loads(raw, max_bytes, max_depth)
    if value is _DOUBT:
        return _Parser(_decode(raw, max_bytes), max_depth).parse_document()
    return value


class _Doubt(ValueError):
    """Raised from the C scanner's hooks: the exact reader decides."""


_DOUBT: Final[Any] = object()


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Doubt
    return value


def _refuse(_literal: str) -> Any:
    raise _Doubt


_SCAN: Final = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_refuse).decode
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES: Final = re.compile(rb"\\u[dD][89a-fA-F]")
_UTF8_BYTES_PER_CHAR: Final = 4


def _fast_loads(raw: str | bytes, max_bytes: int | None, max_depth: int | None, *, bounded: bool = True) -> Any:
    """The value when the C scanner reads ``raw`` and every strict rule holds, else ``_DOUBT``.

    The checks around the scan cost per value, not per byte, wherever they can: the C scanner copies long
    strings at memory speed, so each extra pass over the text would cost as much as the parse itself.
    ``bounded=False`` skips the number range and the nesting depth, for a caller that rejects every
    number and every nesting beyond its own shape anyway (then the value differs only where it does)."""
    if isinstance(raw, bytes):
        if raw.startswith(_UTF8_BOM) or (max_bytes is not None and len(raw) > max_bytes):
            return _DOUBT
        try:
            text = raw.decode("utf-8")  # strict UTF-8 has no surrogates
        except UnicodeDecodeError:
            return _DOUBT
    else:
        text = raw
        if text.startswith("\ufeff") or not _encodable_within(text, max_bytes):
            return _DOUBT
    try:
        value = _SCAN(text)
    except (ValueError, RecursionError):  # JSONDecodeError and _Doubt are ValueErrors
        return _DOUBT
    if _may_hold_a_surrogate_escape(raw) and _holds_a_lone_surrogate(value):
        return _DOUBT
    if bounded and _out_of_bounds(value, max_depth):
        return _DOUBT
    return value


def scan_strict(raw: str | bytes, *, max_bytes: int | None = None) -> Any:
    """What ``loads`` returns for ``raw`` when the C scanner can vouch for it, else None (so also for the
    text ``null``). Numbers are not range-checked and nesting is not bounded: for a caller whose own shape
    rejects numbers and depth, which then need no pass of their own. Cheap on every input: the exact reader
    never runs, so a None says nothing about why; call ``loads`` for the coded error."""
    value = _fast_loads(raw, max_bytes, None, bounded=False)
    return None if value is _DOUBT else value


def _encodable_within(text: str, max_bytes: int | None) -> bool:
    """Whether ``text`` has no lone surrogate (the C scanner would keep one) and fits ``max_bytes`` in UTF-8.

    The UTF-8 size is computed only when the length alone cannot decide it; otherwise a UTF-32 encoding,
    about four times as fast on non-ASCII text, finds the surrogates, and an ASCII text has none."""
    ascii_text = text.isascii()
    if max_bytes is not None and len(text) > max_bytes:
        return False
    if max_bytes is not None and not ascii_text and len(text) * _UTF8_BYTES_PER_CHAR > max_bytes:
        try:
            return len(text.encode("utf-8")) <= max_bytes
        except UnicodeEncodeError:
            return False
    if ascii_text:
        return True
    try:
        text.encode("utf-32-le")
    except UnicodeEncodeError:
        return False
    return True


def _may_hold_a_surrogate_escape(raw: str | bytes) -> bool:
    """Whether a ``\\uD800``-``\\uDFFF`` escape may be there: a backslash is found with one memchr-like
    search, the escape with a regex only then."""
    if isinstance(raw, bytes):
        return b"\\" in raw and _SURROGATE_ESCAPE_BYTES.search(raw) is not None
    return "\\" in raw and _SURROGATE_ESCAPE.search(raw) is not None


def _holds_a_lone_surrogate(value: Any) -> bool:
    """The C scanner keeps an unpaired ``\\uD800``-``\\uDFFF`` escape as a lone surrogate code point, which
    no UTF-16 encoding accepts (keys included, hence the whole value written out)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-16-le")
    except UnicodeEncodeError:
        return True
    return False


def _out_of_bounds(value: Any, max_depth: int | None) -> bool:
    """Whether containers nest more than ``max_depth`` levels deep, or a number is outside the double range
    (a float overflowed to infinity, or an integer did).

    Walked one level at a time, so the cost is per value: ``gc.get_referents`` lists the elements of lists
    and the values of dicts in C (the keys too, for a dict whose keys are not all strings)."""
    level: list[Any] = [value]
    depth = 0
    while level:
        containers: list[Any] = []
        for item in level if depth == 0 else gc.get_referents(*level):
            kind = type(item)
            if kind is str:
                continue
            if kind is dict or kind is list:
                containers.append(item)
            elif kind is int:
                if item > _MAX_DOUBLE_INT or item < -_MAX_DOUBLE_INT:
                    return True
            elif kind is float and item - item != 0.0:  # inf - inf is nan; the scan never lets a NaN through
                return True
        if containers:
            depth += 1
            if max_depth is not None and depth > max_depth:
                return True
        level = containers
    return False


def as_text_or_bytes(raw: object, where: str) -> str | bytes:
    """``raw`` as ``str`` or ``bytes`` (a ``bytearray`` or ``memoryview`` is copied to ``bytes``); any other
    type is an ``InputTypeError`` naming ``where``."""
    if isinstance(raw, str | bytes):
        return raw
    if isinstance(raw, bytearray | memoryview):
        return bytes(raw)
    raise InputTypeError(
        f"{where} expected JSON text as str or bytes (bytearray and memoryview are read as bytes), found "
        f"{type(raw).__name__}. Pass the JSON text itself.",
        found=type(raw).__name__,
    )


def _decode(raw: str | bytes, max_bytes: int | None) -> str:
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise StrictJSONError(
            f"expected at most {max_bytes} UTF-8 bytes, found {size} bytes in the whole input",
            code="too_large",
            size=size,
            limit=max_bytes,
        )
    if isinstance(raw, str):
        if raw.startswith("\ufeff"):
            raise _bom_error()
        return raw
    if raw.startswith(_UTF8_BOM):
        raise _bom_error()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = len(raw[: exc.start].decode("utf-8"))
        if exc.end == len(raw) and exc.reason == "unexpected end of data":
            raise StrictJSONError(
                f"expected a complete UTF-8 character, found the input ending inside one at char offset {offset}.",
                code="unexpected_end",
                offset=offset,
            ) from None
        raise StrictJSONError(
            f"expected UTF-8 bytes, found an invalid byte sequence at char offset {offset}.",
            code="invalid_utf8",
            offset=offset,
        ) from None


def _bom_error() -> StrictJSONError:
    return StrictJSONError(
        "expected a JSON value, found a byte order mark at offset 0. Remove the BOM (RFC 8259 §8.1).",
        code="bom",
        offset=0,
    )


def _describe(text: str, pos: int) -> str:
    if pos >= len(text):
        return "end of input"
    char = text[pos]
    if char in _WHITESPACE or not char.isprintable():
        return f"character U+{ord(char):04X}"
    return repr(char)


class _Frame:
    """One open container: the value being built and, for objects, the key awaiting its value."""

    __slots__ = ("container", "key")

    def __init__(self, container: dict[str, Any] | list[Any]) -> None:
        self.container = container
        self.key: str | None = None

    def add(self, value: Any) -> None:
        if isinstance(self.container, list):
            self.container.append(value)
        else:
            assert self.key is not None
            self.container[self.key] = value
            self.key = None


class _Parser:
    """An iterative parser over one decoded text; the explicit stack replaces recursion."""

    def __init__(self, text: str, max_depth: int | None) -> None:
        self.text = text
        self.max_depth = max_depth
        self.stack: list[_Frame] = []

    def parse_document(self) -> Any:
        pos = self._skip_ws(0)
        if pos >= len(self.text):
            raise self._error("expected a JSON value", pos, code="empty_input")
        value, pos = self._parse_value(pos)
        pos = self._skip_ws(pos)
        if pos < len(self.text):
            raise self._error(
                "expected end of input after the JSON value",
                pos,
                code="trailing_text",
                fix="Send exactly one JSON value with nothing around it.",
            )
        return value

    def _parse_value(self, pos: int) -> tuple[Any, int]:
        """Parse one value starting at ``pos`` (no leading whitespace), containers included."""
        while True:
            value, pos, pushed = self._start_value(pos)
            if pushed:
                continue  # a non-empty container was opened; its first value starts at pos
            value, pos, done = self._attach(value, pos)
            if done:
                return value, pos

    def _start_value(self, pos: int) -> tuple[Any, int, bool]:
        """Return ``(scalar_or_empty_container, end, False)`` or ``(None, next_value_pos, True)``."""
        char = self.text[pos] if pos < len(self.text) else ""
        if char not in ("{", "["):
            value, end = self._scalar(pos)
            return value, end, False
        depth = len(self.stack) + 1
        if self.max_depth is not None and depth > self.max_depth:
            raise self._error(
                f"expected at most {self.max_depth} nested arrays and objects",
                pos,
                code="too_deep",
                found=f"nesting depth {depth}",
            )
        closer = "}" if char == "{" else "]"
        after = self._skip_ws(pos + 1)
        if self.text.startswith(closer, after):
            return ({} if char == "{" else []), after + 1, False
        frame = _Frame({} if char == "{" else [])
        self.stack.append(frame)
        if char == "{":
            after = self._member_key(frame, after)
        return None, after, True

    def _attach(self, value: Any, pos: int) -> tuple[Any, int, bool]:
        """Give a finished value to its parent; close containers; return when a new value is due."""
        while self.stack:
            frame = self.stack[-1]
            frame.add(value)
            pos = self._skip_ws(pos)
            is_object = isinstance(frame.container, dict)
            closer = "}" if is_object else "]"
            char = self.text[pos] if pos < len(self.text) else ""
            if char == ",":
                pos = self._skip_ws(pos + 1)
                if is_object:
                    pos = self._member_key(frame, pos)
                return value, pos, False
            if char != closer:
                where = "an object member" if is_object else "an array element"
                raise self._error(
                    f"expected ',' or '{closer}' after {where}",
                    pos,
                    code=self._end_or("unexpected_character", pos),
                )
            value = frame.container
            self.stack.pop()
            pos += 1
        return value, pos, True

    def _member_key(self, frame: _Frame, pos: int) -> int:
        """Read ``"key" :`` at ``pos``; reject a key already present in this object."""
        if not self.text.startswith('"', pos):
            raise self._error(
                "expected a string key in double quotes", pos, code=self._end_or("unexpected_character", pos)
            )
        key, end = self._string(pos)
        assert isinstance(frame.container, dict)
        if key in frame.container:
            raise StrictJSONError(
                f"expected each key once per object, found the key {_key_excerpt(key)} again at offset {pos}."
                " Send one value per key.",
                code="duplicate_key",
                offset=pos,
                key=key,
            )
        frame.key = key
        end = self._skip_ws(end)
        if not self.text.startswith(":", end):
            raise self._error(
                "expected ':' after an object key", end, code=self._end_or("unexpected_character", end)
            )
        return self._skip_ws(end + 1)

    def _scalar(self, pos: int) -> tuple[Any, int]:
        text = self.text
        char = text[pos] if pos < len(text) else ""
        if char == '"':
            return self._string(pos)
        if char == "-" or (char.isdigit() and char.isascii()):
            return self._number(pos)
        for word, value in _LITERALS.items():
            if text.startswith(word, pos):
                return value, pos + len(word)
        rest = text[pos : pos + 9]
        if rest and any(
            word.startswith(rest) and len(rest) < len(word) for word in (*_LITERALS, *_NON_FINITE)
        ):
            raise self._error("expected a complete JSON value", len(text), code="unexpected_end")
        for word in _NON_FINITE:
            if text.startswith(word, pos):
                raise self._error("expected a finite number", pos, code="non_finite_number", found=repr(word))
        raise self._error("expected a JSON value", pos, code=self._end_or("unexpected_character", pos))

    def _number(self, pos: int) -> tuple[int | float, int]:
        if self.text.startswith("-Infinity", pos):
            raise self._error("expected a finite number", pos, code="non_finite_number", found="'-Infinity'")
        match = _NUMBER_RE.match(self.text, pos)
        end = match.end() if match else pos
        if match is None or (end < len(self.text) and self.text[end] in _NUMBER_TAIL):
            if _NUMBER_PREFIX_RE.fullmatch(self.text, pos):
                raise self._error("expected a complete number", len(self.text), code="unexpected_end")
            raise self._error(
                "expected a number like -12, 0.5 or 1e3 (no leading zeros, '+', or bare '.')",
                end if match else pos,
                code="invalid_number",
            )
        literal = match.group()
        if match.group("frac") is None and match.group("exp") is None:
            return self._integer(literal, pos), end
        value = float(literal)
        if value in (float("inf"), float("-inf")):
            raise self._out_of_range(pos)
        return value, end

    def _integer(self, literal: str, pos: int) -> int:
        if len(literal.lstrip("-")) > _MAX_INT_DIGITS:
            raise self._out_of_range(pos)
        value = int(literal)
        if abs(value) > sys.float_info.max:
            raise self._out_of_range(pos)
        return value

    def _out_of_range(self, pos: int) -> StrictJSONError:
        return self._error(
            "expected a number within the IEEE 754 double range",
            pos,
            code="number_out_of_range",
            found="a number that overflows it",
        )

    def _string(self, pos: int) -> tuple[str, int]:
        """Read the string whose opening quote is at ``pos``; return its value and the end offset."""
        text = self.text
        parts: list[str] = []
        i = pos + 1
        while True:
            plain = _PLAIN_RE.match(text, i)
            assert plain is not None
            parts.append(plain.group())
            i = plain.end()
            char = text[i] if i < len(text) else ""
            if char == '"':
                return "".join(parts), i + 1
            if char == "\\":
                decoded, i = self._escape(i)
                parts.append(decoded)
                continue
            self._bad_string_char(char, i)

    def _bad_string_char(self, char: str, i: int) -> None:
        if char == "":
            raise self._error("expected '\"' to close the string", i, code="unexpected_end")
        if "\ud800" <= char <= "\udfff":
            raise self._error(
                "expected a Unicode scalar value", i, code="invalid_unicode", found="a lone surrogate"
            )
        raise self._error(
            "expected a printable character or an escape inside a string",
            i,
            code="invalid_string",
            fix="Control characters U+0000 to U+001F must be escaped, e.g. \\n.",
        )

    def _escape(self, i: int) -> tuple[str, int]:
        """Decode the escape at ``i`` (a backslash); surrogate pairs must be complete."""
        char = self.text[i + 1] if i + 1 < len(self.text) else ""
        if char in JSON_ESCAPES:
            return JSON_ESCAPES[char], i + 2
        if char != "u":
            raise self._error(
                'expected one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX',
                i,
                code=self._end_or("invalid_escape", i + 1),
            )
        unit = self._hex4(i)
        if 0xDC00 <= unit <= 0xDFFF:
            raise self._lone_surrogate(i)
        if not 0xD800 <= unit <= 0xDBFF:
            return chr(unit), i + 6
        if not self.text.startswith("\\u", i + 6):
            raise self._lone_surrogate(i)
        low = self._hex4(i + 6)
        if not 0xDC00 <= low <= 0xDFFF:
            raise self._lone_surrogate(i)
        return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), i + 12

    def _hex4(self, i: int) -> int:
        match = _HEX4_RE.match(self.text, i + 2)
        if match is not None:
            return int(match.group(), 16)
        digits = self.text[i + 2 : i + 6]
        truncated = len(digits) < 4 and all(c in "0123456789abcdefABCDEF" for c in digits)
        code = "unexpected_end" if truncated else "invalid_escape"
        raise self._error("expected four hex digits after \\u", i, code=code)

    def _lone_surrogate(self, i: int) -> StrictJSONError:
        return self._error(
            "expected a surrogate pair (\\uD800-\\uDBFF then \\uDC00-\\uDFFF)",
            i,
            code="invalid_unicode",
            found="a lone surrogate escape",
        )

    def _skip_ws(self, pos: int) -> int:
        match = _WS_RE.match(self.text, pos)
        assert match is not None
        return match.end()

    def _end_or(self, code: str, pos: int) -> str:
        return "unexpected_end" if pos >= len(self.text) else code

    def _error(
        self, expected: str, pos: int, *, code: str, found: str | None = None, fix: str = ""
    ) -> StrictJSONError:
        found = found if found is not None else _describe(self.text, pos)
        message = f"{expected}, found {found} at offset {pos}."
        if fix:
            message = f"{message} {fix}"
        return StrictJSONError(message, code=code, offset=pos)


def _key_excerpt(key: str, limit: int = 40) -> str:
    return repr(key) if len(key) <= limit else f"{key[:limit]!r}… ({len(key)} chars)"


__all__ = ["DEFAULT_MAX_DEPTH", "StrictJSONError", "loads", "scan_strict"]
