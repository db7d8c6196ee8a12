"""The automata of free text and regex terminals admit exactly what llguidance admits for the same Lark text
(lark.py's lazy lexemes with ``&``/``~``): first match of the stop, excludes, partial endings, not_start,
non-ASCII text."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatparse.grammar import GrammarError
from chatparse.grammar.ir import Grammar, Node, Rx, Text, Until, rx_escape, trie
from chatparse.grammar.lark import to_lark
from chatparse.grammar.regular import (
    WHITE_SPACE,
    accepts,
    chars_negate,
    chars_union,
    regex_dfa,
    regex_tree,
    text_dfa,
    until_dfa,
)
from tests.grammar.walk import accepts as lark_accepts

PIECES = ["<", "/", ">", "a", "b", "p", "\n", " ", "é", "🙂", "한", "</p>", "<p>", "</", "<|end|>", "<|", "x\n"]


def _samples(rng: random.Random, extra: list[str], count: int = 150) -> list[str]:
    pieces = PIECES + extra
    out = {"", *extra}
    while len(out) < count:
        out.add("".join(rng.choice(pieces) for _ in range(rng.randint(1, 7))))
    return sorted(out)


def _lark(node: Node) -> str:
    return to_lark(Grammar({"start_rule": node}), "start_rule")


CASES: list[tuple[Node, list[str]]] = [
    (Until(rx_escape("</p>")), ["ab</p>", "</p>", "a</p></p>"]),
    (Until(rx_escape("</p>"), excludes=(rx_escape("<|end|>"),)), ["a<|end|></p>", "é</p>"]),
    (Until(rx_escape("</p>"), not_start=(rx_escape("<p>"),)), ["<p>a</p>", "<pa</p>", " <p></p>"]),
    (Until(r"(?:\n)?</p>\n[ \t\n\r\f\v]{0,2}<a", excludes=(r"</p>[ \t\n\r\f\v]*(?:[^< \t\n\r\f\v])",)),
     ["x</p>\n<a", "x\n</p>\n  <a", "</p>b</p>\n<a", "</p>\n<b</p>\n<a"]),
    (Until(trie(["</p>", "<|end|>"])), ["a<|end|>", "</p>", "<|en</p>"]),
    (Until(r"a(?s:.){1}b"), ["a\nb", "aab", "axb"]),
    (Text(excludes=(rx_escape("<|end|>"),), partial=(trie(["</p>", "<|end|>"], prefixes=True),)),
     ["ab", "a<", "a</", "a</p>", "a</p>b", "<|en", "é🙂"]),
    (Text(not_start=(r"[ \t\n\r\f\v]*<p>",), partial=(trie(["<p>"], prefixes=True),)), ["  <p>x", "x<p>y", " x"]),
]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_free_text_automata_admit_what_llguidance_admits(index: int) -> None:
    node, extra = CASES[index]
    if isinstance(node, Until):
        dfa = until_dfa(node.stop, node.excludes, node.not_start)
    else:
        assert isinstance(node, Text)
        dfa = text_dfa(node.excludes, node.partial, node.not_start)
    lark = _lark(node)
    for text in _samples(random.Random(index), extra):
        expected, _ = lark_accepts(lark, text)
        assert accepts(dfa, text) == expected, f"{node}: {text!r} (llguidance: {expected})"


@pytest.mark.parametrize("pattern", [
    r'"(?:[^<"\\\x00-\x1f]|\\(?:["\\\/bfnrt]|u[0-9a-fA-F]{4}))*"',
    r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?(?:[eE][+-]?[0-9]{1,2})?",
    r"[ \t\n]{1,4}",
    r"(?s:.){2}x",
    r"[^\s<]+",
    r"[é-ü🙂]{0,3}",
])
def test_regex_automata_admit_what_llguidance_admits(pattern: str) -> None:
    dfa = regex_dfa(pattern)
    lark = _lark(Rx(pattern))
    extra = ['"a"', '"\\u00e9"', "-0.5e10", "12", "\t\n", "ab\nx", "é🙂", "\x85", "\u3000", "\x1c"]
    for text in _samples(random.Random(pattern), extra + list("0123456789-.e\\\"")):
        expected, _ = lark_accepts(lark, text)
        assert accepts(dfa, text) == expected, f"{pattern}: {text!r} (llguidance: {expected})"


def test_until_ends_at_the_first_match() -> None:
    dfa = until_dfa(rx_escape("</p>"))
    assert accepts(dfa, "a</p>")
    assert not accepts(dfa, "a</p>b</p>")
    assert all(not edges for edges, ok in zip(dfa.edges, dfa.accepting, strict=True) if ok)


def test_automata_are_minimal_and_cached() -> None:
    dfa = until_dfa(rx_escape("</p>"))
    assert len(dfa.edges) == 5  # before "<", after "<", "</", "</p", and the match
    assert until_dfa(rx_escape("</p>")) is dfa


def test_white_space_is_unicode_white_space() -> None:
    assert regex_tree(r"\s") == ("chars", WHITE_SPACE)
    assert regex_tree(r"[^\s]") == ("chars", chars_negate(WHITE_SPACE))
    assert chars_union([((0, 5),), ((6, 9),)]) == ((0, 9),)


@pytest.mark.parametrize("pattern", [r"\w+", r"\d", r"^a", r"a$", r"(?i:a)", r"(?=a)", r"(a)\1", r"\bx", r"[[a]]"])
def test_regex_features_without_an_exact_automaton_are_refused(pattern: str) -> None:
    with pytest.raises(GrammarError) as info:
        regex_tree(pattern)
    assert info.value.code == "unsupported_regex"


def test_free_text_that_cannot_end_is_refused() -> None:
    with pytest.raises(GrammarError) as info:
        until_dfa("a", excludes=("(?s:.)",))
    assert info.value.code == "empty_language"


WORDS = st.text(alphabet="ab</\n", min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(stop=st.lists(WORDS, min_size=1, max_size=2), excludes=st.lists(WORDS, max_size=2),
       not_start=st.lists(WORDS, max_size=1), partial=st.lists(WORDS, max_size=2), until=st.booleans(),
       texts=st.lists(st.text(alphabet="ab</\né", max_size=9), min_size=10, max_size=10))
def test_random_free_text_automata_agree_with_llguidance(stop: list[str], excludes: list[str], not_start: list[str],
                                                          partial: list[str], until: bool, texts: list[str]) -> None:
    node: Node
    if until:
        node = Until(trie(stop), tuple(map(rx_escape, excludes)), tuple(map(rx_escape, not_start)))
    else:
        node = Text(tuple(map(rx_escape, excludes)), (trie(partial, prefixes=True),) if partial else (),
                    tuple(map(rx_escape, not_start)))
    try:
        dfa = until_dfa(node.stop, node.excludes, node.not_start) if isinstance(node, Until) else \
            text_dfa(node.excludes, node.partial, node.not_start)
    except GrammarError as exc:  # no text at all: llguidance admits none either
        assert exc.code == "empty_language"
        dfa = None
    lark = _lark(node)
    for text in [*texts, stop[0], excludes[0] + stop[0] if excludes else "a" + stop[0]]:
        expected, _ = lark_accepts(lark, text)
        assert (dfa is not None and accepts(dfa, text)) == expected, f"{node}: {text!r} (llguidance: {expected})"


def test_automata_built_in_threads_are_one_cached_object() -> None:
    from concurrent.futures import ThreadPoolExecutor

    stop, excludes = rx_escape("</tool_call>"), (trie(["<|im_end|>", "<tool_call>", "<|endoftext|>"]),)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: until_dfa(stop, excludes), range(16)))
    assert all(dfa is results[0] for dfa in results)
