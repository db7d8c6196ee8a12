"""Budgeted regex search for content parsers, without the per-call cost of the budget where it is not
needed: a pattern whose every match starts with a literal is searched with ``str.find`` and tried only
where that literal occurs, and a single-pass pattern (no backtracking that costs more than one step per
character) is tried there without the ``regex`` module's ``timeout=``, which reads the process CPU clock
(a system call) several times per call. Results are exactly ``pattern.search``'s and ``pattern.match``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from re import _constants as sre_c  # type: ignore[attr-defined,unused-ignore]
from re import _parser as sre_parse  # type: ignore[attr-defined,unused-ignore]
from typing import Any

import regex

from chatparse.content.args import timed

# Failed anchored tries before one budgeted search takes over (many literal occurrences that do not
# start a match: the search walks them in one call).
_MAX_TRIES = 8
_SINGLE_CHAR = (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.IN, sre_c.ANY)
_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT)
_CATEGORIES = {
    sre_c.CATEGORY_DIGIT: r"\d", sre_c.CATEGORY_NOT_DIGIT: r"\D", sre_c.CATEGORY_SPACE: r"\s",
    sre_c.CATEGORY_NOT_SPACE: r"\S", sre_c.CATEGORY_WORD: r"\w", sre_c.CATEGORY_NOT_WORD: r"\W",
}


@dataclass(frozen=True, slots=True)
class SearchFacts:
    """``anchors``: literals one of which starts every match (None: unknown); ``finder``: a compiled
    alternation of them when there are several; ``single_pass``: a match attempt costs time linear in
    what it reads, so it needs no timeout."""

    anchors: tuple[str, ...] | None
    finder: Any
    single_pass: bool


_FACTS: dict[tuple[str, int], SearchFacts] = {}


def search_facts(pattern: Any) -> SearchFacts:
    """The facts of a compiled content pattern (cached by its source)."""
    key = (pattern.pattern, pattern.flags)
    facts = _FACTS.get(key)
    if facts is None:
        facts = _FACTS[key] = _analyze(*key)
    return facts


def _analyze(source: str, flags: int) -> SearchFacts:
    from chatparse.template.regex_info import analyze  # the template layer imports the content registry

    info = analyze(source)
    anchors = info.anchors if info.lead is None and not flags & regex.IGNORECASE else None
    finder = None
    if anchors is not None and len(anchors) > 1:
        finder = regex.compile("|".join(regex.escape(a) for a in sorted(anchors, key=len, reverse=True)))
    return SearchFacts(anchors, finder, _single_pass(source, flags))


def _single_pass(source: str, flags: int) -> bool:
    """A sequence of literals, single-character sets and groups of them, where each repeat is of one
    character set and is followed by a literal outside that set (or ends the pattern): giving back a
    repeated character can never let what follows match, so an attempt never rescans text."""
    if flags & (regex.IGNORECASE | regex.VERSION1 | regex.FULLCASE):
        return False
    try:
        parsed = sre_parse.parse(source, re.DOTALL)
    except Exception:  # regex-only syntax: no claim
        return False
    if parsed.state.flags & (re.IGNORECASE | re.LOCALE | re.ASCII):
        return False
    items = _flatten(list(parsed))
    if items is None:
        return False
    for i, (op, av) in enumerate(items):
        if op in _SINGLE_CHAR:
            continue
        body = list(av[2])
        if len(body) != 1 or body[0][0] not in _SINGLE_CHAR:
            return False
        if i + 1 < len(items):
            follow_op, follow_av = items[i + 1]
            if follow_op != sre_c.LITERAL or _in_set(chr(follow_av), body[0]) is not False:
                return False
    return True


def _flatten(items: list[Any]) -> list[Any] | None:
    """``items`` with plain groups opened up; None if anything but literals, sets, repeats and plain groups
    is there."""
    out: list[Any] = []
    for op, av in items:
        if op == sre_c.SUBPATTERN and not av[1] and not av[2]:
            inner = _flatten(list(av[-1]))
            if inner is None:
                return None
            out += inner
        elif op in _SINGLE_CHAR or op in _REPEATS:
            out.append((op, av))
        else:
            return None
    return out


def _in_set(char: str, item: Any) -> bool | None:
    """Whether ``char`` matches the single-character item (None: cannot tell)."""
    op, av = item
    if op == sre_c.LITERAL:
        return char == chr(av)
    if op == sre_c.NOT_LITERAL:
        return char != chr(av)
    if op == sre_c.ANY:
        return True
    negate, hit = False, False
    for kind, value in av:
        if kind == sre_c.NEGATE:
            negate = True
        elif kind == sre_c.LITERAL:
            hit = hit or char == chr(value)
        elif kind == sre_c.RANGE:
            hit = hit or value[0] <= ord(char) <= value[1]
        elif kind == sre_c.CATEGORY and value in _CATEGORIES:
            hit = hit or regex.match(_CATEGORIES[value], char) is not None
        else:
            return None
    return hit != negate


def match(pattern: Any, text: str, pos: int) -> Any:
    """``pattern.match(text, pos)``, under the budget unless the pattern is single-pass."""
    if search_facts(pattern).single_pass:
        return pattern.match(text, pos)
    return timed(pattern.match, text, pos)


def search(pattern: Any, text: str, pos: int = 0) -> Any:
    """``pattern.search(text, pos)`` under the budget: tried only where one of its leading literals
    occurs when it has them (after a few failed tries, one budgeted search from there)."""
    facts = search_facts(pattern)
    anchors = facts.anchors
    if anchors is None:
        return timed(pattern.search, text, pos)
    tries = 0
    at = _next_anchor(text, pos, anchors, facts.finder)
    while at >= 0:
        if tries == _MAX_TRIES:
            return timed(pattern.search, text, at)
        m = pattern.match(text, at) if facts.single_pass else timed(pattern.match, text, at)
        if m is not None:
            return m
        tries += 1
        at = _next_anchor(text, at + 1, anchors, facts.finder)
    return None


def _next_anchor(text: str, pos: int, anchors: tuple[str, ...], finder: Any) -> int:
    if finder is None:
        return text.find(anchors[0], pos)
    found = finder.search(text, pos)  # literals only: linear, needs no budget
    return -1 if found is None else int(found.start())
