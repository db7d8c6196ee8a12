"""The grammar as an xgrammar structural tag (``{"type": "structural_tag", "format": ...}``), the form vLLM's
default structured-output backend and SGLang accept: one ``grammar`` format (xgrammar's EBNF, from
``to_ebnf``) with the markers as text, except the ways the turn ends, split out with ``sequence``/``or``/
``optional``/``star`` so that the turn's final special token is optional (below).

What xgrammar 0.2.8 does, checked with ``GrammarCompiler(TokenizerInfo.from_huggingface(tokenizer))
.compile_structural_tag`` (vLLM's xgrammar backend; 0.33 compiles structural tags with a full-vocabulary
compiler, 0.32 with its only one) on byte-level tokenizers with the families' special tokens, and in a real
``vllm serve`` (scripts/test-vllm-serve.sh):

- xgrammar counts as special only tokens that decode to nothing; an added token such as ``<tool_call>`` or
  ``<|im_start|>`` is text to it, matched by its bytes wherever a ``const_string`` or a grammar allows them
  (the model may also spell it in pieces; the parser reads the same text). Free text before a special token
  therefore excludes that token: it ends at the first one, as ``Until`` says.
- Markers are not ``token`` formats, which admit the one token only: 0.2.8's compiler cache (vLLM turns it
  on) mixes up tags that differ only in their tokens (after compiling a tag with ``token`` 526, a tag with
  ``token`` 527 in the same place masks as if it were 526 while its matcher rejects 526: vLLM's "grammar
  rejected tokens", a 500, seen in a real server); vLLM checks a request's tag without a tokenizer, so a
  token named by its text fails there ("Token string resolution requires tokenizer_info") and the ``auto``
  backend falls back to guidance, which reads no ``format`` tag; ``repeat`` around a ``token`` does not
  compile ("Token id -1"); and with FunctionGemma's tag a stop token was refused after a ``token`` format
  where the same tag with markers as text ends.
- Stop tokens (the tokenizer's EOS and every id vLLM passes as the request's stop tokens, e.g. gpt-oss's
  ``<|call|>`` and ``<|return|>`` from generation_config.json) are never text: the matcher takes a stop
  token only where the grammar may end, and ends there. So a special token that ends the turn (nothing may
  follow it) is ``optional``: a stop token ends the output right before it (vLLM leaves the stop token out
  of the text, so the parser sees the same turn); any other is written, then the end-of-sequence token.
- ``grammar`` formats nest anywhere (in ``sequence``, ``or``, ``star``), each with its own ``root`` and rule
  names that may repeat across formats.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from chatparse.grammar.gbnf import to_ebnf
from chatparse.grammar.ir import Alt, Grammar, Lit, Node, Ref, Rep, Seq, Text, Until, rx_escape
from chatparse.grammar.jsonschema import GrammarError

Format = dict[str, Any]
_EMPTY: Format = {"type": "const_string", "value": ""}


def _sequence(parts: list[Format]) -> Format:
    items: list[Format] = []
    for part in parts:
        if part["type"] == "sequence":
            items.extend(part["elements"])
        elif part != _EMPTY:
            items.append(part)
    if not items:
        return _EMPTY
    return items[0] if len(items) == 1 else {"type": "sequence", "elements": items}


def _optional(item: Format) -> Format:
    return item if item == _EMPTY or item.get("type") in ("optional", "star") else {"type": "optional",
                                                                                     "content": item}


class _Writer:
    def __init__(self, grammar: Grammar, special: Collection[str]) -> None:
        self.grammar = grammar
        self.special = sorted(special, key=len, reverse=True)
        self._has: dict[int, tuple[Node, bool]] = {}  # by id: nodes are shared, their hashes are deep
        self._rules: dict[str, bool] = {}
        self._formats: dict[tuple[int, bool], tuple[Node, Format]] = {}
        self._open: list[str] = []  # rules being inlined (a cycle through a token cannot be inlined)

    def stop_token(self, node: Until) -> str | None:
        return next((tok for tok in self.special if node.stop == rx_escape(tok)), None)

    def has_token(self, node: Node) -> bool:
        """Whether ``node`` writes a special token as a token (then it is split out of the grammar)."""
        hit = self._has.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        if isinstance(node, Lit):
            found = any(tok in node.text for tok in self.special)
        elif isinstance(node, Until):
            found = self.stop_token(node) is not None
        elif isinstance(node, Seq | Alt):
            found = any(self.has_token(item) for item in node.items)
        elif isinstance(node, Rep):
            found = self.has_token(node.item)
        elif isinstance(node, Ref):
            if node.name not in self._rules:
                self._rules[node.name] = False  # a cycle adds no token of its own
                self._rules[node.name] = self.has_token(self.grammar.rules[node.name])
            found = self._rules[node.name]
        else:
            found = False
        self._has[id(node)] = (node, found)
        return found

    def format(self, node: Node, tail: bool) -> Format:
        """``node`` as a format; ``tail``: nothing can follow it (a special token there becomes optional)."""
        key = (id(node), tail)
        hit = self._formats.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        result = self._format(node, tail) if self.split(node, tail) else self.text(node)
        self._formats[key] = (node, result)
        return result

    def split(self, node: Node, tail: bool) -> bool:
        """Whether ``node`` is written as formats around its special tokens rather than as one grammar: only
        where the turn ends (the ending's special token becomes optional)."""
        return tail and self.has_token(node)

    def text(self, node: Node) -> Format:
        if isinstance(node, Lit):
            return {"type": "const_string", "value": node.text} if node.text else _EMPTY
        if isinstance(node, Seq) and not node.items:
            return _EMPTY
        return {"type": "grammar", "grammar": to_ebnf(self.grammar, node, dialect="xgrammar")}

    def token(self, token: str, tail: bool) -> Format:
        written: Format = {"type": "const_string", "value": token}
        return _optional(written) if tail else written

    def _format(self, node: Node, tail: bool) -> Format:
        if isinstance(node, Lit):
            return self.literal(node.text, tail)
        if isinstance(node, Until):
            token = self.stop_token(node)
            assert token is not None
            # Text up to the first token: the text holds none (xgrammar takes the token as text too).
            text = Text(excludes=(*node.excludes, rx_escape(token)), not_start=node.not_start)
            return _sequence([self.text(text), self.token(token, tail)])
        if isinstance(node, Seq):
            return self.sequence(node.items, tail)
        if isinstance(node, Alt):
            empty = any(isinstance(item, Seq) and not item.items for item in node.items)
            items = [self.format(item, tail) for item in node.items if not (isinstance(item, Seq) and not item.items)]
            either = items[0] if len(items) == 1 else {"type": "or", "elements": items}
            return _optional(either) if empty else either
        if isinstance(node, Rep):
            return self.repeat(node, tail)
        if isinstance(node, Ref):
            if node.name in self._open:
                raise GrammarError(f"rule {node.name!r} refers to itself through a special token; a structural tag "
                                   "inlines rules with special tokens, so it cannot write this grammar",
                                   code="recursive_token_rule", field=node.name)
            self._open.append(node.name)
            try:
                return self.format(self.grammar.rules[node.name], tail)
            finally:
                self._open.pop()
        raise TypeError(f"unknown grammar node {node!r}")

    def literal(self, text: str, tail: bool) -> Format:
        parts: list[Format] = []
        rest = text
        while rest:
            at, tok = min(((rest.find(tok), tok) for tok in self.special if tok in rest), default=(-1, ""))
            if at < 0:
                parts.append({"type": "const_string", "value": rest})
                break
            if at:
                parts.append({"type": "const_string", "value": rest[:at]})
            rest = rest[at + len(tok):]
            parts.append(self.token(tok, tail and not rest))
        return _sequence(parts)

    def sequence(self, items: tuple[Node, ...], tail: bool) -> Format:
        """Runs of items that need no split become one grammar; the last item inherits ``tail``."""
        out: list[Format] = []
        run: list[Node] = []
        for index, item in enumerate(items):
            last = tail and index == len(items) - 1
            if not self.split(item, last):
                run.append(item)
                continue
            if run:
                out.append(self.text(run[0] if len(run) == 1 else Seq(tuple(run))))
                run = []
            out.append(self.format(item, last))
        if run:
            out.append(self.text(run[0] if len(run) == 1 else Seq(tuple(run))))
        return _sequence(out)

    def repeat(self, node: Rep, tail: bool) -> Format:
        """``node`` at the end of the turn: its last repetition is the one that ends it."""
        if (node.min, node.max) == (0, 1):
            return _optional(self.format(node.item, tail))
        item, last = self.text(node.item), self.format(node.item, tail)
        if node.max is None:
            ending = _sequence([item] * max(node.min - 1, 0) + [{"type": "star", "content": item}, last])
            return ending if node.min else _optional(ending)
        counts = [_sequence([item] * (count - 1) + [last]) for count in range(max(node.min, 1), node.max + 1)]
        either = counts[0] if len(counts) == 1 else {"type": "or", "elements": counts}
        return either if node.min else _optional(either)


def to_structural_tag(grammar: Grammar, start: str, special: Collection[str] = ()) -> dict[str, Any]:
    """xgrammar's structural tag for ``grammar`` from rule ``start``: ``special`` are the markers that are
    single tokens of the model's tokenizer (one that ends the turn is optional, see the module's notes).
    Raises ``GrammarError`` where the format cannot say exactly the same."""
    writer = _Writer(grammar, special)
    return {"type": "structural_tag", "format": writer.format(Ref(start), True)}
