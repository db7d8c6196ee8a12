"""GBNF read back as llguidance Lark for the tests, through llguidance's own GBNF reader
(``llguidance.gbnf_to_lark``'s parser) with four changes, so that llguidance reads it as the context-free grammar
llama.cpp reads: every rule stays a rule and every literal is split into one-character literals (llguidance's
lexer ends a multi-character lexeme greedily, which a grammar of characters does not), and token references
``<tok>`` (which the reader does not know) become Lark's ``<tok>``, and a repetition of a repetition keeps
its parentheses."""

from __future__ import annotations

import functools
import re

from llguidance.gbnf_to_lark import (
    AlternativeNode,
    ASTNode,
    GrammarParser,
    LiteralNode,
    RepetitionNode,
    RuleRefNode,
    SequenceNode,
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
    for rule in rules.values():  # resolve references (the reader's own resolve() also folds rules into lexemes)
        rule.alternatives = _split_literals(rule.alternatives.simplify())
        rule.name = "start" if rule.name == "root" else rule.name.replace("-", "_").lower()
    for rule in rules.values():
        for ref in _refs(rule.alternatives):
            ref.target = rules[ref.name]
    by_name = {name.replace("-", "_"): tok for tok, name in tokens.items()}
    lines = ["%llguidance {}"]
    for rule in rules.values():
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


def _refs(node: ASTNode) -> list[RuleRefNode]:
    found = [node] if isinstance(node, RuleRefNode) else []
    for child in node.children():
        found.extend(_refs(child))
    return found


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
        if isinstance(node.node, RepetitionNode):  # the reader would write x+* (no Lark)
            node.node = SequenceNode([node.node])
    return node


def left_recursive_rules(text: str) -> list[str]:
    """Rules of the GBNF ``text`` that can reach themselves before writing a character, counting the rule
    llama.cpp writes for an unbounded repetition (``x*`` is ``r ::= x r |``, left-recursive when ``x`` can be
    empty): llama.cpp refuses a grammar with one."""
    rules = {rule.name: rule.alternatives for rule in GrammarParser().parse(_replace_tokens(text, {})).values()}
    nullable: set[str] = set()

    def can_be_empty(node: ASTNode) -> bool:
        if isinstance(node, LiteralNode):
            return node.value == ""
        if isinstance(node, RuleRefNode):
            return node.name in nullable
        if isinstance(node, SequenceNode):
            return all(can_be_empty(item) for item in node.nodes)
        if isinstance(node, AlternativeNode):
            return any(can_be_empty(item) for item in node.alternatives)
        if isinstance(node, RepetitionNode):
            return node.min_times == 0 or can_be_empty(node.node)
        return False  # a class

    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in nullable and can_be_empty(body):
                nullable.add(name)
                changed = True

    def first_refs(node: ASTNode) -> set[str]:
        if isinstance(node, RuleRefNode):
            return {node.name}
        if isinstance(node, SequenceNode):
            found: set[str] = set()
            for item in node.nodes:
                found |= first_refs(item)
                if not can_be_empty(item):
                    break
            return found
        if isinstance(node, AlternativeNode):
            return set().union(*(first_refs(item) for item in node.alternatives))
        if isinstance(node, RepetitionNode):
            return first_refs(node.node)
        return set()

    def empty_loops(node: ASTNode) -> bool:
        if isinstance(node, RepetitionNode) and node.max_times is None and can_be_empty(node.node):
            return True
        return any(empty_loops(child) for child in node.children())

    edges = {name: first_refs(body) for name, body in rules.items()}
    bad = [name for name, body in rules.items() if empty_loops(body)]
    for name in rules:
        seen: set[str] = set()
        todo = list(edges[name])
        while todo:
            nxt = todo.pop()
            if nxt == name:
                if name not in bad:
                    bad.append(name)
                break
            if nxt not in seen and nxt in edges:
                seen.add(nxt)
                todo.extend(edges[nxt])
    return bad
