"""The grammar as llguidance's Lark dialect (https://github.com/guidance-ai/llguidance docs/syntax.md).

Markers that are single special (added) tokens of the model's tokenizer are written as ``<token>``
references: llguidance counts every added token as special, and a quoted ``"<tool_call>"`` would match
only its bytes. Free text before a marker is a lazy lexeme (it ends at the first match, which greedy
text cannot: llguidance's lexer decides with one byte of lookahead), or greedy text before a special
token (byte text can never contain one).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Mapping

from chatparse.grammar.ir import (
    Alt,
    Grammar,
    Lit,
    Node,
    Ref,
    Rep,
    Rx,
    Seq,
    Text,
    Until,
    any_of,
    rx_escape,
    token_pieces,
    token_reference,
)
from chatparse.grammar.jsonschema import GrammarError

_ANY = "(?s:.*)"


_quote = json.JSONEncoder(ensure_ascii=False).encode  # (json.dumps without an encoder per call)


@functools.lru_cache(maxsize=4096)
def _regex(pattern: str) -> str:
    """``pattern`` between slashes, with each unescaped slash escaped."""
    out: list[str] = []
    escaped = False
    for ch in pattern:
        if ch == "/" and not escaped:
            out.append("\\")
        out.append(ch)
        escaped = ch == "\\" and not escaped
    return "/" + "".join(out) + "/"


class _Writer:
    def __init__(self, grammar: Grammar, special: Collection[str]) -> None:
        self.grammar = grammar
        self.special = sorted(special, key=len, reverse=True)
        ids: Mapping[str, int] = special if isinstance(special, Mapping) else {}
        self.tokens = {tok: _token(tok, ids) for tok in self.special}
        self.extra: list[str] = []
        self.names: dict[Node, str] = {}
        # By id (nodes are shared, their hashes are deep): (node, its text, its text as an operand).
        self._texts: dict[int, tuple[Node, tuple[str, str]]] = {}
        self._literals: dict[str, tuple[str, str]] = {}
        self.reached: list[str] = []  # rules referred to (each at least once after it was)

    def literal(self, text: str) -> tuple[str, str]:
        """(the Lark text of a literal, the same as an operand)."""
        hit = self._literals.get(text)
        if hit is None:
            written = self._literal(text) if self.special else _quote(text) if text else '""'
            # (parentheses around a token next to quoted text, or around several quoted pieces)
            wrap = (" " in written and not written.startswith('"')) or written.count('"') > 2
            hit = self._literals[text] = (written, f"({written})" if wrap else written)
        return hit

    def _literal(self, text: str) -> str:
        parts = [self.tokens[piece] if is_token else _quote(piece)
                 for piece, is_token in token_pieces(text, self.special)]
        return " ".join(parts) if parts else '""'

    def _exclusion(self, excludes: tuple[str, ...]) -> str:
        return f" & ~{_regex(_ANY + any_of(excludes) + _ANY)}" if excludes else ""

    def aux(self, node: Node) -> str:
        if node in self.names:
            return self.names[node]
        index = len(self.names) + 1
        assert isinstance(node, Until | Text)
        start = f" & ~{_regex(any_of(node.not_start) + _ANY)}" if node.not_start else ""
        if isinstance(node, Until):
            pieces = _split_at_tokens(node.stop, self.special) if self.special else [node.stop]
            if len(pieces) > 1:  # the stop holds special tokens (no byte text can match one)
                head, rest = pieces[0], pieces[1:]
                written = [self.tokens[p] if i % 2 == 0 else _regex(p) for i, p in enumerate(rest) if p]
                # greedy byte text ending in the head (it ends where the token comes: a lazy one would end
                # at the head's first match, before another alternative's longer stop could match), holding
                # no spelled-out stop (the first match of which ends the text for the parser)
                name = f"TEXT_{index}"
                excluded = self._exclusion((*node.excludes, node.stop))
                self.extra.append(f"{name}: {_regex(_ANY + head)}{excluded}{start}")
                self.names[node] = " ".join([name, *written])
                return self.names[node]
            name = f"until_{index}"
            self.extra.append(f"{name}[lazy]: {_regex(_ANY + node.stop)}{self._exclusion(node.excludes)}{start}")
        else:
            name = f"TEXT_{index}"
            partial = f" & ~{_regex(_ANY + any_of(node.partial))}" if node.partial else ""
            self.extra.append(f"{name}: {_regex(_ANY)}{self._exclusion(node.excludes)}{partial}{start}")
        self.names[node] = name
        return name

    def expr(self, node: Node) -> str:
        return self.forms(node)[0]

    def wrapped(self, node: Node) -> str:
        """``node``'s text as an operand of a sequence or a repetition (parenthesized where needed)."""
        return self.forms(node)[1]

    def forms(self, node: Node) -> tuple[str, str]:
        """(``node``'s text, its text as an operand)."""
        if type(node) is Lit:
            hit = self._literals.get(node.text)
            return hit if hit is not None else self.literal(node.text)
        if type(node) is Ref:
            self.reached.append(node.name)
            return node.name, node.name
        known = self._texts.get(id(node))
        return known[1] if known is not None and known[0] is node else self._write(node)

    def _write(self, node: Node) -> tuple[str, str]:
        """(``node``'s text, its text as an operand), remembered for the node."""
        forms = self.forms
        if type(node) is Rx:
            text = operand = _regex(node.pattern)
        elif isinstance(node, Seq):
            text = " ".join([forms(item)[1] for item in node.items]) if node.items else '""'
            operand = f"({text})" if len(node.items) > 1 else text
        elif isinstance(node, Alt):
            texts = [forms(item)[0] for item in node.items if type(item) is not Seq or item.items]
            text = " | ".join(texts)
            if len(texts) < len(node.items):
                text = f"({text})?"
            operand = f"({text})"
        elif isinstance(node, Rep):
            text = operand = self._rep(node)
        elif isinstance(node, Until | Text):
            text = self.aux(node)
            operand = f"({text})" if isinstance(node, Until) and " " in text else text
        else:
            raise TypeError(f"unknown grammar node {node!r}")
        written = text, operand
        self._texts[id(node)] = (node, written)
        return written

    def _rep(self, node: Rep) -> str:
        inner = self.wrapped(node.item)
        if (node.min, node.max) == (0, None):
            return f"{inner}*"
        if (node.min, node.max) == (1, None):
            return f"{inner}+"
        if (node.min, node.max) == (0, 1):
            return f"{inner}?"
        upper = "" if node.max is None else str(node.max)
        return f"{inner}{{{node.min},{upper}}}"


