"""Follow the syntax of a region's body as it streams: strings, opaque spans and bracket depth.

A ``BodyTracker`` consumes the body text in order, in any chunking, in linear time (regex and
``str.find`` jumps between the characters that matter, never a re-scan). The engine asks it whether a
marker found at the current position is data (inside a string or a span), whether the body is complete
when the text ends, and, for regions that end with their value, where the top-level value ends.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import regex

# Bracket pairs and string quotes per syntax. Python strings may be triple-quoted; JSON has one quote.
_BRACKETS = {"json": "{}[]", "python": "()[]{}"}
_QUOTES = {"json": ('"',), "python": ('"""', "'''", '"', "'")}
SYNTAXES = tuple(_BRACKETS)

# JSON bodies without spans (the common case: a JSON tool call) are read a token at a time by one regex:
# a bracket, or a whole string (its escapes included) up to its closing quote or the end of the text.
# These two fixed patterns (no partial matching, no Unicode classes) run on the standard library's engine,
# which takes a third of the time the ``regex`` module takes on such short scans.
_JSON_TOKENS = re.compile(r'[{}\[\]]|"(?:[^"\\]++|\\.)*+(?:"|\\?)', re.DOTALL)
# Inside an open string. Everything it repeats is optional, so ``match`` never answers None (hence ``Any``).
_JSON_STRING_REST: Any = re.compile(r'(?:[^"\\]++|\\.)*+', re.DOTALL)
_JSON_BRACKETS = frozenset("{}[]")
_VISIBLE = regex.compile(r"\S")


@dataclass(frozen=True)
class Structure:
    """The body syntax of a field: ``syntax`` (``json``, ``python`` or None) and opaque ``spans``
    (``(open, close)`` literal pairs whose inside is data, e.g. ``<arg_value>`` … ``</arg_value>``)."""

    syntax: str | None = None
    spans: tuple[tuple[str, str], ...] = ()
    # (close, regex) pairs: a span's close literal counts only where this regex matches right after it
    # (the format's structural continuation: ``</parameter>`` followed by the next parameter or the call's
    # close), so close text inside a value that the structure does not go on after is data. At the end of
    # the text a close the regex could still match after counts (the value was cut right after it).
    follows: tuple[tuple[str, str], ...] = ()

    def tracker(self) -> BodyTracker:
        return BodyTracker(_tables(self))


@dataclass(frozen=True)
class _Tables:
    structure: Structure
    openers: frozenset[str]
    closers: frozenset[str]
    tokens: tuple[str, ...]  # quotes and span openers, longest first
    span_close: dict[str, str]  # span opener -> its close literal
    first: object  # pattern: the next token, bracket or visible character (before the value started)
    scan: object  # pattern: the next token or bracket
    longest: int
    token_firsts: frozenset[str]  # the first characters of the tokens
    follow: dict[str, Any]  # span close literal -> the compiled pattern that must follow it


_TABLE_CACHE: dict[Structure, _Tables] = {}


def _tables(structure: Structure) -> _Tables:
    cached = _TABLE_CACHE.get(structure)
    if cached is not None:
        return cached
    brackets = _BRACKETS.get(structure.syntax or "", "")
    quotes = _QUOTES.get(structure.syntax or "", ())
    tokens = tuple(sorted({*quotes, *(o for o, _ in structure.spans)}, key=len, reverse=True))
    parts = [regex.escape(t) for t in tokens] + ([f"[{regex.escape(brackets)}]"] if brackets else [])
    scan = regex.compile("|".join(parts) if parts else "(?!)", regex.DOTALL)
    first = regex.compile("|".join([*parts, r"\S"]), regex.DOTALL)
    tables = _Tables(structure, frozenset(brackets[0::2]), frozenset(brackets[1::2]), tokens,
                     dict(structure.spans), first, scan, max(map(len, tokens), default=1),
                     frozenset(token[0] for token in tokens),
                     {close: regex.compile(pattern, regex.DOTALL) for close, pattern in structure.follows})
    _TABLE_CACHE[structure] = tables
    return tables


