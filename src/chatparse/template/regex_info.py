"""Static facts about a delimiter regex that let the scanner stay linear without changing results: its
maximum width, whether it looks ahead, how much consumed text its lookbehinds and anchors can see, and
a leading ``\\s*``-style run. Patterns the standard ``re`` parser cannot read get the safe answer."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:  # Python >= 3.11 keeps the parser here
    from re import _constants as sre_c  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

# Consumed text kept before the scan position when a pattern may look behind an unknown distance.
WIDE_CONTEXT = 4096

CharTest = Callable[[str], bool]


@dataclass(frozen=True)
class PatternInfo:
    """``max_width``: the longest match, or None if unbounded or unknown. ``looks_ahead``: a lookahead
    (or anything unknown) can read past the match. ``context``: consumed characters the pattern may
    read before its start. ``lead``/``rest_width``: a leading unbounded run of one character class
    (its membership test, a superset of the real class) and the bounded width of what follows."""

    max_width: int | None
    looks_ahead: bool
    context: int
    lead: CharTest | None = None
    rest_width: int | None = None
    first_chars: frozenset[str] | None = None  # every match starts with one of these (None: unknown)
    anchor: str | None = None  # the literal text every match has right after its leading run
    after_lead: frozenset[str] | None = None  # first characters of what follows the leading run


UNKNOWN = PatternInfo(max_width=None, looks_ahead=True, context=WIDE_CONTEXT)


def analyze(pattern: str) -> PatternInfo:
    try:
        parsed = sre_parse.parse(pattern, re.DOTALL)
    except Exception:  # regex-only syntax: no static facts, the scanner takes the exact slow path
        return UNKNOWN
    walker = _Walker()
    walker.walk(parsed)
    if walker.unknown:
        return UNKNOWN
    width = _bounded_width(parsed)
    lead, rest_width = _leading_run(parsed)
    caseless = parsed.state.flags & (re.IGNORECASE | re.VERBOSE)
    return PatternInfo(
        max_width=width,
        looks_ahead=walker.looks_ahead,
        context=walker.context,
        lead=lead,
        rest_width=rest_width,
        first_chars=None if caseless or parsed.getwidth()[0] == 0 else _first_chars(parsed),
        anchor=None if caseless else _anchor_literal(parsed, lead is not None),
        after_lead=None if caseless or lead is None else _after_lead(parsed),
    )


def _after_lead(items: Any) -> frozenset[str] | None:
    rest = sre_parse.SubPattern(items.state, list(items[1:]))
    return _first_chars(rest) if rest.getwidth()[0] > 0 else None


def _anchor_literal(items: Any, has_lead: bool) -> str | None:
    chars: list[str] = []
    for op, av in list(items)[1 if has_lead else 0 :]:
        if op != sre_c.LITERAL:
            break
        chars.append(chr(av))
    return "".join(chars) or None


_ZERO_WIDTH = (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT)


def _first_chars(items: Any) -> frozenset[str] | None:
    """The characters a non-empty match of ``items`` can start with, when that is simple to know."""
    for op, av in items:
        if op in _ZERO_WIDTH:
            continue
        if op == sre_c.LITERAL:
            return frozenset(chr(av))
        if op == sre_c.IN:
            return _set_chars(av)
        if op == sre_c.SUBPATTERN:
            sub = av[-1]
            return _first_chars(sub) if sub.getwidth()[0] > 0 else None
        if op == sre_c.BRANCH:
            firsts = [_first_chars(b) if b.getwidth()[0] > 0 else None for b in av[1]]
            return None if any(f is None for f in firsts) else frozenset().union(*firsts)  # type: ignore[arg-type]
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT) and av[0] >= 1:
            return _first_chars(av[2])
        return None
    return None


def _set_chars(av: Any) -> frozenset[str] | None:
    chars: set[str] = set()
    for op, item in av:
        if op == sre_c.LITERAL:
            chars.add(chr(item))
        elif op == sre_c.RANGE and item[1] - item[0] <= 256:
            chars.update(chr(c) for c in range(item[0], item[1] + 1))
        else:
            return None
    return frozenset(chars)


def _bounded_width(items: Any) -> int | None:
    hi = int(items.getwidth()[1])
    return None if hi >= sre_c.MAXREPEAT else hi


class _Walker:
    def __init__(self) -> None:
        self.looks_ahead = False
        self.context = 0
        self.unknown = False

    def walk(self, items: Any) -> None:
        for op, av in items:
            self.visit(op, av)

    def visit(self, op: Any, av: Any) -> None:
        if op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            direction, sub = av
            if direction == 1:
                self.looks_ahead = True
            else:
                width = _bounded_width(sub)
                self.context = max(self.context, WIDE_CONTEXT if width is None else width + 1)
            self.walk(sub)
        elif op == sre_c.AT:
            if av in (sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING, sre_c.AT_BOUNDARY, sre_c.AT_NON_BOUNDARY):
                self.context = max(self.context, 1)
        elif op in (sre_c.GROUPREF, sre_c.GROUPREF_EXISTS):
            self.unknown = True
        elif op == sre_c.SUBPATTERN:
            self.walk(av[-1])
        elif op == sre_c.BRANCH:
            for sub in av[1]:
                self.walk(sub)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            self.walk(av[2])
        elif op == sre_c.ATOMIC_GROUP:
            self.walk(av)


def _leading_run(items: Any) -> tuple[CharTest | None, int | None]:
    if len(items) < 1:
        return None, None
    op, av = items[0]
    if op not in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) or av[1] < sre_c.MAXREPEAT:
        return None, None
    sub = av[2]
    if len(sub) != 1:
        return None, None
    test = _char_test(*sub[0])
    if test is None:
        return None, None
    rest = sre_parse.SubPattern(items.state, list(items[1:]))
    return test, _bounded_width(rest)


def _char_test(op: Any, av: Any) -> CharTest | None:
    """A membership test that is a superset of the class in the ``regex`` module, or None."""
    if op == sre_c.LITERAL:
        char = chr(av)
        return lambda c: c == char
    if op != sre_c.IN:
        return None
    chars: set[str] = set()
    ranges: list[tuple[int, int]] = []
    space = False
    for item_op, item_av in av:
        if item_op == sre_c.LITERAL:
            chars.add(chr(item_av))
        elif item_op == sre_c.RANGE:
            ranges.append(item_av)
        elif item_op == sre_c.CATEGORY and item_av in (sre_c.CATEGORY_SPACE, sre_c.CATEGORY_UNI_SPACE):
            space = True  # str.isspace() includes every character regex's \s does
        else:
            return None

    def test(c: str) -> bool:
        return c in chars or (space and c.isspace()) or any(lo <= ord(c) <= hi for lo, hi in ranges)

    return test


# --- load-time safety facts --------------------------------------------------------------------------

_COUNTED = re.compile(r"\{(\d*)(,(\d*))?\}")


@dataclass(frozen=True)
class QuantifierFacts:
    """From the raw pattern text, without compiling it: the largest counted repeat (``{n}``/``{n,m}``),
    the largest product of nested counted repeats (what the compiler expands), and whether some group
    that contains an unbounded quantifier is itself repeated (``(a+)+``: catastrophic backtracking)."""

    max_count: int
    count_product: int
    nested_quantifier: bool


def quantifier_facts(pattern: str) -> QuantifierFacts:
    # Per open group: [largest count product inside, contains an unbounded quantifier].
    stack: list[list[Any]] = [[1, False]]
    last_product, last_unbounded, last_is_group = 1, False, False
    max_count = 0
    nested = False
    i, size = 0, len(pattern)
    while i < size:
        c = pattern[i]
        if c == "\\":
            i += 2
            last_product, last_unbounded, last_is_group = 1, False, False
            continue
        if c == "[":
            i = _skip_class(pattern, i)
            last_product, last_unbounded, last_is_group = 1, False, False
            continue
        if c == "(":
            stack.append([1, False])
            i += 1
            continue
        if c == ")" and len(stack) > 1:
            inner = stack.pop()
            stack[-1][0] = max(stack[-1][0], inner[0])
            stack[-1][1] = stack[-1][1] or inner[1]
            last_product, last_unbounded, last_is_group = inner[0], inner[1], True
            i += 1
            continue
        counted = _COUNTED.match(pattern, i) if c == "{" else None
        if counted is not None and not counted[1] and not counted[3]:
            counted = None  # "{}" / "{,}": literal text
        if counted is not None or c in "*+":
            if counted is not None:
                low = int(counted[1] or 0)
                high = low if counted[2] is None else (int(counted[3]) if counted[3] else None)
                count = max(low, high or 0)
                max_count = max(max_count, count)
                unbounded = high is None
                repeats = high is None or high > 1
                i = counted.end()
            else:
                count, unbounded, repeats = 1, True, True
                i += 1
            if last_is_group and last_unbounded and repeats:
                nested = True
            last_product = last_product * max(count, 1)
            stack[-1][0] = max(stack[-1][0], last_product)
            stack[-1][1] = stack[-1][1] or unbounded
            last_is_group = False
            continue
        last_product, last_unbounded, last_is_group = 1, False, False
        i += 1
    return QuantifierFacts(max_count, max(s[0] for s in stack), nested)


def _skip_class(pattern: str, i: int) -> int:
    """The index just past the character class starting at ``pattern[i] == '['``."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern[j] == "]":
            return j + 1
        j += 1
    return j
