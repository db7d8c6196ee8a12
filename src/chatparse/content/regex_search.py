"""Budgeted regex search for content parsers, without the per-call cost of the budget where it is not
needed: a pattern whose every match starts with a literal is searched with ``str.find`` and tried only
where that literal occurs, and a single-pass pattern (no backtracking that costs more than one step per
character) is tried there without the ``regex`` module's ``timeout=``, which reads the process CPU clock
(a system call) several times per call. Results are exactly ``pattern.search``'s and ``pattern.match``'s.
"""

from __future__ import annotations

import re
import warnings
from re import _constants as sre_c  # type: ignore[attr-defined,unused-ignore]
from re import _parser as sre_parse  # type: ignore[attr-defined,unused-ignore]
from typing import Any

import regex

from chatparse.content.args import compiled, timed
from chatparse.regex_info import analyze, fuzzy_braces

# Failed anchored tries before one budgeted search takes over (many literal occurrences that do not
# start a match: the search walks them in one call).
_MAX_TRIES = 8
_SINGLE_CHAR = (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.IN, sre_c.ANY)
_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT)
_CATEGORIES = {
    sre_c.CATEGORY_DIGIT: r"\d", sre_c.CATEGORY_NOT_DIGIT: r"\D", sre_c.CATEGORY_SPACE: r"\s",
    sre_c.CATEGORY_NOT_SPACE: r"\S", sre_c.CATEGORY_WORD: r"\w", sre_c.CATEGORY_NOT_WORD: r"\W",
}


class Searcher:
    """A content pattern (compiled with DOTALL) and how to search it: ``anchors``, literals one of which
    starts every match (None: unknown), found by ``str.find`` or, for several, a compiled alternation of
    them; ``single_pass``: a match attempt costs time linear in what it reads, so it needs no timeout."""

    __slots__ = ("anchors", "finder", "pattern", "single_pass")

    def __init__(self, source: str) -> None:
        self.pattern = compiled(source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the standard parser on `regex` syntax
            info = analyze(source)
        plain = not self.pattern.flags & regex.IGNORECASE  # analyze() claims nothing of fuzzy patterns
        self.anchors = info.anchors if plain and info.lead is None else None
        self.finder = None
        if self.anchors is not None and len(self.anchors) > 1:
            alternation = "|".join(regex.escape(a) for a in sorted(self.anchors, key=len, reverse=True))
            self.finder = regex.compile(alternation)
        self.single_pass = _single_pass(source, self.pattern.flags)

    def match(self, text: str, pos: int) -> Any:
        """``pattern.match(text, pos)``, under the budget unless the pattern is single-pass."""
        if self.single_pass:
            return self.pattern.match(text, pos)
        return timed(self.pattern.match, text, pos)

    def search(self, text: str, pos: int = 0) -> Any:
        """``pattern.search(text, pos)`` under the budget: tried only where one of its leading literals
        occurs when it has them (after a few failed tries, one budgeted search from there)."""
        anchors = self.anchors
        if anchors is None:
            return timed(self.pattern.search, text, pos)
        tries = 0
        at = self._next_anchor(text, pos)
        while at >= 0:
            if tries == _MAX_TRIES:
                return timed(self.pattern.search, text, at)
            m = self.match(text, at)
            if m is not None:
                return m
            tries += 1
            at = self._next_anchor(text, at + 1)
        return None

    def _next_anchor(self, text: str, pos: int) -> int:
        if self.finder is None:
            return text.find(self.anchors[0], pos)  # type: ignore[index]
        found = self.finder.search(text, pos)  # literals only: linear, needs no budget
        return -1 if found is None else int(found.start())


_SEARCHERS: dict[str, Searcher] = {}


def searcher(source: str) -> Searcher:
    """The ``Searcher`` of a content pattern's source, built once."""
    found = _SEARCHERS.get(source)
    if found is None:
        found = _SEARCHERS[source] = Searcher(source)
    return found


def _single_pass(source: str, flags: int) -> bool:
    """Whether a match attempt costs time linear in the text it reads: literals, single-character sets,
    plain groups, zero-width tests, alternations and optional parts (at most ``_MAX_PATHS`` ways through
    the pattern), where each repeat is of one character set and everything that can follow it starts
    with a literal outside that set (or ends the match). Giving back a repeated character then never lets
    what follows match, so no way through rescans text. A lookahead must end the pattern (it is tested
    once per way through); a lookbehind holds only literals and sets."""
    if flags & (regex.IGNORECASE | regex.VERSION1 | regex.FULLCASE) or fuzzy_braces(source):
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "possible nested set": `regex` reads [[:alpha:]] otherwise
            parsed = sre_parse.parse(source, re.DOTALL)
    except Exception:  # regex-only syntax: no claim
        return False
    if parsed.state.flags & (re.IGNORECASE | re.LOCALE | re.ASCII):
        return False
    paths = [1]
    return _linear(list(parsed), [], paths) and paths[0] <= _MAX_PATHS


def _linear(items: list[Any], after: list[list[Any]], paths: list[int]) -> bool:
    """``items``, followed by the sequences ``after``, is single-pass; ``paths`` counts the ways through."""
    for i, (op, av) in enumerate(items):
        rest = [items[i + 1 :], *after]
        if op in _SINGLE_CHAR or op == sre_c.AT:
            continue
        if op == sre_c.SUBPATTERN and not av[1] and not av[2]:
            ok = _linear(list(av[-1]), rest, paths)
        elif op == sre_c.BRANCH:
            paths[0] *= len(av[1])
            ok = all(_linear(list(branch), rest, paths) for branch in av[1])
        elif op in _REPEATS and len(av[2]) == 1 and av[2][0][0] in _SINGLE_CHAR:
            follow = _first(rest)
            ok = follow is not None and all(c == _END or _in_set(c, av[2][0]) is False for c in follow)
        elif op in _REPEATS and av[0] == 0 and av[1] == 1:  # an optional part
            paths[0] *= 2
            ok = _linear(list(av[2]), rest, paths)
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT) and av[0] < 0:  # a lookbehind of fixed text
            ok = all(sub_op in _SINGLE_CHAR for sub_op, _ in av[1])
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):  # a lookahead, tested once at the end of each way
            ok = not any(rest) and _linear(list(av[1]), [], paths)
        else:
            ok = False
        if not ok:
            return False
    return True


_END = ""  # in a first-character set: what follows can be empty (the match ends there)
_MAX_PATHS = 16


def _first(chain: list[list[Any]]) -> frozenset[str] | None:
    """The literal characters that can start the concatenation of ``chain`` (``_END`` if it can be
    empty), or None when something else can (a set, a repeat, a zero-width test)."""
    for index, items in enumerate(chain):
        for i, (op, av) in enumerate(items):
            rest = [items[i + 1 :], *chain[index + 1 :]]
            if op == sre_c.LITERAL:
                return frozenset({chr(av)})
            if op == sre_c.IN and all(kind == sre_c.LITERAL for kind, _ in av):  # ["']
                return frozenset(chr(value) for _, value in av)
            if op == sre_c.SUBPATTERN and not av[1] and not av[2]:
                return _first([list(av[-1]), *rest])
            if op == sre_c.BRANCH:
                options = [_first([list(branch), *rest]) for branch in av[1]]
            elif op in _REPEATS and av[0] == 0 and av[1] == 1 and not (len(av[2]) == 1 and av[2][0][0] in _SINGLE_CHAR):
                options = [_first([list(av[2]), *rest]), _first(rest)]
            else:
                return None
            if any(option is None for option in options):
                return None
            return frozenset().union(*options)  # type: ignore[arg-type]
    return frozenset({_END})


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
