"""JSON values written another way, for models whose arguments are not plain JSON: ``python`` (a Python
literal, as ``repr`` writes it: single-quoted strings, ``True`` / ``False`` / ``None``; InternLM2's template)
and ``json-string`` (the JSON text inside a JSON string, OpenAI's wire form ``"arguments": "{\\"city\\": ...}"``;
FireFunction's template). A respelled grammar admits exactly the respelled texts of the values the JSON
grammar admits (strings in a narrower set of escapes).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from chatparse.grammar.ir import Alt, Grammar, Lit, Node, Ref, Rep, Rx, Seq, Text, Until
from chatparse.grammar.jsonschema import STRING_CHAR, WS, GrammarError, json_text

SPELLINGS = ("json", "json-sorted", "python", "json-string")
_STRING_RX = re.compile(r'"(?P<char>.*)(?P<count>\*|\{\d+,\d*\})"', re.S)
# One character of a Python str literal as repr writes it: no quote, backslash or control character
# unescaped, and only the escapes a JSON value needs.
_PY_CHAR = r"(?:[^'\\\x00-\x1f]|\\[\\'nrt])"
# One character of a JSON string written inside another JSON string: a plain character, or an escape
# whose backslash (and quote) are themselves escaped.
_NESTED_CHAR = r'(?:[^"\\\x00-\x1f]|\\\\(?:\\["\\]|[/bfnrt]|u[0-9a-fA-F]{4}))'
_PY_WORDS = {"true": "True", "false": "False", "null": "None"}


def respell(grammar: Grammar, node: Node, spelling: str, memo: dict[str, Any] | None = None) -> Node:
    """``node`` (a JSON value's grammar) written in ``spelling`` (``json-string``: the whole string, quotes
    included); the rules it refers to are copied. ``memo``: one per grammar, kept across calls, so that a
    node the JSON grammars share is respelled once (and stays shared)."""
    if spelling in ("json", "json-sorted"):
        return node
    if spelling not in SPELLINGS:
        raise GrammarError(f"Unknown argument spelling {spelling!r}; expected one of {list(SPELLINGS)}",
                           code="bad_write_form", field="tool_calls")
    respeller = memo.get(spelling) if memo is not None else None
    if respeller is None:
        respeller = _Respeller(grammar, spelling)
        if memo is not None:
            memo[spelling] = respeller
    spelled = respeller.node(node)
    return Seq((Lit('"'), spelled, Lit('"'))) if spelling == "json-string" else spelled


def spelled_schema(schema: Any, spelling: str) -> Any:
    """The schema whose grammar ``spelling`` respells: ``json-sorted`` writes every object's properties in
    sorted order (a template that renders ``tojson(sort_keys=True)``)."""
    if spelling != "json-sorted":
        return schema
    return _sorted(schema)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _sorted(v) for k, v in value.items()}
        props = out.get("properties")
        if isinstance(props, dict):
            out["properties"] = dict(sorted(props.items()))
        return out
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


class _Respeller:
    def __init__(self, grammar: Grammar, spelling: str) -> None:
        self.grammar = grammar
        self.spelling = spelling
        self._done: dict[int, tuple[Node, Node]] = {}  # by id: (a node, respelled)

    def node(self, node: Node) -> Node:
        if type(node) is Lit:  # (literals are written by their text: no need to share them)
            return Lit(self.literal(node.text))
        hit = self._done.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        spelled = self._node(node)
        self._done[id(node)] = (node, spelled)
        return spelled

    def _node(self, node: Node) -> Node:
        if isinstance(node, Lit):
            return Lit(self.literal(node.text))
        if isinstance(node, Rx):
            return Rx(self.regex(node.pattern))
        if isinstance(node, Seq):
            return Seq(tuple([self.node(item) for item in node.items]))
        if isinstance(node, Alt):
            return Alt(tuple([self.node(item) for item in node.items]))
        if isinstance(node, Rep):
            return Rep(self.node(node.item), node.min, node.max)
        if isinstance(node, Ref):
            return self.rule(node.name)
        assert not isinstance(node, Until | Text), "free text inside a JSON value"
        raise TypeError(f"unknown grammar node {node!r}")

    def rule(self, name: str) -> Ref:
        copy = f"{name}__{self.spelling.replace('-', '_')}"
        if copy not in self.grammar.rules:
            self.grammar.rules[copy] = Seq(())  # placeholder against recursion
            self.grammar.rules[copy] = self.node(self.grammar.rules[name])
        return Ref(copy)

    def literal(self, text: str) -> str:
        return _literal(text, self.spelling)

    def regex(self, pattern: str) -> str:
        if pattern == WS.pattern:
            return pattern if self.spelling == "python" else "[ ]{1,8}"
        match = _STRING_RX.fullmatch(pattern)
        if match and match["char"] == STRING_CHAR:
            if self.spelling == "python":
                return f"'{_PY_CHAR}{match['count']}'"
            return f'\\\\"{_NESTED_CHAR}{match["count"]}\\\\"'
        if any(ch in pattern for ch in "\"'\\") and not _NUMERIC.fullmatch(pattern):
            raise GrammarError(f"No {self.spelling} spelling for the grammar terminal /{pattern}/",
                               code="unsupported_schema")
        return pattern


# Terminals with no quote to respell (numbers, whitespace): written alike in every spelling.
_NUMERIC = re.compile(r"[-?:()0-9\[\]{},.|eE+\\]*")


@functools.lru_cache(maxsize=4096)
def _literal(text: str, spelling: str) -> str:
    """A JSON literal's text in ``spelling`` (python or json-string)."""
    return json_text(text)[1:-1] if spelling == "json-string" else _python(text)


def _python(text: str) -> str:
    """A JSON literal's text (punctuation, a string, a number, a word, a constant) as Python writes it."""
    if text in _PY_WORDS:
        return _PY_WORDS[text]
    try:
        value = json.loads(text)
    except ValueError:
        return text  # punctuation: '{', ':', ','
    return _py_repr(value)


def _py_repr(value: Any) -> str:
    if value is True or value is False or value is None:
        return repr(value)
    if isinstance(value, str):
        return "'" + "".join(_PY_ESCAPES.get(ch, ch) for ch in value) + "'"
    if isinstance(value, list):
        return "[" + ", ".join(_py_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py_repr(k)}: {_py_repr(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


_PY_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
