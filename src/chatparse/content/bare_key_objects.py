"""``bare-key-object``: an object written with bare (unquoted) keys and strings between delimiter
tokens, the way Gemma 4 (``{city:<|"|>Seoul<|"|>,days:2}``) and FunctionGemma (``<escape>`` … ``<escape>``)
write tool-call arguments. A recursive-descent reader over an index (linear time, never evaluates code).

A chatparse extension configured through ``content_args``. transformers reads these objects with its
``json`` parser (``unquoted_keys`` + ``string_delims``), which takes a key to be one word; here a bare key
is everything up to its ``:`` (``first name``, ``unit-of-measure``), trimmed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NoReturn

import regex

from chatparse.content.args import check_allowed, excerpt
from chatparse.content.registry import register_extensions

Args = Mapping[str, Any]
_MAX_DEPTH = 100
_SPACE = regex.compile(r"\s*")
_NUMBER = regex.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None}
_JSON_STRING = regex.compile(r'"(?:[^"\\]|\\.)*"', regex.DOTALL)
_ARGS: dict[str, type | tuple[type, ...]] = {"string_delims": list, "json_strings": bool, "missing_commas": bool}


class _Reader:
    """Reads one value at a time from ``text``; ``pos`` is the index of the next unread character."""

    def __init__(self, text: str, args: Args) -> None:
        self.text = text
        self.pos = 0
        self.delims: list[tuple[str, str]] = [(o, c) for o, c in args.get("string_delims", [])]
        self.json_strings: bool = args.get("json_strings", True)
        self.missing_commas: bool = args.get("missing_commas", False)
        # Characters that end a bare key or a bare scalar: structure, and the first character of every
        # string opener (a bare word never runs into a delimited string).
        self.stops = set(",:{}[]") | {o[0] for o, _ in self.delims} | ({'"'} if self.json_strings else set())

    def fail(self, expected: str) -> NoReturn:
        found = self.text[self.pos : self.pos + 20]
        raise ValueError(
            f"bare-key-object: expected {expected} at offset {self.pos}, found "
            f"{excerpt(found) if found else 'the end'}. Content: {excerpt(self.text)}"
        )

    def skip(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.pos)

    def take(self, token: str) -> None:
        if not self.peek(token):
            self.fail(repr(token))
        self.pos += len(token)

    def string(self) -> str | None:
        """A delimited or JSON string at ``pos`` (its text), or None when none starts here."""
        for opener, closer in self.delims:
            if self.text.startswith(opener, self.pos):
                end = self.text.find(closer, self.pos + len(opener))
                if end < 0:
                    self.fail(f"the closing {closer!r} of the string")
                value = self.text[self.pos + len(opener) : end]
                self.pos = end + len(closer)
                return value
        if self.json_strings and self.text.startswith('"', self.pos):
            m = _JSON_STRING.match(self.text, self.pos)
            if m is None:
                self.fail('the closing \'"\' of the string')
            self.pos = m.end()
            return str(json.loads(m.group(0), strict=False))  # a raw newline or tab inside is kept
        return None

    def bare(self, what: str) -> str:
        """A bare word up to the next structural character (trimmed, non-empty)."""
        start = self.pos
        text, stops = self.text, self.stops
        while self.pos < len(text) and text[self.pos] not in stops:
            self.pos += 1
        word = text[start : self.pos].strip()
        if not word:
            self.pos = start
            self.fail(what)
        return word

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            self.fail(f"at most {_MAX_DEPTH} levels of nested objects and lists")
        self.skip()
        if self.text.startswith("{", self.pos):
            return self.object(depth)
        if self.text.startswith("[", self.pos):
            self.pos += 1
            items: list[Any] = []
            while not self.peek("]"):
                items.append(self.value(depth + 1))
                if not self.peek("]"):
                    self.take(",")
            self.pos += 1
            return items
        string = self.string()
        if string is not None:
            return string
        return _scalar(self.bare("a value"))

    def object(self, depth: int) -> dict[str, Any]:
        self.take("{")
        out: dict[str, Any] = {}
        while not self.peek("}"):
            key = self.string()
            if key is None:
                key = self.bare("a key")
            self.take(":")
            start = self.pos
            out[key] = self.value(depth + 1)
            if not self.peek("}") and not (self.missing_commas and self.delimited(start) and not self.peek(",")):
                self.take(",")
        self.pos += 1
        return out

    def delimited(self, start: int) -> bool:
        """Whether the value read from ``start`` ended with its own closing delimiter (a delimited or JSON
        string, an object, a list), so the next key can be told from it without a comma."""
        text = self.text[start : self.pos].strip()
        return text[-1:] in ("}", "]", '"') or any(text.endswith(close) for _, close in self.delims)


def _scalar(word: str) -> Any:
    """A bare value: a JSON number, true/false/null, or else the word itself as a string."""
    if word in _CONSTANTS:
        return _CONSTANTS[word]
    if _NUMBER.fullmatch(word):
        if "." not in word and "e" not in word.lower():
            return int(word)
        number = float(word)
        return number if math.isfinite(number) else word
    return word


def parse_bare_key_object(body: str, args: Args) -> dict[str, Any]:
    """An object with bare keys and delimited strings, e.g. ``{city:<|"|>Seoul<|"|>,days:2}``.

    Keys are bare words up to their ``:`` (spaces, ``-`` and ``.`` allowed, trimmed) or strings. Values:
    strings between a ``string_delims`` pair (their text verbatim: newlines, quotes, braces and commas
    are data), JSON strings (``json_strings``, default true), nested objects and lists, JSON numbers,
    ``true``/``false``/``null``, and any other bare word as a string. ``content_args``: ``string_delims``
    (list of ``[open, close]`` pairs, required), ``json_strings``, ``missing_commas`` (a lax repair: no
    comma is needed after a value that ends with its own closing delimiter, ``{a:<escape>x<escape>b:1}``).
    Raises ``ValueError`` on anything else.
    """
    reader = _Reader(body, args)
    reader.skip()
    if not reader.text.startswith("{", reader.pos):
        reader.fail("'{' (an object)")
    value = reader.object(0)
    reader.skip()
    if reader.pos != len(body):
        reader.fail("the end of the object")
    return value


def validate_bare_key_object_args(args: Args) -> None:
    """Load-time check of ``bare-key-object`` content_args."""
    check_allowed("bare-key-object", args, _ARGS)
    delims = args.get("string_delims")
    if not delims or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(d, str) and d for d in pair) for pair in delims
    ):
        raise ValueError("bare-key-object: content_args['string_delims'] must be a non-empty list of [open, close] "
                         "pairs of non-empty strings")


EXTENSIONS = {"bare-key-object": (parse_bare_key_object, validate_bare_key_object_args, None)}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
