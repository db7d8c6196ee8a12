"""GBNF read back as llguidance Lark for the tests, through llguidance's own GBNF reader
(``llguidance.gbnf_to_lark``) with three changes, so that llguidance reads it as the context-free grammar
llama.cpp reads: every rule stays a rule and every literal is split into one-character literals (llguidance's
lexer ends a multi-character lexeme greedily, which a grammar of characters does not), and token references
``<tok>`` (which the reader does not know) become Lark's ``<tok>``."""

from __future__ import annotations

import functools
import re

from llguidance.gbnf_to_lark import (
    AlternativeNode,
    ASTNode,
    GrammarParser,
    LiteralNode,
    RepetitionNode,
    SequenceNode,
    resolve,
)

# The reader writes \u and \U escapes with their leading zeros dropped; Rust's regex reads \u{...}.
_WIDE = re.compile(r"\\([uU])([0-9a-fA-F]{1,8})")
_CHAR = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|.)|.", re.S)


@functools.lru_cache(maxsize=64)
def gbnf_to_lark(text: str) -> str:
    tokens: dict[str, str] = {}

    text = _replace_tokens(text, tokens)
    text += "".join(f'\n{name} ::= "{i}"' for i, name in enumerate(tokens.values()))
    rules = GrammarParser().parse(text)
    resolve(rules)
    lines = ["%llguidance {}"]
    by_name = {name.replace("-", "_"): tok for tok, name in tokens.items()}
    for rule in sorted(rules.values(), key=lambda r: r.order):
        rule.rule_is_terminal = False
        rule.name = rule.name.lower()
        rule.alternatives = _split_literals(rule.alternatives)
    for rule in sorted(rules.values(), key=lambda r: r.order):
        if rule.name in by_name:
            lines.append(f"{rule.name}: {by_name[rule.name]}")
        else:
            lines.append(_WIDE.sub(lambda m: f"\\{m.group(1).lower()}{{{m.group(2)}}}", str(rule)))
    return "\n".join(lines) + "\n"


def _replace_tokens(text: str, tokens: dict[str, str]) -> str:
    """``text`` with each ``<tok>`` outside literals and classes replaced by a rule name (kept in ``tokens``)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "\"[":
            close = '"' if ch == '"' else "]"
            j = i + 1
            while text[j] != close:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i: j + 1])
            i = j + 1
        elif ch == "<":
            j = text.index(">", i)
            out.append(tokens.setdefault(text[i: j + 1], f"special-token-{len(tokens)}"))
            i = j + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _split_literals(node: ASTNode) -> ASTNode:
    if isinstance(node, LiteralNode):
        chars = _CHAR.findall(node.value)
        return node if len(chars) < 2 else SequenceNode([LiteralNode(ch) for ch in chars])
    if isinstance(node, SequenceNode):
        node.nodes = [_split_literals(item) for item in node.nodes]
    elif isinstance(node, AlternativeNode):
        node.alternatives = [_split_literals(item) for item in node.alternatives]
    elif isinstance(node, RepetitionNode):
        node.node = _split_literals(node.node)
    return node
