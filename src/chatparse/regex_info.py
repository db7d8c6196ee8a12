"""Static facts about a delimiter regex that let the scanner stay linear without changing results: its
maximum width, whether it looks ahead, how much consumed text its lookbehinds and anchors can see, and
a leading ``\\s*``-style run. Patterns the standard ``re`` parser cannot read get the safe answer."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:  # Python >= 3.11 keeps the parser here
    from re import _constants as sre_c  # type: ignore[attr-defined,unused-ignore]
    from re import _parser as sre_parse  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # pragma: no cover
    import sre_constants as sre_c  # type: ignore[no-redef,unused-ignore]
    import sre_parse  # type: ignore[no-redef,unused-ignore]

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
    # A non-empty run of lead characters at the end of the text is always a partial match (no regex
    # call needed to know): the lead test is exact and what follows must read a non-lead character.
    lead_forming: bool = False
    # Every match has one of these literals right after its lead run (or at its start without one), and
    # a lead run plus a proper prefix of one at the end of the text is a partial match: always when
    # ``anchors_exact``, else only if a zero-width test before the literal (a lookbehind) also passes.
    anchors: tuple[str, ...] | None = None
    anchors_exact: bool = True
    tails: tuple[str, ...] | None = None  # every match ends with one of these literals
    # No test of where the text ends ($, \Z, \b, \B), no atomic or possessive part: a match attempt
    # that fails on a text (partial matching) fails on every longer text too.
    end_blind: bool = False


UNKNOWN = PatternInfo(max_width=None, looks_ahead=True, context=WIDE_CONTEXT)


def analyze(pattern: str) -> PatternInfo:
    if fuzzy_braces(pattern):  # the standard parser would read the constraint as literal text
        return UNKNOWN
    try:
        parsed = sre_parse.parse(_unique_group_names(pattern), re.DOTALL)
    except Exception:  # regex-only syntax: no static facts, the scanner takes the exact slow path
        return UNKNOWN
    walker = _Walker()
    walker.walk(parsed)
    if walker.unknown:
        return UNKNOWN
    width = _bounded_width(parsed)
    caseless = parsed.state.flags & (re.IGNORECASE | re.VERBOSE)
    # Lead tests are exact membership tests of the class as `regex` reads it in the default mode.
    lead, rest_width = (None, None) if parsed.state.flags & (re.IGNORECASE | re.ASCII | re.LOCALE) \
        else _leading_run(parsed)
    after_lead = None if caseless or lead is None else _after_lead(parsed)
    inexact: list[bool] = []
    anchors = None if caseless else _anchors(parsed, lead, inexact)
    return PatternInfo(
        max_width=width,
        looks_ahead=walker.looks_ahead,
        context=walker.context,
        lead=lead,
        rest_width=rest_width,
        first_chars=None if caseless else _first_chars(parsed),
        anchor=None if caseless else _anchor_literal(parsed, lead is not None),
        after_lead=after_lead,
        lead_forming=lead is not None and after_lead is not None and _reads_first(parsed[1:])
        and not any(lead(c) for c in after_lead),
        anchors=anchors,
        anchors_exact=not inexact,
        tails=None if caseless else _tails(parsed),
        end_blind=not walker.end_sensitive,
    )


_MAX_ANCHORS = 16


def _anchors(items: Any, lead: CharTest | None, inexact: list[bool]) -> tuple[str, ...] | None:
    if lead is not None and items[0][1][0] != 0:
        return None  # `\s+X`: a lead run shorter than the minimum makes an anchor prefix no partial match
    runs = _literal_prefixes(list(items)[1 if lead is not None else 0 :], inexact)
    if not runs or not all(runs) or len(runs) > _MAX_ANCHORS or (inexact and lead is not None):
        return None
    if lead is not None and any(lead(run[0]) for run in runs):
        return None  # a run of lead characters could also be the start of an anchor
    return tuple(dict.fromkeys(runs))


def _tails(items: Any) -> tuple[str, ...] | None:
    runs = _literal_suffixes(list(items))
    if not runs or not all(runs) or len(runs) > _MAX_ANCHORS:
        return None
    return tuple(dict.fromkeys(runs))


def _literal_suffixes(items: Any) -> list[str]:
    """Literal strings one of which ends every match of ``items`` (back to the last group or alternation
    of literal ends); "" when a match can end otherwise."""
    out = [""]
    for op, av in reversed(items):
        if op == sre_c.LITERAL:
            out = [chr(av) + p for p in out]
            continue
        if op == sre_c.SUBPATTERN and not av[1] and not av[2]:
            subs = _literal_suffixes(list(av[-1]))
        elif op == sre_c.BRANCH:
            subs = [s for b in av[1] for s in _literal_suffixes(list(b))]
        else:
            break
        if len(subs) * len(out) > _MAX_ANCHORS:
            break
        out = [s + p for p in out for s in subs]
        break
    return out


def _literal_prefixes(items: Any, inexact: list[bool]) -> list[str] | None:
    """Literal strings one of which starts the consumed text of every match of ``items`` (up to and
    through the first group, alternation or optional part of literal starts), or None. Zero-width tests
    before the first literal (one, or a group of alternatives that are all zero-width) are stepped over
    and noted in ``inexact``. An optional part ``X?`` contributes the starts of X and of what follows."""
    items = list(items)
    out = [""]
    for i, (op, av) in enumerate(items):
        if op == sre_c.LITERAL:
            out = [p + chr(av) for p in out]
            continue
        if out == [""] and _zero_width(op, av):
            inexact.append(True)
            continue
        if op == sre_c.SUBPATTERN and not av[1] and not av[2]:
            subs = _literal_prefixes(av[-1], inexact)
        elif op == sre_c.BRANCH:
            subs = [s for b in av[1] for s in (_literal_prefixes(b, inexact) or [""])]
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and av[0] == 0 and av[1] == 1:
            first, rest = _literal_prefixes(av[2], inexact), _literal_prefixes(items[i + 1 :], inexact)
            subs = None if first is None or rest is None else first + rest
        else:
            break
        if subs is None or len(subs) * len(out) > _MAX_ANCHORS:
            break
        out = [p + s for p in out for s in subs]
        break
    return out


def _zero_width(op: Any, av: Any) -> bool:
    """A test that consumes nothing and reads no further than the match position: an anchor, a negative
    lookahead or a lookbehind, or a group of alternatives each made of those."""
    if op in (sre_c.AT, sre_c.ASSERT_NOT) or (op == sre_c.ASSERT and av[0] < 0):
        return True
    if op == sre_c.SUBPATTERN and not av[1] and not av[2]:
        return bool(av[-1]) and all(_zero_width(o, a) for o, a in av[-1])
    if op == sre_c.BRANCH:
        return all(branch and all(_zero_width(o, a) for o, a in branch) for branch in av[1])
    return False


def literal_strings(pattern: str) -> tuple[str, ...] | None:
    """The strings a pattern spells out when it is only literals, non-capturing groups and alternations
    of them (e.g. `<\\|channel\\|>(?:final|commentary)<\\|message\\|>`), else None."""
    if fuzzy_braces(pattern):
        return None
    try:
        parsed = sre_parse.parse(pattern, re.DOTALL)
    except Exception:
        return None
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE | re.LOCALE):
        return None
    strings = _spelled(parsed)
    return None if not strings or "" in strings else tuple(dict.fromkeys(strings))


def _spelled(items: Any) -> list[str] | None:
    out = [""]
    for op, av in items:
        if op == sre_c.LITERAL:
            out = [p + chr(av) for p in out]
            continue
        if op == sre_c.SUBPATTERN and av[0] is None and not av[1] and not av[2]:
            subs = _spelled(av[-1])
        elif op == sre_c.BRANCH:
            subs = []
            for branch in av[1]:
                spelled = _spelled(branch)
                if spelled is None:
                    return None
                subs += spelled
        else:
            return None
        if subs is None or len(subs) * len(out) > _MAX_ANCHORS:
            return None
        out = [p + s for p in out for s in subs]
    return out


_GROUP_NAME = re.compile(r"(?<!\\)((?:\\\\)*)\(\?P<(\w+)>")


def _unique_group_names(pattern: str) -> str:
    """`regex` lets alternatives reuse a group name (gpt-oss: `...(?P<name>..)...|...(?P<name>..)...`); the
    standard parser does not. Renaming the repeats changes no fact analyzed here. An occurrence inside a
    character class would only add characters to the class, so the facts stay safe (supersets)."""
    seen: dict[str, int] = {}

    def rename(m: re.Match[str]) -> str:
        name = m.group(2)
        seen[name] = seen.get(name, 0) + 1
        return m.group(0) if seen[name] == 1 else f"{m.group(1)}(?P<{name}__{seen[name]}>"

    return _GROUP_NAME.sub(rename, pattern)


def _after_lead(items: Any) -> frozenset[str] | None:
    return _first_chars(sre_parse.SubPattern(items.state, list(items[1:])))


def _anchor_literal(items: Any, has_lead: bool) -> str | None:
    chars: list[str] = []
    for op, av in list(items)[1 if has_lead else 0 :]:
        if op != sre_c.LITERAL:
            break
        chars.append(chr(av))
    return "".join(chars) or None


def _first_chars(items: Any) -> frozenset[str] | None:
    """The characters that can be at the start of a match of ``items`` (the first one consumed, or the
    one a lookahead asserts there for a zero-width match), when that is simple to know."""
    chars, decided = _firsts(items)
    return chars if decided else None


_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT)


def _reads_first(items: Any) -> bool:
    """Whether every way to match ``items`` reads the character at its start before any zero-width
    test that could fail without it (a match attempt at the end of the text is then partial)."""
    chars, decided = _firsts(items, strict=True)
    return chars is not None and decided


def _firsts(items: Any, strict: bool = False) -> tuple[frozenset[str] | None, bool]:
    """``(chars, decided)``: ``chars`` (None: unknown) can be at a match's start; ``decided`` is False when
    ``items`` can also match empty without constraining that character (what follows then decides).
    ``strict``: a zero-width test before the deciding character gives up (None)."""
    acc: set[str] = set()
    for op, av in items:
        if op in (sre_c.AT, sre_c.ASSERT_NOT) or (op == sre_c.ASSERT and av[0] < 0):
            if strict:
                return None, False
            continue  # zero-width and says nothing about the next character
        if op == sre_c.ASSERT:  # a lookahead: when it must read a character, that one is at the start
            chars, decided = _firsts(av[1], strict)
            if strict and not (chars is not None and decided):
                return None, False
            if chars is not None and decided:
                return frozenset(acc | chars), True
            continue  # ignoring a constraint only widens the set
        if op == sre_c.LITERAL:
            return frozenset(acc | {chr(av)}), True
        if op == sre_c.IN:
            chars = _set_chars(av)
            return (None, False) if chars is None else (frozenset(acc | chars), True)
        if op in (sre_c.SUBPATTERN, sre_c.ATOMIC_GROUP):
            chars, decided = _firsts(av[-1] if op == sre_c.SUBPATTERN else av, strict)
        elif op == sre_c.BRANCH:
            results = [_firsts(b, strict) for b in av[1]]
            if any(c is None for c, _ in results):
                return None, False
            chars = frozenset().union(*(c for c, _ in results if c is not None))
            decided = all(d for _, d in results)
        elif op in _REPEATS:
            chars, decided = _firsts(av[2], strict)
            decided = decided and av[0] >= 1
        else:
            return None, False
        if chars is None:
            return None, False
        acc |= chars
        if decided:
            return frozenset(acc), True
    return frozenset(acc), False


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
        self.end_sensitive = False

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
            if av not in (sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING, sre_c.AT_BEGINNING_LINE):
                self.end_sensitive = True
        elif op in (sre_c.GROUPREF, sre_c.GROUPREF_EXISTS):
            self.unknown = True
        elif op == sre_c.SUBPATTERN:
            self.walk(av[-1])
        elif op == sre_c.BRANCH:
            for sub in av[1]:
                self.walk(sub)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            self.end_sensitive = self.end_sensitive or op == sre_c.POSSESSIVE_REPEAT
            self.walk(av[2])
        elif op == sre_c.ATOMIC_GROUP:
            self.end_sensitive = True
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


# What `\s` matches in the `regex` module (Unicode White_Space; unlike str.isspace(), not U+001C-U+001F).
REGEX_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def _char_test(op: Any, av: Any) -> CharTest | None:
    """The exact membership test of one character class as the ``regex`` module reads it, or None."""
    if op == sre_c.LITERAL:
        return frozenset(chr(av)).__contains__
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
            space = True
        else:
            return None
    if space:
        chars |= REGEX_SPACE
    if not ranges:
        return frozenset(chars).__contains__  # a C-level test on the hot path

    def test(c: str) -> bool:
        return c in chars or any(lo <= ord(c) <= hi for lo, hi in ranges)

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


def fuzzy_braces(pattern: str) -> bool:
    """Whether ``pattern`` may hold a fuzzy-matching constraint of the ``regex`` module (``{e<=1}``,
    ``{i<=1,d<=1}``, ``{1i+1d<4}``): a brace outside a character class, not escaped and not a counted
    repeat, whose body starts with a digit or an error letter and names one (e, i, d, s). The standard
    parser reads such a brace as literal text, so no static fact of the pattern would hold."""
    i, size = 0, len(pattern)
    while i < size:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _skip_class(pattern, i)
            continue
        if c == "{":
            counted = _COUNTED.match(pattern, i)
            if counted is not None and (counted[1] or counted[3]):
                i = counted.end()
                continue
            end = pattern.find("}", i)
            body = pattern[i + 1 : end] if end != -1 else ""
            if body and body[0] in "eids0123456789" and any(letter in body for letter in "eids"):
                return True
        i += 1
    return False


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