def _split_at_tokens(stop: str, special: Collection[str]) -> list[str]:
    """``stop`` (a regex) cut at each special token it spells at its top level: [regex, token, regex, token,
    ..., regex] (``[stop]`` when it spells none there, or has alternatives at its top level).

    llguidance matches no special token inside a regex (a lexeme is bytes), so free text whose stop holds one
    ends where the token comes: at the first match of the regex before it. That draws the boundary at the
    same place as the whole stop, or refuses the text (a value holding that regex followed by other text can
    no longer be written): narrower, never reading differently."""
    depth, in_class, escaped = 0, False, False
    top: list[int] = []  # positions at depth 0, outside classes
    for i, ch in enumerate(stop):
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
            if depth == 0 and not in_class:
                top.append(i)
            continue
        if in_class:
            in_class = ch != "]"
            continue
        if ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return [stop]
        if depth == 0 and ch != ")":
            top.append(i)
    at_top = set(top)
    pieces: list[str] = []
    rest, offset = stop, 0
    while True:
        found = min(((rest.find(rx_escape(tok)), tok) for tok in special
                     if rx_escape(tok) in rest and rest.find(rx_escape(tok)) + offset in at_top), default=None)
        if found is None or found[0] < 0:
            break
        at, tok = found
        end = at + len(rx_escape(tok))
        if end < len(rest) and rest[end] in "?*+{":  # a quantified last character: not the token alone
            break
        pieces.extend([rest[:at], tok])
        rest, offset = rest[end:], offset + end
    return [*pieces, rest] if pieces else [stop]


def _token(token: str, ids: Mapping[str, int]) -> str:
    written = token_reference(token, ids)
    if written is None:
        raise GrammarError(f"the special token {token!r} is not spelled <...>, and llguidance's Lark names such a "
                           "token only by its id; expected special_tokens as a mapping of each token to its id in "
                           "the tokenizer (or leave it out to match its text)", code="special_token", field=token)
    return written


def to_lark(grammar: Grammar, start: str, special: Collection[str] = ()) -> str:
    """Lark text for ``grammar`` starting at rule ``start``: the rules it reaches, in the grammar's order (a
    grammar may hold rules no other refers to, e.g. the JSON rules a respelled copy was made from).
    ``special``: the special tokens (a mapping to their ids names those not spelled ``<...>``)."""
    writer = _Writer(grammar, special)
    rules = grammar.rules
    written: dict[str, str] = {}
    writer.reached.append(start)
    while writer.reached:
        name = writer.reached.pop()
        if name not in written and name in rules:  # (a name no rule has stays a name llguidance rejects)
            written[name] = writer.expr(rules[name])
    lines = ["%llguidance {}", "", f"start: {start}"]
    lines.extend(f"{name}: {written[name]}" for name in rules if name in written)
    lines.extend(writer.extra)
    return "\n".join(lines) + "\n"
