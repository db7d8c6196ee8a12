"""The grammar as llama.cpp's GBNF (grammars/README.md in llama.cpp) or xgrammar's EBNF: the same rules as the
Lark form, with every regex terminal written as rules of characters and every free-text node (``Until``,
``Text``) as its minimal automaton, one rule per state (``regular``). The start rule is ``root``.

Both dialects read the same text except for special tokens: GBNF names them ``<token>``; xgrammar's EBNF
has no token syntax (a special token in a literal raises ``GrammarError``, the structural tag writes them).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Literal

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
    rx_escape,
    token_pieces,
    token_reference,
)
from chatparse.grammar.jsonschema import GrammarError
from chatparse.grammar.regular import (
    DFA,
    Chars,
    Tree,
    chars_negate,
    non_empty,
    nullable,
    regex_tree,
    text_dfa,
    until_dfa,
)

Dialect = Literal["gbnf", "xgrammar"]
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"', "[": "\\[", "]": "\\]"}
_CLASS_SPECIALS = '\\]["^-'


def _char(code: int, specials: str) -> str:
    """One character inside a literal or a class (both dialects read these escapes); ``specials`` are the
    characters that need an escape there."""
    ch = chr(code)
    if ch in specials or code < 0x20 or code == 0x7F:
        return _ESCAPES.get(ch) or f"\\x{code:02X}"
    if code < 0x80 or (ch.isprintable() and not 0xD800 <= code <= 0xDFFF):
        return ch
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


_LITERAL_ESCAPES = {code: _char(code, '"\\') for code in (*range(0x20), 0x22, 0x5C, 0x7F)}


def quote(text: str) -> str:
    if text.isascii() or text.isprintable():
        return f'"{text.translate(_LITERAL_ESCAPES)}"'
    return '"' + "".join(_char(ord(ch), '"\\') for ch in text) + '"'


def char_class(chars: Chars, *, ascii_negation: bool = False) -> str:
    """``chars`` as a class, negated when that is shorter (``[^"\\\\]``: any other character).
    ``ascii_negation``: negate only ASCII characters (xgrammar 0.2.7, which SGLang 0.5.23 pins, fails to
    compile a negated class holding a non-ASCII character: ``[^\u1680]``; positive ranges compile)."""
    if len(chars) == 1 and chars[0][0] == chars[0][1]:
        return quote(chr(chars[0][0]))
    negated = chars_negate(chars)
    negate = len(negated) < len(chars) or (len(negated) == len(chars) and chars[-1][1] == 0x10FFFF)
    if ascii_negation and negated and negated[-1][1] >= 0x80:
        negate = False
    spans = negated if negate and negated else chars
    body = "".join(_char(lo, _CLASS_SPECIALS) if lo == hi else
                   f"{_char(lo, _CLASS_SPECIALS)}-{_char(hi, _CLASS_SPECIALS)}" for lo, hi in spans)
    return f"[^{body}]" if negate and negated else f"[{body}]"


class _Writer:
    def __init__(self, grammar: Grammar, special: Collection[str], dialect: Dialect) -> None:
        self.grammar = grammar
        self.dialect = dialect
        self.special = sorted(special, key=len, reverse=True)
        self.ids: Mapping[str, int] = special if isinstance(special, Mapping) else {}
        self.names: dict[str, str] = {}  # IR rule name -> EBNF name
        self.used = {"root"}
        self.pending: list[str] = []  # IR rules referenced, to write
        self.lines: list[str] = []
        self._free: dict[Node, str] = {}
        self._regex: dict[str, str] = {}
        self._literals: dict[str, str] = {}
        self._nullable_rules: set[str] | None = None  # (computed on first need)
        self._automata: dict[int, tuple[DFA, str]] = {}
        self._exprs: dict[int, tuple[Node, str]] = {}
        self._counter = 0

    def name(self, rule: str) -> str:
        hit = self.names.get(rule)
        if hit is None:
            hit = rule.replace("_", "-")
            if hit in self.used or not _NAME.fullmatch(hit):
                hit = self.fresh("rule")
            self.used.add(hit)
            self.names[rule] = hit
            self.pending.append(rule)
        return hit

    def fresh(self, stem: str) -> str:
        while True:
            self._counter += 1
            hit = f"{stem}-{self._counter}"
            if hit not in self.used:
                self.used.add(hit)
                return hit

    # --- literals and terminals ---------------------------------------------------------------------------

    def literal(self, text: str) -> str:
        hit = self._literals.get(text)
        if hit is None:
            hit = self._literals[text] = self._literal(text)
        return hit

    def _literal(self, text: str) -> str:
        parts = [self.token(piece) if is_token else quote(piece)
                 for piece, is_token in token_pieces(text, self.special)]
        return " ".join(parts) if parts else '""'

    def char_class(self, chars: Chars) -> str:
        return char_class(chars, ascii_negation=self.dialect == "xgrammar")

    def token(self, tok: str) -> str:
        if self.dialect != "gbnf":
            raise GrammarError(f"the special token {tok!r} has no spelling in xgrammar's EBNF; expected a "
                               "token-free part (the structural tag writes tokens itself)", code="special_token",
                               field=tok)
        written = token_reference(tok, self.ids)
        if written is None:
            raise GrammarError(f"the special token {tok!r} is no <...> text, which GBNF names only by its id "
                               "(<[id]>); expected special_tokens as a mapping of each token to its id in the "
                               "tokenizer", code="special_token", field=tok)
        return written

    def regex(self, pattern: str) -> str:
        hit = self._regex.get(pattern)
        if hit is None:
            body = self.tree(regex_tree(pattern))
            hit = self._regex[pattern] = self.fresh("rx")
            self.lines.append(f"{hit} ::= {body}")
        return hit

    def tree(self, tree: Tree) -> str:
        kind = tree[0]
        if kind == "chars":
            return self.char_class(tree[1]) if tree[1] else self.never()
        if kind == "seq":
            return " ".join(self.tree_atom(item) for item in tree[1]) if tree[1] else '""'
        if kind == "alt":
            return " | ".join(self.tree(item) for item in tree[1])
        _, low, high, inner = tree
        if high is None and nullable(inner):  # x* with x nullable is (x without the empty text)*
            part = non_empty(inner)
            if part is not None and part[0] == "rep" and part[1:3] == (1, None):
                part = part[3]  # (x+)* is x*
            return '""' if part is None else self.repeat(self.tree_atom(part), 0, None)
        return self.repeat(self.tree_atom(inner), low, high)

    def tree_atom(self, tree: Tree) -> str:
        text = self.tree(tree)
        return f"({text})" if tree[0] != "chars" else text

    def never(self) -> str:
        raise GrammarError("an empty character class or a choice of no options matches nothing; expected at "
                           "least one option", code="empty_language")

    @staticmethod
    def repeat(atom: str, low: int, high: int | None) -> str:
        if (low, high) == (0, None):
            return f"{atom}*"
        if (low, high) == (1, None):
            return f"{atom}+"
        if (low, high) == (0, 1):
            return f"{atom}?"
        if low == high:
            return f"{atom}{{{low}}}"
        return f"{atom}{{{low},{'' if high is None else high}}}"

    # --- free text ----------------------------------------------------------------------------------------

    def free(self, node: Until | Text) -> str:
        hit = self._free.get(node)
        if hit is not None:
            return hit
        after = ""
        if isinstance(node, Until):
            special = next((tok for tok in self.special if node.stop == rx_escape(tok)), None)
            if special is not None:  # greedy text, then the token (as lark.py writes it)
                dfa = text_dfa(node.excludes, (), node.not_start)
                after = " " + self.token(special)
            else:
                dfa = until_dfa(node.stop, node.excludes, node.not_start)
        else:
            dfa = text_dfa(node.excludes, node.partial, node.not_start)
        start = self.automaton(dfa, "until" if isinstance(node, Until) and not after else "text")
        hit = self._free[node] = start + after
        return hit

    def automaton(self, dfa: DFA, stem: str) -> str:
        """One rule per state of ``dfa``, its loop on itself written ``[...]*`` (engines that read a grammar
        as Earley items then need no item per character of free text); a state that accepts and has no
        edges is no rule (an edge into it ends the text). Returns the start state's name."""
        hit = self._automata.get(id(dfa))
        if hit is not None and hit[0] is dfa:
            return hit[1]
        names = [self.fresh(stem) for _ in dfa.edges]
        for state, edges in enumerate(dfa.edges):
            if state and not edges:
                continue
            loop = next((chars for chars, nxt in edges if nxt == state), None)
            options = [self.char_class(chars) if not dfa.edges[nxt] else f"{self.char_class(chars)} {names[nxt]}"
                       for chars, nxt in edges if nxt != state]
            if dfa.accepting[state] and (options or loop is None):
                options.append('""')
            body = " | ".join(options)
            if loop is not None:
                body = f"{self.char_class(loop)}*" + (f" ({body})" if len(options) > 1 else f" {body}" if options else "")
            self.lines.append(f"{names[state]} ::= {body}")
        self._automata[id(dfa)] = (dfa, names[0])
        return names[0]

    # --- rules --------------------------------------------------------------------------------------------

    def expr(self, node: Node) -> str:
        hit = self._exprs.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        text = self._expr(node)
        self._exprs[id(node)] = (node, text)
        return text

    def _expr(self, node: Node) -> str:
        if isinstance(node, Lit):
            return self.literal(node.text)
        if isinstance(node, Rx):
            return self.regex(node.pattern)
        if isinstance(node, Ref):
            if node.name not in self.grammar.rules:
                raise GrammarError(f"rule {node.name!r} is referenced but not defined", code="unknown_rule",
                                   field=node.name)
            return self.name(node.name)
        if isinstance(node, Seq):
            return " ".join(self.wrapped(item) for item in node.items) if node.items else '""'
        if isinstance(node, Alt):
            return " | ".join(self.expr(item) for item in node.items) if node.items else self.never()
        if isinstance(node, Rep):
            if node.max is None and self.dialect == "gbnf" and self.nullable(node.item):
                raise GrammarError(f"an unbounded repetition of {self.expr(node.item)}, which can be empty: llama.cpp "
                                   "writes x* as r ::= x r | and refuses that as left recursion; expected an item "
                                   "that writes at least one character", code="nullable_repeat")
            return self.repeat(self.atom(node.item), node.min, node.max)
        if isinstance(node, Until | Text):
            return self.free(node)
        raise TypeError(f"unknown grammar node {node!r}")

    def nullable(self, node: Node) -> bool:
        """Whether ``node`` can match the empty text (free text counted as able to)."""
        if self._nullable_rules is None:
            found: set[str] = set()
            self._nullable_rules = found
            changed = True
            while changed:
                changed = False
                for name, body in self.grammar.rules.items():
                    if name not in found and self.nullable(body):
                        found.add(name)
                        changed = True
        if isinstance(node, Lit):
            return not node.text
        if isinstance(node, Rx):
            return nullable(regex_tree(node.pattern))
        if isinstance(node, Ref):
            return node.name in self._nullable_rules
        if isinstance(node, Seq):
            return all(self.nullable(item) for item in node.items)
        if isinstance(node, Alt):
            return any(self.nullable(item) for item in node.items)
        if isinstance(node, Rep):
            return node.min == 0 or self.nullable(node.item)
        return isinstance(node, Text) or (isinstance(node, Until) and nullable(regex_tree(node.stop)))

    def wrapped(self, node: Node) -> str:
        """``node`` as one item of a sequence."""
        text = self.expr(node)
        return f"({text})" if isinstance(node, Alt) and len(node.items) > 1 else text

    def atom(self, node: Node) -> str:
        """``node`` as the operand of a repetition."""
        text = self.expr(node)
        return text if _NAME.fullmatch(text) or (text.startswith('"') and _one_literal(text)) else f"({text})"


def _one_literal(text: str) -> bool:
    """Whether ``text`` is a single quoted literal (no other item after its closing quote)."""
    escaped = False
    for i, ch in enumerate(text[1:], 1):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            return i == len(text) - 1
    return False


def to_ebnf(grammar: Grammar, start: Node, *, dialect: Dialect, special: Collection[str] = ()) -> str:
    """``grammar`` from ``start`` as GBNF (``dialect="gbnf"``, special tokens as ``<token>``) or xgrammar's EBNF;
    the start rule is ``root``. Only rules reachable from ``start`` are written."""
    writer = _Writer(grammar, special, dialect)
    lines = [f"root ::= {writer.expr(start)}"]
    done = 0
    while done < len(writer.pending):
        rule = writer.pending[done]
        done += 1
        lines.append(f"{writer.name(rule)} ::= {writer.expr(grammar.rules[rule])}")
    return "\n".join([*lines, *writer.lines]) + "\n"
