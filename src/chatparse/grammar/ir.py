"""A small grammar representation that the output forms (llguidance Lark, xgrammar structural tags) are
written from: literals, regex terminals, sequences, alternatives, repetitions, named rules and two kinds
of free text.

Free text is where a constrained model writes what it likes, and where a parser still watches for
markers; both kinds carry the marker texts the text must not contain:

- ``Until``: text up to and including the first ``stop`` (a regex), e.g. everything up to the next
  ``<tool_call>``. llguidance writes it as a lazy lexeme, which ends at the first match.
- ``Text``: text with no stop after it (the answer before the end of the turn), which must also not end
  in the first part of a marker (a parser holds such an ending back as a marker still forming).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_RX_SPECIAL = frozenset("\\.+*?()|[]{}^$/-&~#")


def rx_escape(text: str) -> str:
    """``text`` as a regex matching exactly it, in the syntax both Rust's `regex` (llguidance) and
    xgrammar read: only regex punctuation is escaped (Rust gives ``\\<`` a meaning of its own)."""
    out: list[str] = []
    for ch in text:
        if ch in _RX_SPECIAL:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        else:
            out.append(ch)
    return "".join(out)


class Node:
    """A grammar expression."""

    __slots__ = ()


@dataclass(frozen=True)
class Lit(Node):
    text: str


@dataclass(frozen=True)
class Rx(Node):
    """A terminal given as a regex (no lookaround, no anchors)."""

    pattern: str


@dataclass(frozen=True)
class Seq(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Rep(Node):
    item: Node
    min: int = 0
    max: int | None = None


@dataclass(frozen=True)
class Ref(Node):
    name: str


@dataclass(frozen=True)
class Until(Node):
    """Free text up to and including the first match of ``stop`` (a regex); ``excludes`` are regexes that
    must match nowhere in the text."""

    stop: str
    excludes: tuple[str, ...] = ()
    not_start: tuple[str, ...] = ()  # regexes the text must not start with


@dataclass(frozen=True)
class Text(Node):
    """Free text that ends the output: containing no ``excludes`` and ending in no ``partial`` (proper
    prefixes of markers, as regexes)."""

    excludes: tuple[str, ...] = ()
    partial: tuple[str, ...] = ()
    not_start: tuple[str, ...] = ()  # regexes the text must not start with


EMPTY = Seq(())


def token_reference(token: str, ids: Mapping[str, int]) -> str | None:
    """How Lark and GBNF name the special token ``token``: by its text when it is spelled ``<...>``
    (``<|im_end|>``), else by its id (``<[200002]>``) when ``ids`` has it; None when neither can."""
    if token.startswith("<") and token.endswith(">") and len(token) > 2 and not _NOT_IN_NAME.search(token[1:-1]):
        return token
    at = ids.get(token)
    return f"<[{at}]>" if at is not None else None


_NOT_IN_NAME = re.compile(r"[<>\s]")


def token_pieces(text: str, special: Iterable[str]) -> list[tuple[str, bool]]:
    """``text`` cut at each special token it holds (``special`` longest first): (piece, is a token) pairs."""
    pieces: list[tuple[str, bool]] = []
    rest = text
    while rest:
        hit = min(((rest.find(tok), tok) for tok in special if tok in rest), default=None)
        if hit is None:
            pieces.append((rest, False))
            break
        at, tok = hit
        if at:
            pieces.append((rest[:at], False))
        pieces.append((tok, True))
        rest = rest[at + len(tok):]
    return pieces


def seq(*items: Node) -> Node:
    flat: list[Node] = []
    for item in items:  # (exact types: the fastest test)
        if type(item) is Seq:
            flat.extend(item.items)
        elif type(item) is not Lit or item.text:
            flat.append(item)
    if len(flat) == 1:
        return flat[0]
    return Seq(tuple(flat))


def alt(*items: Node) -> Node:
    unique: list[Node] = []
    seen: set[int | str] = set()
    for item in items:  # by identity (deep equality is costly); literals by text
        key = item.text if type(item) is Lit else id(item)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique[0] if len(unique) == 1 else Alt(tuple(unique))


def opt(item: Node) -> Node:
    return Rep(item, 0, 1)


def lit(text: str) -> Node:
    return Lit(text) if text else EMPTY


@dataclass
class Grammar:
    """Named rules; ``start`` is the whole output."""

    rules: dict[str, Node] = field(default_factory=dict)
    _counter: int = 0

    def add(self, stem: str, node: Node) -> Ref:
        """A new rule holding ``node`` (named from ``stem``), returned as a reference."""
        self._counter += 1
        name = f"{stem}_{self._counter}"
        self.rules[name] = node
        return Ref(name)

    def literals(self) -> set[str]:
        """Every literal text in the grammar (markers a sampler may want to write)."""
        found: set[str] = set()
        for node in self.rules.values():
            _collect(node, found)
        return found


def _collect(node: Node, found: set[str]) -> None:
    if isinstance(node, Lit):
        found.add(node.text)
    elif isinstance(node, Seq | Alt):
        for item in node.items:
            _collect(item, found)
    elif isinstance(node, Rep):
        _collect(node.item, found)
    elif isinstance(node, Until) and _PLAIN.fullmatch(node.stop):  # a stop that is one text (a close)
        found.add(_UNESCAPE.sub(lambda m: _CONTROL.get(m.group(1), m.group(1)), node.stop))


# A regex that is one literal text (as ``rx_escape`` writes it), and how to read it back.
_PLAIN = re.compile(r"(?:\\.|[^\\.+*?()|\[\]{}^$])+")
_UNESCAPE = re.compile(r"\\(.)")
_CONTROL = {"n": "\n", "t": "\t", "r": "\r"}


def any_of(patterns: Iterable[str]) -> str:
    items = sorted(set(patterns), key=lambda p: (-len(p), p))
    return items[0] if len(items) == 1 else "(?:" + "|".join(items) + ")"


def trie(words: Iterable[str], *, prefixes: bool = False) -> str:
    """A regex for exactly ``words`` (``prefixes``: or any non-empty first part of one), written as a trie:
    one alternative per word makes llguidance's lexer construct too many expressions for long markers."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here

    def regex(node: Mapping[str, Any]) -> str:
        options = [rx_escape(ch) + regex(child) for ch, child in sorted(node.items()) if ch]
        if not options:
            return ""
        body = options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"
        return f"(?:{body})?" if prefixes or "" in node else body

    options = [rx_escape(ch) + regex(child) for ch, child in sorted(root.items()) if ch]
    return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"
