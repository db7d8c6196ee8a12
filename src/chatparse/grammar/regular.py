"""Regular expressions as automata over Unicode characters, for grammar forms without regex terminals (GBNF,
xgrammar EBNF): a regex's own syntax tree (``regex_tree``), and the free-text nodes ``Until`` and ``Text``
as minimal DFAs (``until_dfa``, ``text_dfa``) with transitions on character sets.

Patterns are read with Python's own regex parser (``re._parser``) in the syntax both Python and Rust's
`regex` crate (llguidance) give the same meaning: literals, classes, ``.`` (with ``(?s:...)``), groups,
alternation and repetition; ``\\s`` is Unicode ``White_Space`` as in Rust. Anything else (anchors,
lookaround, backreferences, case folding, ``\\w``, ``\\d``, ``\\b``, set operations in classes) raises
``GrammarError`` (``code="unsupported_regex"``): an automaton is never looser than the regex.

No automaton library: interegular (outlines, vLLM) builds whole DFAs and intersects them, 45 s for the built-ins'
324 distinct free-text and regex nodes where building only the reachable product here takes about 2.5 s, and
greenery 4.2 cannot read ``(?s:...)`` or ``\\/``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chatparse.grammar.ir import any_of
from chatparse.grammar.jsonschema import GrammarError

MAX_CHAR = 0x10FFFF
# A set of characters: sorted, disjoint, non-adjacent closed intervals of code points.
Chars = tuple[tuple[int, int], ...]
ANY: Chars = ((0, MAX_CHAR),)
# Unicode White_Space (what Rust's regex reads ``\s`` as; Python's ``\s`` also takes U+001C..U+001F).
WHITE_SPACE: Chars = ((0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
                      (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))


def chars_union(sets: Iterable[Chars]) -> Chars:
    spans = sorted(span for chars in sets for span in chars)
    out: list[tuple[int, int]] = []
    for lo, hi in spans:
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def chars_negate(chars: Chars) -> Chars:
    out: list[tuple[int, int]] = []
    at = 0
    for lo, hi in chars:
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= MAX_CHAR:
        out.append((at, MAX_CHAR))
    return tuple(out)


def _unsupported(pattern: str, what: str) -> GrammarError:
    return GrammarError(f"regex {pattern!r} uses {what}, which this grammar form cannot express exactly; expected "
                        "literals, classes, '.', groups, '|' and repetitions", code="unsupported_regex",
                        field=pattern)


# --- the syntax tree --------------------------------------------------------------------------------------
# ("chars", Chars) | ("seq", [tree...]) | ("alt", [tree...]) | ("rep", min, max|None, tree)

Tree = tuple[Any, ...]


def _set_operation(pattern: str) -> bool:
    """Whether a class of ``pattern`` holds a "[" or a doubled &, -, ~ or | (a nested class or a set operation
    for Rust; characters for Python)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[":
            i += 1
            i += pattern.startswith("^", i)
            i += pattern.startswith("]", i)
            while i < len(pattern) and pattern[i] != "]":
                if pattern[i] == "[" or pattern[i: i + 2] in ("&&", "--", "~~", "||"):
                    return True
                i += 2 if pattern[i] == "\\" else 1
        i += 1
    return False


@functools.lru_cache(maxsize=4096)
def regex_tree(pattern: str) -> Tree:
    """The syntax tree of ``pattern``: character sets, sequences, alternatives and bounded repetitions."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    if _set_operation(pattern):
        raise _unsupported(pattern, "a nested class or a set operation in a class (Rust reads [[..]] and &&, --, "
                                    "~~ there; Python reads characters)")
    try:
        parsed = _parser.parse(pattern, 0)
    except re.error as exc:
        raise _unsupported(pattern, f"syntax Python's regex cannot read ({exc})") from exc
    bad_flags = c.SRE_FLAG_IGNORECASE | c.SRE_FLAG_MULTILINE | c.SRE_FLAG_VERBOSE | c.SRE_FLAG_ASCII | \
        c.SRE_FLAG_LOCALE

    def category(code: Any) -> Chars:
        if code == c.CATEGORY_SPACE:
            return WHITE_SPACE
        if code == c.CATEGORY_NOT_SPACE:
            return chars_negate(WHITE_SPACE)
        raise _unsupported(pattern, f"the class {code} (Unicode tables differ between engines)")

    def klass(items: Sequence[tuple[Any, Any]]) -> Chars:
        negate = False
        sets: list[Chars] = []
        for op, av in items:
            if op is c.NEGATE:
                negate = True
            elif op is c.LITERAL:
                sets.append(((av, av),))
            elif op is c.RANGE:
                sets.append(((av[0], av[1]),))
            elif op is c.CATEGORY:
                sets.append(category(av))
            else:
                raise _unsupported(pattern, f"{op} in a class")
        chars = chars_union(sets)
        return chars_negate(chars) if negate else chars

    def convert(sub: Any, flags: int) -> Tree:
        if flags & bad_flags:
            raise _unsupported(pattern, "a flag other than s")
        items: list[Tree] = []
        for op, av in sub:
            if op is c.LITERAL:
                items.append(("chars", ((av, av),)))
            elif op is c.NOT_LITERAL:
                items.append(("chars", chars_negate(((av, av),))))
            elif op is c.ANY:
                items.append(("chars", ANY if flags & c.SRE_FLAG_DOTALL else chars_negate(((10, 10),))))
            elif op is c.IN:
                items.append(("chars", klass(av)))
            elif op is c.SUBPATTERN:
                _group, add, remove, inner = av
                items.append(convert(inner, (flags | add) & ~remove))
            elif op is c.BRANCH:
                items.append(("alt", [convert(branch, flags) for branch in av[1]]))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT):  # a lazy repetition matches the same texts
                low, high, inner = av
                items.append(("rep", low, None if high is c.MAXREPEAT else high, convert(inner, flags)))
            else:
                raise _unsupported(pattern, str(op).lower().replace("_", " "))
        return items[0] if len(items) == 1 else ("seq", items)

    return convert(parsed, parsed.state.flags & ~c.SRE_FLAG_UNICODE)


def nullable(tree: Tree) -> bool:
    """Whether ``tree`` matches the empty text."""
    kind = tree[0]
    if kind == "chars":
        return False
    if kind == "seq":
        return all(nullable(item) for item in tree[1])
    if kind == "alt":
        return any(nullable(item) for item in tree[1])
    return bool(tree[1] == 0 or nullable(tree[3]))


def non_empty(tree: Tree) -> Tree | None:
    """A tree for the non-empty texts ``tree`` matches (None: it matches only the empty text). GBNF engines
    write ``x*`` as a rule ``r ::= x r | ""``, which is left-recursive when ``x`` can be empty."""
    kind = tree[0]
    if kind == "chars" or not nullable(tree):
        return tree
    if kind == "alt":
        items = [t for t in (non_empty(item) for item in tree[1]) if t is not None]
        return None if not items else items[0] if len(items) == 1 else ("alt", items)
    if kind == "seq":
        if not tree[1]:
            return None
        head, rest = tree[1][0], ("seq", tree[1][1:])
        options = [t for t in (_concat(non_empty(head), rest), non_empty(rest)) if t is not None]
        return None if not options else options[0] if len(options) == 1 else ("alt", options)
    _, _low, high, inner = tree
    inner_part = non_empty(inner)
    if inner_part is None or high == 0:
        return None
    return ("rep", 1, high, inner_part)


def _concat(head: Tree | None, rest: Tree) -> Tree | None:
    if head is None:
        return None
    return head if not rest[1] else ("seq", [head, *rest[1]])


# --- NFA ----------------------------------------------------------------------------------------------------


class _NFA:
    """Thompson's construction: numbered states, each with character-set edges and empty moves."""

    def __init__(self) -> None:
        self.edges: list[list[tuple[Chars, int]]] = []
        self.empty: list[list[int]] = []
        self._closures: dict[int, frozenset[int]] = {}  # (built once the automaton is complete)

    def state(self) -> int:
        self.edges.append([])
        self.empty.append([])
        return len(self.edges) - 1

    def build(self, tree: Tree) -> tuple[int, int]:
        start, end = self.state(), self.state()
        self._into(tree, start, end)
        return start, end

    def _into(self, tree: Tree, start: int, end: int) -> None:
        kind = tree[0]
        if kind == "chars":
            if tree[1]:
                self.edges[start].append((tree[1], end))
        elif kind == "seq":
            at = start
            for item in tree[1]:
                nxt = self.state()
                self._into(item, at, nxt)
                at = nxt
            self.empty[at].append(end)
        elif kind == "alt":
            for item in tree[1]:
                self._into(item, start, end)
        else:
            _, low, high, inner = tree
            at = start
            for _ in range(low):
                nxt = self.state()
                self._into(inner, at, nxt)
                at = nxt
            if high is None:
                loop = self.state()
                self.empty[at].append(loop)
                back = self.state()
                self._into(inner, loop, back)
                self.empty[back].append(loop)
                self.empty[loop].append(end)
            else:
                for _ in range(high - low):
                    self.empty[at].append(end)
                    nxt = self.state()
                    self._into(inner, at, nxt)
                    at = nxt
                self.empty[at].append(end)

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        seen: set[int] = set()
        for state in states:
            hit = self._closures.get(state)
            if hit is None:
                hit = self._closures[state] = self._closure_of(state)
            seen |= hit
        return frozenset(seen)

    def _closure_of(self, state: int) -> frozenset[int]:
        seen = {state}
        todo = list(seen)
        while todo:
            for nxt in self.empty[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)


def _split(edges: Sequence[tuple[Chars, int]]) -> list[tuple[Chars, frozenset[int]]]:
    """The edges' character sets cut into disjoint sets, each with the states its characters lead to."""
    cuts = sorted({p for chars, _ in edges for lo, hi in chars for p in (lo, hi + 1)})
    groups: dict[frozenset[int], list[tuple[int, int]]] = {}
    starts = [[lo for lo, _ in chars] for chars, _ in edges]
    for lo, nxt in itertools.pairwise(cuts):
        targets = []
        for (chars, target), los in zip(edges, starts, strict=True):
            i = bisect.bisect_right(los, lo) - 1
            if i >= 0 and chars[i][1] >= lo:
                targets.append(target)
        if targets:
            groups.setdefault(frozenset(targets), []).append((lo, nxt - 1))
    return [(chars_union([tuple(spans)]), targets) for targets, spans in groups.items()]


# --- DFA ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DFA:
    """A minimal DFA: state 0 starts; ``edges[s]`` are (characters, next state) with disjoint character
    sets; every state can still reach an accepting one."""

    edges: tuple[tuple[tuple[Chars, int], ...], ...]
    accepting: tuple[bool, ...]


def _subset(nfa: _NFA, start: frozenset[int], verdict: Any) -> DFA:
    """Subset construction from ``start``. ``verdict(states)`` is None for a dead state (dropped), else
    (accepting, final): a final state keeps no edges."""
    index = {start: 0}
    order = [start]
    edges: list[list[tuple[Chars, int]]] = []
    accepting: list[bool] = []
    first = verdict(start)
    if first is None:
        raise GrammarError("free text that can never end: every text holds an excluded marker",
                           code="empty_language")
    verdicts = [first]
    at = 0
    while at < len(order):
        states = order[at]
        accept, final = verdicts[at]
        accepting.append(accept)
        out: list[tuple[Chars, int]] = []
        if not final:
            moves = [edge for s in states for edge in nfa.edges[s]]
            for chars, targets in _split(moves):
                nxt = nfa.closure(targets)
                if nxt not in index:
                    v = verdict(nxt)
                    if v is None:
                        continue
                    index[nxt] = len(order)
                    order.append(nxt)
                    verdicts.append(v)
                out.append((chars, index[nxt]))
        edges.append(out)
        at += 1
    return _minimize(edges, accepting)


def _minimize(edges: list[list[tuple[Chars, int]]], accepting: list[bool]) -> DFA:
    # keep states that can reach an accepting one
    back: list[list[int]] = [[] for _ in edges]
    for s, out in enumerate(edges):
        for _, t in out:
            back[t].append(s)
    live = {s for s, a in enumerate(accepting) if a}
    todo = list(live)
    while todo:
        for s in back[todo.pop()]:
            if s not in live:
                live.add(s)
                todo.append(s)
    if 0 not in live:
        raise GrammarError("free text that can never end: every text holds an excluded marker",
                           code="empty_language")
    # Moore's partition refinement; a state's signature is its map from characters to blocks, as sorted
    # spans (lo, hi, block) with neighbours of one block merged
    spans = [sorted((lo, hi, t) for chars, t in out if t in live for lo, hi in chars) for out in edges]
    block = [int(a) for a in accepting]
    while True:
        signatures: dict[tuple[Any, ...], int] = {}
        new = [0] * len(edges)
        for s in live:
            merged: list[tuple[int, int, int]] = []
            for lo, hi, t in spans[s]:
                b = block[t]
                if merged and merged[-1][2] == b and merged[-1][1] + 1 == lo:
                    merged[-1] = (merged[-1][0], hi, b)
                else:
                    merged.append((lo, hi, b))
            new[s] = signatures.setdefault((block[s], tuple(merged)), len(signatures))
        if len(signatures) == len({block[s] for s in live}):
            block = new
            break
        block = new
    # renumber from the start state, breadth first
    number = {block[0]: 0}
    order = [0]
    out_edges: list[tuple[tuple[Chars, int], ...]] = []
    out_accepting: list[bool] = []
    at = 0
    while at < len(order):
        s = order[at]
        grouped: dict[int, list[Chars]] = {}
        for chars, t in edges[s]:
            if t in live:
                if block[t] not in number:
                    number[block[t]] = len(order)
                    order.append(t)
                grouped.setdefault(number[block[t]], []).append(chars)
        out_edges.append(tuple((chars_union(cs), t) for t, cs in grouped.items()))
        out_accepting.append(accepting[s])
        at += 1
    return DFA(tuple(out_edges), tuple(out_accepting))


_LOCK = threading.Lock()
_CACHE: dict[tuple[Any, ...], DFA] = {}


def _cached(key: tuple[Any, ...], build: Any) -> DFA:
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is None:
        hit = build()
        with _LOCK:
            if len(_CACHE) > 4096:
                _CACHE.clear()
            hit = _CACHE.setdefault(key, hit)
    return hit


_ANY_TREE: Tree = ("rep", 0, None, ("chars", ANY))


class _Parts:
    """One NFA holding the searches a free-text node needs; ``final`` maps each part to its end state."""

    def __init__(self) -> None:
        self.nfa = _NFA()
        self.starts: list[int] = []
        self.final: dict[str, int] = {}

    def add(self, name: str, patterns: Sequence[str], *, search: bool) -> None:
        if not patterns:
            return
        tree = regex_tree(any_of(patterns))
        if search:
            tree = ("seq", [_ANY_TREE, tree])
        start, end = self.nfa.build(tree)
        self.starts.append(start)
        self.final[name] = end

    def has(self, states: frozenset[int], name: str) -> bool:
        return name in self.final and self.final[name] in states


def until_dfa(stop: str, excludes: Sequence[str] = (), not_start: Sequence[str] = ()) -> DFA:
    """Texts up to the first match of ``stop`` (llguidance's lazy lexeme ``/(?s:.*)STOP/ & ~/.*EXCL.*/ &
    ~/NOT_START.*/``): texts in that language none of whose proper prefixes is."""
    return _cached(("until", stop, tuple(excludes), tuple(not_start)),
                   lambda: _free(stop, excludes, (), not_start))


def text_dfa(excludes: Sequence[str] = (), partial: Sequence[str] = (), not_start: Sequence[str] = ()) -> DFA:
    """Texts containing no ``excludes``, not ending in a ``partial``, not starting with a ``not_start``."""
    return _cached(("text", tuple(excludes), tuple(partial), tuple(not_start)),
                   lambda: _free(None, excludes, partial, not_start))


def _free(stop: str | None, excludes: Sequence[str], partial: Sequence[str], not_start: Sequence[str]) -> DFA:
    parts = _Parts()
    if stop is not None:
        parts.add("stop", [stop], search=True)
    else:
        parts.add("any", ["(?s:.*)"], search=False)  # text goes on after every character
    parts.add("exclude", excludes, search=True)
    parts.add("partial", partial, search=True)
    parts.add("not_start", not_start, search=False)
    nfa = parts.nfa

    def verdict(states: frozenset[int]) -> tuple[bool, bool] | None:
        if parts.has(states, "exclude") or parts.has(states, "not_start"):
            return None
        if stop is not None:
            hit = parts.has(states, "stop")
            return hit, hit
        return not parts.has(states, "partial"), False

    return _subset(nfa, nfa.closure(parts.starts), verdict)


def regex_dfa(pattern: str) -> DFA:
    """The minimal DFA of ``pattern`` (for tests and for checks; grammar forms write ``regex_tree``)."""
    def build() -> DFA:
        nfa = _NFA()
        start, end = nfa.build(regex_tree(pattern))
        return _subset(nfa, nfa.closure([start]), lambda states: (end in states, False))
    return _cached(("regex", pattern), build)


def accepts(dfa: DFA, text: str) -> bool:
    """Whether ``dfa`` admits all of ``text``."""
    state = 0
    for ch in text:
        code = ord(ch)
        for chars, nxt in dfa.edges[state]:
            i = bisect.bisect_right(chars, (code, MAX_CHAR + 1)) - 1
            if i >= 0 and chars[i][0] <= code <= chars[i][1]:
                state = nxt
                break
        else:
            return False
    return dfa.accepting[state]