class BodyTracker:
    """Where a body stands syntactically after the text fed so far (see the module docstring)."""

    __slots__ = ("_carry", "_close", "_depth", "_escapes", "_json", "_started", "_t", "ended", "spans_opened")

    def __init__(self, tables: _Tables) -> None:
        self._t = tables
        self._close: str | None = None  # the literal that ends the open string or span
        self._escapes = False  # the open string takes backslash escapes (a quote, not a span)
        self._depth = 0
        self._started = tables.structure.syntax is None  # a visible character of the value was seen
        self._carry = ""  # text at the end of the last feed that may be the start of a longer token
        self.ended = False  # the top-level bracketed value closed (depth back to 0)
        self.spans_opened = 0  # how many spans have opened: tells one open span from a later one
        self._json = tables.structure.syntax == "json" and not tables.structure.spans  # see ``_consume_json``

    # --- queries ---------------------------------------------------------------------------------

    @property
    def balanced(self) -> bool:
        """No bracket open and no string or span open (as far as the text fed so far shows)."""
        state = self._settled()
        return state._close is None and state._depth == 0

    @property
    def in_data(self) -> bool:
        """True inside a string or an opaque span: a marker starting here is data, not a delimiter."""
        return self._settled()._close is not None

    def in_data_before(self, following: str, final: bool = True) -> bool | None:
        """``in_data`` where ``following`` is the text right after what was fed (a marker found there and
        what comes after it): a span close still waiting for the text after it is decided by it. Not
        ``final`` (more text may come after ``following``): None when that text is still needed."""
        if not self._carry:
            return self._close is not None
        clone = copy.copy(self)
        carry, clone._carry = clone._carry, ""
        clone._consume(carry + following, final=final, stop=False, limit=len(carry))
        if not final and clone._close is not None and clone._carry:
            return None
        return clone._close is not None

    @property
    def open_span(self) -> int:
        """The number of the span open now (``spans_opened`` when it opened), or -1 outside spans."""
        state = self._settled()
        return state.spans_opened if state._close is not None and not state._escapes else -1

    def complete(self) -> bool:
        """True when the body is whole as the text ends: no string, span or bracket left open, no span
        opener cut in half, and (for a syntax) a value was written."""
        if self._close is None and any(self._carry and o.startswith(self._carry) for o, _ in self._t.structure.spans):
            return False  # cut inside a span opener such as '<parameter='
        if self._close is not None and self._carry and _token_prefix_suffix(self._carry, 0, self._t):
            return False  # a span close waiting for what follows it, then a span opener cut in half
        state = self._settled()
        return state._close is None and state._depth == 0 and state._started

    def _settled(self) -> BodyTracker:
        """This state with the carried text read as final (what comes next cannot extend it)."""
        if not self._carry:
            return self
        clone = copy.copy(self)
        carry, clone._carry = clone._carry, ""
        clone._consume(carry, final=True, stop=False)
        return clone

    # --- feeding ----------------------------------------------------------------------------------

    def feed(self, text: str, stop_at_value_end: bool = False) -> int:
        """Consume ``text``. With ``stop_at_value_end``, stop right after the character that closes the
        top-level bracketed value and return how many characters of ``text`` were consumed; otherwise
        (or when the value does not end in ``text``) consume everything and return -1."""
        if not text:
            return -1
        carried = len(self._carry)
        work, self._carry = self._carry + text, ""
        if self._json and not stop_at_value_end:
            self._consume_json(work)
            return -1
        end = self._consume(work, final=False, stop=stop_at_value_end)
        return -1 if end < 0 else end - carried

    def _consume(self, work: str, *, final: bool, stop: bool, limit: int = -1) -> int:
        """Read ``work`` (to ``limit`` when given: the text after it only decides span closes)."""
        t = self._t
        pos, size = 0, len(work) if limit < 0 else limit
        while pos < size:
            if self._close is not None:
                pos = self._in_string(work, pos, final, size)
                continue
            pattern = t.scan if self._started else t.first
            m = pattern.search(work, pos, size)  # type: ignore[attr-defined]
            if m is None:
                if not final:
                    self._carry = _token_prefix_suffix(work, pos, t)
                return -1
            token, start = m.group(), m.start()
            if not final and start + t.longest > size:
                forming = _forming_token(work, max(pos, size - t.longest + 1), start + 1, t)
                if forming >= 0:  # a longer token may still form here, or before the match (a span
                    self._carry = work[forming:]  # opener '<|"|' whose '"' matched as a quote)
                    return -1
            pos = m.end()
            if token in t.openers:
                self._started = True
                self._depth += 1
            elif token in t.closers:
                self._started = True
                if self._depth > 0:
                    self._depth -= 1
                    if self._depth == 0:
                        self.ended = True
                        if stop:
                            return int(pos)
            elif token in t.span_close:
                self._close, self._escapes = t.span_close[token], False
                self._started = True
                self.spans_opened += 1
            elif token in t.tokens:
                self._close, self._escapes = token, True
                self._started = True
            else:
                self._started = True
        return -1

    def _consume_json(self, work: str) -> None:
        """``_consume`` for a JSON body without spans, not final, not stopping at the value's end: the
        same state after the same text, read a token (a bracket, a whole string) per regex step."""
        pos = 0
        if self._close is not None:  # inside a string: skip its characters and escapes
            pos = _JSON_STRING_REST.match(work).end()
            if pos == len(work):
                return
            if work[pos] == "\\":  # a backslash at the very end: its escaped character is still to come
                self._carry = "\\"
                return
            self._close = None  # the closing quote
            pos += 1
        tokens = _JSON_TOKENS.findall(work, pos)
        if not self._started and (tokens or _VISIBLE.search(work, pos) is not None):
            self._started = True
        if not tokens:
            return
        depth = self._depth
        for token in tokens:
            if token in _JSON_BRACKETS:
                if token == "{" or token == "[":
                    depth += 1
                elif depth > 0:
                    depth -= 1
                    if depth == 0:
                        self.ended = True
        self._depth = depth
        last = tokens[-1]
        if last[0] == '"' and _JSON_STRING_REST.match(last, 1).end() == len(last):
            self._close, self._escapes = '"', True  # a string still open at the end of the text
        elif last[0] == '"' and last[-1] == "\\" and _JSON_STRING_REST.match(last, 1).end() == len(last) - 1:
            self._close, self._escapes, self._carry = '"', True, "\\"

    def _in_string(self, work: str, pos: int, final: bool, size: int) -> int:
        """Advance inside the open string or span up to ``size`` (text after it is only looked at); returns
        the new position (``size`` without a close). Each ``find`` starts past the previous one, so a run
        of escapes costs linear time."""
        close = self._close
        assert close is not None
        close_at = work.find(close, pos)
        if close_at >= size:
            close_at = -1
        if self._escapes:
            # A backslash only matters before the close found: search no further (linear overall).
            slash_at = work.find("\\", pos, close_at if close_at >= 0 else len(work))
            while slash_at >= 0:
                if slash_at + 1 >= len(work):
                    if not final:
                        self._carry = "\\"
                    return size
                pos = slash_at + 2
                if 0 <= close_at < pos:
                    close_at = work.find(close, pos)
                slash_at = work.find("\\", pos, close_at if close_at >= 0 else len(work))
        elif close in self._t.follow:
            follow = self._t.follow[close]
            while close_at >= 0:
                if final:  # all the text there is: the pattern must match in it (``\Z`` for the text's end)
                    if follow.match(work, close_at + len(close)) is not None:
                        break
                else:
                    m = follow.match(work, close_at + len(close), partial=True)
                    if m is not None and not m.partial and m.end() < len(work):
                        break  # the structure goes on after it: a close
                    if m is not None:  # undecided until more text comes: wait from the close on
                        self._carry = work[close_at:size]
                        return size
                close_at = work.find(close, close_at + 1)  # close text the structure does not follow: data
                if close_at >= size:
                    close_at = -1
        if close_at < 0:
            if not final:
                self._carry = _literal_prefix_suffix(work[:size], pos, close)
            return size
        self._close = None
        return close_at + len(close)


