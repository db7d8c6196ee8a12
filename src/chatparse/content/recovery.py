"""Item-by-item reading of list regions (several tool calls in one region): where each item ends,
string- and bracket-aware, so one bad or cut-off item never takes its siblings with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from chatparse.content.registry import BadItem
from chatparse.structure import Structure

JSON = Structure("json")
PYTHON = Structure("python")
_SPACE = regex.compile(r"\s*")
Good = list[tuple[Any, str]]
_CALL_HEAD = regex.compile(r"[^\W\d][\w.\-]*\s*\(")


def skip_space(text: str, pos: int) -> int:
    return int(_SPACE.match(text, pos).end())


def bracketed_end(text: str, pos: int, structure: Structure) -> int:
    """Where the bracketed value starting at ``pos`` (its opening bracket) ends, or -1 when the text ends
    first (the value was cut off)."""
    consumed = structure.tracker().feed(text[pos:], stop_at_value_end=True)
    return -1 if consumed < 0 else pos + consumed


def item_end(text: str, pos: int, structure: Structure, stops: str) -> int:
    """The end of an item that is not one bracketed value: the next character of ``stops`` outside
    strings and brackets (or the end of the text); -1 when the text ends inside a string or bracket."""
    tracker = structure.tracker()
    index = pos
    next_at = dict.fromkeys(stops, -1)
    while True:
        for char, at in next_at.items():  # each stop character's next occurrence, searched once per pass
            if at < index:
                found = text.find(char, index)
                next_at[char] = found if found >= 0 else len(text)
        stop = min(next_at.values(), default=len(text))
        tracker.feed(text[index:stop])
        if tracker.balanced:
            return stop
        if stop >= len(text):
            return -1
        tracker.feed(text[stop])
        index = stop + 1


def call_paren(text: str, pos: int) -> int:
    """The position of the ``(`` of a call written at ``pos`` (``name(``), or -1."""
    m = _CALL_HEAD.match(text, pos)
    return m.end() - 1 if m is not None else -1


def read_items(
    text: str,
    read_one: Callable[[str], Any],
    *,
    structure: Structure,
    starts_value: Callable[[str, int], int],
    separators: str,
    opener: str | None,
    closer: str | None,
) -> tuple[Good, list[BadItem]]:
    """Read a list region item by item. ``starts_value(text, pos)`` gives the position of the item's
    bracket that ends it (its opening bracket), or -1 when the item does not start a bracketed value;
    ``read_one`` parses one item's text (``ValueError`` on bad input). Items are separated by any of
    ``separators``; the list may be wrapped in ``opener`` … ``closer``."""
    good: Good = []
    bad: list[BadItem] = []
    pos = skip_space(text, 0)
    wrapped = opener is not None and text.startswith(opener, pos)
    if wrapped:
        pos += len(opener)  # type: ignore[arg-type]
    stops = separators + (closer or "")
    while True:
        pos = skip_space(text, pos)
        while pos < len(text) and text[pos] in separators:
            pos = skip_space(text, pos + 1)
        if pos >= len(text):
            return good, bad  # the end (a missing closer of a list of whole items cuts nothing)
        if wrapped and closer is not None and text.startswith(closer, pos):
            rest = text[pos + len(closer) :]
            if rest.strip():
                bad.append(BadItem(rest.strip(), f"expected the end of the region after {closer!r}, found text"))
            return good, bad
        bracket = starts_value(text, pos)
        end = bracketed_end(text, bracket, structure) if bracket >= 0 else item_end(text, pos, structure, stops)
        if end < 0:
            raw = text[pos:].rstrip()
            bad.append(BadItem(raw, "the text ends inside this item", at_end=True))
            return good, bad
        end = max(end, pos + 1)  # a stray closer where an item should start is one bad character: move on
        raw = text[pos:end]
        try:
            good.append((read_one(raw), raw))
        except (ValueError, RecursionError) as exc:
            bad.append(BadItem(raw, str(exc)[:300], at_end=not text[end:].strip()))
        pos = end
