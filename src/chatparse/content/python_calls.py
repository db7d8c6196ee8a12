"""Python-literal tool calls (``python-calls``): ``[f(a=1), g(b="x")]`` bracketed, or one call per line
(OLMo 3), read by a recursive-descent reader (never ``eval``); lax repairs are opt-in.

A chatparse extension configured through ``content_args``; it can read its region call by call
(``recover``), so one bad or cut-off call does not take the calls beside it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from chatparse.content.args import check_allowed, check_choice, excerpt
from chatparse.content.json_calls import Call, json_call_list, recover_json_calls
from chatparse.content.recovery import PYTHON, Good, call_paren, read_items
from chatparse.content.registry import BadItem, register_extensions

_MAX_DEPTH = 100

_PYTHON_CALLS_ARGS: dict[str, type | tuple[type, ...]] = {
    "brackets": str,
    "separator": str,
    "json_literals": bool,
    "accept_json": bool,
    "repairs": bool,
}
_BRACKETS = ("required", "optional", "forbidden")
_SEPARATORS = ("comma", "newline", "comma_or_newline")

_NAME = re.compile(r"[^\W\d]\w*(?:[.\-][^\W\d]\w*)*")
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"[+-]?(?:(?P<int>\d+)(?![.eEjJ\d])|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)(?![\w.])")
_STRING_START = re.compile(r"(?P<prefix>[rRuU]?)(?P<quote>'''|\"\"\"|'|\")")
# What may follow a string literal: the end, a separator or closer, a dict colon, another string.
_AFTER_STRING = re.compile(r"[ \t]*(?:$|[,)\]}:\n]|[rRuU]?['\"])")
_SPACE = re.compile(r"(?:[ \t\r\n]|\\\r?\n|#[^\n]*)*")
_PYTHON_CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
_JSON_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None}
_ESCAPES = {
    "\n": "",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_OCTAL_ESCAPE = re.compile(r"[0-7]{1,3}")
_NAMED_ESCAPE = re.compile(r"N\{([^}\n]{1,100})\}")


class _CallReader:
    """A recursive-descent reader of Python call syntax with literal arguments (no eval, no ast)."""

    def __init__(self, text: str, args: Mapping[str, Any]) -> None:
        self.text = text
        self.position = 0
        self.repairs: bool = args.get("repairs", False)
        self.constants = dict(_PYTHON_CONSTANTS)
        if args.get("json_literals", True):
            self.constants.update(_JSON_CONSTANTS)
        self.separator: str = args.get("separator", "comma_or_newline")

    def fail(self, expected: str) -> NoReturn:
        found = self.text[self.position : self.position + 20]
        raise ValueError(
            f"python-calls: expected {expected} at offset {self.position}, found "
            f"{excerpt(found) if found else 'the end'}. Content: {excerpt(self.text)}"
        )

    def skip(self, pattern: re.Pattern[str] = _SPACE) -> None:
        match = pattern.match(self.text, self.position)
        if match is not None:
            self.position = match.end()

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.position)

    def take(self, token: str, expected: str | None = None) -> None:
        if not self.peek(token):
            self.fail(expected or repr(token))
        self.position += len(token)

    def at_end(self) -> bool:
        self.skip()
        return self.position >= len(self.text)

    def read_calls(self, closer: str | None) -> list[Call]:
        """Calls up to ``closer`` (or the end of the text), split by the configured separator."""
        calls: list[Call] = []
        while True:
            if (closer is None and self.at_end()) or (closer is not None and self.peek(closer)):
                return calls
            calls.append(self.read_call(len(calls)))
            if not self.read_separator():
                if closer is None and not self.at_end():
                    self.fail("a separator between calls")
                if closer is not None and not self.peek(closer):
                    self.fail(f"',' or {closer!r}")

    def read_separator(self) -> bool:
        """Consume the separator after a call; False when the configured one is not there."""
        start = self.position
        self.skip()
        newline = "\n" in self.text[start : self.position]
        if self.text.startswith(",", self.position) and self.separator != "newline":
            self.position += 1
            return True
        return newline and self.separator != "comma"

    def read_call(self, index: int) -> Call:
        self.skip()
        name = _NAME.match(self.text, self.position)
        if name is None:
            self.fail(f"the function name of call {index}")
        self.position = name.end()
        self.take("(", "'(' after the function name")
        arguments: dict[str, Any] = {}
        while not self.peek(")"):
            self.skip()
            key = _IDENTIFIER.match(self.text, self.position)
            if key is None:
                self.fail("a keyword argument (positional arguments are not supported)")
            self.position = key.end()
            self.take("=", "'=' after the keyword (positional arguments are not supported)")
            if key[0] in arguments:
                self.fail(f"a new keyword, not the repeated {key[0]!r}")
            arguments[key[0]] = self.read_value(0)
            if not self.peek(")"):
                self.take(",", "',' or ')'")
        self.position += 1
        return {"name": name[0], "arguments": arguments}

    def read_value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            self.fail(f"at most {_MAX_DEPTH} levels of nested lists and dicts")
        self.skip()
        if _STRING_START.match(self.text, self.position):
            return self.read_strings()
        for opener, closer in (("[", "]"), ("(", ")")):
            if self.text.startswith(opener, self.position):
                self.position += 1
                return self.read_items(closer, lambda: self.read_value(depth + 1))
        if self.text.startswith("{", self.position):
            self.position += 1
            if self.repairs:
                return self.read_dict_or_set(depth)
            return dict(self.read_items("}", lambda: self.read_pair(depth + 1)))
        number = _NUMBER.match(self.text, self.position)
        if number is not None:
            return self.read_number(number)
        word = _IDENTIFIER.match(self.text, self.position)
        if word is not None and word[0] in self.constants:
            self.position = word.end()
            return self.constants[word[0]]
        self.fail("a literal value (string, number, list, dict, tuple, True/False/None)")

    def read_dict_or_set(self, depth: int) -> Any:
        """After ``{``: a dict, or (a repair) a set literal, read as the list of its distinct items in the
        order written (JSON has no sets; ``{}`` stays an empty dict, as in Python)."""
        start = self.position
        try:
            return dict(self.read_items("}", lambda: self.read_pair(depth + 1)))
        except ValueError:
            self.position = start
        items = self.read_items("}", lambda: self.read_value(depth + 1))
        distinct: list[Any] = []
        for item in items:
            if item not in distinct:
                distinct.append(item)
        return distinct

    def read_items(self, closer: str, read_item: Callable[[], Any]) -> list[Any]:
        items: list[Any] = []
        while not self.peek(closer):
            items.append(read_item())
            if not self.peek(closer):
                self.take(",", f"',' or {closer!r}")
        self.position += 1
        return items

    def read_pair(self, depth: int) -> tuple[str, Any]:
        self.skip()
        key = self.read_value(depth)
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            self.fail("a string or integer dict key")
        self.take(":", "':' after the dict key")
        return str(key), self.read_value(depth)

    def read_number(self, match: re.Match[str]) -> int | float:
        literal = match[0]
        digits = match["int"]
        self.position = match.end()
        if digits is not None:
            if len(digits) > 1 and digits.startswith("0") and not self.repairs:
                self.position = match.start()
                self.fail("an integer without leading zeros (Python rejects them)")
            return int(literal)
        value = float(literal)
        if math.isinf(value):
            self.position = match.start()
            self.fail("a finite number")
        return value

    def read_strings(self) -> str:
        """One string literal, or several adjacent ones concatenated as Python does."""
        parts = [self.read_string()]
        while True:
            saved = self.position
            self.skip()
            if not _STRING_START.match(self.text, self.position):
                self.position = saved
                return "".join(parts)
            parts.append(self.read_string())

    def read_string(self) -> str:
        start = _STRING_START.match(self.text, self.position)
        assert start is not None
        quote, raw = start["quote"], start["prefix"] in ("r", "R")
        self.position = start.end()
        out: list[str] = []
        while True:
            if self.position >= len(self.text):
                self.fail(f"the closing {quote}")
            char = self.text[self.position]
            if self.text.startswith(quote, self.position):
                self.position += len(quote)
                if not (self.repairs and len(quote) == 1 and self.quote_is_data()):
                    return "".join(out)
                out.append(quote)
                continue
            if char == "\n" and len(quote) == 1 and not self.repairs:
                self.fail(f"the closing {quote} before the end of the line")
            if char == "\\" and self.position + 1 < len(self.text):
                out.append(self.text[self.position : self.position + 2] if raw else self.read_escape())
                if raw:
                    self.position += 2
                continue
            out.append(char)
            self.position += 1

    def quote_is_data(self) -> bool:
        """(A repair) whether the quote just read is text inside the string rather than its close: what
        follows it (after spaces) cannot follow a string literal, e.g. ``command='sed -n '360,450p' f'``
        (a quote followed by ``360``), and a later quote can close the string."""
        rest = _AFTER_STRING.match(self.text, self.position)
        return rest is None and self.text.find(self.text[self.position - 1], self.position) >= 0

    def read_escape(self) -> str:
        code = self.text[self.position + 1]
        if code in _ESCAPES:
            self.position += 2
            return _ESCAPES[code]
        if code in _HEX_ESCAPES:
            width = _HEX_ESCAPES[code]
            digits = self.text[self.position + 2 : self.position + 2 + width]
            if len(digits) != width or any(c not in "0123456789abcdefABCDEF" for c in digits):
                self.fail(f"{width} hex digits after '\\{code}'")
            value = int(digits, 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                self.fail("a valid Unicode scalar value in the escape")
            self.position += 2 + width
            return chr(value)
        if code in "01234567":  # up to three octal digits, as Python reads them ('\\033' is ESC)
            octal = _OCTAL_ESCAPE.match(self.text, self.position + 1)
            assert octal is not None
            self.position = octal.end()
            return chr(int(octal.group(), 8))
        if code == "N":  # a character by its Unicode name: '\\N{BULLET}'
            named = _NAMED_ESCAPE.match(self.text, self.position + 1)
            try:
                char = unicodedata.lookup(named.group(1)) if named is not None else ""
            except KeyError:
                char = ""
            if not char:
                self.fail("a Unicode character name in braces after '\\N'")
            assert named is not None
            self.position = named.end()
            return char
        if code == "\r" and self.text.startswith("\n", self.position + 2):
            self.position += 3  # a line continuation written with a CRLF line end
            return ""
        self.position += 2  # Python keeps unknown escapes verbatim
        return "\\" + code


def parse_python_calls(body: str, args: Mapping[str, Any]) -> list[Call]:
    """Tool calls written as Python calls with literal keyword arguments.

    Reads ``[get_weather(city="Paris"), get_time()]`` (Llama 4, LFM2) and unbracketed calls one per
    line (OLMo 3). Values: str (single, double or triple quotes, ``r``/``u`` prefixes, escapes,
    adjacent literals concatenated), int, float, ``True/False/None``, list, tuple (→ list), dict
    (string or int keys). ``content_args``: ``brackets`` (``required`` | ``optional`` | ``forbidden``,
    default ``optional``); ``separator`` between calls (``comma`` | ``newline`` |
    ``comma_or_newline``, default); ``json_literals`` (``true/false/null`` too, default true);
    ``accept_json`` (a JSON list of ``{"name", "arguments"}`` objects is accepted as well, LFM2);
    ``repairs`` (lax model-boundary repairs: a raw newline inside a quoted string is kept, integers
    with leading zeros such as ``07`` are read as 7, a set literal ``{1, 2}`` is the list of its distinct
    items, and a quote that cannot end its string, since what follows it cannot follow a string and a
    later quote can close it, is text: ``command='sed -n '360,450p' f'`` holds the inner quotes). Positional arguments are rejected.
    """
    text = body.strip()
    if args.get("accept_json", False) and text[:1] in ("[", "{"):
        calls = json_call_list(text)
        if calls is not None:
            return calls
    reader = _CallReader(text, args)
    brackets = args.get("brackets", "optional")
    bracketed = brackets != "forbidden" and reader.peek("[")
    if brackets == "required" and not bracketed:
        reader.fail("'[' (a bracketed call list)")
    if bracketed:
        reader.take("[")
        calls = reader.read_calls("]")
        reader.take("]")
        if not reader.at_end():
            reader.fail("the end of the region after ']'")
        return calls
    return reader.read_calls(None)


def validate_python_calls_args(args: Mapping[str, Any]) -> None:
    """Load-time check of ``python-calls`` content_args."""
    check_allowed("python-calls", args, _PYTHON_CALLS_ARGS)
    check_choice("python-calls", args, "brackets", _BRACKETS)
    check_choice("python-calls", args, "separator", _SEPARATORS)



def recover_python_calls(body: str, args: Mapping[str, Any]) -> tuple[Good, list[BadItem]]:
    """``python-calls`` call by call: each call of the list (or each line) separately."""
    text = body.strip()
    if args.get("accept_json", False) and text[:1] in ("[", "{"):
        try:
            calls = json_call_list(text)
        except ValueError:  # JSON, but a call object in it is bad: read the JSON list object by object
            return recover_json_calls(text, {"accept": ["array", "object"], "decode_string_arguments": True})
        if calls is not None:
            return [(call, text) for call in calls], []

    def read_one(raw: str) -> Call:
        reader = _CallReader(raw, args)
        call = reader.read_call(0)
        if not reader.at_end():
            reader.fail("the end of the call")
        return call

    separators = {"comma": ",", "newline": "\n"}.get(args.get("separator", "comma_or_newline"), ",\n")
    bracketed = args.get("brackets", "optional") != "forbidden"
    return read_items(text, read_one, structure=PYTHON, starts_value=call_paren, separators=separators,
                      opener="[" if bracketed else None, closer="]" if bracketed else None)


EXTENSIONS = {
    "python-calls": (parse_python_calls, validate_python_calls_args, recover_python_calls),
}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