def _forming_token(work: str, low: int, high: int, t: _Tables) -> int:
    """The first position in ``[low, high)`` from which the text to the end is a proper prefix of a token
    (a triple quote, a span opener), or -1."""
    firsts = t.token_firsts
    for start in range(low, high):
        if start < len(work) and work[start] in firsts:
            rest = work[start:]
            if any(len(token) > len(rest) and token.startswith(rest) for token in t.tokens):
                return start
    return -1


def _token_prefix_suffix(work: str, pos: int, t: _Tables) -> str:
    """The longest suffix of ``work[pos:]`` that is a proper prefix of some token (it starts with a
    token's first character: only those places are checked)."""
    firsts = t.token_firsts
    for start in range(max(pos, len(work) - t.longest + 1), len(work)):
        if work[start] in firsts:
            tail = work[start:]
            if any(token.startswith(tail) and len(token) > len(tail) for token in t.tokens):
                return tail
    return ""


def _literal_prefix_suffix(work: str, pos: int, literal: str) -> str:
    """The longest suffix of ``work[pos:]`` that is a proper prefix of ``literal`` (a close split off)."""
    if not literal:
        return ""
    first = literal[0]
    start = work.find(first, max(pos, len(work) - len(literal) + 1))
    while start >= 0:
        if literal.startswith(work[start:]):
            return work[start:]
        start = work.find(first, start + 1)
    return ""
